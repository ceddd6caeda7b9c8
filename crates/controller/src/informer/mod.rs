//! Informers: watch one kind, keep compact projections, tell a handler what changed.
//!
//! This is client-go's shared informer, on our own list and watch ([`crate::wire::watcher`]:
//! protobuf or JSON, with kube's watcher's events). Each object is projected as soon as it
//! arrives (the caller's function keeps only the fields the
//! controllers read) and the full object is dropped, so a cluster's pods cost a few hundred
//! bytes each. The store is updated before the [`Handler`] hears of a change, handlers get
//! the old and the new projection, and re-lists are diffed against the store (see
//! [`relist`]) so that objects deleted while the watch was down still produce `on_delete`.
//! [`Synced`] reports when the first complete list has been applied, which is when
//! controllers may start their workers; [`Progress`] how far the informer has caught up with
//! the server since.

pub mod echoes;
pub mod progress;
pub mod relist;
pub mod resource_versions;
pub mod store;
pub mod watch_health;

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::watcher::InitialListStrategy;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tracing::{debug, info, warn};

pub use echoes::Echoes;
use echoes::Recognised;
pub use progress::Progress;
pub use relist::{Applier, Change};
pub use store::{Index, IndexFn, Keyed, ObjectKey, Store};
pub use watch_health::WatchHealth;

use crate::wire::watcher::{Echo, Item, Recognise, Recognition};
use crate::wire::{Negotiated, WireKind};
use resource_versions::{NewestSeen, Order};

/// Receives an informer's changes. Calls come from the informer's task one at a time, after
/// the store already holds the new state, and must not block: handlers only decide which
/// keys to queue.
pub trait Handler<P>: Send + Sync {
    /// An object appeared (or was listed for the first time).
    fn on_add(&self, new: &Arc<P>);
    /// An object changed; `old` is the projection the store held before.
    fn on_update(&self, old: &Arc<P>, new: &Arc<P>);
    /// An object was deleted, or vanished across a re-list; `old` is its last projection.
    fn on_delete(&self, old: &Arc<P>);
    /// A list (the first, or a re-list) has been applied: the store holds what the server
    /// holds, and every difference has been reported.
    fn on_listed(&self) {}
}

impl<P, H: Handler<P>> Handler<P> for Arc<H> {
    fn on_add(&self, new: &Arc<P>) {
        (**self).on_add(new);
    }
    fn on_update(&self, old: &Arc<P>, new: &Arc<P>) {
        (**self).on_update(old, new);
    }
    fn on_delete(&self, old: &Arc<P>) {
        (**self).on_delete(old);
    }
    fn on_listed(&self) {
        (**self).on_listed();
    }
}

/// Whether an informer has applied its first complete list. Cloneable and cheap.
#[derive(Debug, Clone)]
pub struct Synced(watch::Receiver<bool>);

impl Synced {
    /// Whether the first list has been applied and its handler calls made.
    pub fn is_synced(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits for the first list. Returns `false` if the informer stopped before that.
    pub async fn wait(&mut self) -> bool {
        self.0.wait_for(|synced| *synced).await.is_ok()
    }

    /// Waits for all of `informers`; `false` if any stopped before its first list.
    pub async fn wait_all(informers: impl IntoIterator<Item = Synced>) -> bool {
        for mut synced in informers {
            if !synced.wait().await {
                return false;
            }
        }
        true
    }
}

/// The caller's projection: the compact form of an object, or `None` to skip an object it
/// cannot read (logged as a warning). It gets the decoded object itself, so a projection that
/// keeps most of it (slices, Endpoints) keeps it without a copy.
pub type Projection<K, P> = dyn Fn(K) -> Option<Arc<P>> + Send + Sync;

/// An informer for objects of kind `K`, stored as projections `P`.
pub struct Informer<K, P> {
    api: Api<K>,
    wire: Negotiated,
    config: watcher::Config,
    project: Arc<Projection<K, P>>,
    store: Store<P>,
    synced: watch::Sender<bool>,
    health: Option<WatchHealth>,
    progress: Progress,
    echoes: Option<Echoes<K, P>>,
}

impl<K, P> Informer<K, P>
where
    K: WireKind + Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
    P: store::Keyed + PartialEq + Send + Sync + 'static,
{
    /// An informer watching `api` with `config` (label selectors and the like; the default
    /// config lists with plain paged lists, which any API server supports) and keeping
    /// `project`'s output. It speaks protobuf; see [`with_wire`](Self::with_wire). Nothing
    /// happens until [`run`](Self::run).
    pub fn new(
        api: Api<K>,
        config: watcher::Config,
        project: impl Fn(K) -> Option<Arc<P>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            api,
            wire: Negotiated::default(),
            config,
            project: Arc::new(project),
            store: Store::new(),
            synced: watch::Sender::new(false),
            health: None,
            progress: Progress::new(K::group(&()), K::plural(&())),
            echoes: None,
        }
    }

