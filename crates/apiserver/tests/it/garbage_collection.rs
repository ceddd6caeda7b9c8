//! Garbage collection by ownerReferences, driven with the real kube client: background
//! deletion of dependents, and the Foreground and Orphan propagation policies.

use crate::{get, pod};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{json, Value};
use testkit::server::api_status;
use testkit::server::start;
use testkit::within;

/// Whether a dependent holds its owner's foreground deletion back (`blockOwnerDeletion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blocks {
    Owner,
    Nothing,
}

fn owner_ref<K: Resource<DynamicType = ()>>(owner: &K, blocks: Blocks) -> Value {
    json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "name": owner.meta().name,
        "uid": owner.meta().uid,
        "controller": true,
        "blockOwnerDeletion": blocks == Blocks::Owner,
    })
}

async fn create_service(client: &Client, name: &str) -> Service {
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }))
    .unwrap();
    Api::<Service>::default_namespaced(client.clone())
        .create(&PostParams::default(), &svc)
        .await
        .unwrap()
}

/// Deletes Service `web` with `params`.
async fn delete_web(client: &Client, params: &DeleteParams) {
    Api::<Service>::default_namespaced(client.clone())
        .delete("web", params)
        .await
        .unwrap();
}

/// Creates Service `web` and its slice `held`, which a finalizer keeps.
async fn web_and_held_slice(client: &Client, blocks: Blocks) -> Service {
    let svc = create_service(client, "web").await;
    let owners = vec![owner_ref(&svc, blocks)];
    create_slice(client, "held", owners, &["example.com/hold"]).await;
    svc
}

/// Creates slice `name` of Service `web`, owned by `owners` and held by `finalizers`.
async fn create_slice(
    client: &Client,
    name: &str,
    owners: Vec<Value>,
    finalizers: &[&str],
) -> EndpointSlice {
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "web"},
            "ownerReferences": owners, "finalizers": finalizers},
        "addressType": "IPv4",
        "endpoints": [],
    }))
    .unwrap();
    Api::<EndpointSlice>::default_namespaced(client.clone())
        .create(&PostParams::default(), &slice)
        .await
        .unwrap()
}

async fn slice_names(client: &Client) -> Vec<String> {
    Api::<EndpointSlice>::default_namespaced(client.clone())
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect()
}

#[tokio::test]
async fn deleting_a_service_deletes_its_endpoint_slices_with_watch_events() {
    let (_server, client) = start();
    let svc = create_service(&client, "web").await;
    let other = create_service(&client, "other").await;
    create_slice(&client, "web-a", vec![owner_ref(&svc, Blocks::Owner)], &[]).await;
    create_slice(&client, "web-b", vec![owner_ref(&svc, Blocks::Owner)], &[]).await;
    let owners = vec![owner_ref(&other, Blocks::Owner)];
    create_slice(&client, "other-a", owners, &[]).await;
    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    let version = slices
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut watch = slices
        .watch(&WatchParams::default(), &version)
        .await
        .unwrap()
        .boxed();

    delete_web(&client, &DeleteParams::default()).await;

    assert_eq!(slice_names(&client).await, ["other-a"]);
    let mut deleted = Vec::new();
    while deleted.len() < 2 {
        match within("slice deletions", watch.try_next()).await.unwrap() {
            Some(WatchEvent::Deleted(s)) => deleted.push(s.name_any()),
            Some(_) => {}
            None => panic!("watch ended"),
        }
    }
    deleted.sort();
    assert_eq!(deleted, ["web-a", "web-b"]);
}

#[tokio::test]
async fn a_slice_owned_by_endpoints_goes_with_its_endpoints() {
    let (_server, client) = start();
    let endpoints: Api<Endpoints> = Api::default_namespaced(client.clone());
    let ep = endpoints
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "web"}})).unwrap(),
        )
        .await
        .unwrap();
    let owners = vec![owner_ref(&ep, Blocks::Owner)];
    create_slice(&client, "web-mirror", owners, &[]).await;
    endpoints
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    assert!(slice_names(&client).await.is_empty());
}

