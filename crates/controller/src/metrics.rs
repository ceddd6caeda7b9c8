//! The EndpointSlice controller's Prometheus metrics, with upstream's exact names.
//!
//! Dashboards and alerts written for kube-controller-manager must keep working when these
//! controllers move out of it, so every name, label and bucket below is upstream's
//! (subsystem `endpoint_slice_controller`). We use the `prometheus` crate because it keeps
//! counter names as given; upstream's counters have no `_total` suffix, and adding one would
//! break those dashboards. The per-service figures behind the gauges are computed as data in
//! `reconcile`; this module only holds the instruments and renders the registry.

use crate::instruments::Instruments;
use prometheus::{
    exponential_buckets, Encoder, Gauge, GaugeVec, Histogram, HistogramVec, IntCounterVec,
    Registry, TextEncoder,
};

const SUBSYSTEM: &str = "endpoint_slice_controller";

/// The EndpointSlice controller's metrics, registered in one registry.
#[derive(Debug, Clone)]
pub struct EndpointSliceMetrics {
    /// `endpoints_added_per_sync`: endpoints added on each service sync.
    pub endpoints_added_per_sync: Histogram,
    /// `endpoints_removed_per_sync`: endpoints removed on each service sync.
    pub endpoints_removed_per_sync: Histogram,
    /// `endpoints_desired`, `num_endpoint_slices`, `desired_endpoint_slices` and
    /// `changes{operation}`.
    pub totals: SliceTotals,
    /// `endpointslices_changed_per_sync{topology,traffic_distribution}`: slices changed on
    /// each service sync; `topology` is `Auto` or `Disabled`, `traffic_distribution` the
    /// service's value or empty.
    pub endpointslices_changed_per_sync: HistogramVec,
    /// `syncs{result}`: service syncs, by `success`, `stale` or `error`.
    pub syncs: IntCounterVec,
    /// `services_count_by_traffic_distribution{traffic_distribution}`: services using each
    /// trafficDistribution value.
    pub services_count_by_traffic_distribution: GaugeVec,
}

impl EndpointSliceMetrics {
    /// Creates the metrics and registers them into `registry`; fails if they already are.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let instruments = Instruments::with_subsystem(registry, SUBSYSTEM);
        // Upstream's buckets for endpoint counts: 2, 4, ..., 32768.
        let endpoint_buckets = exponential_buckets(2.0, 2.0, 15)?;
        Ok(Self {
            endpoints_added_per_sync: instruments.histogram(
                "endpoints_added_per_sync",
                "Number of endpoints added on each Service sync",
                endpoint_buckets.clone(),
            )?,
            endpoints_removed_per_sync: instruments.histogram(
                "endpoints_removed_per_sync",
                "Number of endpoints removed on each Service sync",
                endpoint_buckets,
            )?,
            totals: SliceTotals::register(registry, SUBSYSTEM)?,
            endpointslices_changed_per_sync: instruments.histogram_vec(
                "endpointslices_changed_per_sync",
                "Number of EndpointSlices changed on each Service sync",
                prometheus::DEFAULT_BUCKETS.to_vec(),
                &["topology", "traffic_distribution"],
            )?,
            syncs: instruments.metric_vec("syncs", "Number of EndpointSlice syncs", &["result"])?,
            services_count_by_traffic_distribution: instruments.metric_vec(
                "services_count_by_traffic_distribution",
                "Number of Services using some specific trafficDistribution",
                &["traffic_distribution"],
            )?,
        })
    }
}

/// What both controllers that write EndpointSlices (the EndpointSlice and the mirroring
/// controller) export alike, each under its own subsystem: the desired endpoints, the slices
/// there are and would be with perfect packing, and the changes made.
#[derive(Debug, Clone)]
pub struct SliceTotals {
    /// `endpoints_desired`.
    pub endpoints_desired: Gauge,
    /// `num_endpoint_slices`.
    pub num_endpoint_slices: Gauge,
    /// `desired_endpoint_slices`.
    pub desired_endpoint_slices: Gauge,
    /// `changes{operation}`: by `create`, `update` or `delete`.
    pub changes: IntCounterVec,
}

impl SliceTotals {
    /// The four instruments under `subsystem`, registered into `registry`.
    pub fn register(registry: &Registry, subsystem: &str) -> Result<Self, prometheus::Error> {
        let instruments = Instruments::with_subsystem(registry, subsystem);
        Ok(Self {
            endpoints_desired: instruments
                .metric("endpoints_desired", "Number of endpoints desired")?,
            num_endpoint_slices: instruments
                .metric("num_endpoint_slices", "Number of EndpointSlices")?,
            desired_endpoint_slices: instruments.metric(
                "desired_endpoint_slices",
                "Number of EndpointSlices that would exist with perfect endpoint allocation",
            )?,
            changes: instruments.metric_vec(
                "changes",
                "Number of EndpointSlice changes",
                &["operation"],
            )?,
        })
    }

    /// Sets the three gauges.
    pub fn set(&self, endpoints: usize, slices: usize, desired_slices: usize) {
        self.endpoints_desired.set(endpoints as f64);
        self.num_endpoint_slices.set(slices as f64);
        self.desired_endpoint_slices.set(desired_slices as f64);
    }

    /// Counts one change (`create`, `update` or `delete`).
    pub fn changed(&self, operation: &str) {
        self.changes.with_label_values(&[operation]).inc();
    }
}

/// The registry in Prometheus' text exposition format, as served on `/metrics`.
pub fn render(registry: &Registry) -> Result<String, prometheus::Error> {
    let mut buffer = Vec::new();
    TextEncoder::new().encode(&registry.gather(), &mut buffer)?;
    String::from_utf8(buffer).map_err(|error| prometheus::Error::Msg(error.to_string()))
}

