//! Publishing the events the reconcilers plan, as core/v1 Events.
//!
//! Recording never blocks a sync: events go through a bounded channel to one background
//! task. When the API server is slow and the channel is full, the event is dropped with a log
//! line rather than queued without bound. Repeats of the same event (same object, reason and
//! message) within ten minutes bump the existing Event's count, as client-go's correlator does.
//! Before either, client-go's spam filter ([`SpamFilter`]) lets each component send at most
//! 25 Events about one object at once and one more every five minutes after that, so that a
//! Service that fails every sync cannot flood the API server with Events.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use reconcile::event::PlannedEvent;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::token_bucket::TokenBucket;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Events waiting to be sent before new ones are dropped.
const CAPACITY: usize = 1000;
/// How long a repeat updates the earlier Event instead of creating a new one.
const CORRELATION_WINDOW: Duration = Duration::from_secs(600);
/// Events a component may send about one object at once (client-go's `defaultSpamBurst`).
const SPAM_BURST: u32 = 25;
/// How fast that allowance refills: one Event every five minutes (`defaultSpamQPS`).
const SPAM_REFILL_PER_SECOND: f64 = 1.0 / 300.0;
/// Objects the spam filter remembers before forgetting the least recently seen
/// (client-go's `maxLruCacheEntries`).
const SPAM_MEMORY: usize = 4096;

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Involved {
    /// `Service` or `Endpoints`.
    pub kind: &'static str,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID, when known.
    pub uid: String,
}

struct Pending {
    component: &'static str,
    involved: Involved,
    event: PlannedEvent,
}

/// Cheap handle for recording events from syncs.
#[derive(Clone)]
pub struct EventRecorder {
    tx: mpsc::Sender<Pending>,
    component: &'static str,
    in_flight: InFlight,
}

/// How many recorded events are not yet handled by the sending task: queued, or being sent
/// (or dropped by the spam filter). Clones share the count.
#[derive(Debug, Clone, Default)]
pub struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    /// Whether every event recorded so far has been sent (or dropped).
    pub fn is_empty(&self) -> bool {
        self.0.load(Ordering::SeqCst) == 0
    }

    fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn done(&self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Marks one event handled when the sending task is done with it, however it was done.
struct Handling<'a>(&'a InFlight);

impl Drop for Handling<'_> {
    fn drop(&mut self) {
        self.0.done();
    }
}

impl EventRecorder {
    /// A recorder for `component` (e.g. `endpoint-slice-controller`) and the task that sends
    /// its events until `shutdown`.
    pub fn new(
        client: Client,
        component: &'static str,
        shutdown: CancellationToken,
    ) -> (Self, impl std::future::Future<Output = ()>) {
        let (tx, rx) = mpsc::channel(CAPACITY);
        let in_flight = InFlight::default();
        let sender = send_loop(client, rx, in_flight.clone(), shutdown);
        (
            Self {
                tx,
                component,
                in_flight,
            },
            sender,
        )
    }

    /// The events recorded and not yet sent, for [`crate::Activity`].
    pub fn in_flight(&self) -> InFlight {
        self.in_flight.clone()
    }

    /// Records an event (never waits).
    pub fn record(&self, involved: Involved, event: PlannedEvent) {
        let pending = Pending {
            component: self.component,
            involved,
            event,
        };
        // Counted before it is queued, so that it is never in the channel uncounted.
        self.in_flight.add();
        if let Err(err) = self.tx.try_send(pending) {
            self.in_flight.done();
            let reason = match &err {
                mpsc::error::TrySendError::Full(p) | mpsc::error::TrySendError::Closed(p) => {
                    p.event.reason.clone()
                }
            };
            tracing::warn!(reason, "event dropped: the event queue is full or closed");
        }
    }
}

/// (namespace, involved name, reason, message): what makes two events the same.
type EventKey = (String, String, String, String);
/// The Event already written for a key: its name, count and when it was first sent.
type Sent = (String, i32, std::time::Instant);

