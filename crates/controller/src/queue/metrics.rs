//! The work queue's Prometheus metrics, named and bucketed as client-go's workqueue package.
//!
//! Each queue registers its own metrics with a constant `name` label (`endpoint`,
//! `endpoint_slice`, `endpoint_slice_topology`); the registry merges them into one family per
//! metric name on scrape, so dashboards written for kube-controller-manager keep working. The
//! two "in progress" gauges are computed when scraped instead of by a ticking task, since they
//! only matter when somebody looks.

use std::sync::Arc;

use crate::instruments::Instruments;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Gauge, Histogram, IntCounter, IntGauge, Registry};

/// client-go's latency buckets: 10ns up to 10s, one per power of ten.
fn duration_buckets() -> Vec<f64> {
    (0..10).map(|i| 1e-8 * 10f64.powi(i)).collect()
}

/// Metrics of one queue, all labelled with its name.
#[derive(Clone, Debug)]
pub struct QueueMetrics {
    pub(crate) depth: IntGauge,
    pub(crate) adds: IntCounter,
    pub(crate) queue_duration: Histogram,
    pub(crate) work_duration: Histogram,
    pub(crate) retries: IntCounter,
}

impl QueueMetrics {
    /// Creates the metrics of the queue `name` and registers them into `registry`.
    ///
    /// Fails when a queue of the same name is already registered there.
    pub fn register(registry: &Registry, name: &str) -> Result<Self, prometheus::Error> {
        let instruments = Instruments::with_const_label(registry, "name", name);
        Ok(Self {
            depth: instruments.metric("workqueue_depth", "Current depth of workqueue")?,
            adds: instruments.metric(
                "workqueue_adds_total",
                "Total number of adds handled by workqueue",
            )?,
            queue_duration: instruments.histogram(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested.",
                duration_buckets(),
            )?,
            work_duration: instruments.histogram(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes.",
                duration_buckets(),
            )?,
            retries: instruments.metric(
                "workqueue_retries_total",
                "Total number of retries handled by workqueue",
            )?,
        })
    }
}

/// What the queue reports about keys being processed right now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Seconds spent so far on all keys being processed, summed.
    pub unfinished_seconds: f64,
    /// Seconds the longest-running key has been processed.
    pub longest_running_seconds: f64,
}

/// Computes `workqueue_unfinished_work_seconds` and
/// `workqueue_longest_running_processor_seconds` from the queue's state at scrape time.
pub(crate) struct ProgressCollector {
    unfinished: Gauge,
    longest: Gauge,
    descs: Vec<Desc>,
    probe: Arc<dyn Fn() -> Progress + Send + Sync>,
}

impl ProgressCollector {
    /// Registers the two gauges of queue `name`, read through `probe` on each scrape.
    pub(crate) fn register(
        registry: &Registry,
        name: &str,
        probe: Arc<dyn Fn() -> Progress + Send + Sync>,
    ) -> Result<(), prometheus::Error> {
        // Made here but registered as one collector, which sets them on each scrape.
        let instruments = Instruments::with_const_label(registry, "name", name);
        let unfinished = Gauge::with_opts(instruments.opts(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by \
             work_duration. Large values indicate stuck threads. One can deduce the number of \
             stuck threads by observing the rate at which this increases.",
        ))?;
        let longest = Gauge::with_opts(instruments.opts(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
        ))?;
        let descs = unfinished
            .desc()
            .into_iter()
            .chain(longest.desc())
            .cloned()
            .collect();
        registry.register(Box::new(Self {
            unfinished,
            longest,
            descs,
            probe,
        }))
    }
}

impl Collector for ProgressCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let progress = (self.probe)();
        self.unfinished.set(progress.unfinished_seconds);
        self.longest.set(progress.longest_running_seconds);
        let mut families = self.unfinished.collect();
        families.extend(self.longest.collect());
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_buckets_match_client_go() {
        let buckets = duration_buckets();
        assert_eq!(buckets.len(), 10);
        assert!((buckets[0] - 1e-8).abs() < 1e-20);
        assert!((buckets[9] - 10.0).abs() < 1e-9);
    }

    #[test]
    fn two_queues_share_metric_families_in_one_registry() {
        let registry = Registry::new();
        let a = QueueMetrics::register(&registry, "endpoint").unwrap();
        let b = QueueMetrics::register(&registry, "endpoint_slice").unwrap();
        a.adds.inc();
        b.adds.inc_by(2);
        let families = registry.gather();
        let adds = families
            .iter()
            .find(|f| f.name() == "workqueue_adds_total")
            .unwrap();
        assert_eq!(adds.get_metric().len(), 2);
        assert!(QueueMetrics::register(&registry, "endpoint").is_err());
    }
}
