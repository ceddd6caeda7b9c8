//! Whether the controllers have work to do: every queue empty, nothing in flight, nothing
//! due soon, no Event waiting to be sent; and how far their informers have caught up.
//!
//! `plan`, `conformance` and `dev --exit-when-synced` run the live controllers until they have
//! nothing left to do; this is how they ask. A key waiting out a long backoff (a sync that
//! keeps failing the same way) does not count as work, so a permanently failing Service does
//! not keep them waiting for ever.
//!
//! Idle queues alone do not say the controllers are done: between a write and the watch event
//! that queues the next sync, every queue is empty. [`Activity::has_applied`] closes that gap
//! for a caller that can ask the API server for the resourceVersion of its latest change of
//! each resource: once every informer has applied that far and the queues are idle, nothing
//! is on its way.

use crate::events::InFlight;
use crate::informer::Progress;
use crate::queue::{QueueKey, WorkQueue};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

type Probe = Box<dyn Fn(Duration) -> bool + Send + Sync>;

#[derive(Default)]
struct Watched {
    queues: Vec<Probe>,
    events: Vec<InFlight>,
    informers: Vec<Progress>,
    /// Set once the workers run and the work found at start (leftover Endpoints, the first
    /// topology check) is queued: before that, empty queues mean nothing.
    running: bool,
}

/// A handle the caller keeps; [`crate::run`] registers its queues, Event recorders and
/// informers in it. Cheap to clone.
#[derive(Clone, Default)]
pub struct Activity(Arc<Mutex<Watched>>);

impl std::fmt::Debug for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Activity").finish_non_exhaustive()
    }
}

impl Activity {
    /// A handle with nothing to watch yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Watched> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a queue to watch.
    pub fn watch<K: QueueKey>(&self, queue: &WorkQueue<K>) {
        let queue = queue.clone();
        self.lock()
            .queues
            .push(Box::new(move |horizon| queue.is_idle_within(horizon)));
    }

    /// Adds an Event recorder's backlog to watch: Events are sent after the sync that
    /// recorded them is done.
    pub fn watch_events(&self, in_flight: InFlight) {
        self.lock().events.push(in_flight);
    }

    /// Adds an informer's progress to watch (see [`Self::has_applied`]).
    pub fn watch_informer(&self, progress: Progress) {
        self.lock().informers.push(progress);
    }

    /// The workers run and the work found at start is queued.
    pub fn set_running(&self) {
        self.lock().running = true;
    }

    /// True when the workers run, at least one queue is registered, and no queue has a key
    /// ready, in flight, or due within `horizon`, and no recorded Event waits to be sent.
    /// Queues are looked at before Event backlogs: a sync records its Events before it is
    /// done, so one that ends in between is seen by the second look.
    pub fn is_idle_within(&self, horizon: Duration) -> bool {
        let watched = self.lock();
        watched.running
            && !watched.queues.is_empty()
            && watched.queues.iter().all(|idle| idle(horizon))
            && watched.events.iter().all(InFlight::is_empty)
    }

    /// True when at least one informer is registered and every one has applied and handled
    /// the changes of its resource up to `latest(group, plural)`, the resourceVersion of the
    /// server's latest change of that resource.
    pub fn has_applied(&self, latest: impl Fn(&str, &str) -> u64) -> bool {
        let watched = self.lock();
        !watched.informers.is_empty()
            && watched
                .informers
                .iter()
                .all(|p| p.has_applied(latest(p.group(), p.plural())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueConfig;

    #[tokio::test(start_paused = true)]
    async fn idle_needs_running_workers_empty_queues_and_no_event_backlog() {
        let activity = Activity::new();
        assert!(
            !activity.is_idle_within(Duration::ZERO),
            "nothing registered"
        );
        let queue = WorkQueue::<String>::new(QueueConfig::endpoints());
        activity.watch(&queue);
        assert!(
            !activity.is_idle_within(Duration::ZERO),
            "workers not running yet"
        );
        activity.set_running();
        assert!(activity.is_idle_within(Duration::ZERO));

        queue.add_after("a".to_owned(), Duration::from_secs(2));
        assert!(
            !activity.is_idle_within(Duration::from_secs(3)),
            "due within the horizon"
        );
        assert!(
            activity.is_idle_within(Duration::from_secs(1)),
            "due past the horizon"
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        let key = queue.try_get().expect("due");
        assert!(!activity.is_idle_within(Duration::ZERO), "in flight");
        queue.done(&key);
        assert!(activity.is_idle_within(Duration::ZERO));
    }

    #[tokio::test]
    async fn an_event_waiting_to_be_sent_is_work() {
        let activity = Activity::new();
        let queue = WorkQueue::<String>::new(QueueConfig::endpoints());
        activity.watch(&queue);
        activity.set_running();
        let server = apiserver::ApiServer::new(apiserver::Config::default());
        let client = kube::Client::new(server.service(), "default");
        let shutdown = tokio_util::sync::CancellationToken::new();
        let (recorder, _sender) = crate::events::EventRecorder::new(client, "c", shutdown);
        activity.watch_events(recorder.in_flight());
        assert!(activity.is_idle_within(Duration::ZERO));
        let involved = crate::events::Involved {
            kind: "Service",
            namespace: "default".into(),
            name: "web".into(),
            uid: String::new(),
        };
        recorder.record(involved, reconcile::event::PlannedEvent::warning("R", "m"));
        assert!(
            !activity.is_idle_within(Duration::ZERO),
            "the sender never ran"
        );
    }

    #[test]
    fn informers_have_applied_when_each_reached_its_own_resources_latest_change() {
        let activity = Activity::new();
        let latest = |_: &str, plural: &str| if plural == "pods" { 40 } else { 7 };
        assert!(!activity.has_applied(latest), "no informer registered");
        let pods = Progress::new("".into(), "pods".into());
        let slices = Progress::new("discovery.k8s.io".into(), "endpointslices".into());
        activity.watch_informer(pods.clone());
        activity.watch_informer(slices.clone());
        assert!(!activity.has_applied(latest), "nothing listed yet");
        pods.advance_to("40");
        assert!(!activity.has_applied(latest), "slices unknown");
        slices.advance_to("39");
        assert!(activity.has_applied(latest));
        pods.advance_to("39");
        assert!(
            !activity.has_applied(latest),
            "the pod change at 40 is on its way"
        );
    }
}
