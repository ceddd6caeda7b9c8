//! Garbage collection by ownerReferences, driven with the real kube client: background
//! deletion of dependents, and the Foreground and Orphan propagation policies.

use crate::pod;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{json, Value};
use testkit::server::api_status;
use testkit::server::start;
use testkit::within;

fn owner_ref<K: Resource<DynamicType = ()>>(owner: &K, block: bool) -> Value {
    json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "name": owner.meta().name,
        "uid": owner.meta().uid,
        "controller": true,
        "blockOwnerDeletion": block,
    })
}

fn slice(name: &str, owners: Vec<Value>, finalizers: &[&str]) -> EndpointSlice {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "web"},
            "ownerReferences": owners, "finalizers": finalizers},
        "addressType": "IPv4",
        "endpoints": [],
    }))
    .unwrap()
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

async fn create_slice(client: &Client, slice: EndpointSlice) -> EndpointSlice {
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
    create_slice(&client, slice("web-a", vec![owner_ref(&svc, true)], &[])).await;
    create_slice(&client, slice("web-b", vec![owner_ref(&svc, true)], &[])).await;
    create_slice(
        &client,
        slice("other-a", vec![owner_ref(&other, true)], &[]),
    )
    .await;
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

    Api::<Service>::default_namespaced(client.clone())
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();

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
    create_slice(
        &client,
        slice("web-mirror", vec![owner_ref(&ep, true)], &[]),
    )
    .await;
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
    create_slice(
        &client,
        slice(
            "shared",
            vec![owner_ref(&web, false), owner_ref(&other, false)],
            &[],
        ),
    )
    .await;
    Api::<Service>::default_namespaced(client.clone())
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let kept = Api::<EndpointSlice>::default_namespaced(client)
        .get("shared")
        .await
        .unwrap();
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
    create_slice(
        &client,
        slice("web-a", vec![owner_ref(&svc, false), replica_set], &[]),
    )
    .await;
    Api::<Service>::default_namespaced(client.clone())
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(slice_names(&client).await, ["web-a"]);
}

#[tokio::test]
async fn foreground_deletion_holds_the_owner_until_blocking_dependents_are_gone() {
    let (_server, client) = start();
    let svc = create_service(&client, "web").await;
    create_slice(
        &client,
        slice("held", vec![owner_ref(&svc, true)], &["example.com/hold"]),
    )
    .await;
    create_slice(&client, slice("free", vec![owner_ref(&svc, true)], &[])).await;
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
    let svc = create_service(&client, "web").await;
    create_slice(
        &client,
        slice("held", vec![owner_ref(&svc, false)], &["example.com/hold"]),
    )
    .await;
    let services: Api<Service> = Api::default_namespaced(client.clone());
    services
        .delete("web", &DeleteParams::foreground())
        .await
        .unwrap();
    assert_eq!(api_status(services.get("web").await.unwrap_err()).code, 404);
    let held = Api::<EndpointSlice>::default_namespaced(client)
        .get("held")
        .await
        .unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let (_server, client) = start();
    let svc = create_service(&client, "web").await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut owned = pod("web-1");
    owned.metadata.owner_references =
        Some(vec![serde_json::from_value(owner_ref(&svc, true)).unwrap()]);
    pods.create(&PostParams::default(), &owned).await.unwrap();
    create_slice(&client, slice("web-a", vec![owner_ref(&svc, true)], &[])).await;

    Api::<Service>::default_namespaced(client.clone())
        .delete("web", &DeleteParams::orphan())
        .await
        .unwrap();

    let orphan = pods.get("web-1").await.unwrap();
    assert!(orphan.metadata.owner_references.is_none());
    let slice = Api::<EndpointSlice>::default_namespaced(client)
        .get("web-a")
        .await
        .unwrap();
    assert!(slice.metadata.owner_references.is_none());
}
