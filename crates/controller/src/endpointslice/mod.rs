//! The live EndpointSlice controller: handlers queue Service keys, workers sync them through
//! `reconcile::plan_slices` and write the plan, and a topology worker keeps the zone CPU
//! shares current and resyncs Services whose hints a node change overloaded.

mod handlers;
mod sync;
mod writer;

pub(crate) use writer::{is_already_exists, is_namespace_terminating, is_not_found};

use crate::events::EventRecorder;
use crate::index::Stores;
use crate::metrics::EndpointSliceMetrics;
use crate::queue::{QueueConfig, WorkQueue};
use kube::Client;
use reconcile::keys::ServiceKey;
use reconcile::metrics_cache::MetricsCache;
use reconcile::slice::tracker::SliceTracker;
use reconcile::topology::TopologyCache;
use reconcile::trigger_time::TriggerTimeTracker;
use std::sync::{Arc, Mutex, MutexGuard};
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
    stores: Stores,
    queue: WorkQueue<ServiceKey>,
    topology_queue: WorkQueue<TopologyKey>,
    state: Mutex<SliceState>,
    metrics: EndpointSliceMetrics,
    events: EventRecorder,
    max_endpoints_per_slice: usize,
    batch_period: Duration,
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
    pub fn new(
        client: Client,
        stores: Stores,
        registry: &prometheus::Registry,
        events: EventRecorder,
        max_endpoints_per_slice: usize,
        batch_period: Duration,
    ) -> Result<Arc<Self>, prometheus::Error> {
        Ok(Arc::new(Self {
            client,
            stores,
            queue: WorkQueue::with_metrics(QueueConfig::endpoint_slice(), registry)?,
            topology_queue: WorkQueue::with_metrics(
                QueueConfig::endpoint_slice_topology(),
                registry,
            )?,
            state: Mutex::new(SliceState {
                topology: TopologyCache::default(),
                tracker: SliceTracker::default(),
                triggers: TriggerTimeTracker::default(),
                metrics_cache: MetricsCache::new(max_endpoints_per_slice),
            }),
            metrics: EndpointSliceMetrics::register(registry)?,
            events,
            max_endpoints_per_slice,
            batch_period,
        }))
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, SliceState> {
        // A panic while holding the lock cannot leave the state half-written in a way that
        // matters more than stopping; keep serving with what is there.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Recomputes the zone shares from the node store and queues the Services whose hints no
    /// longer fit.
    pub fn check_topology(&self) {
        let nodes = self.stores.nodes.list();
        let overloaded = {
            let mut state = self.state();
            state.topology.set_nodes(nodes.iter().map(|n| &**n));
            state.topology.overloaded_services()
        };
        for key in overloaded {
            self.queue.add(key);
        }
    }

    /// Runs `workers` sync workers and the topology worker until the queues shut down.
    pub async fn run_workers(self: Arc<Self>, workers: usize) {
        let mut tasks = tokio::task::JoinSet::new();
        crate::worker::spawn_workers(
            &mut tasks,
            &self.queue,
            workers,
            &self,
            |this: Arc<Self>, key| async move { this.sync(key).await },
        );
        let this = Arc::clone(&self);
        tasks.spawn(async move {
            while let Some(key) = this.topology_queue.get().await {
                this.check_topology();
                this.topology_queue.forget(&key);
                this.topology_queue.done(&key);
            }
        });
        while tasks.join_next().await.is_some() {}
    }

    /// The handler that queues this controller's Services on Service and Pod events.
    pub fn service_queuer(&self) -> Arc<crate::service_queuer::ServiceQueuer> {
        crate::service_queuer::ServiceQueuer::new(
            self.stores.clone(),
            self.queue.clone(),
            self.batch_period,
        )
    }

    /// Stops taking new keys; in-flight syncs finish.
    pub async fn shut_down(&self) {
        self.topology_queue.shut_down();
        self.queue.shut_down_with_drain().await;
    }

    /// The service work queue (for tests and metrics).
    pub fn queue(&self) -> &WorkQueue<ServiceKey> {
        &self.queue
    }
}
