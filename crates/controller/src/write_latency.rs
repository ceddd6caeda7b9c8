//! The controllers' own latency SLI: how long a change waits until a write that carries it is
//! acknowledged by the API server.
//!
//! Kubernetes' network programming SLI (`kubeproxy_network_programming_duration_seconds`) runs
//! from a change's trigger time to kube-proxy's rules, so it adds our share to kube-proxy's
//! sync period. These two histograms measure our share alone, one per controller:
//!
//! - `kube_endpoints_informer_to_write_duration_seconds`: from the instant our informer
//!   handed a change to the controller (it queued the object's key) to the acknowledgement of
//!   the write that carries it. Both ends are read on this process' monotonic clock, so it is
//!   exact to the millisecond. It includes the batch period, queue wait, retries after failed
//!   syncs, the client's rate limiting and the write's round trip; it leaves out the time the
//!   change took to reach us through the API server's watch.
//! - `kube_endpoints_trigger_to_write_duration_seconds`: from the change's trigger time, the
//!   value written in the `endpoints.kubernetes.io/last-change-trigger-time` annotation, to
//!   that acknowledgement, on the wall clock. This is where kube-proxy's SLI starts, so it is
//!   the controller's share of it, the watch delay included. Its start comes from a pod's
//!   Ready condition or a Service's creation, stored with a precision of one second and
//!   truncated: it reads up to a second long, and it leans on the clocks of the kubelet and
//!   the API server agreeing with ours.
//!
//! One sample per sync that wrote something, taken from the earliest change the sync carried.
//! A sync that finds nothing to write observes nothing; a sync that fails hands its start to
//! the retry, so a change that needed several attempts counts once, with all of them.

use prometheus::{Histogram, HistogramOpts, HistogramVec, Registry};
use reconcile::Timestamp;
use tokio::time::Instant;

/// The histogram of time from the informer to the acknowledged write.
pub const INFORMER_TO_WRITE: &str = "kube_endpoints_informer_to_write_duration_seconds";
/// The histogram of time from the trigger time to the acknowledged write.
pub const TRIGGER_TO_WRITE: &str = "kube_endpoints_trigger_to_write_duration_seconds";

/// Bucket bounds in seconds, from 5 ms to a minute. They are closer together than a power
/// series so that `histogram_quantile` interpolates within a few percent, and they fall on
/// round values (0.1, 0.5, 1, 5, 10, 30, 60) that alerts and SLO ratios can name. From 1 to
/// 1.5 s they are 100 ms apart: where a healthy cluster's trigger-to-write lands, its
/// second of truncation added to milliseconds of our own.
pub const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.125, 0.15,
    0.175, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5,
    1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.5, 15.0, 17.5, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The two histograms, labelled by controller; registered once per registry.
#[derive(Debug, Clone)]
pub struct WriteLatency {
    informer_to_write: HistogramVec,
    trigger_to_write: HistogramVec,
}

impl WriteLatency {
    /// Registers both histograms into `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let vec = |name: &str, help: &str| -> Result<HistogramVec, prometheus::Error> {
            let vec = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(BUCKETS.to_vec()),
                &["controller"],
            )?;
            registry.register(Box::new(vec.clone()))?;
            Ok(vec)
        };
        Ok(Self {
            informer_to_write: vec(
                INFORMER_TO_WRITE,
                "Seconds from the informer handing a change to the controller to the API \
                 server acknowledging the write that carries it",
            )?,
            trigger_to_write: vec(
                TRIGGER_TO_WRITE,
                "Seconds from a change's trigger time (the last-change-trigger-time \
                 annotation, one-second precision) to the API server acknowledging the write \
                 that carries it",
            )?,
        })
    }

    /// The pair of one controller (`endpointslice-controller`, ...).
    pub fn of(&self, controller: &str) -> ControllerLatency {
        ControllerLatency {
            informer_to_write: self.informer_to_write.with_label_values(&[controller]),
            trigger_to_write: self.trigger_to_write.with_label_values(&[controller]),
        }
    }
}

/// One controller's two histograms.
#[derive(Debug, Clone)]
pub struct ControllerLatency {
    informer_to_write: Histogram,
    trigger_to_write: Histogram,
}

impl ControllerLatency {
    /// Records a successful sync of a key whose earliest uncarried change reached the
    /// controller at `since` (none when the sync was not asked for by a change, such as a
    /// start-up check); `wrote` is what the sync wrote.
    pub fn observe(&self, since: Option<Instant>, wrote: &Wrote) {
        let Wrote::Acknowledged { at, trigger_time } = *wrote else {
            return;
        };
        if let Some(since) = since {
            self.informer_to_write
                .observe(at.saturating_duration_since(since).as_secs_f64());
        }
        if let Some(trigger) = trigger_time {
            // The wall clock at the acknowledgement: now, less what passed since on the
            // monotonic clock. A trigger time in the future (clocks apart) counts as zero.
            let acked = Timestamp::now() - at.elapsed();
            let seconds = acked.duration_since(trigger).as_secs_f64();
            self.trigger_to_write.observe(seconds.max(0.0));
        }
    }
}

/// What a successful sync wrote, as far as the latency SLI cares.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Wrote {
    /// Nothing: the objects were already right, the sync only forgot state, or shadow mode.
    #[default]
    Nothing,
    /// At least one write, the last acknowledged `at`, carrying `trigger_time` when the
    /// written objects hold one.
    Acknowledged {
        /// When the API server answered the sync's last write.
        at: Instant,
        /// The change's trigger time, as the objects' annotation gives it.
        trigger_time: Option<Timestamp>,
    },
}

impl Wrote {
    /// A write acknowledged now, carrying `trigger_time`.
    pub fn now(trigger_time: Option<Timestamp>) -> Self {
        Wrote::Acknowledged {
            at: Instant::now(),
            trigger_time,
        }
    }

    /// A write acknowledged now if `wrote`, else nothing.
    pub fn when(wrote: bool, trigger_time: Option<Timestamp>) -> Self {
        if wrote {
            Self::now(trigger_time)
        } else {
            Wrote::Nothing
        }
    }
}
