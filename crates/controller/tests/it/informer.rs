//! The informer against the embedded API server with the real kube client: first list,
//! watch events, label selectors, and deletes synthesised across a forced re-list.
//!
//! Each test starts its own server. Waits are bounded by a generous deadline that only fails
//! a hung test; nothing sleeps for a fixed time.

use std::sync::Arc;
use testkit::within;

use apiserver::{ApiServer, Config};
use controller::informer::{Handler, Informer, Keyed, ObjectKey, Store};
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
    namespace: String,
    name: String,
    resource_version: String,
}

impl Keyed for PodView {
    fn namespace(&self) -> &str {
        &self.namespace
    }
    fn name(&self) -> &str {
        &self.name
    }
}

fn project(pod: PartialPod) -> Option<Arc<PodView>> {
    Some(Arc::new(PodView {
        namespace: pod.metadata.namespace?,
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

/// One step of an informer test, as data.
enum Step<'a> {
    /// Creates an unscheduled pod labelled `app=<app>`: `Create(name, app)`.
    Create(&'a str, &'a str),
    /// Merge-patches a pod.
    Merge(&'a str, serde_json::Value),
    /// Deletes a pod.
    Delete(&'a str),
    /// Starts an informer of every pod, with a [`Recorder`], and waits for its first list.
    Start(watcher::Config),
    /// The next handler calls are these, in this order.
    Saw(&'a [&'a str]),
    /// The store holds these pods of `default`, in this order.
    Holds(&'a [&'a str]),
}

use Step::{Create, Delete, Holds, Merge, Saw, Start};

/// A server with a client, its pods in `default`, and the informer once started.
struct Fixture {
    server: ApiServer,
    client: Client,
    pods: Api<Pod>,
    running: Option<Running>,
}

impl Fixture {
    /// A server with `config`.
    fn new(config: Config) -> Self {
        let (server, client) = testkit::server::start_with(config);
        Self::with_client(server, client)
    }

    fn with_client(server: ApiServer, client: Client) -> Self {
        let pods = Api::default_namespaced(client.clone());
        Self {
            server,
            client,
            pods,
            running: None,
        }
    }

    /// Runs `steps` in order.
    async fn steps(mut self, steps: impl IntoIterator<Item = Step<'_>>) -> Self {
        for step in steps {
            self.step(step).await;
        }
        self
    }

    async fn step(&mut self, step: Step<'_>) {
        match step {
            Create(name, app) => {
                let pod = testkit::pod(name).unscheduled().label("app", app).object();
                self.pods
                    .create(&PostParams::default(), &pod)
                    .await
                    .unwrap();
            }
            Merge(name, patch) => {
                let patch = Patch::Merge(patch);
                self.pods
                    .patch(name, &PatchParams::default(), &patch)
                    .await
                    .unwrap();
            }
            Delete(name) => {
                self.pods
                    .delete(name, &DeleteParams::default())
                    .await
                    .unwrap();
            }
            Start(config) => {
                let informer = Informer::new(Api::all(self.client.clone()), config, project);
                self.running = Some(Running::start(informer).await);
            }
            Saw(calls) => {
                for call in calls {
                    assert_eq!(self.running().next().await, *call);
                }
            }
            Holds(names) => {
                let keys: Vec<_> = names.iter().map(|n| ObjectKey::new("default", n)).collect();
                assert_eq!(self.running().store.keys(), keys);
            }
        }
    }

    fn running(&mut self) -> &mut Running {
        self.running.as_mut().expect("a Start step came first")
    }

    /// Stops the informer, once started.
    async fn stop(self) {
        if let Some(running) = self.running {
            running.stop().await;
        }
    }
}

/// Runs `steps` on a fresh server with the default config, then stops the informer.
async fn steps_on_a_fresh_server(steps: impl IntoIterator<Item = Step<'_>>) {
    Fixture::new(Config::default())
        .steps(steps)
        .await
        .stop()
        .await;
}

struct Running {
    events: mpsc::UnboundedReceiver<String>,
    store: Store<PodView>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Runs `informer` with a [`Recorder`] until its first list is in its store.
    async fn start(informer: Informer<PartialPod, PodView>) -> Self {
        let store = informer.store();
        let mut synced = informer.synced();
        let (tx, events) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let task = tokio::spawn(informer.run(Recorder(tx), stop.clone().cancelled_owned()));
        assert!(within("first list", synced.wait()).await);
        Self {
            events,
            store,
            stop,
            task,
        }
    }

    async fn next(&mut self) -> String {
        within("a handler call", self.events.recv()).await.unwrap()
    }

    async fn stop(self) {
        self.stop.cancel();
        within("informer to stop", self.task).await.unwrap();
    }
}

#[tokio::test]
async fn informer_lists_then_follows_adds_updates_and_deletes() {
    steps_on_a_fresh_server([
        Create("a", "web"),
        Start(watcher::Config::default()),
        Saw(&["add a"]),
        Holds(&["a"]),
        Create("b", "web"),
        Saw(&["add b"]),
        Merge("a", json!({"metadata": {"labels": {"tier": "front"}}})),
        Saw(&["update a"]),
        Delete("b"),
        Saw(&["delete b"]),
        Holds(&["a"]),
    ])
    .await;
}

#[tokio::test]
async fn informer_with_a_label_selector_sees_only_matching_objects() {
    steps_on_a_fresh_server([
        Create("web-1", "web"),
        Create("db-1", "db"),
        Start(watcher::Config::default().labels("app=web")),
        Saw(&["add web-1"]),
        Holds(&["web-1"]),
    ])
    .await;
}

#[tokio::test]
async fn objects_deleted_while_the_watch_was_down_are_deleted_after_the_relist() {
    let listed = [
        Create("a", "web"),
        Create("b", "web"),
        Start(watcher::Config::default()),
        Saw(&["add a", "add b"]),
    ];
    let fixture = Fixture::new(Config::default()).steps(listed).await;
    // Keep the informer from re-watching while "b" goes away, and forget the history so
    // that its resumed watch gets a 410 and it must re-list.
    let server = fixture.server.clone();
    server.faults().fail("watch", "pods", 1.0);
    server.faults().drop_watches();
    let fixture = fixture.steps([Delete("b")]).await;
    server.compact_history();
    server.faults().clear();

    let relisted = [Saw(&["delete b"]), Holds(&["a"])];
    fixture.steps(relisted).await.stop().await;
}

/// A cache the server shows wrong (writes refused for a resourceVersion the watch never
/// corrects) is listed again on request, and the re-list is diffed like any other.
#[tokio::test]
async fn a_requested_relist_replaces_what_the_watch_never_corrected() {
    let listed = [
        Create("a", "web"),
        Start(watcher::Config::default()),
        Saw(&["add a"]),
    ];
    let mut fixture = Fixture::new(Config::default()).steps(listed).await;
    let running = fixture.running();

    // What a server restored from other state leaves behind: an object it does not hold,
    // and an old version of one it does, which no watch event will ever replace.
    let view = |name: &str, resource_version: &str| {
        Arc::new(PodView {
            namespace: "default".into(),
            name: name.into(),
            resource_version: resource_version.into(),
        })
    };
    running
        .store
        .insert(ObjectKey::new("default", "ghost"), view("ghost", "1"));
    let a = ObjectKey::new("default", "a");
    running.store.insert(a.clone(), view("a", "0"));

    running.store.request_relist();
    let mut calls = vec![running.next().await, running.next().await];
    calls.sort();
    assert_eq!(calls, ["delete ghost", "update a"]);
    assert_ne!(running.store.get(&a).unwrap().resource_version, "0");
    fixture.steps([Holds(&["a"])]).await.stop().await;
}

#[tokio::test]
async fn informer_reads_the_first_state_through_a_streaming_list_and_lists_where_it_is_refused() {
    for watch_list in [true, false] {
        // A v1.33 server has WatchList off and refuses streaming lists.
        let version = if watch_list {
            apiserver::ServerVersion::default()
        } else {
            apiserver::ServerVersion::of(reconcile::KubeVersion::new(1, 33))
        };
        let fixture = Fixture::new(Config {
            version,
            record_requests: true,
            ..Config::default()
        });
        let steps = [
            Create("a", "web"),
            Start(watcher::Config::default().any_semantic().streaming_lists()),
            Saw(&["add a"]),
            Holds(&["a"]),
            Create("b", "web"),
            Saw(&["add b"]),
        ];
        let fixture = fixture.steps(steps).await;
        let log = fixture.server.request_log();
        fixture.stop().await;
        let lists = log
            .iter()
            .filter(|r| r.verb == "list" && r.resource == "pods")
            .count();
        // Served a streaming list, the informer never lists; refused, it lists once.
        assert_eq!(lists, usize::from(!watch_list), "watch_list {watch_list}");
        // In protobuf, as kube-controller-manager asks.
        let answered: Vec<_> = log
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
    let mut fixture = Fixture::with_client(server, client.clone())
        .steps([Create("a", "web")])
        .await;
    let wire = Negotiated::new(Encoding::Protobuf);
    let config = watcher::Config::default().any_semantic().streaming_lists();
    let informer = Informer::new(Api::all(client.clone()), config, project);
    fixture.running = Some(Running::start(informer.with_wire(wire.clone())).await);
    let fixture = fixture.steps([Saw(&["add a"])]).await;
    assert_eq!(wire.current(), Encoding::Json, "turned to JSON for good");
    let steps = [Create("b", "web"), Saw(&["add b"])];
    fixture.steps(steps).await.stop().await;

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
