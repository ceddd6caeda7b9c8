//! The informer against the embedded API server with the real kube client: first list,
//! watch events, label selectors, and deletes synthesised across a forced re-list.
//!
//! Each test starts its own server. Waits are bounded by a generous deadline that only fails
//! a hung test; nothing sleeps for a fixed time.

use std::sync::Arc;
use testkit::within;

use apiserver::{ApiServer, Config};
use controller::informer::{Handler, Informer, ObjectKey};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use reconcile::projection::PartialPod;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The compact view the tests keep: enough to tell versions apart.
#[derive(Debug, PartialEq)]
struct PodView {
    name: String,
    resource_version: String,
}

fn project(pod: PartialPod) -> Option<Arc<PodView>> {
    Some(Arc::new(PodView {
        name: pod.metadata.name?,
        resource_version: pod.metadata.resource_version?,
    }))
}

/// Sends each handler call down a channel as "add a", "update a", "delete a".
struct Recorder(mpsc::UnboundedSender<String>);

impl Handler<PodView> for Recorder {
    fn on_add(&self, new: &Arc<PodView>) {
        let _ = self.0.send(format!("add {}", new.name));
    }
    fn on_update(&self, old: &Arc<PodView>, new: &Arc<PodView>) {
        assert_ne!(old.resource_version, new.resource_version);
        let _ = self.0.send(format!("update {}", new.name));
    }
    fn on_delete(&self, old: &Arc<PodView>) {
        let _ = self.0.send(format!("delete {}", old.name));
    }
}

/// An unscheduled pod labelled `app`.
fn pod(name: &str, app: &str) -> Pod {
    testkit::pod(name).unscheduled().label("app", app).object()
}

struct Running {
    events: mpsc::UnboundedReceiver<String>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn next(&mut self) -> String {
        within("a handler call", self.events.recv()).await.unwrap()
    }

    async fn stop(self) {
        self.stop.cancel();
        within("informer to stop", self.task).await.unwrap();
    }
}

async fn run(
    client: Client,
    config: watcher::Config,
) -> (Running, controller::informer::Store<PodView>) {
    let informer = Informer::new(Api::<PartialPod>::all(client), config, project);
    let store = informer.store();
    let mut synced = informer.synced();
    let (tx, events) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let task = tokio::spawn(informer.run(Recorder(tx), stop.clone().cancelled_owned()));
    assert!(within("first list", synced.wait()).await);
    (Running { events, stop, task }, store)
}

#[tokio::test]
async fn informer_lists_then_follows_adds_updates_and_deletes() {
    let server = ApiServer::new(Config::default());
    let client = Client::new(server.service(), "default");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("a", "web"))
        .await
        .unwrap();

    let (mut running, store) = run(client, watcher::Config::default()).await;
    assert_eq!(running.next().await, "add a");
    assert_eq!(store.keys(), [ObjectKey::new("default", "a")]);

    pods.create(&PostParams::default(), &pod("b", "web"))
        .await
        .unwrap();
    assert_eq!(running.next().await, "add b");
    pods.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
    )
    .await
    .unwrap();
    assert_eq!(running.next().await, "update a");
    pods.delete("b", &DeleteParams::default()).await.unwrap();
    assert_eq!(running.next().await, "delete b");
    assert_eq!(store.keys(), [ObjectKey::new("default", "a")]);
    running.stop().await;
}

#[tokio::test]
async fn informer_with_a_label_selector_sees_only_matching_objects() {
    let server = ApiServer::new(Config::default());
    let client = Client::new(server.service(), "default");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("web-1", "web"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("db-1", "db"))
        .await
        .unwrap();

    let (mut running, store) = run(client, watcher::Config::default().labels("app=web")).await;
    assert_eq!(running.next().await, "add web-1");
    assert_eq!(store.keys(), [ObjectKey::new("default", "web-1")]);
    running.stop().await;
}

#[tokio::test]
async fn objects_deleted_while_the_watch_was_down_are_deleted_after_the_relist() {
    let server = ApiServer::new(Config::default());
    let client = Client::new(server.service(), "default");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    for name in ["a", "b"] {
        pods.create(&PostParams::default(), &pod(name, "web"))
            .await
            .unwrap();
    }
    let (mut running, store) = run(client, watcher::Config::default()).await;
    assert_eq!(running.next().await, "add a");
    assert_eq!(running.next().await, "add b");

    // Keep the informer from re-watching while "b" goes away, and forget the history so
    // that its resumed watch gets a 410 and it must re-list.
    server.faults().fail("watch", "pods", 1.0);
    server.faults().drop_watches();
    pods.delete("b", &DeleteParams::default()).await.unwrap();
    server.compact_history();
    server.faults().clear();

    assert_eq!(running.next().await, "delete b");
    assert_eq!(store.keys(), [ObjectKey::new("default", "a")]);
    running.stop().await;
}

