//! The live EndpointSlice controller: handlers queue Service keys, workers sync them through
//! `reconcile::plan_slices` and write the plan, and a topology worker keeps the zone CPU
//! shares current and resyncs Services whose hints a node change overloaded.

mod handlers;
pub(crate) use handlers::WAITED_RETRIES;
mod sync;
mod writer;

use crate::events::EventRecorder;
use crate::index::Stores;
use crate::metrics::EndpointSliceMetrics;
use crate::queue::{QueueConfig, WorkQueue};
use crate::service_workers::{ServiceSync, ServiceWorkers};
use crate::state_lock::StateLock;
use crate::worker::SyncError;
use kube::Client;
use reconcile::keys::ServiceKey;
use reconcile::metrics_cache::MetricsCache;
use reconcile::slice::tracker::SliceTracker;
use reconcile::topology::TopologyCache;
use reconcile::trigger_time::TriggerTimeTracker;
use std::sync::Arc;
use std::time::Duration;

/// State upstream keeps between syncs, behind one lock (never held across an await).
pub(crate) struct SliceState {
    topology: TopologyCache,
    tracker: SliceTracker,
    triggers: TriggerTimeTracker,
    metrics_cache: MetricsCache,
}

/// The EndpointSlice controller.
pub struct EndpointSliceController {
    client: Client,
    wire: crate::wire::Negotiated,
    workers: ServiceWorkers,
    topology_queue: WorkQueue<TopologyKey>,
    state: StateLock<SliceState>,
    metrics: EndpointSliceMetrics,
    events: EventRecorder,
    max_endpoints_per_slice: usize,
    batch_period: Duration,
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
    /// A controller reading `stores` and writing through `client`.
    #[expect(
        clippy::too_many_arguments,
        reason = "the controller's parts, passed once by `run`"
    )]
    pub fn new(
        client: Client,
        wire: crate::wire::Negotiated,
        stores: Stores,
        registry: &prometheus::Registry,
        events: EventRecorder,
        max_endpoints_per_slice: usize,
        batch_period: Duration,
        shadow: Option<Arc<crate::shadow::Shadow>>,
    ) -> Result<Arc<Self>, prometheus::Error> {
        let metrics = EndpointSliceMetrics::register(registry)?;
        Ok(Arc::new(Self {
            client,
            wire,
            workers: ServiceWorkers::new(
                stores,
                QueueConfig::endpoint_slice(),
                registry,
                metrics.syncs.clone(),
                batch_period,
            )?,
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
            events,
            max_endpoints_per_slice,
            batch_period,
            shadow,
        }))
    }

    /// The shared queue, workers and queuer.
    pub fn workers(&self) -> &ServiceWorkers {
        &self.workers
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

    /// Runs `workers` sync workers and the topology worker until the queues shut down.
    pub async fn run_workers(self: Arc<Self>, workers: usize) {
        let topology = async {
            while let Some(key) = self.topology_queue.get().await {
                self.check_topology();
                self.topology_queue.forget(&key);
                self.topology_queue.done(&key);
            }
        };
        tokio::join!(self.workers.run(Arc::clone(&self), workers), topology);
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

impl ServiceSync for EndpointSliceController {
    fn sync_service(
        &self,
        key: &ServiceKey,
    ) -> impl std::future::Future<Output = Result<(), SyncError>> + Send {
        self.sync(key)
    }
}
