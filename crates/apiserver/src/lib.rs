//! Embedded in-memory Kubernetes API server for development and tests.
//!
//! It speaks the part of the Kubernetes REST API that the Endpoints and EndpointSlice
//! controllers and kubectl use, for namespaces, nodes, pods, services, endpoints,
//! endpointslices, events (core and `events.k8s.io`), leases and serviceaccounts: discovery,
//! get, list and watch with selectors (also as kubectl's server-side Tables), create, update,
//! the status subresource, four patch formats, delete with finalizers and garbage collection,
//! the namespace lifecycle, and OpenAPI v3 and v2 schemas. Objects, lists, watches and errors
//! are JSON, or Kubernetes' protobuf encoding when the client's Accept header asks for it first
//! (client-go's default), and request bodies may be either ([`protobuf`]). It is a test and
//! development server, not a control plane: there are no admission webhooks or persistence,
//! field management is an approximation (see the `managed_fields` module), and the only
//! authentication is that of the ServiceAccount tokens it issues itself through the
//! TokenRequest API (`serviceaccounts/{name}/token`), as kube-controller-manager's
//! `--use-service-account-credentials` needs: a request carrying one is recorded as the
//! ServiceAccount ([`RequestRecord::user`]), and refused with a 401 once the token has expired
//! or its ServiceAccount is gone. Every other request is served unauthenticated, and nothing
//! is authorised. It does answer TokenReviews and SubjectAccessReviews from a configured table
//! ([`Reviews`]), for testing components that delegate their own authentication to it.
//!
//! ```text
//!  kube::Client (in-process) ──┐
//!                              ├──> axum Router ──> rest::{discovery, read, watch, write, patch}
//!  kubectl / TCP clients ──────┘        │ faults                     │
//!                                       v                            v
//!                                   request counts      admission ──> store ──> history ──> watches
//! ```
//!
//! # Clients
//!
//! In-process, with no socket: [`ApiServer::service`] returns the axum `Router`, which is a
//! tower `Service` over any body with `Bytes` chunks, so `kube::Client::new` takes it directly.
//! The crate therefore does not depend on kube (it is only a dev-dependency for the tests):
//!
//! ```no_run
//! # async fn demo() {
//! let server = apiserver::ApiServer::new(apiserver::Config::default());
//! let client = kube::Client::new(server.service(), "default");
//! # drop(client);
//! # }
//! ```
//!
//! Over TCP: [`ApiServer::start`] binds `127.0.0.1:0` (or [`Config::bind`]) and serves until
//! the handle is shut down or dropped. [`ApiServerHandle::url`] gives `http://127.0.0.1:PORT`
//! and [`ApiServerHandle::write_kubeconfig`] writes a kubeconfig kubectl and
//! `kube::Config::from_custom_kubeconfig` can use. To serve on your own listener, use
//! [`ApiServer::serve`].
//!
//! # Behaviour worth knowing
//!
//! - One resourceVersion counter for all kinds; every write bumps it. Watches replay from a
//!   bounded history ([`Config::history_window`]) and answer an older resourceVersion with an
//!   ERROR event holding a 410 `Expired` Status. A list or watch from a resourceVersion the
//!   server has not reached gets kube-apiserver's "Too large resource version" (504 `Timeout`,
//!   cause `ResourceVersionTooLarge`; for a watch, as its only ERROR event).
//! - Like kube-apiserver, creating a pod or service ignores its `status`; write status through
//!   the `/status` subresource, or load objects with [`ApiServer::apply_objects`], which does it.
//! - Services and pods are defaulted as the real server does ([`defaults`]): ClusterIPs are
//!   allocated, port protocols filled in, an empty selector stored as none.
//! - EndpointSlice `generation` bumps when anything outside `metadata` changes; a Service's when
//!   its `spec` changes.
//! - Creates, updates and patches sent as requests record `metadata.managedFields`: the manager
//!   is the `fieldManager` parameter or the User-Agent's product, and it owns the fields it set
//!   or changed (lists whole). Objects loaded from manifests keep the managedFields they carry.
//! - Objects are validated as kube-apiserver validates the fields the controllers use; a
//!   refused write gets a 422 `Invalid` Status naming each field. Request bodies over 3 MiB
//!   get a 413, bodies nested deeper than 128 levels a 400 ([`limits`]).
//! - A pod without finalizers is removed at once on delete (there is no kubelet).
//! - Responses are negotiated as kube-apiserver negotiates them: the first media type of the
//!   Accept header (by q-value) the server can answer in. Every kind served has a protobuf form;
//!   Tables, discovery and OpenAPI documents are JSON only, and a client that accepts protobuf
//!   alone gets 406 for them. [`RequestRecord::content_type`] tells which encoding an answer
//!   was in.
//! - Garbage collection by `ownerReferences` runs inside each delete: dependents whose owners
//!   are all gone are deleted, and `propagationPolicy` Foreground and Orphan are honoured.
//! - [`ApiServer::apply_objects`] rewrites uid references between the loaded objects to the
//!   uids the server assigns.
//! - Deleting a namespace marks it Terminating, deletes its content at once, and removes it when
//!   nothing is left; creates in it meanwhile get a 403 with cause `NamespaceTerminating`.
//! - A TokenRequest is answered as kube-apiserver answers it (default and minimum lifetime,
//!   audiences defaulting to [`API_AUDIENCE`]). Tokens are opaque strings, not JWTs, bound to
//!   the ServiceAccount's uid; [`Config::token_lifetime_cap`] makes them short-lived for tests.
//!
//! # Faults
//!
//! [`ApiServer::faults`] returns the [`Faults`] of the server, which can fail requests by verb and
//! resource (500, 429 or 409, by rate or a fixed count), add latency, close watches (now, at a
//! time, or after a number of events) and answer the next watch with a 410. Random decisions
//! follow [`Config::seed`].

