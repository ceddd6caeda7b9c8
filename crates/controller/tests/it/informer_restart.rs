//! An informer whose API server comes back with fresh state (a restarted dev server; on a real
//! cluster, an etcd restore) must not keep its caches: the server refuses the old
//! resourceVersion as too large, and the informer re-lists, synthesising deletes for the
//! objects that vanished.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use testkit::within;

use apiserver::{ApiServer, Config};
use controller::informer::{Handler, Informer, Keyed};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::runtime::watcher;
use kube::{Api, Client};
use reconcile::projection::PartialPod;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// A client transport whose API server can be replaced while the client is in use, as when a
/// server restarts on the same address.
#[derive(Clone)]
struct Swappable(Arc<Mutex<ApiServer>>);

impl Swappable {
    fn swap(&self, server: ApiServer) -> ApiServer {
        std::mem::replace(&mut *self.0.lock().unwrap(), server)
    }
}

impl tower::Service<http::Request<kube::client::Body>> for Swappable {
    type Response = http::Response<axum::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let router = self.0.lock().unwrap().service();
        Box::pin(async move { router.oneshot(request).await })
    }
}

struct Recorder(mpsc::UnboundedSender<String>);

/// Reports each pod by name.
impl Handler<ObjectMeta> for Recorder {
    fn on_add(&self, new: &Arc<ObjectMeta>) {
        let _ = self.0.send(format!("add {}", new.name()));
    }
    fn on_update(&self, _: &Arc<ObjectMeta>, new: &Arc<ObjectMeta>) {
        let _ = self.0.send(format!("update {}", new.name()));
    }
    fn on_delete(&self, old: &Arc<ObjectMeta>) {
        let _ = self.0.send(format!("delete {}", old.name()));
    }
}

async fn create_pods(client: &Client, names: &[&str]) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for name in names {
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
}

#[tokio::test]
async fn informer_relists_when_the_server_comes_back_with_fresh_state() {
    let first = ApiServer::new(Config::default());
    let transport = Swappable(Arc::new(Mutex::new(first.clone())));
    let client = Client::new(transport.clone(), "default");
    // Enough writes that the old resourceVersion is ahead of the fresh server's.
    create_pods(&client, &["a", "b", "c", "d", "e", "f"]).await;

    let informer = Informer::new(
        Api::<PartialPod>::namespaced(client.clone(), "default"),
        watcher::Config::default(),
        |pod: PartialPod| Some(Arc::new(pod.metadata)),
    );
    let store = informer.store();
    let (tx, mut events) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let task = tokio::spawn(informer.run(Recorder(tx), stop.clone().cancelled_owned()));
    let mut seen = Vec::new();
    while seen.len() < 6 {
        seen.push(within("the first list", events.recv()).await.unwrap());
    }
    assert!(seen.iter().all(|e| e.starts_with("add ")), "{seen:?}");

    // The server restarts empty; only pod "z" is created before the informer reconnects.
    let fresh = ApiServer::new(Config::default());
    transport.swap(fresh.clone());
    create_pods(&client, &["z"]).await;
    assert!(fresh.resource_version() < first.resource_version());
    first.faults().drop_watches();

    let mut after = Vec::new();
    while after.len() < 7 {
        after.push(within("the re-list", events.recv()).await.unwrap());
    }
    after.sort();
    assert_eq!(
        after,
        ["add z", "delete a", "delete b", "delete c", "delete d", "delete e", "delete f"]
    );
    assert_eq!(store.len(), 1);
    stop.cancel();
    within("the informer to stop", task).await.unwrap();
}