    /// Speaks the encoding `wire` negotiates, and tells it when the server refuses protobuf.
    #[must_use]
    pub fn with_wire(mut self, wire: Negotiated) -> Self {
        if let Some(echoes) = &mut self.echoes {
            echoes.speaking(wire.clone());
        }
        self.wire = wire;
        self
    }

    /// Reports watch failures and recoveries to `health` (a counter, and `/readyz`).
    #[must_use]
    pub fn with_health(mut self, health: WatchHealth) -> Self {
        self.health = Some(health);
        self
    }

    /// The store this informer fills. Add indexes before [`run`](Self::run) or later; late
    /// indexes are filled from what is stored.
    pub fn store(&self) -> Store<P> {
        self.store.clone()
    }

    /// A handle that reports when the first list has been applied.
    pub fn synced(&self) -> Synced {
        Synced(self.synced.subscribe())
    }

    /// A handle that reports the resourceVersion this informer has applied and handled
    /// everything up to.
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// Watches until `shutdown` completes, updating the store and calling `handler`.
    ///
    /// Watch errors are logged and retried with kube's default backoff (0.8s doubling to
    /// 30s, reset after two quiet minutes); they never end the informer. An error saying the
    /// server has not reached the resourceVersion the watch resumes from starts over with a
    /// fresh list (see `needs_relist`).
    pub async fn run(self, handler: impl Handler<P>, shutdown: impl Future<Output = ()>) {
        let kind = K::kind(&()).into_owned();
        let mut config = self.config.clone();
        let bytes = self.health.as_ref().map(|h| h.bytes_of(&kind));
        let recognise = self.echoes.clone().map(|echoes| -> Recognise {
            Arc::new(move |namespace: &str, name: &str, version: &str| {
                match echoes.recognise(namespace, name, version) {
                    Recognised::Echo(key, projection) => {
                        Recognition::Echo(Echo(Box::new((key, projection))))
                    }
                    Recognised::InFlight => Recognition::InFlight,
                    Recognised::Unknown => Recognition::Unknown,
                }
            })
        });
        let start = |config: &watcher::Config| {
            // Until the new watcher has listed, nothing is known to be applied.
            self.progress.forget();
            let encoding = self.wire.current();
            let client = self.api.clone().into_client();
            let events = crate::wire::watcher::watcher::<K>(
                client,
                config.clone(),
                encoding,
                bytes.clone(),
                self.progress.clone(),
                recognise.clone(),
            );
            Box::pin(events.default_backoff())
        };
        let mut events = start(&config);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut applier = Applier::new(self.store.clone());
        let mut newest = NewestSeen::default();
        let mut contact_backoff = ContactBackoff::default();
        let received = self.health.as_ref().map(|h| h.events_of(&kind));
        loop {
            let event = tokio::select! {
                biased;
                () = &mut shutdown => break,
                () = self.store.relist_requested() => {
                    warn!(kind, "the cache disagrees with the server (writes refused as conflicts with nothing newer arriving); re-listing");
                    if let Some(health) = &self.health {
                        health.relisted_after_reset(&kind);
                    }
                    events = start(&config);
                    continue;
                }
                event = events.next() => event,
            };
            match event {
                Some(Ok(item)) => {
                    contact_backoff.reset();
                    if let Some(health) = &self.health {
                        health.working(&kind);
                    }
                    let order = match &item {
                        Item::Echo(_, version, _) => newest.observe_echo(version),
                        Item::Event(event) => newest.observe(event),
                    };
                    if let Order::Backwards { newest, event } = order {
                        warn!(kind, newest, event, "resourceVersions went backwards (the server restarted with older state?); re-listing");
                        if let Some(health) = &self.health {
                            health.relisted_after_reset(&kind);
                        }
                        events = start(&config);
                        continue;
                    }
                    let event = match item {
                        Item::Echo(Echo(echo), _, decoded) => {
                            if let Some(received) = &received {
                                received.inc();
                            }
                            // Only this informer's own recogniser makes echoes, of its own
                            // projection.
                            if let Ok(echo) = echo.downcast::<(ObjectKey, Arc<P>)>() {
                                let (key, projection) = *echo;
                                if let Some(decoded) = decoded {
                                    // Debug builds: what the writer left must be what
                                    // decoding gives.
                                    assert!(
                                        (self.project)(decoded).is_some_and(|d| *d == *projection),
                                        "the echo of our write of {kind} {key} differs from the object the watch sent"
                                    );
                                }
                                applier.apply(Change::Apply(key, Some(projection)), &handler);
                            }
                            continue;
                        }
                        Item::Event(event) => event,
                    };
                    if let (
                        Some(received),
                        watcher::Event::Apply(_)
                        | watcher::Event::Delete(_)
                        | watcher::Event::InitApply(_),
                    ) = (&received, &event)
                    {
                        received.inc();
                    }
                    if let Some(echoes) = &self.echoes {
                        passed(echoes, &event);
                    }
                    let Some(change) = project_event(event, &*self.project, &kind) else {
                        continue;
                    };
                    if applier.apply(change, &handler) && !*self.synced.borrow() {
                        debug!(kind, objects = self.store.len(), "informer synced");
                        self.synced.send_replace(true);
                    }
                }
                Some(Err(error)) if needs_relist(&error) => {
                    if let Some(health) = &self.health {
                        health.failed(&kind);
                        health.relisted_after_reset(&kind);
                    }
                    warn!(kind, %error, "the server has not reached the last resourceVersion seen (restarted with fresh state?); re-listing");
                    // A new watcher starts with a list; the applier diffs it against the store
                    // and reports what vanished as deletes.
                    events = start(&config);
                }
                Some(Err(error)) if protobuf_refused(&error) => {
                    if self.wire.refused() {
                        warn!(kind, %error, "the API server does not speak protobuf; using JSON");
                    }
                    events = start(&config);
                }
                Some(Err(error))
                    if config.initial_list_strategy == InitialListStrategy::StreamingList
                        && streaming_refused(&error) =>
                {
                    // An API server without WatchList (v1.33, or older) refuses the watch's
                    // options; list instead, as client-go falls back, from now on.
                    info!(kind, %error, "the API server does not serve streaming lists; listing instead");
                    config.initial_list_strategy = InitialListStrategy::ListWatch;
                    events = start(&config);
                }
                Some(Err(error)) if lost_contact(&error) => {
                    if let Some(health) = &self.health {
                        health.failed(&kind);
                    }
                    // The server went away (a restart, a partition). It may come back with
                    // other state than the cache holds: restored from a backup, or with fresh
                    // resourceVersions that happen to be ahead of ours, where resuming the
                    // watch would silently skip whatever it holds from before. Start over
                    // with a list once it answers, after a backoff of our own.
                    self.progress.forget();
                    let delay = contact_backoff.next_delay();
                    warn!(kind, %error, ?delay, "lost contact with the server; will list again");
                    tokio::select! {
                        biased;
                        () = &mut shutdown => break,
                        () = tokio::time::sleep(delay) => {}
                    }
                    events = start(&config);
                }
                Some(Err(error)) => {
                    if let Some(health) = &self.health {
                        health.failed(&kind);
                    }
                    warn!(kind, %error, "watch failed; retrying after backoff");
                }
                None => break,
            }
        }
        debug!(kind, "informer stopped");
    }
}

