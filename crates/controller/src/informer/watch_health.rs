//! How the informers' watches are doing: counters of events and failures per kind, and
//! `/readyz` held down while a watch keeps failing (see [`Readiness::watch_failed`]).

use prometheus::{IntCounterVec, Registry};

use crate::instruments::Instruments;

use crate::health::Readiness;

/// Shared by every informer of one run. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WatchHealth {
    readiness: Readiness,
    events: IntCounterVec,
    bytes: IntCounterVec,
    failures: IntCounterVec,
    restarts: IntCounterVec,
}

impl WatchHealth {
    /// Registers `informer_watch_events_total{kind}`, `informer_received_bytes_total{kind}`,
    /// `informer_watch_failures_total{kind}`
    /// and `informer_relists_after_resource_version_reset_total{kind}` on `registry`.
    pub fn register(registry: &Registry, readiness: Readiness) -> prometheus::Result<Self> {
        // Every counter is by the informer's kind.
        let instruments = Instruments::new(registry);
        let by_kind =
            |name: &str, help: &str| instruments.metric_vec::<IntCounterVec>(name, help, &["kind"]);
        let events = by_kind(
            "informer_watch_events_total",
            "Objects the informers received, listed or watched (added, changed or deleted), by kind.",
        )?;
        let bytes = by_kind(
            "informer_received_bytes_total",
            "Bytes of list and watch responses the informers received, by kind.",
        )?;
        let failures = by_kind(
            "informer_watch_failures_total",
            "Failed list or watch requests of the informers, by kind; /readyz fails while a watch keeps failing.",
        )?;
        let restarts = by_kind(
            "informer_relists_after_resource_version_reset_total",
            "Fresh lists an informer started because the server's resourceVersions went backwards (a restart with fresh state, an etcd restore).",
        )?;
        Ok(Self {
            readiness,
            events,
            bytes,
            failures,
            restarts,
        })
    }

    /// The counter of `kind`'s object events, to count without a label lookup each time.
    pub(crate) fn events_of(&self, kind: &str) -> prometheus::IntCounter {
        self.events.with_label_values(&[kind])
    }

    /// The counter of bytes received for `kind`.
    pub(crate) fn bytes_of(&self, kind: &str) -> prometheus::IntCounter {
        self.bytes.with_label_values(&[kind])
    }

    pub(crate) fn failed(&self, kind: &str) {
        self.failures.with_label_values(&[kind]).inc();
        self.readiness.watch_failed(kind);
    }

    pub(crate) fn working(&self, kind: &str) {
        self.readiness.watch_working(kind);
    }

    pub(crate) fn relisted_after_reset(&self, kind: &str) {
        self.restarts.with_label_values(&[kind]).inc();
    }
}
