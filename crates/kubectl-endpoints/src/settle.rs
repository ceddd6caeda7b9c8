//! Waiting until the controllers have settled: the one wait `plan`, the conformance cases
//! (static and dynamic), `dev --exit-when-synced` and the fault schedules share.
//!
//! Controllers running in this process say themselves when they are done. They are settled
//! at a moment when, all at once: their informers have synced; each informer has applied
//! every change the server holds of its resource (the server's latest change of the resource
//! against the informer's [`controller::informer::Progress`]), so no watch event that could
//! queue work is on its way; no queue has a key ready, in flight or due within the horizon,
//! and no Event waits to be sent ([`controller::Activity`]); and the server's resourceVersion
//! did not move while this was looked at, so no write slipped in between the looks. One more
//! look a poll later must find the same, and then the wait is over: a few milliseconds after
//! the last sync, instead of a fixed quiet window after it.
//!
//! The horizon is the one the quiet window gave: a window of `w` with keys due within `h`
//! ignored waited for every key due within `w + h` of the moment the controllers went idle
//! (such a key kept resetting the window), and so does this. Writes, their number and their
//! order are the same; only the idle time after them goes.
//!
//! Controllers whose state cannot be seen (leader-elected replicas keep their queues to
//! themselves) are waited for as before: no write to the watched resources for the window,
//! with whatever idleness they report, by the server's [`apiserver::ApiServer::wait_until_quiet`].

use apiserver::ApiServer;
use controller::health::Readiness;
use controller::Activity;
use std::time::Duration;
use tokio::time::Instant;

/// How often in-process controllers are looked at; also the gap between the look that finds
/// them settled and the one that confirms it.
const POLL: Duration = Duration::from_millis(5);

/// The resources the controllers write: settling waits for their writes to stop.
pub const WRITTEN: &[&str] = &["endpoints", "endpointslices"];

/// What settling means for one caller.
#[derive(Debug, Clone, Copy)]
pub struct Quiet {
    /// The resources whose writes must have stopped for the window (`endpoints`,
    /// `endpointslices`).
    pub resources: &'static [&'static str],
    /// The quiet window: how long without such writes, and with the controllers idle,
    /// counts as settled when the controllers cannot be seen.
    pub window: Duration,
    /// Keys due later than this after a moment of idleness are not waited for by the window
    /// (see the module comment for what it means to controllers that can be seen).
    pub horizon: Duration,
    /// How long the wait may take before it gives up.
    pub deadline: Duration,
}

impl Quiet {
    /// Settling on the controllers' writes ([`WRITTEN`]) with a horizon as long as the
    /// window, as the former quiet window waited: `plan`, `dev` and the dynamic cases, each
    /// with its own window and deadline.
    pub const fn on_writes(window: Duration, deadline: Duration) -> Self {
        Self {
            resources: WRITTEN,
            window,
            horizon: window,
            deadline,
        }
    }

    /// How far ahead the controllers' queues must be empty for them to count as settled:
    /// what the window waited for, see the module comment.
    pub fn idle_horizon(&self) -> Duration {
        self.window + self.horizon
    }
}

/// What can be seen of the controllers being waited for.
pub enum Controllers<'a> {
    /// Controllers in this process: their readiness and their activity.
    InProcess {
        /// Turns true once their informers synced.
        readiness: &'a Readiness,
        /// Their queues, Event recorders and informers.
        activity: &'a Activity,
    },
    /// Controllers whose state cannot be seen; the function says whether they are idle as
    /// far as anything is known (always true when nothing is).
    Opaque(Box<dyn Fn() -> bool + Send + Sync + 'a>),
}

/// Waits until the controllers have settled (see the module comment). Returns false if
/// `quiet.deadline` passes first.
pub async fn settle(server: &ApiServer, controllers: &Controllers<'_>, quiet: &Quiet) -> bool {
    match controllers {
        Controllers::InProcess {
            readiness,
            activity,
        } => {
            let horizon = quiet.idle_horizon();
            let start = Instant::now();
            let mut settled_at: Option<u64> = None;
            loop {
                match (idle_at(server, readiness, activity, horizon), settled_at) {
                    (Some(now), Some(before)) if now == before => return true,
                    (now, _) => settled_at = now,
                }
                if start.elapsed() >= quiet.deadline {
                    return false;
                }
                tokio::time::sleep(POLL).await;
            }
        }
        Controllers::Opaque(idle) => {
            server
                .wait_until_quiet(quiet.resources, quiet.window, quiet.deadline, idle)
                .await
        }
    }
}