impl<K, P> Informer<K, P>
where
    K: echoes::Echoed,
    P: echoes::Versioned + Send + Sync + 'static,
{
    /// Where writers leave the projections of what they wrote for their echoes, which this
    /// informer then applies without decoding them (see [`echoes`]). Made on the first call;
    /// clones share one table.
    pub fn echoes(&mut self) -> Echoes<K, P> {
        let echoes = self.echoes.get_or_insert_with(|| {
            Echoes::new(
                self.store.clone(),
                self.wire.clone(),
                Arc::clone(&self.project),
            )
        });
        Echoes::clone(echoes)
    }
}

/// Whether a watch error means the server does not know the resourceVersion the watch
/// resumes from because it is ahead of the server's own: kube-apiserver (and the embedded
/// server) then answer 504 with the `ResourceVersionTooLarge` cause. That happens when the
/// server came back with older state (a restart of the dev server, an etcd restore). kube's
/// watcher re-lists only on 410 and would retry the same resourceVersion forever, keeping a
/// cache of objects that no longer exist.
fn needs_relist(error: &watcher::Error) -> bool {
    let status = match error {
        watcher::Error::WatchError(status) => status,
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status))
        | watcher::Error::InitialListFailed(kube::Error::Api(status)) => status,
        _ => return false,
    };
    status.details.as_ref().is_some_and(|d| {
        d.causes
            .iter()
            .any(|c| c.reason == "ResourceVersionTooLarge")
    })
}

