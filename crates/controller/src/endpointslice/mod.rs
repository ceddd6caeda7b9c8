//! The live EndpointSlice controller: handlers queue Service keys, workers sync them through
//! `reconcile::plan_slices` and write the plan, and a topology worker keeps the zone CPU
//! shares current and resyncs Services whose hints a node change overloaded.

mod handlers;
pub(crate) use handlers::WAITED_RETRIES;
mod sync;
mod writer;

use crate::metrics::EndpointSliceMetrics;
use crate::queue::{QueueConfig, WorkQueue};
use crate::service_workers::{ControllerParts, ServiceWorkers};
use crate::state_lock::StateLock;
use reconcile::metrics_cache::MetricsCache;
use reconcile::slice::tracker::SliceTracker;
use reconcile::topology::TopologyCache;
use reconcile::trigger_time::TriggerTimeTracker;
use std::sync::Arc;

/// State upstream keeps between syncs, behind one lock (never held across an await).
pub(crate) struct SliceState {
    topology: TopologyCache,
    tracker: SliceTracker,
    triggers: TriggerTimeTracker,
    metrics_cache: MetricsCache,
}

/// The EndpointSlice controller.
pub struct EndpointSliceController {
    parts: ControllerParts,
    workers: ServiceWorkers,
    topology_queue: WorkQueue<TopologyKey>,
    state: StateLock<SliceState>,
    metrics: EndpointSliceMetrics,
    max_endpoints_per_slice: usize,
    shadow: Option<Arc<crate::shadow::Shadow>>,
}

/// The single key of the topology queue: "recompute zone shares".
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopologyKey;

impl std::fmt::Display for TopologyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("nodes")
    }
}

impl EndpointSliceController {
    /// A controller built from `parts`, its metrics registered into `registry`, writing at
    /// most `max_endpoints_per_slice` endpoints in a slice; with `shadow`, it plans without
    /// writing and records there what it would write.
    pub fn new(
        parts: ControllerParts,
        registry: &prometheus::Registry,
        max_endpoints_per_slice: usize,
        shadow: Option<Arc<crate::shadow::Shadow>>,
    ) -> Result<Arc<Self>, prometheus::Error> {
        let metrics = EndpointSliceMetrics::register(registry)?;
        let config = QueueConfig::endpoint_slice();
        Ok(Arc::new(Self {
            workers: ServiceWorkers::new(&parts, config, registry, metrics.syncs.clone())?,
            parts,
            topology_queue: WorkQueue::with_metrics(
                QueueConfig::endpoint_slice_topology(),
                registry,
            )?,
            state: StateLock::new(SliceState {
                topology: TopologyCache::default(),
                tracker: SliceTracker::default(),
                triggers: TriggerTimeTracker::default(),
                metrics_cache: MetricsCache::new(max_endpoints_per_slice),
            }),
            metrics,
            max_endpoints_per_slice,
            shadow,
        }))
    }

    /// Recomputes the zone shares from the node store and queues the Services whose hints no
    /// longer fit.
    pub fn check_topology(&self) {
        let nodes = self.workers.stores().nodes.list();
        let overloaded = {
            let mut state = self.state.lock();
            state.topology.set_nodes(nodes.iter().map(|n| &**n));
            state.topology.overloaded_services()
        };
        for key in overloaded {
            self.workers.queue().add(key);
        }
    }

    /// Stops taking new keys; in-flight syncs finish.
    pub async fn shut_down(&self) {
        self.topology_queue.shut_down();
        self.workers.shut_down().await;
    }

    /// The topology queue (watched for activity with the service queue).
    pub fn topology_queue(&self) -> &WorkQueue<TopologyKey> {
        &self.topology_queue
    }
}