#[tokio::test]
async fn a_dependent_with_another_owner_left_loses_only_the_reference_to_the_deleted_one() {
    let (_server, client) = start();
    let web = create_service(&client, "web").await;
    let other = create_service(&client, "other").await;
    let owners = vec![
        owner_ref(&web, Blocks::Nothing),
        owner_ref(&other, Blocks::Nothing),
    ];
    create_slice(&client, "shared", owners, &[]).await;
    delete_web(&client, &DeleteParams::default()).await;
    let kept: EndpointSlice = get(&client, "shared").await;
    let owners: Vec<String> = kept
        .owner_references()
        .iter()
        .map(|r| r.name.clone())
        .collect();
    assert_eq!(owners, ["other"]);
}

#[tokio::test]
async fn an_owner_of_a_kind_the_server_does_not_serve_counts_as_present() {
    let (_server, client) = start();
    let svc = create_service(&client, "web").await;
    let replica_set = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
        "uid": "rs-uid", "controller": false});
    let owners = vec![owner_ref(&svc, Blocks::Nothing), replica_set];
    create_slice(&client, "web-a", owners, &[]).await;
    delete_web(&client, &DeleteParams::default()).await;
    assert_eq!(slice_names(&client).await, ["web-a"]);
}

#[tokio::test]
async fn foreground_deletion_holds_the_owner_until_blocking_dependents_are_gone() {
    let (_server, client) = start();
    let svc = web_and_held_slice(&client, Blocks::Owner).await;
    create_slice(&client, "free", vec![owner_ref(&svc, Blocks::Owner)], &[]).await;
    let services: Api<Service> = Api::default_namespaced(client.clone());
    services
        .delete("web", &DeleteParams::foreground())
        .await
        .unwrap();

    let waiting = services.get("web").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(waiting.finalizers(), ["foregroundDeletion"]);
    assert_eq!(
        slice_names(&client).await,
        ["held"],
        "dependents are deleted first"
    );
    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    assert!(slices
        .get("held")
        .await
        .unwrap()
        .metadata
        .deletion_timestamp
        .is_some());

    let release = json!({"metadata": {"finalizers": null}});
    slices
        .patch("held", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    assert!(slice_names(&client).await.is_empty());
    assert_eq!(
        api_status(services.get("web").await.unwrap_err()).code,
        404,
        "the owner goes once its last blocking dependent is gone"
    );
}

#[tokio::test]
async fn foreground_deletion_does_not_wait_for_dependents_that_do_not_block() {
    let (_server, client) = start();
    web_and_held_slice(&client, Blocks::Nothing).await;
    let services: Api<Service> = Api::default_namespaced(client.clone());
    services
        .delete("web", &DeleteParams::foreground())
        .await
        .unwrap();
    assert_eq!(api_status(services.get("web").await.unwrap_err()).code, 404);
    let held: EndpointSlice = get(&client, "held").await;
    assert!(held.metadata.deletion_timestamp.is_some());
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let (_server, client) = start();
    let svc = create_service(&client, "web").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut owned = pod("web-1");
    owned.metadata.owner_references =
        Some(vec![
            serde_json::from_value(owner_ref(&svc, Blocks::Owner)).unwrap()
        ]);
    pods.create(&PostParams::default(), &owned).await.unwrap();
    create_slice(&client, "web-a", vec![owner_ref(&svc, Blocks::Owner)], &[]).await;

    delete_web(&client, &DeleteParams::orphan()).await;

    let orphan = pods.get("web-1").await.unwrap();
    assert!(orphan.metadata.owner_references.is_none());
    let slice: EndpointSlice = get(&client, "web-a").await;
    assert!(slice.metadata.owner_references.is_none());
}