/// client-go's `EventSourceObjectSpamFilter`: a token bucket per component and object.
///
/// Every Event counts, a repeat that only bumps a count included, as upstream filters after
/// correlating. A refused Event is dropped, not delayed.
#[derive(Debug, Default)]
pub struct SpamFilter {
    buckets: HashMap<(&'static str, Involved), (TokenBucket, Instant)>,
}

impl SpamFilter {
    /// Whether `component` may send one more Event about `involved` at `now`.
    pub fn allow(&mut self, component: &'static str, involved: &Involved, now: Instant) -> bool {
        let key = (component, involved.clone());
        if !self.buckets.contains_key(&key) && self.buckets.len() >= SPAM_MEMORY {
            let oldest = self
                .buckets
                .iter()
                .min_by_key(|(_, (_, last))| *last)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.buckets.remove(&oldest);
            }
        }
        let (bucket, last) = self.buckets.entry(key).or_insert_with(|| {
            // A new bucket is full at `now`, as upstream's starts full.
            (
                TokenBucket::new_at(SPAM_REFILL_PER_SECOND, SPAM_BURST, now),
                now,
            )
        });
        *last = now;
        bucket.try_take_at(now)
    }
}

async fn send_loop(
    client: Client,
    mut rx: mpsc::Receiver<Pending>,
    in_flight: InFlight,
    shutdown: CancellationToken,
) {
    let mut seen: HashMap<EventKey, Sent> = HashMap::new();
    let mut spam = SpamFilter::default();
    loop {
        let pending = tokio::select! {
            p = rx.recv() => match p { Some(p) => p, None => return },
            () = shutdown.cancelled() => return,
        };
        let _handling = Handling(&in_flight);
        let Pending {
            component,
            involved,
            event,
        } = pending;
        if !spam.allow(component, &involved, Instant::now()) {
            tracing::debug!(
                reason = event.reason,
                object = %format_args!("{}/{}", involved.namespace, involved.name),
                "event dropped: too many events about this object"
            );
            continue;
        }
        let api: Api<Event> = Api::namespaced(client.clone(), &involved.namespace);
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let key = (
            involved.namespace.clone(),
            involved.name.clone(),
            event.reason.clone(),
            event.message.clone(),
        );
        if let Some((name, count, first)) = seen.get_mut(&key) {
            if first.elapsed() < CORRELATION_WINDOW {
                *count += 1;
                let patch = serde_json::json!({"count": *count, "lastTimestamp": now});
                match api
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => continue,
                    Err(err) => tracing::debug!(%err, "could not update event; creating a new one"),
                }
            }
        }
        let nanos = k8s_openapi::jiff::Timestamp::now().as_nanosecond();
        let name = format!("{}.{:x}", involved.name, nanos);
        let object = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(involved.namespace.clone()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some(involved.kind.into()),
                namespace: Some(involved.namespace.clone()),
                name: Some(involved.name.clone()),
                uid: (!involved.uid.is_empty()).then(|| involved.uid.clone()),
                ..Default::default()
            },
            reason: Some(event.reason.clone()),
            message: Some(event.message.clone()),
            type_: Some(event.type_.as_str().into()),
            source: Some(EventSource {
                component: Some(component.into()),
                host: None,
            }),
            reporting_component: Some(component.into()),
            reporting_instance: Some(String::new()),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            ..Default::default()
        };
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => {
                seen.insert(key, (name, 1, std::time::Instant::now()));
            }
            Err(err) => tracing::warn!(%err, reason = event.reason, "could not record event"),
        }
        if seen.len() > 10_000 {
            seen.retain(|_, (_, _, first)| first.elapsed() < CORRELATION_WINDOW);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str) -> Involved {
        Involved {
            kind: "Service",
            namespace: "default".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        }
    }

    /// Has `filter` allow `component` its whole burst of 25 events about `object` at `at`.
    fn use_up_burst(
        filter: &mut SpamFilter,
        component: &'static str,
        object: &Involved,
        at: Instant,
    ) {
        for n in 0..SPAM_BURST {
            assert!(filter.allow(component, object, at), "event {n}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_component_sends_25_events_about_an_object_then_one_every_five_minutes() {
        let mut filter = SpamFilter::default();
        let web = service("web");
        let start = Instant::now();
        use_up_burst(&mut filter, "endpoint-controller", &web, start);
        assert!(!filter.allow("endpoint-controller", &web, start));
        let almost = start + Duration::from_secs(299);
        assert!(!filter.allow("endpoint-controller", &web, almost));
        let refilled = start + Duration::from_secs(300);
        assert!(filter.allow("endpoint-controller", &web, refilled));
        assert!(!filter.allow("endpoint-controller", &web, refilled));
    }

    #[tokio::test(start_paused = true)]
    async fn another_object_or_component_has_its_own_allowance() {
        let mut filter = SpamFilter::default();
        let now = Instant::now();
        use_up_burst(&mut filter, "endpoint-controller", &service("web"), now);
        assert!(!filter.allow("endpoint-controller", &service("web"), now));
        assert!(filter.allow("endpoint-controller", &service("db"), now));
        assert!(filter.allow("endpoint-slice-controller", &service("web"), now));
    }

    /// A recorder reporting as `c` to a fresh API server, with what it writes there.
    struct Recording<S> {
        recorder: EventRecorder,
        /// The recorder's sender, not running yet.
        sender: S,
        /// The server's Events in `default`.
        events: Api<Event>,
        /// Stops the sender.
        shutdown: CancellationToken,
    }

    fn recording() -> Recording<impl std::future::Future<Output = ()>> {
        let server = apiserver::ApiServer::new(apiserver::Config::default());
        let client = Client::new(server.service(), "default");
        let shutdown = CancellationToken::new();
        let (recorder, sender) = EventRecorder::new(client.clone(), "c", shutdown.clone());
        Recording {
            recorder,
            sender,
            events: Api::namespaced(client, "default"),
            shutdown,
        }
    }

    #[tokio::test]
    async fn events_past_the_allowance_are_not_sent() {
        let r = recording();
        let sending = tokio::spawn(r.sender);
        let planned = |n: usize| {
            PlannedEvent::warning("FailedToUpdateEndpointSlices", format!("attempt {n}"))
        };
        for n in 0..30 {
            r.recorder.record(service("web"), planned(n));
        }
        // One task sends in order: once the event about "db" is written, "web"'s are done.
        r.recorder.record(service("db"), planned(0));
        let deadline = Instant::now() + Duration::from_secs(30);
        let events = loop {
            let events = r.events.list(&Default::default()).await.unwrap().items;
            let about = |name: &str| {
                events
                    .iter()
                    .filter(|e| e.involved_object.name.as_deref() == Some(name))
                    .count()
            };
            if about("db") == 1 {
                break about("web");
            }
            assert!(Instant::now() < deadline, "the db event never came");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(events, SPAM_BURST as usize);
        r.shutdown.cancel();
        sending.await.unwrap();
    }

    #[tokio::test]
    async fn recorded_events_are_in_flight_until_written_or_dropped() {
        let r = recording();
        let in_flight = r.recorder.in_flight();
        assert!(in_flight.is_empty());
        let planned = PlannedEvent::normal("Synced", "m");
        // 30 about one object: 25 are written, 5 dropped by the spam filter.
        for _ in 0..30 {
            r.recorder.record(service("web"), planned.clone());
        }
        assert!(!in_flight.is_empty(), "queued, the sender has not run");
        let sending = tokio::spawn(r.sender);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !in_flight.is_empty() {
            assert!(Instant::now() < deadline, "the events were never handled");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Once none is in flight, what was written is there to read: the repeats bumped one
        // Event's count.
        let events = r.events.list(&Default::default()).await.unwrap().items;
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].count, Some(SPAM_BURST as i32));
        r.shutdown.cancel();
        sending.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_seen_object_is_forgotten_past_4096() {
        let mut filter = SpamFilter::default();
        let start = Instant::now();
        use_up_burst(&mut filter, "c", &service("first"), start);
        for n in 0..SPAM_MEMORY {
            let later = start + Duration::from_millis(1 + n as u64);
            assert!(filter.allow("c", &service(&format!("s{n}")), later));
        }
        assert_eq!(filter.buckets.len(), SPAM_MEMORY);
        // "first" was evicted, so it starts over with a full allowance.
        assert!(filter.allow("c", &service("first"), start + Duration::from_secs(5)));
    }
}