/// The server's resourceVersion, if the controllers are idle at it: synced, every informer
/// caught up with its resource's latest change, every queue idle within `horizon` and no
/// Event in flight, with no write to the server while that was looked at. Informers are
/// looked at before queues: an event applied in between has queued its keys by the time the
/// queues are looked at. Any change after the first look moves the resourceVersion.
fn idle_at(
    server: &ApiServer,
    readiness: &Readiness,
    activity: &Activity,
    horizon: Duration,
) -> Option<u64> {
    let before = server.resource_version();
    let idle = readiness.is_synced()
        && activity.has_applied(|group, plural| server.latest_change(group, plural))
        && activity.is_idle_within(horizon);
    (idle && server.resource_version() == before).then_some(before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use serde_json::json;
    use std::sync::Arc;

    const QUIET: Quiet = Quiet::on_writes(Duration::from_millis(250), Duration::from_secs(60));

    fn options() -> controller::Options {
        controller::Options {
            settings: controller::config::Settings::default(),
            endpoints: true,
            endpoint_slices: true,
            shadow: None,
            mirroring: true,
        }
    }

    fn web(pods: usize) -> Vec<serde_json::Value> {
        let mut objects = vec![
            node("n1"),
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
            }),
        ];
        for i in 0..pods {
            objects.push(pod(i));
        }
        objects
    }

    fn pod(i: usize) -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("web-{i}"), "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "podIP": format!("10.0.0.{}", i + 1),
                       "podIPs": [{"ip": format!("10.0.0.{}", i + 1)}],
                       "conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    async fn endpoints_in_slices(client: &kube::Client) -> usize {
        kube::Api::<EndpointSlice>::namespaced(client.clone(), "default")
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|s| s.endpoints.len())
            .sum()
    }

    /// Settling right after the start must wait for the informers' first lists and the syncs
    /// they queue, and settling after a change for the sync the change's watch event queues:
    /// at both moments the slices already hold what the controllers were going to write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_process_controllers_settle_once_what_they_write_is_written() {
        let server = ApiServer::new(apiserver::Config::default());
        server.apply_objects(web(3)).unwrap();
        let client = kube::Client::new(server.service(), "default");
        let (readiness, activity) = (Readiness::new(), Activity::new());
        let token = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn({
            let (client, readiness, activity, token) = (
                client.clone(),
                readiness.clone(),
                activity.clone(),
                token.clone(),
            );
            async move {
                let registry = prometheus::Registry::new();
                controller::run(client, &options(), &registry, readiness, activity, token).await
            }
        });
        let controllers = Controllers::InProcess {
            readiness: &readiness,
            activity: &activity,
        };
        assert!(settle(&server, &controllers, &QUIET).await);
        assert_eq!(endpoints_in_slices(&client).await, 3);
        let writes = server.writes_to(QUIET.resources);

        server.apply_objects(vec![pod(3)]).unwrap();
        assert!(settle(&server, &controllers, &QUIET).await);
        assert_eq!(endpoints_in_slices(&client).await, 4);
        assert!(server.writes_to(QUIET.resources) > writes);

        token.cancel();
        task.await.unwrap().unwrap();
    }

    struct Ignore;
    impl controller::informer::Handler<Node> for Ignore {
        fn on_add(&self, _: &Arc<Node>) {}
        fn on_update(&self, _: &Arc<Node>, _: &Arc<Node>) {}
        fn on_delete(&self, _: &Arc<Node>) {}
    }

    fn node(name: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    }

    async fn until(what: &str, condition: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !condition() {
            assert!(Instant::now() < deadline, "never: {what}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The pieces the look combines, one at a time: each must hold for the controllers to be
    /// idle, and the look gives the server's resourceVersion it found them idle at.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_needs_synced_informers_caught_up_and_idle_queues() {
        let server = ApiServer::new(apiserver::Config::default());
        server.apply_objects(vec![node("a")]).unwrap();
        let (readiness, activity) = (Readiness::new(), Activity::new());
        let queue = controller::queue::WorkQueue::<String>::new(
            controller::queue::QueueConfig::endpoints(),
        );
        activity.watch(&queue);
        activity.set_running();
        let client = kube::Client::new(server.service(), "default");
        let informer = controller::informer::Informer::new(
            kube::Api::<Node>::all(client),
            kube::runtime::watcher::Config::default(),
            |n: Node| Some(Arc::new(n)),
        );
        let progress = informer.progress();
        activity.watch_informer(progress.clone());
        let horizon = Duration::from_secs(1);
        let idle = || idle_at(&server, &readiness, &activity, horizon);

        readiness.set(true);
        assert_eq!(idle(), None, "the informer has not listed");
        let token = tokio_util::sync::CancellationToken::new();
        let running = tokio::spawn({
            let token = token.clone();
            async move { informer.run(Ignore, token.cancelled()).await }
        });
        until("the informer lists", || idle().is_some()).await;
        assert_eq!(idle(), Some(server.resource_version()));

        readiness.set(false);
        assert_eq!(idle(), None, "not synced");
        readiness.set(true);

        queue.add_after("late".into(), Duration::from_secs(5));
        assert!(
            idle().is_some(),
            "a key due past the horizon is not waited for"
        );
        queue.add_after("soon".into(), Duration::from_millis(500));
        assert_eq!(idle(), None, "a key due within the horizon is");
        let key = tokio::time::timeout(Duration::from_secs(30), queue.get())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(key, "soon");
        assert_eq!(idle(), None, "a key in flight");
        queue.done(&key);
        assert!(idle().is_some());

        // A change of the watched resource: not idle until the informer has applied it.
        server.apply_objects(vec![node("b")]).unwrap();
        let latest = server.latest_change("", "nodes");
        if !progress.has_applied(latest) {
            assert_eq!(idle(), None, "the watch event is on its way");
        }
        until("the informer applies the change", || idle().is_some()).await;
        assert!(progress.has_applied(latest));

        token.cancel();
        running.await.unwrap();
    }
}
