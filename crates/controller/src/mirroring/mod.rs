//! The live EndpointSlice mirroring controller: Endpoints objects of selector-less Services,
//! copied into EndpointSlices managed by `endpointslicemirroring-controller.k8s.io`.
//!
//! Built like the other two on [`ServiceWorkers`]: handlers queue `namespace/name` keys (here
//! naming an Endpoints object and its Service alike), workers sync them through
//! `reconcile::plan_mirroring`, and the writer sends the plan's creates, updates and deletes.
//! Events go on the Endpoints object, as upstream records them.

mod handlers;
pub mod metrics;
mod sync;
mod writer;

use crate::queue::QueueConfig;
use crate::service_workers::{ControllerParts, ServiceWorkers};
use crate::state_lock::StateLock;
use metrics::MirroringMetrics;
use reconcile::mirroring::metrics::MirroringMetricsCache;
use reconcile::slice::tracker::SliceTracker;
use std::sync::Arc;

/// State upstream keeps between syncs, behind one lock (never held across an await).
pub(crate) struct MirroringState {
    tracker: SliceTracker,
    metrics_cache: MirroringMetricsCache,
}

/// The EndpointSlice mirroring controller.
pub struct MirroringController {
    parts: ControllerParts,
    workers: ServiceWorkers,
    state: StateLock<MirroringState>,
    metrics: MirroringMetrics,
    max_endpoints_per_subset: usize,
}

impl MirroringController {
    /// A controller built from `parts`, its metrics registered into `registry`, mirroring at
    /// most `max_endpoints_per_subset` addresses of each subset. The parts' batch period
    /// delays the syncs that slice events queue
    /// (`--mirroring-endpointslice-updates-batch-period`).
    pub fn new(
        parts: ControllerParts,
        registry: &prometheus::Registry,
        max_endpoints_per_subset: usize,
    ) -> Result<Arc<Self>, prometheus::Error> {
        let metrics = MirroringMetrics::register(registry)?;
        // Upstream has no sync counter for this controller; the shell wants one, so it gets
        // one that is never registered, keeping the exposed names exactly upstream's.
        let syncs = prometheus::IntCounterVec::new(
            prometheus::Opts::new(
                "endpoint_slice_mirroring_syncs",
                "Mirroring syncs, by result",
            ),
            &["result"],
        )?;
        let config = QueueConfig::endpoint_slice_mirroring();
        Ok(Arc::new(Self {
            workers: ServiceWorkers::new(&parts, config, registry, syncs)?,
            parts,
            state: StateLock::new(MirroringState {
                tracker: SliceTracker::default(),
                metrics_cache: MirroringMetricsCache::new(max_endpoints_per_subset),
            }),
            metrics,
            max_endpoints_per_subset,
        }))
    }
}