/// Whether the server will not answer in protobuf (406) or read it (415).
fn protobuf_refused(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchStartFailed(e) | watcher::Error::InitialListFailed(e) => {
            crate::wire::refuses_protobuf(e)
        }
        _ => false,
    }
}

/// Whether the server refused a watch's streaming-list options: kube-apiserver without the
/// WatchList feature answers 422 Invalid naming `sendInitialEvents` or
/// `resourceVersionMatch`; some older servers a 400.
fn streaming_refused(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchStartFailed(kube::Error::Api(status)) => {
            status.code == 422 || status.code == 400
        }
        _ => false,
    }
}

/// Whether a watch error says the server could not be reached or the connection broke, as
/// opposed to an answer from it.
fn lost_contact(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e)
        | watcher::Error::InitialListFailed(e) => !matches!(e, kube::Error::Api(_)),
        _ => false,
    }
}

/// The wait before listing again after losing contact: 0.8 s, doubling up to 30 s (kube's
/// own watch backoff), back to the start once an event arrives.
#[derive(Debug, Default)]
struct ContactBackoff(u32);

impl ContactBackoff {
    fn next_delay(&mut self) -> std::time::Duration {
        let delay = std::time::Duration::from_millis(800) * 2u32.saturating_pow(self.0.min(6));
        self.0 = self.0.saturating_add(1);
        delay.min(std::time::Duration::from_secs(30))
    }

    fn reset(&mut self) {
        self.0 = 0;
    }
}

/// Tells `echoes` of an event the watch decoded: it may make an awaited echo stale.
fn passed<K: Resource, P>(echoes: &Echoes<K, P>, event: &watcher::Event<K>) {
    let (object, deleted) = match event {
        watcher::Event::Apply(object) | watcher::Event::InitApply(object) => (object, false),
        watcher::Event::Delete(object) => (object, true),
        watcher::Event::Init | watcher::Event::InitDone => return,
    };
    if echoes.is_empty() {
        return;
    }
    let meta = object.meta();
    if let Some(name) = meta.name.as_deref() {
        let key = ObjectKey::new(meta.namespace.as_deref().unwrap_or_default(), name);
        echoes.passed(&key, meta.resource_version.as_deref(), deleted);
    }
}

/// The key of an object, or `None` (with a warning) when it has no name.
fn object_key<K: Resource>(object: &K, kind: &str) -> Option<ObjectKey> {
    let meta = object.meta();
    let Some(name) = meta.name.as_deref() else {
        warn!(kind, "skipping an object without a name");
        return None;
    };
    Some(ObjectKey::new(
        meta.namespace.as_deref().unwrap_or_default(),
        name,
    ))
}

