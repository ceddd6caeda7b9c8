//! The shell both controllers share: a queue of Service keys, the handler that fills it from
//! Service and Pod events, the workers that drain it, and the sync counter.
//!
//! What differs between the Endpoints and the EndpointSlice controller is only what one sync
//! of one Service does ([`ServiceSync`]); everything around it lives here once, and so do the
//! [`ControllerParts`] every controller is built from.

use crate::events::EventRecorder;
use crate::index::Stores;
use crate::queue::{QueueConfig, WorkQueue};
use crate::worker::{run_worker, SyncError};
use crate::write_latency::{ControllerLatency, Wrote};
use reconcile::keys::ServiceKey;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// What [`run`](crate::run) hands each controller: the same kinds of parts for all three.
pub struct ControllerParts {
    /// The controller's own client, with its own request budget.
    pub client: kube::Client,
    /// The run's encoding, shared with the informers.
    pub wire: crate::wire::Negotiated,
    /// The informers' stores.
    pub stores: Stores,
    /// The recorder of the controller's Events, under its own component name.
    pub events: EventRecorder,
    /// How long the events that do not concern a Service itself (its pods' for the two
    /// Service controllers, its slices' for mirroring) wait before the Service is synced.
    pub batch_period: Duration,
    /// The rules of the Kubernetes version the controllers follow.
    pub rules: reconcile::VersionRules,
    /// The controller's latency SLI.
    pub latency: ControllerLatency,
}

/// One sync of one Service, the part each controller writes itself.
pub trait ServiceSync: Send + Sync + 'static {
    /// Brings what the controller owns for `key` in line with the stores, and says what it
    /// wrote.
    fn sync_service(
        &self,
        key: &ServiceKey,
    ) -> impl Future<Output = Result<Wrote, SyncError>> + Send;

    /// The controller's queue, stores and workers.
    fn workers(&self) -> &ServiceWorkers;

    /// Runs `workers` sync workers until the queue shuts down.
    fn run_workers(self: Arc<Self>, workers: usize) -> impl Future<Output = ()> + Send
    where
        Self: Sized,
    {
        async move { self.workers().run(Arc::clone(&self), workers).await }
    }
}

/// The queue, its workers and its counter.
pub struct ServiceWorkers {
    queue: WorkQueue<ServiceKey>,
    stores: Stores,
    batch_period: Duration,
    syncs: prometheus::IntCounterVec,
    latency: ControllerLatency,
}

impl ServiceWorkers {
    /// A queue configured by `config` (metrics registered into `registry`) over the stores
    /// and batch period of `parts`, counting syncs in `syncs` (a counter with a `result`
    /// label).
    pub fn new(
        parts: &ControllerParts,
        config: QueueConfig,
        registry: &prometheus::Registry,
        syncs: prometheus::IntCounterVec,
    ) -> Result<Self, prometheus::Error> {
        Ok(Self {
            queue: WorkQueue::with_metrics(config, registry)?,
            stores: parts.stores.clone(),
            batch_period: parts.batch_period,
            syncs,
            latency: parts.latency.clone(),
        })
    }

    /// The queue of Service keys.
    pub fn queue(&self) -> &WorkQueue<ServiceKey> {
        &self.queue
    }

    /// The stores the controller reads.
    pub fn stores(&self) -> &Stores {
        &self.stores
    }

    /// The queue and the batch period its pods' events wait, for the
    /// [`ServiceQueuer`](crate::service_queuer::ServiceQueuer) that fills it.
    pub fn queued_by(&self) -> (WorkQueue<ServiceKey>, Duration) {
        (self.queue.clone(), self.batch_period)
    }

    /// Runs `workers` workers (at least one) syncing keys through `target` until the queue
    /// shuts down. Each sync is counted by result and logged with its duration.
    pub async fn run<T: ServiceSync>(&self, target: Arc<T>, workers: usize) {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..workers.max(1) {
            let (queue, target, syncs, latency) = (
                self.queue.clone(),
                Arc::clone(&target),
                self.syncs.clone(),
                self.latency.clone(),
            );
            tasks.spawn(async move {
                let name = queue.name().to_owned();
                run_worker(queue, latency, |key: ServiceKey| {
                    let (target, syncs, name) = (Arc::clone(&target), syncs.clone(), name.clone());
                    async move {
                        let start = tokio::time::Instant::now();
                        let result = target.sync_service(&key).await;
                        syncs
                            .with_label_values(&[SyncError::result_label(&result)])
                            .inc();
                        tracing::debug!(service = %key, controller = %name, elapsed = ?start.elapsed(), "Finished syncing service");
                        result
                    }
                })
                .await;
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// Stops taking new keys and waits for in-flight syncs to finish.
    pub async fn shut_down(&self) {
        self.queue.shut_down_with_drain().await;
    }
}
