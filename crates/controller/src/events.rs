//! Publishing the events the reconcilers plan, as core/v1 Events.
//!
//! Recording never blocks a sync: events go through a bounded channel to one background
//! task. When the API server is slow and the channel is full, the event is dropped with a log
//! line rather than queued without bound. Repeats of the same event (same object, reason and
//! message) within ten minutes bump the existing Event's count, as client-go's correlator does.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use reconcile::event::PlannedEvent;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Events waiting to be sent before new ones are dropped.
const CAPACITY: usize = 1000;
/// How long a repeat updates the earlier Event instead of creating a new one.
const CORRELATION_WINDOW: Duration = Duration::from_secs(600);

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
        (Self { tx, component }, send_loop(client, rx, shutdown))
    }

    /// Records an event (never waits).
    pub fn record(&self, involved: Involved, event: PlannedEvent) {
        let pending = Pending {
            component: self.component,
            involved,
            event,
        };
        if let Err(err) = self.tx.try_send(pending) {
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

async fn send_loop(client: Client, mut rx: mpsc::Receiver<Pending>, shutdown: CancellationToken) {
    let mut seen: HashMap<EventKey, Sent> = HashMap::new();
    loop {
        let pending = tokio::select! {
            p = rx.recv() => match p { Some(p) => p, None => return },
            () = shutdown.cancelled() => return,
        };
        let Pending {
            component,
            involved,
            event,
        } = pending;
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