/// Projects one watcher event; `None` when the event carries an object without a name.
fn project_event<K: Resource, P>(
    event: watcher::Event<K>,
    project: &Projection<K, P>,
    kind: &str,
) -> Option<Change<P>> {
    let projected = |object: K, key: &ObjectKey| {
        let projection = project(object);
        if projection.is_none() {
            warn!(kind, object = %key, "skipping an object the projection cannot read");
        }
        projection
    };
    Some(match event {
        watcher::Event::Apply(object) => {
            let key = object_key(&object, kind)?;
            let projection = projected(object, &key);
            Change::Apply(key, projection)
        }
        watcher::Event::Delete(object) => Change::Delete(object_key(&object, kind)?),
        watcher::Event::Init => Change::Init,
        watcher::Event::InitApply(object) => {
            let key = object_key(&object, kind)?;
            let projection = projected(object, &key);
            Change::InitApply(key, projection)
        }
        watcher::Event::InitDone => Change::InitDone,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    use super::*;

    fn pod(namespace: Option<&str>, name: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: namespace.map(str::to_string),
                name: name.map(str::to_string),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn name_of(pod: Pod) -> Option<Arc<String>> {
        pod.metadata.name.map(Arc::new)
    }

    #[test]
    fn contact_backoff_doubles_to_thirty_seconds_and_starts_over_after_a_reset() {
        let mut backoff = ContactBackoff::default();
        let delays: Vec<u128> = (0..8).map(|_| backoff.next_delay().as_millis()).collect();
        assert_eq!(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
        backoff.reset();
        assert_eq!(backoff.next_delay().as_millis(), 800);
    }

    #[test]
    fn events_are_keyed_by_namespace_and_name() {
        let change = project_event(
            watcher::Event::Apply(pod(Some("ns"), Some("web"))),
            &name_of,
            "Pod",
        );
        match change {
            Some(Change::Apply(key, Some(name))) => {
                assert_eq!(key, ObjectKey::new("ns", "web"));
                assert_eq!(*name, "web");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn objects_without_a_name_are_skipped() {
        let change = project_event(
            watcher::Event::Apply(pod(Some("ns"), None)),
            &name_of,
            "Pod",
        );
        assert!(change.is_none());
    }

    #[test]
    fn a_rejected_projection_is_passed_on_as_none() {
        let reject = |_: Pod| -> Option<Arc<String>> { None };
        let change = project_event(
            watcher::Event::InitApply(pod(None, Some("node-1"))),
            &reject,
            "Pod",
        );
        match change {
            Some(Change::InitApply(key, None)) => assert_eq!(key, ObjectKey::cluster("node-1")),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Records the names of the nodes it was told about.
    #[derive(Default, Clone)]
    struct Seen(Arc<std::sync::Mutex<Vec<String>>>);

    impl Handler<k8s_openapi::api::core::v1::Node> for Seen {
        fn on_add(&self, new: &Arc<k8s_openapi::api::core::v1::Node>) {
            // A slow handler, so that progress claimed before it returns would be seen.
            std::thread::sleep(std::time::Duration::from_millis(3));
            let name = new.metadata.name.clone().unwrap_or_default();
            self.0.lock().unwrap().push(name);
        }
        fn on_update(
            &self,
            _: &Arc<k8s_openapi::api::core::v1::Node>,
            _: &Arc<k8s_openapi::api::core::v1::Node>,
        ) {
        }
        fn on_delete(&self, _: &Arc<k8s_openapi::api::core::v1::Node>) {}
    }

    fn node(name: &str) -> serde_json::Value {
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    }

    /// A node informer against `server`, running until the returned token is cancelled.
    fn run_node_informer(
        server: &apiserver::ApiServer,
        seen: &Seen,
    ) -> (
        Progress,
        tokio_util::sync::CancellationToken,
        tokio::task::JoinHandle<()>,
    ) {
        let client = kube::Client::new(server.service(), "default");
        let informer = Informer::new(
            Api::<k8s_openapi::api::core::v1::Node>::all(client),
            watcher::Config::default(),
            |n| Some(Arc::new(n)),
        );
        let progress = informer.progress();
        let token = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn({
            let (token, seen) = (token.clone(), seen.clone());
            async move { informer.run(seen, token.cancelled()).await }
        });
        (progress, token, task)
    }

    async fn until(what: &str, condition: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        while !condition() {
            assert!(tokio::time::Instant::now() < deadline, "never: {what}");
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn progress_reaches_a_change_only_once_the_handler_has_been_told_of_it() {
        let server = apiserver::ApiServer::new(apiserver::Config::default());
        server.apply_objects(vec![node("listed")]).unwrap();
        let seen = Seen::default();
        let (progress, token, task) = run_node_informer(&server, &seen);
        until("the list is applied", || progress.applied().is_some()).await;
        assert!(progress.has_applied(server.latest_change("", "nodes")));
        assert_eq!(*seen.0.lock().unwrap(), ["listed"]);
        for i in 0..20 {
            let name = format!("n{i}");
            server.apply_objects(vec![node(&name)]).unwrap();
            let latest = server.latest_change("", "nodes");
            until("the change is applied", || progress.has_applied(latest)).await;
            assert!(
                seen.0.lock().unwrap().contains(&name),
                "{name} not handled yet"
            );
        }
        token.cancel();
        task.await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn progress_is_forgotten_while_the_watch_reconnects_and_known_once_it_resumed() {
        let server = apiserver::ApiServer::new(apiserver::Config::default());
        let seen = Seen::default();
        let (progress, token, task) = run_node_informer(&server, &seen);
        until("the list is applied", || progress.applied().is_some()).await;
        // Every watch from now on ends after its first event: the informer reconnects after
        // each one, and at no moment may it claim a version it has not applied.
        server.faults().drop_watches_after_events(Some(1));
        for i in 0..10 {
            server.apply_objects(vec![node(&format!("n{i}"))]).unwrap();
            let latest = server.latest_change("", "nodes");
            until("the change is applied", || progress.has_applied(latest)).await;
            assert_eq!(seen.0.lock().unwrap().len(), i + 1);
        }
        // A watch that cannot be opened again: the version is unknown meanwhile, and known
        // again once the watch resumes, with no event needed.
        server.faults().drop_watches_after_events(None);
        server.faults().fail_with(
            "watch",
            "nodes",
            1.0,
            apiserver::FaultResponse::InternalError,
        );
        server.faults().drop_watches();
        until("the ended watch is noticed", || {
            progress.applied().is_none()
        })
        .await;
        server.faults().clear();
        let latest = server.latest_change("", "nodes");
        until("the watch resumes", || progress.has_applied(latest)).await;
        assert_eq!(seen.0.lock().unwrap().len(), 10, "nothing listed again");
        token.cancel();
        task.await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bookmarks_move_progress_past_changes_of_other_resources() {
        let server = apiserver::ApiServer::new(apiserver::Config {
            bookmark_interval: std::time::Duration::from_millis(20),
            ..apiserver::Config::default()
        });
        let seen = Seen::default();
        let (progress, token, task) = run_node_informer(&server, &seen);
        until("the list is applied", || progress.applied().is_some()).await;
        let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "other"}});
        server.apply_objects(vec![namespace]).unwrap();
        let now = server.resource_version();
        assert!(server.latest_change("", "nodes") < now);
        until("a bookmark brings the version on", || {
            progress.applied().is_some_and(|v| v >= now)
        })
        .await;
        token.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn synced_reports_a_stopped_informer_as_never_synced() {
        let (tx, rx) = watch::channel(false);
        let mut synced = Synced(rx);
        assert!(!synced.is_synced());
        drop(tx);
        assert!(!synced.wait().await);
    }

    #[tokio::test]
    async fn synced_wait_returns_once_set() {
        let (tx, rx) = watch::channel(false);
        let synced = Synced(rx);
        tx.send_replace(true);
        assert!(Synced::wait_all([synced.clone(), synced]).await);
    }
}
