//! Reads and writes against the embedded API server with the real kube client, in-process
//! and over TCP. Each test starts its own server; waits are bounded by a deadline that only
//! fails a hung test, and nothing sleeps for a fixed time.

use crate::{create_pod, pod, pods_holding};
use apiserver::{ApiServer, Config};
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use serde_json::json;
use std::fmt::Debug;
use testkit::server::api_status;
use testkit::server::start;
use testkit::within;

/// A [`pod`] labelled `app=db`.
fn db_pod(name: &str) -> Pod {
    let mut pod = pod(name);
    pod.metadata.labels = Some([("app".to_owned(), "db".to_owned())].into());
    pod
}

/// Creates namespace `name`; returns the namespaces.
async fn create_namespace(client: &Client, name: &str) -> Api<Namespace> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    namespaces
}

/// The names of the objects `api` lists with `params`.
async fn names<K>(api: &Api<K>, params: &ListParams) -> Vec<String>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
{
    let list = api.list(params).await.unwrap();
    list.items
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .collect()
}

#[tokio::test]
async fn pods_can_be_created_read_listed_replaced_and_deleted() {
    let (_server, pods) = pods_holding(start(), &[]).await;
    let created = create_pod(&pods, "web-1").await.unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(
        created.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Pending")
    );
    // The server defaults container port protocols, as kube-apiserver does.
    let port = &created.spec.as_ref().unwrap().containers[0]
        .ports
        .as_ref()
        .unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));

    let got = pods.get("web-1").await.unwrap();
    assert_eq!(
        got.metadata.resource_version,
        created.metadata.resource_version
    );

    let mut changed = got.clone();
    changed
        .metadata
        .labels
        .get_or_insert_default()
        .insert("tier".into(), "front".into());
    let replaced = pods
        .replace("web-1", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        got.metadata.resource_version
    );

    let list = pods.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.resource_version.is_some());

    pods.delete("web-1", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(api_status(pods.get("web-1").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn creating_an_existing_name_is_409_already_exists() {
    let (_server, pods) = pods_holding(start(), &["a"]).await;
    let status = api_status(create_pod(&pods, "a").await.unwrap_err());
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists")
    );
    assert_eq!(status.message, "pods \"a\" already exists");
}

#[tokio::test]
async fn replacing_with_a_stale_resource_version_is_409_conflict() {
    let (_server, pods) = pods_holding(start(), &[]).await;
    let first = create_pod(&pods, "a").await.unwrap();
    pods.replace("a", &PostParams::default(), &first)
        .await
        .unwrap();
    let status = api_status(
        pods.replace("a", &PostParams::default(), &first)
            .await
            .unwrap_err(),
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(
        status.message.contains("the object has been modified"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn generate_name_appends_five_characters() {
    let (_server, pods) = pods_holding(start(), &[]).await;
    let mut p = pod("");
    p.metadata.name = None;
    p.metadata.generate_name = Some("web-".into());
    let created = pods.create(&PostParams::default(), &p).await.unwrap();
    let name = created.metadata.name.unwrap();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
}

#[tokio::test]
async fn list_honours_label_and_field_selectors_in_one_or_all_namespaces() {
    let (_server, client) = start();
    create_namespace(&client, "other").await;
    let here: Api<Pod> = Api::default_namespaced(client.clone());
    let there: Api<Pod> = Api::namespaced(client.clone(), "other");
    create_pod(&here, "a").await.unwrap();
    here.create(&PostParams::default(), &db_pod("b"))
        .await
        .unwrap();
    create_pod(&there, "c").await.unwrap();

    let all: Api<Pod> = Api::all(client);
    let lists = ListParams::default;
    let cases: [(&Api<Pod>, ListParams, &[&str]); 7] = [
        (&all, lists(), &["a", "b", "c"]),
        (&all, lists().labels("app=web"), &["a", "c"]),
        (&all, lists().labels("app in (db,x)"), &["b"]),
        (&all, lists().labels("app notin (db)"), &["a", "c"]),
        (&all, lists().labels("!app"), &[]),
        (&all, lists().fields("metadata.namespace=other"), &["c"]),
        (&here, lists().fields("metadata.name!=a"), &["b"]),
    ];
    for (pods, params, want) in cases {
        assert_eq!(names(pods, &params).await, want, "{params:?}");
    }
    let status = api_status(
        all.list(&ListParams::default().labels("app in ("))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 400);
}

#[tokio::test]
async fn status_subresource_writes_only_status_and_main_writes_ignore_status() {
    let (_server, pods) = pods_holding(start(), &["a"]).await;
    let status = json!({"status": {"podIP": "10.0.0.1", "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}, "spec": {"nodeName": "ignored"}});
    let patched = pods
        .patch_status("a", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let st = patched.status.unwrap();
    assert_eq!(st.phase.as_deref(), Some("Running"));
    // podIPs is defaulted from podIP.
    assert_eq!(st.pod_ips.unwrap()[0].ip, "10.0.0.1");
    assert_eq!(patched.spec.unwrap().node_name, None);

    let main = json!({"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Failed"}});
    let patched = pods
        .patch("a", &PatchParams::default(), &Patch::Merge(&main))
        .await
        .unwrap();
    assert_eq!(patched.status.unwrap().phase.as_deref(), Some("Running"));
    assert_eq!(patched.metadata.labels.unwrap()["x"], "y");
}

#[tokio::test]
async fn patches_apply_in_json_merge_strategic_and_apply_formats() {
    let (_server, pods) = pods_holding(start(), &[]).await;
    let mut p = pod("a");
    p.spec
        .as_mut()
        .unwrap()
        .containers
        .push(serde_json::from_value(json!({"name": "side", "image": "busybox"})).unwrap());
    pods.create(&PostParams::default(), &p).await.unwrap();
    let pp = PatchParams::default();

    let json_patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/metadata/labels/j", "value": "1"}]))
            .unwrap();
    let out = pods
        .patch("a", &pp, &Patch::<()>::Json(json_patch))
        .await
        .unwrap();
    assert_eq!(out.metadata.labels.as_ref().unwrap()["j"], "1");

    let strategic = json!({"spec": {"containers": [{"name": "side", "image": "alpine"}]}});
    let out = pods
        .patch("a", &pp, &Patch::Strategic(&strategic))
        .await
        .unwrap();
    let images: Vec<_> = out
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.image.unwrap())
        .collect();
    assert_eq!(
        images,
        ["nginx", "alpine"],
        "strategic merge keeps containers by name"
    );

    let merge = json!({"metadata": {"labels": {"j": null}}});
    let out = pods.patch("a", &pp, &Patch::Merge(&merge)).await.unwrap();
    assert!(!out.metadata.labels.unwrap().contains_key("j"));

    let applied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "new", "labels": {"via": "apply"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let ssa = PatchParams::apply("test");
    let out = pods
        .patch("new", &ssa, &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(out.metadata.labels.unwrap()["via"], "apply");
    let again = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "new", "labels": {"more": "yes"}}});
    let out = pods
        .patch("new", &ssa, &Patch::Apply(&again))
        .await
        .unwrap();
    let labels = out.metadata.labels.unwrap();
    assert_eq!(
        (labels["via"].as_str(), labels["more"].as_str()),
        ("apply", "yes")
    );

    let stale = json!({"metadata": {"resourceVersion": "1"}});
    let status = api_status(
        pods.patch("a", &pp, &Patch::Merge(&stale))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 409);
}

#[tokio::test]
async fn endpointslice_generation_bumps_only_when_more_than_metadata_changes() {
    let (_server, client) = start();
    let slices: Api<EndpointSlice> = Api::default_namespaced(client);
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": [],
    }))
    .unwrap();
    let created = slices.create(&PostParams::default(), &slice).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let relabel = json!({"metadata": {"labels": {"a": "b"}}});
    let out = slices
        .patch("s", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    assert_eq!(out.metadata.generation, Some(1));
    let add = json!({"endpoints": [{"addresses": ["10.0.0.1"]}]});
    let out = slices
        .patch("s", &PatchParams::default(), &Patch::Merge(&add))
        .await
        .unwrap();
    assert_eq!(out.metadata.generation, Some(2));
}

#[tokio::test]
async fn finalizers_keep_a_deleted_object_until_the_last_one_is_removed() {
    let (_server, pods) = pods_holding(start(), &[]).await;
    let mut p = pod("held");
    p.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    pods.create(&PostParams::default(), &p).await.unwrap();
    pods.delete("held", &DeleteParams::default()).await.unwrap();
    let terminating = pods.get("held").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let release = json!({"metadata": {"finalizers": null}});
    pods.patch("held", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    assert_eq!(api_status(pods.get("held").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn creates_in_a_terminating_namespace_are_forbidden_with_the_namespace_terminating_cause() {
    let (_server, client) = start();
    let namespaces = create_namespace(&client, "gone").await;
    let pods: Api<Pod> = Api::namespaced(client, "gone");
    let mut held = pod("held");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    pods.create(&PostParams::default(), &held).await.unwrap();
    create_pod(&pods, "free").await.unwrap();

    namespaces
        .delete("gone", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = namespaces.get("gone").await.unwrap();
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    assert_eq!(api_status(pods.get("free").await.unwrap_err()).code, 404);

    let status = api_status(create_pod(&pods, "new").await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "pods \"new\" is forbidden: unable to create new content in namespace gone because it is being terminated"
    );
    let causes = status.details.unwrap().causes;
    assert_eq!(causes[0].reason, "NamespaceTerminating");
    assert_eq!(causes[0].field, "metadata.namespace");

    let release = json!({"metadata": {"finalizers": null}});
    pods.patch("held", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    assert_eq!(
        api_status(namespaces.get("gone").await.unwrap_err()).code,
        404
    );
}

#[tokio::test]
async fn apply_objects_loads_status_and_terminating_pods_like_the_corpus() {
    let (server, client) = start();
    let objects = vec![
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "a"}},
            "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "labels": {"app": "web"},
                "deletionTimestamp": "2024-01-01T00:00:00Z", "uid": "from-input"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}}),
    ];
    let stored = server.apply_objects(objects).unwrap();
    assert_eq!(stored.len(), 3);

    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let p = pods.get("web-1").await.unwrap();
    assert!(p.metadata.deletion_timestamp.is_some());
    assert_ne!(p.metadata.uid.as_deref(), Some("from-input"));
    assert!(p
        .metadata
        .finalizers
        .unwrap()
        .contains(&apiserver::HOLD_FINALIZER.to_owned()));
    assert_eq!(p.status.unwrap().pod_ip.as_deref(), Some("10.0.0.1"));
    let nodes: Api<Node> = Api::all(client);
    let n = nodes.get("n1").await.unwrap();
    assert_eq!(n.status.unwrap().conditions.unwrap()[0].type_, "Ready");
    assert!(
        stored[1]["spec"]["clusterIP"].is_string(),
        "services get a ClusterIP"
    );

    let err = server
        .apply_objects(vec![json!({"apiVersion": "apps/v1", "kind": "Deployment"})])
        .unwrap_err();
    assert!(
        matches!(err, apiserver::LoadError::UnknownKind { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn discovery_maps_kinds_to_resources() {
    let (_server, client) = start();
    let discovery = kube::discovery::Discovery::new(client).run().await.unwrap();
    let (slices, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "EndpointSlice")
        .expect("EndpointSlice is discoverable");
    assert_eq!(slices.plural, "endpointslices");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    let kinds: Vec<String> = discovery
        .groups()
        .flat_map(|g| g.recommended_kind("Lease"))
        .map(|(r, _)| r.kind)
        .collect();
    assert_eq!(kinds, ["Lease"]);
}

#[tokio::test]
async fn service_accounts_are_served_like_other_kinds() {
    let (server, client) = start();
    let body = json!({"metadata": {"name": "endpoint-controller", "namespace": "kube-system"}});
    let path = "/api/v1/namespaces/kube-system/serviceaccounts";
    let (code, created) = testkit::server::send_json(&server, "POST", path, &body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        (&created["apiVersion"], &created["kind"]),
        (&json!("v1"), &json!("ServiceAccount"))
    );
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        assert!(created["metadata"][field].is_string(), "{field}: {created}");
    }
    assert!(created["metadata"].get("generation").is_none(), "{created}");

    let bad = json!({"metadata": {"name": "Endpoint_Controller"}});
    let (code, status) = testkit::server::send_json(&server, "POST", path, &bad).await;
    assert_eq!(code, 422, "a name must be a DNS subdomain: {status}");

    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "kube-system");
    let listed = accounts.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    accounts
        .delete("endpoint-controller", &DeleteParams::default())
        .await
        .unwrap();
    assert!(accounts
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());

    let discovery = kube::discovery::Discovery::new(client).run().await.unwrap();
    let (resource, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_kind("ServiceAccount"))
        .next()
        .expect("ServiceAccount is discoverable");
    assert_eq!(resource.plural, "serviceaccounts");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    let (_, core) = testkit::server::send_json(&server, "GET", "/api/v1", &json!(null)).await;
    let entries = core["resources"].as_array().unwrap();
    let find = |name: &str| entries.iter().find(|r| r["name"] == name).cloned();
    assert_eq!(
        find("serviceaccounts").unwrap()["shortNames"],
        json!(["sa"])
    );
    let token = find("serviceaccounts/token").expect("the token subresource is listed");
    assert_eq!(
        (&token["group"], &token["kind"], &token["verbs"]),
        (
            &json!("authentication.k8s.io"),
            &json!("TokenRequest"),
            &json!(["create"])
        )
    );
}

#[tokio::test]
async fn tcp_clients_connect_through_the_written_kubeconfig() {
    let handle = ApiServer::start(Config::default()).await.unwrap();
    assert!(handle.url().starts_with("http://127.0.0.1:"));
    let path = std::env::temp_dir().join(format!(
        "kube-endpoints-apiserver-{}.yaml",
        handle.addr().port()
    ));
    handle.write_kubeconfig(&path).unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let listed = names(&namespaces, &ListParams::default()).await;
    assert!(listed.contains(&"default".to_owned()), "{listed:?}");
    assert_eq!(
        handle.request_counts()[&("list".to_owned(), "namespaces".to_owned())],
        1
    );

    // A watch open over TCP ends when the server shuts down.
    let pods: Api<Pod> = Api::default_namespaced(client);
    let stream = pods.watch(&WatchParams::default(), "0").await.unwrap();
    handle.shutdown().await.unwrap();
    within("watch end on shutdown", stream.try_collect::<Vec<_>>())
        .await
        .ok();
}

#[tokio::test]
async fn dry_run_answers_like_the_write_but_stores_nothing() {
    let (server, pods) = pods_holding(start(), &[]).await;
    let before = server.resource_version();
    let pp = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let answered = pods.create(&pp, &pod("dry")).await.unwrap();
    assert_eq!(answered.metadata.name.as_deref(), Some("dry"));
    assert_eq!(api_status(pods.get("dry").await.unwrap_err()).code, 404);
    assert_eq!(server.resource_version(), before);
}

#[tokio::test]
async fn delete_collection_removes_the_selected_objects() {
    let (_server, pods) = pods_holding(start(), &["a"]).await;
    pods.create(&PostParams::default(), &db_pod("b"))
        .await
        .unwrap();
    pods.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("app=web"),
    )
    .await
    .unwrap();
    assert_eq!(names(&pods, &ListParams::default()).await, ["b"]);
}

#[tokio::test]
async fn unknown_paths_get_a_404_status_body() {
    use tower::ServiceExt;
    let server = ApiServer::new(Config::default());
    let request = http::Request::get("/apis/apps/v1/namespaces/default/deployments")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = server.service().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 404);
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (status["kind"].as_str(), status["reason"].as_str()),
        (Some("Status"), Some("NotFound"))
    );
}

#[tokio::test]
async fn lists_are_served_in_pages_of_the_asked_limit_until_the_continue_token_runs_out() {
    let names = ["web-0", "web-1", "web-2", "web-3", "web-4"];
    let (_server, pods) = pods_holding(start(), &names).await;
    let mut listed = Vec::new();
    let mut pages = 0;
    let mut params = ListParams::default().limit(2);
    loop {
        let page = pods.list(&params).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 2);
        listed.extend(page.items.into_iter().filter_map(|p| p.metadata.name));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(listed, names);
}
