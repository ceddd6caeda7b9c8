//! The mirroring controller's Prometheus metrics, with upstream's names, help texts and
//! buckets (subsystem `endpoint_slice_mirroring_controller`).
//!
//! They live apart from the EndpointSlice controller's because they are a different set:
//! upstream adds `endpoints_updated_per_sync`, `addresses_skipped_per_sync` and
//! `endpoints_sync_duration`, and has no `syncs` counter for this controller.

use crate::instruments::Instruments;
use prometheus::{exponential_buckets, Histogram, Registry};

const SUBSYSTEM: &str = "endpoint_slice_mirroring_controller";

/// The mirroring controller's metrics, registered in one registry.
#[derive(Debug, Clone)]
pub struct MirroringMetrics {
    /// `endpoints_added_per_sync`: endpoints added on each Endpoints sync.
    pub endpoints_added_per_sync: Histogram,
    /// `endpoints_updated_per_sync`: endpoints updated on each Endpoints sync.
    pub endpoints_updated_per_sync: Histogram,
    /// `endpoints_removed_per_sync`: endpoints removed on each Endpoints sync.
    pub endpoints_removed_per_sync: Histogram,
    /// `addresses_skipped_per_sync`: addresses left out (invalid, or beyond the per-subset
    /// cap) on each Endpoints sync.
    pub addresses_skipped_per_sync: Histogram,
    /// `endpoints_sync_duration`: seconds one sync took.
    pub endpoints_sync_duration: Histogram,
    /// `endpoints_desired`, `num_endpoint_slices`, `desired_endpoint_slices` and
    /// `changes{operation}`, over mirrored slices.
    pub totals: crate::metrics::SliceTotals,
}

impl MirroringMetrics {
    /// Creates the metrics and registers them into `registry`; fails if they already are.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let instruments = Instruments::with_subsystem(registry, SUBSYSTEM);
        // Upstream's buckets: endpoint counts 2, 4, ..., 32768; durations 1ms, 2ms, ..., 16s.
        let counts = exponential_buckets(2.0, 2.0, 15)?;
        let seconds = exponential_buckets(0.001, 2.0, 15)?;
        Ok(Self {
            endpoints_added_per_sync: instruments.histogram(
                "endpoints_added_per_sync",
                "Number of endpoints added on each Endpoints sync",
                counts.clone(),
            )?,
            endpoints_updated_per_sync: instruments.histogram(
                "endpoints_updated_per_sync",
                "Number of endpoints updated on each Endpoints sync",
                counts.clone(),
            )?,
            endpoints_removed_per_sync: instruments.histogram(
                "endpoints_removed_per_sync",
                "Number of endpoints removed on each Endpoints sync",
                counts.clone(),
            )?,
            addresses_skipped_per_sync: instruments.histogram(
                "addresses_skipped_per_sync",
                "Number of addresses skipped on each Endpoints sync due to being invalid or exceeding MaxEndpointsPerSubset",
                counts,
            )?,
            endpoints_sync_duration: instruments.histogram(
                "endpoints_sync_duration",
                "Duration of syncEndpoints() in seconds",
                seconds,
            )?,
            totals: crate::metrics::SliceTotals::register(registry, SUBSYSTEM)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::testing::{assert_buckets, assert_family_names};

    #[test]
    fn mirroring_metric_names_are_upstream_names() {
        assert_family_names(
            MirroringMetrics::register,
            |metrics| metrics.totals.changed("create"),
            &[
                "endpoint_slice_mirroring_controller_addresses_skipped_per_sync",
                "endpoint_slice_mirroring_controller_changes",
                "endpoint_slice_mirroring_controller_desired_endpoint_slices",
                "endpoint_slice_mirroring_controller_endpoints_added_per_sync",
                "endpoint_slice_mirroring_controller_endpoints_desired",
                "endpoint_slice_mirroring_controller_endpoints_removed_per_sync",
                "endpoint_slice_mirroring_controller_endpoints_sync_duration",
                "endpoint_slice_mirroring_controller_endpoints_updated_per_sync",
                "endpoint_slice_mirroring_controller_num_endpoint_slices",
            ],
        );
    }

    #[test]
    fn sync_duration_buckets_run_from_one_millisecond_to_sixteen_seconds() {
        assert_buckets(
            MirroringMetrics::register,
            |metrics| metrics.endpoints_sync_duration.observe(0.0015),
            "endpoint_slice_mirroring_controller_endpoints_sync_duration",
            ["0.001", "0.002", "16.384", "32.768"],
        );
    }
}
