//! The embedded API server one seed runs against, behind a transport that outlives it: a
//! restart puts a fresh server (new resourceVersions, uids and history) behind the same
//! clients, as a server restarting on the same address with restored storage would.
//! Each client can also be cut off alone, to partition one replica from the server.

use super::api::list_values;
use super::schedule::{ErrorKind, Rule};
use anyhow::{bail, Result};
use apiserver::{ApiServer, Config, FaultResponse};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use tower::ServiceExt;

/// The server behind every client, replaced on a restart.
type Current = Arc<Mutex<ApiServer>>;

/// A client's way to the current server. Cheap to clone.
#[derive(Clone)]
pub struct Transport {
    current: Current,
    cut: Arc<AtomicBool>,
}

impl tower::Service<http::Request<kube::client::Body>> for Transport {
    type Response = http::Response<axum::body::Body>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        if self.cut.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "partitioned from the API server",
            ))));
        }
        let router = lock(&self.current).service();
        Box::pin(async move {
            match router.oneshot(request).await {
                Ok(response) => Ok(response),
                Err(never) => match never {},
            }
        })
    }
}

fn lock(current: &Current) -> std::sync::MutexGuard<'_, ApiServer> {
    current.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A client and the switch that cuts it off.
pub struct Connection {
    /// The client.
    pub client: kube::Client,
    /// While true, every request of the client fails as if the server were unreachable.
    pub cut: Arc<AtomicBool>,
}

/// The server, its restarts, and the fault rules in force (re-imposed on a new server).
pub struct Cluster {
    current: Current,
    seed: u64,
    restarts: u64,
    rules: BTreeMap<usize, Rule>,
    /// Restarts bump resourceVersions past every one handed out before (see [`Restores`]).
    bump: bool,
}

/// How a restarted server numbers its resourceVersions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Restores {
    /// As Kubernetes' etcd restore procedure asks (`etcdutl snapshot restore --bump-revision
    /// --mark-compacted`): above every version handed out before, with the history compacted,
    /// so every watch resuming across the restart gets a 410 and its informer lists again.
    #[default]
    Bumped,
    /// From scratch: a watch may resume across the restart when its resourceVersion happens
    /// to fall inside the new server's history, and then never hears of what the server held
    /// from before. Only a write refused for a stale resourceVersion shows it.
    Unbumped,
}

impl Cluster {
    /// A fresh server whose names, uids and fault decisions follow `seed`.
    pub fn new(seed: u64, restores: Restores) -> Self {
        Self {
            current: Arc::new(Mutex::new(ApiServer::new(Self::config(seed)))),
            seed,
            restarts: 0,
            rules: BTreeMap::new(),
            bump: restores == Restores::Bumped,
        }
    }

    fn config(seed: u64) -> Config {
        Config {
            seed,
            // A failure names the last writes, so the log is kept (a seed makes a few
            // thousand requests).
            record_requests: true,
            ..Config::default()
        }
    }

    /// The server now.
    pub fn server(&self) -> ApiServer {
        lock(&self.current).clone()
    }

    /// A new client with its own switch.
    pub fn connect(&self) -> Connection {
        let transport = Transport {
            current: self.current.clone(),
            cut: Arc::new(AtomicBool::new(false)),
        };
        Connection {
            cut: transport.cut.clone(),
            client: kube::Client::new(transport, "default"),
        }
    }

    /// Starts a rule, on this server and every later one.
    pub fn impose(&mut self, id: usize, rule: Rule) {
        impose(&self.server(), &rule);
        self.rules.insert(id, rule);
    }

    /// Ends a rule. The server's fault settings are cleared and the other rules set again
    /// (a pending forced 410 or count of conflicts goes with them).
    pub fn lift(&mut self, id: usize) {
        self.rules.remove(&id);
        let server = self.server();
        server.faults().clear();
        for rule in self.rules.values() {
            impose(&server, rule);
        }
    }

    /// Ends every rule.
    pub fn heal(&mut self) {
        self.rules.clear();
        self.server().faults().clear();
    }

    /// Restarts the server holding `objects` (as [`Self::backup`] gave them); every open
    /// watch of the old one ends, and requests from now on reach the new one.
    pub fn restart(&mut self, objects: Vec<Value>) -> Result<()> {
        self.restarts += 1;
        let fresh = ApiServer::new(Self::config(
            self.seed.wrapping_mul(1_000).wrapping_add(self.restarts),
        ));
        if self.bump {
            let before = lock(&self.current).resource_version();
            fresh.bump_resource_version(before + 1_000);
        }
        let report = fresh.load_objects(objects);
        if let Some(refused) = report.refused.first() {
            bail!("the restarted server refused the backup: {refused}");
        }
        // kube-apiserver fills its watch cache from one list of the storage it starts on, so
        // its watch history begins there: a watch resuming from an older resourceVersion gets
        // a 410, never replayed creates of what storage held already.
        fresh.compact_history();
        for rule in self.rules.values() {
            impose(&fresh, rule);
        }
        let old = std::mem::replace(&mut *lock(&self.current), fresh);
        // The old server is gone. A request routed to it just before the swap may still
        // open a watch there after its open watches are dropped, which would then hear
        // nothing forever (a real restarted server takes its connections down with it): its
        // watches end at once from now on, so the client watches the new server.
        old.faults().drop_watches_after_events(Some(0));
        old.faults().drop_watches();
        Ok(())
    }

    /// Every object a restart brings back, read through `client`: namespaces, nodes,
    /// Services, pods, Endpoints, EndpointSlices and Leases (Events are not kept).
    pub async fn backup(client: &kube::Client) -> Result<Vec<Value>> {
        let mut objects = list_values::<Namespace>(client).await?;
        objects.extend(list_values::<Node>(client).await?);
        objects.extend(list_values::<Service>(client).await?);
        objects.extend(list_values::<Pod>(client).await?);
        objects.extend(list_values::<Endpoints>(client).await?);
        objects.extend(list_values::<EndpointSlice>(client).await?);
        objects.extend(list_values::<Lease>(client).await?);
        Ok(objects)
    }
}

fn impose(server: &ApiServer, rule: &Rule) {
    let faults = server.faults();
    match *rule {
        Rule::Errors { target, rate, kind } => {
            let response = match kind {
                ErrorKind::Internal => FaultResponse::InternalError,
                ErrorKind::TooMany => FaultResponse::TooManyRequests,
                ErrorKind::Conflict => FaultResponse::Conflict,
            };
            faults.fail_with(target.verb, target.resource, rate, response);
        }
        Rule::Latency { target, delay } => faults.add_latency(target.verb, target.resource, delay),
        Rule::ShortWatches { events } => faults.drop_watches_after_events(Some(events)),
    }
}