#![warn(missing_docs)]

mod admission;
pub mod classify;
pub mod defaults;
mod faults;
mod gc;
mod history;
mod kubeconfig;
pub mod limits;
mod load;
mod managed_fields;
mod printers;
pub mod protobuf;
mod random;
mod request_log;
mod resources;
mod rest;
mod reviews;
mod selectors;
mod state;
mod status;
mod store;
mod strategic_merge;
mod tokens;
mod transport;
mod validation;
pub mod version;

pub use faults::{FaultResponse, Faults};
pub use load::{LoadError, LoadReport, HOLD_FINALIZER};
pub use random::SeededRng;
pub use request_log::RequestRecord;
pub use reviews::{NonResourceGrant, Reviews, TokenUser};
pub use status::ApiError;
pub use tokens::API_AUDIENCE;
pub use transport::serve;
pub use version::ServerVersion;

use serde_json::{json, Value};
use state::Shared;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, PoisonError};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Settings of one server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where [`ApiServer::start`] listens. Defaults to `127.0.0.1:0` (any free port).
    pub bind: SocketAddr,
    /// How many changes the watch history keeps; a watch from before them gets a 410.
    pub history_window: usize,
    /// Seed for generated names, uids and fault decisions.
    pub seed: u64,
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// When set, every timestamp the server stamps (creation, deletion) is this time, so the
    /// same input gives the same objects (`plan --now`).
    pub fixed_time: Option<k8s_openapi::jiff::Timestamp>,
    /// Keep a log of every request ([`ApiServer::request_log`]).
    pub record_requests: bool,
    /// How TokenReviews and SubjectAccessReviews are answered (by default: no token is
    /// known and nothing is allowed).
    pub reviews: Reviews,
    /// The kube-apiserver version imitated, with its feature gates: `/version` reports it,
    /// and it decides what is refused. Its `watch_list` says whether watches may ask for
    /// `sendInitialEvents` (streaming lists), as kube-apiserver's WatchList gate: on from
    /// v1.34; off, such a watch gets the 422 a v1.33 server gives. Default: v1.36.
    pub version: ServerVersion,
    /// Test-only: when set, no ServiceAccount token issued through a TokenRequest lives longer
    /// than this, whatever `spec.expirationSeconds` asked (which must still be at least ten
    /// minutes, as kube-apiserver requires); the answer's `spec.expirationSeconds` (rounded up
    /// to whole seconds) and `status.expirationTimestamp` say the lifetime granted. Lets tests
    /// of token refresh use tokens of a few seconds. `None` (the default) grants what was
    /// asked, as kube-apiserver without `--service-account-max-token-expiration` does.
    pub token_lifetime_cap: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            history_window: 10_000,
            seed: 1,
            bookmark_interval: Duration::from_secs(30),
            fixed_time: None,
            record_requests: false,
            reviews: Reviews::default(),
            version: ServerVersion::default(),
            token_lifetime_cap: None,
        }
    }
}