/// Registers the `process_*` metrics every Go binary of Kubernetes exports
/// (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_open_fds`,
/// `process_start_time_seconds`, ...), read from `/proc` at each scrape. They exist on Linux
/// only, where `/proc` does; elsewhere this registers nothing.
pub fn register_process_metrics(registry: &Registry) -> Result<(), prometheus::Error> {
    #[cfg(target_os = "linux")]
    registry.register(Box::new(
        prometheus::process_collector::ProcessCollector::for_self(),
    ))?;
    #[cfg(not(target_os = "linux"))]
    let _ = registry;
    Ok(())
}

/// The content type of [`render`]'s output.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the metric tests read: a set registered alone and used, and the names it exposes.
#[cfg(test)]
pub(crate) mod testing {
    use prometheus::Registry;

    /// A registry holding only what `register` registers, once `record` used it.
    pub(crate) fn registered<M>(
        register: impl FnOnce(&Registry) -> Result<M, prometheus::Error>,
        record: impl FnOnce(&M),
    ) -> Registry {
        let registry = Registry::new();
        record(&register(&registry).expect("a fresh registry takes every name"));
        registry
    }

    /// The text exposition of what `register` registers, once `record` used it.
    pub(crate) fn rendered<M>(
        register: impl FnOnce(&Registry) -> Result<M, prometheus::Error>,
        record: impl FnOnce(&M),
    ) -> String {
        super::render(&registered(register, record)).expect("the registry renders")
    }

    /// Asserts that the histogram `name`, once `record` observed one value between its two
    /// lowest bounds, has buckets from the `lowest` bound, through the `next` and up to the
    /// `highest`, and none at the bound `beyond`. Returns the whole exposition.
    pub(crate) fn assert_buckets<M>(
        register: impl FnOnce(&Registry) -> Result<M, prometheus::Error>,
        record: impl FnOnce(&M),
        name: &str,
        [lowest, next, highest, beyond]: [&str; 4],
    ) -> String {
        let text = rendered(register, record);
        let bucket = |le: &str| format!(r#"{name}_bucket{{le="{le}"}}"#);
        assert!(text.contains(&format!("{} 0", bucket(lowest))), "{text}");
        assert!(text.contains(&format!("{} 1", bucket(next))), "{text}");
        assert!(text.contains(&format!("{} 1", bucket(highest))), "{text}");
        assert!(!text.contains(&bucket(beyond)), "{text}");
        text
    }

    /// Asserts that what `register` registers, once `record` used it, is exposed as the
    /// families `expected` (sorted).
    pub(crate) fn assert_family_names<M>(
        register: impl FnOnce(&Registry) -> Result<M, prometheus::Error>,
        record: impl FnOnce(&M),
        expected: &[&str],
    ) {
        let mut names: Vec<String> = registered(register, record)
            .gather()
            .iter()
            .map(|family| family.name().to_string())
            .collect();
        names.sort();
        assert_eq!(names, expected);
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{assert_buckets, assert_family_names, rendered};
    use super::*;

    #[test]
    fn metric_names_are_upstream_names() {
        assert_family_names(
            EndpointSliceMetrics::register,
            |metrics| {
                metrics.totals.changed("create");
                metrics.syncs.with_label_values(&["success"]).inc();
                metrics
                    .endpointslices_changed_per_sync
                    .with_label_values(&["Disabled", ""])
                    .observe(1.0);
                metrics
                    .services_count_by_traffic_distribution
                    .with_label_values(&["PreferClose"])
                    .set(1.0);
            },
            &[
                "endpoint_slice_controller_changes",
                "endpoint_slice_controller_desired_endpoint_slices",
                "endpoint_slice_controller_endpoints_added_per_sync",
                "endpoint_slice_controller_endpoints_desired",
                "endpoint_slice_controller_endpoints_removed_per_sync",
                "endpoint_slice_controller_endpointslices_changed_per_sync",
                "endpoint_slice_controller_num_endpoint_slices",
                "endpoint_slice_controller_services_count_by_traffic_distribution",
                "endpoint_slice_controller_syncs",
            ],
        );
    }

    #[test]
    fn endpoint_count_buckets_run_from_2_to_32768() {
        let text = assert_buckets(
            EndpointSliceMetrics::register,
            |metrics| metrics.endpoints_added_per_sync.observe(3.0),
            "endpoint_slice_controller_endpoints_added_per_sync",
            ["2", "4", "32768", "65536"],
        );
        // No histogram of the set goes further.
        assert!(!text.contains(r#"le="65536""#));
    }

    #[test]
    fn counters_keep_their_names_without_a_total_suffix() {
        let text = rendered(EndpointSliceMetrics::register, |metrics| {
            metrics.syncs.with_label_values(&["stale"]).inc();
        });
        assert!(text.contains(r#"endpoint_slice_controller_syncs{result="stale"} 1"#));
        assert!(!text.contains("syncs_total"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn process_metrics_have_go_client_names() {
        let registry = Registry::new();
        register_process_metrics(&registry).unwrap();
        let text = render(&registry).unwrap();
        for name in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
            "process_open_fds",
            "process_max_fds",
            "process_start_time_seconds",
        ] {
            assert!(
                text.contains(&format!("\n{name} ")),
                "{name} missing in\n{text}"
            );
        }
    }

    #[test]
    fn registering_twice_in_one_registry_fails() {
        let registry = Registry::new();
        EndpointSliceMetrics::register(&registry).unwrap();
        assert!(EndpointSliceMetrics::register(&registry).is_err());
    }
}