/// A cache the server shows wrong (writes refused for a resourceVersion the watch never
/// corrects) is listed again on request, and the re-list is diffed like any other.
#[tokio::test]
async fn a_requested_relist_replaces_what_the_watch_never_corrected() {
    let server = ApiServer::new(Config::default());
    let client = Client::new(server.service(), "default");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("a", "web"))
        .await
        .unwrap();
    let (mut running, store) = run(client, watcher::Config::default()).await;
    assert_eq!(running.next().await, "add a");

    // What a server restored from other state leaves behind: an object it does not hold,
    // and an old version of one it does, which no watch event will ever replace.
    let ghost = ObjectKey::new("default", "ghost");
    store.insert(
        ghost.clone(),
        Arc::new(PodView {
            name: "ghost".into(),
            resource_version: "1".into(),
        }),
    );
    let a = ObjectKey::new("default", "a");
    store.insert(
        a.clone(),
        Arc::new(PodView {
            name: "a".into(),
            resource_version: "0".into(),
        }),
    );

    store.request_relist();
    let mut calls = vec![running.next().await, running.next().await];
    calls.sort();
    assert_eq!(calls, ["delete ghost", "update a"]);
    assert_eq!(store.keys(), std::slice::from_ref(&a));
    assert_ne!(store.get(&a).unwrap().resource_version, "0");
    running.stop().await;
}

#[tokio::test]
async fn informer_reads_the_first_state_through_a_streaming_list_and_lists_where_it_is_refused() {
    for watch_list in [true, false] {
        let server = ApiServer::new(Config {
            watch_list,
            record_requests: true,
            ..Config::default()
        });
        let client = Client::new(server.service(), "default");
        let pods: Api<Pod> = Api::default_namespaced(client.clone());
        pods.create(&PostParams::default(), &pod("a", "web"))
            .await
            .unwrap();
        let config = watcher::Config::default().any_semantic().streaming_lists();
        let (mut running, store) = run(client, config).await;
        assert_eq!(running.next().await, "add a", "watch_list {watch_list}");
        assert_eq!(store.keys(), [ObjectKey::new("default", "a")]);
        pods.create(&PostParams::default(), &pod("b", "web"))
            .await
            .unwrap();
        assert_eq!(running.next().await, "add b", "watch_list {watch_list}");
        running.stop().await;
        let lists = server
            .request_log()
            .iter()
            .filter(|r| r.verb == "list" && r.resource == "pods")
            .count();
        // Served a streaming list, the informer never lists; refused, it lists once.
        assert_eq!(lists, usize::from(!watch_list), "watch_list {watch_list}");
        // In protobuf, as kube-controller-manager asks.
        let answered: Vec<_> = server
            .request_log()
            .iter()
            .filter(|r| {
                (r.verb == "list" || r.verb == "watch") && r.resource == "pods" && r.code == 200
            })
            .map(|r| r.content_type.clone().unwrap_or_default())
            .collect();
        assert!(!answered.is_empty());
        assert!(
            answered
                .iter()
                .all(|c| c.starts_with("application/vnd.kubernetes.protobuf")),
            "{answered:?}"
        );
    }
}

/// An API server that only speaks JSON: protobuf bodies are refused with 415, and every
/// answer is JSON whatever the client accepts (as a server without protobuf, or a proxy that
/// rewrites Accept, behaves).
fn json_only(server: &ApiServer) -> Client {
    let router = server.service();
    let service = tower::service_fn(move |mut request: http::Request<kube::client::Body>| {
        let router = router.clone();
        async move {
            let protobuf_body = request
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|c| {
                    c.as_bytes()
                        .starts_with(b"application/vnd.kubernetes.protobuf")
                });
            if protobuf_body {
                let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "reason": "UnsupportedMediaType", "code": 415,
                    "message": "the body of the request was in an unknown format"});
                return Ok::<_, std::convert::Infallible>(
                    http::Response::builder()
                        .status(415)
                        .header(http::header::CONTENT_TYPE, "application/json")
                        .body(axum::body::Body::from(status.to_string()))
                        .unwrap(),
                );
            }
            request.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static("application/json"),
            );
            tower::ServiceExt::oneshot(router, request).await
        }
    });
    Client::new(service, "default")
}

#[tokio::test]
async fn a_server_that_speaks_only_json_is_watched_and_written_in_json() {
    use controller::wire::{Encoding, Negotiated};
    let server = ApiServer::new(Config::default());
    let client = json_only(&server);
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("a", "web"))
        .await
        .unwrap();
    let wire = Negotiated::new(Encoding::Protobuf);
    let informer = Informer::new(
        Api::<PartialPod>::all(client.clone()),
        watcher::Config::default().any_semantic().streaming_lists(),
        project,
    )
    .with_wire(wire.clone());
    let mut synced = informer.synced();
    let (tx, events) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let task = tokio::spawn(informer.run(Recorder(tx), stop.clone().cancelled_owned()));
    assert!(within("first list", synced.wait()).await);
    let mut running = Running { events, stop, task };
    assert_eq!(running.next().await, "add a");
    assert_eq!(wire.current(), Encoding::Json, "turned to JSON for good");
    pods.create(&PostParams::default(), &pod("b", "web"))
        .await
        .unwrap();
    assert_eq!(running.next().await, "add b");
    running.stop().await;

    // A write in protobuf is refused (415) and sent again in JSON.
    let wire = Negotiated::new(Encoding::Protobuf);
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::default_namespaced(client.clone());
    let lease = k8s_openapi::api::coordination::v1::Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("l".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::coordination::v1::LeaseSpec {
            holder_identity: Some("me".into()),
            ..Default::default()
        }),
    };
    let created = controller::wire::objects::create(&leases, &lease, &PostParams::default(), &wire)
        .await
        .unwrap();
    assert_eq!(created.spec.unwrap().holder_identity.as_deref(), Some("me"));
    assert_eq!(wire.current(), Encoding::Json);
}