/// Request counts by `(verb, resource)`, e.g. `("update", "endpointslices")` or
/// `("update", "pods/status")`.
pub type RequestCounts = BTreeMap<(String, String), u64>;

/// An in-memory API server. Cheap to clone; clones share the same state.
#[derive(Debug, Clone)]
pub struct ApiServer {
    shared: Arc<Shared>,
    router: axum::Router,
}

/// The namespaces every cluster starts with.
const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

impl ApiServer {
    /// A server holding only the initial namespaces (`default`, `kube-system`, `kube-public`,
    /// `kube-node-lease`).
    pub fn new(config: Config) -> Self {
        let shared = Arc::new(Shared::new(&config));
        shared.write(|cluster| {
            for name in INITIAL_NAMESPACES {
                let ns = json!({"metadata": {"name": name}});
                if let Err(e) = rest::create(cluster, resources::namespaces(), None, ns, None) {
                    tracing::error!(namespace = name, error = %e, "creating an initial namespace failed");
                }
            }
        });
        let router = rest::router(shared.clone());
        Self { shared, router }
    }

    /// Binds [`Config::bind`] and serves over TCP in a background task.
    pub async fn start(config: Config) -> std::io::Result<ApiServerHandle> {
        let listener = TcpListener::bind(config.bind).await?;
        let addr = listener.local_addr()?;
        let server = Self::new(config);
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = server.clone();
        let task = tokio::spawn(async move {
            serving
                .serve(listener, async move {
                    // A dropped sender means the handle is gone: stop as well.
                    let _stop_or_dropped = stopped.await;
                })
                .await
        });
        Ok(ApiServerHandle {
            server,
            addr,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// Serves over `listener` until `shutdown` completes; open watches end at that point.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let shared = self.shared.clone();
        transport::serve(self.router.clone(), listener, async move {
            shutdown.await;
            shared.stop_watches();
        })
        .await
    }

    /// The router as a tower `Service`, for `kube::Client::new(server.service(), "default")`.
    pub fn service(&self) -> axum::Router {
        self.router.clone()
    }

    /// The fault settings, changeable while the server runs.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// How many requests were served, by verb and resource (counted before faults apply).
    pub fn request_counts(&self) -> RequestCounts {
        self.shared
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every request answered since the server started, in order, when
    /// [`Config::record_requests`] is on (empty otherwise).
    pub fn request_log(&self) -> Vec<RequestRecord> {
        self.shared.requests.snapshot()
    }

    /// Like [`ApiServer::request_log`], but moves the records out and leaves the log empty,
    /// for a caller that reads it once at the end (as `plan` does) and should not hold two
    /// copies of every written object at its peak.
    pub fn take_request_log(&self) -> Vec<RequestRecord> {
        self.shared.requests.take()
    }

    /// How many requests the log holds, without copying it.
    pub fn request_log_len(&self) -> usize {
        self.shared.requests.len()
    }

    /// How many writes (create, update, patch, delete) to the given resources (plural names,
    /// e.g. `endpointslices`) the server has answered, whatever their outcome.
    pub fn writes_to(&self, resources: &[&str]) -> u64 {
        self.shared
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|((verb, resource), _)| {
                matches!(
                    verb.as_str(),
                    "create" | "update" | "patch" | "delete" | "deletecollection"
                ) && resources.contains(&resource.as_str())
            })
            .map(|(_, n)| *n)
            .sum()
    }

    /// Waits until the clients writing `resources` have gone quiet: `is_idle` (the clients'
    /// own view, such as "no work queued or in flight") holds and no write to `resources`
    /// arrived for `quiet_for`. Returns false if `deadline` passes first.
    ///
    /// Both halves matter: a controller can be idle for an instant between a write and the
    /// watch event that queues its next sync, and a server can see no writes while a
    /// controller is still computing a large one.
    pub async fn wait_until_quiet(
        &self,
        resources: &[&str],
        quiet_for: Duration,
        deadline: Duration,
        is_idle: impl Fn() -> bool,
    ) -> bool {
        let step = (quiet_for / 10).clamp(Duration::from_millis(5), Duration::from_millis(100));
        let start = tokio::time::Instant::now();
        let mut last = self.writes_to(resources);
        let mut since = start;
        while start.elapsed() < deadline {
            tokio::time::sleep(step).await;
            let now = self.writes_to(resources);
            if now != last || !is_idle() {
                last = now;
                since = tokio::time::Instant::now();
            } else if since.elapsed() >= quiet_for {
                return true;
            }
        }
        false
    }

    /// Sets every request count back to zero.
    pub fn reset_request_counts(&self) {
        self.shared
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Starts (or stops) keeping a [`RequestRecord`] of every resource request, for
    /// [`Self::request_log`]. Off by default: the log grows with every request.
    pub fn record_requests(&self, on: bool) {
        self.shared.requests.set_enabled(on);
    }

    /// Replaces how TokenReviews and SubjectAccessReviews are answered ([`Config::reviews`]).
    pub fn set_reviews(&self, reviews: Reviews) {
        self.shared.set_reviews(reviews);
    }

    /// Caps the lifetime of the ServiceAccount tokens issued from now on, as
    /// [`Config::token_lifetime_cap`] does at start (test-only); tokens already issued keep
    /// theirs.
    pub fn set_token_lifetime_cap(&self, cap: Option<Duration>) {
        self.shared.tokens.set_lifetime_cap(cap);
    }

    /// Forgets the recorded requests.
    pub fn clear_request_log(&self) {
        self.shared.requests.clear();
    }

    /// A receiver that is marked changed after every write, for waits that should wake when
    /// the stored objects change rather than poll on a timer.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.subscribe_changes()
    }

    /// The resourceVersion of the latest write.
    pub fn resource_version(&self) -> u64 {
        self.shared.read(|c| c.store.resource_version())
    }

    /// The resourceVersion of the latest change (create, update or delete, status writes
    /// included) of any object of the resource `plural` in API group `group` (empty for the
    /// core group); 0 if there was none. An informer of the whole resource that has applied
    /// this version has seen every change of it.
    pub fn latest_change(&self, group: &str, plural: &str) -> u64 {
        self.shared.read(|c| c.store.latest_change(group, plural))
    }

    /// Turns streaming lists (`sendInitialEvents`) on or off for watches from now on, as
    /// [`Config::version`]'s `watch_list` does at start.
    pub fn set_watch_list(&self, enabled: bool) {
        self.shared
            .watch_list
            .store(enabled, std::sync::atomic::Ordering::Relaxed);
    }

    /// Moves the resourceVersion counter forward to at least `to` (etcd's restore with
    /// `--bump-revision`); with [`Self::compact_history`] after loading, every watch from
    /// before gets a 410, as the documented restore procedure intends.
    pub fn bump_resource_version(&self, to: u64) {
        self.shared.write(|c| c.store.bump_resource_version(to));
    }

    /// Forgets the watch history, so a watch resuming from any earlier resourceVersion gets a
    /// 410 and must re-list (open watches are not affected until they reconnect).
    pub fn compact_history(&self) {
        self.shared.write(|c| c.store.compact_history());
    }

    /// Loads objects the way the conformance corpus was recorded: all created in order, then
    /// the status of those with a status subresource written through it, then those carrying
    /// `metadata.deletionTimestamp` deleted after being created with [`HOLD_FINALIZER`], so
    /// they stay terminating. Namespaced objects without a namespace go to `default`. Returns
    /// the objects as stored. Stops at the first object the server refuses.
    pub fn apply_objects(&self, objects: Vec<Value>) -> Result<Vec<Value>, LoadError> {
        load::apply_objects(&self.shared, objects)
    }

    /// Like [`Self::apply_objects`], but objects the server refuses are left out and
    /// reported while the rest load (`plan` warns about them and goes on).
    pub fn load_objects(&self, objects: Vec<Value>) -> LoadReport {
        load::load_objects(&self.shared, objects)
    }
}

/// A server running over TCP. Dereferences to its [`ApiServer`]; dropping it stops serving.
#[derive(Debug)]
pub struct ApiServerHandle {
    server: ApiServer,
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl ApiServerHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server behind the handle.
    pub fn server(&self) -> &ApiServer {
        &self.server
    }

    /// A kubeconfig pointing at [`Self::url`], with a user without credentials.
    pub fn kubeconfig(&self) -> String {
        kubeconfig::render(&self.url())
    }

    /// Writes [`Self::kubeconfig`] to `path`.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())
    }

    /// Stops accepting connections, ends open watches and waits for the server task.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            // The receiver is gone only if the task already ended; the join below reports why.
            let _already_stopped = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(std::io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl std::ops::Deref for ApiServerHandle {
    type Target = ApiServer;

    fn deref(&self) -> &ApiServer {
        &self.server
    }
}

impl Drop for ApiServerHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _already_stopped = stop.send(());
        }
    }
}
