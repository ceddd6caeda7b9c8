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

use crate::events::EventRecorder;
use crate::index::Stores;
use crate::queue::QueueConfig;
use crate::service_workers::{ServiceSync, ServiceWorkers};
use crate::state_lock::StateLock;
use crate::worker::SyncError;
use kube::Client;
use metrics::MirroringMetrics;
use reconcile::keys::ServiceKey;
use reconcile::mirroring::metrics::MirroringMetricsCache;
use reconcile::slice::tracker::SliceTracker;
use std::sync::Arc;
use std::time::Duration;

/// State upstream keeps between syncs, behind one lock (never held across an await).
pub(crate) struct MirroringState {
    tracker: SliceTracker,
    metrics_cache: MirroringMetricsCache,
}

/// The EndpointSlice mirroring controller.
pub struct MirroringController {
    client: Client,
    wire: crate::wire::Negotiated,
    workers: ServiceWorkers,
    state: StateLock<MirroringState>,
    metrics: MirroringMetrics,
    events: EventRecorder,
    max_endpoints_per_subset: usize,
    batch_period: Duration,
}

impl MirroringController {
    /// A controller reading `stores` and writing through `client`. `batch_period` delays the
    /// syncs that slice events queue (`--mirroring-endpointslice-updates-batch-period`).
    pub fn new(
        client: Client,
        wire: crate::wire::Negotiated,
        stores: Stores,
        registry: &prometheus::Registry,
        events: EventRecorder,
        max_endpoints_per_subset: usize,
        batch_period: Duration,
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
        Ok(Arc::new(Self {
            client,
            wire,
            workers: ServiceWorkers::new(
                stores,
                QueueConfig::endpoint_slice_mirroring(),
                registry,
                syncs,
                batch_period,
            )?,
            state: StateLock::new(MirroringState {
                tracker: SliceTracker::default(),
                metrics_cache: MirroringMetricsCache::new(max_endpoints_per_subset),
            }),
            metrics,
            events,
            max_endpoints_per_subset,
            batch_period,
        }))
    }

    /// The queue, stores and workers.
    pub fn workers(&self) -> &ServiceWorkers {
        &self.workers
    }

    /// Runs `workers` sync workers until the queue shuts down.
    pub async fn run_workers(self: Arc<Self>, workers: usize) {
        self.workers.run(Arc::clone(&self), workers).await;
    }
}

impl ServiceSync for MirroringController {
    fn sync_service(
        &self,
        key: &ServiceKey,
    ) -> impl std::future::Future<Output = Result<(), SyncError>> + Send {
        self.sync(key)
    }
}
