//! The live v1 Endpoints controller.

mod handlers;
mod sync;

use crate::events::EventRecorder;
use crate::index::Stores;
use crate::queue::{QueueConfig, WorkQueue};
use kube::Client;
use reconcile::endpoints::stale::StaleEndpointsTracker;
use reconcile::endpoints::LEADER_ANNOTATION;
use reconcile::keys::ServiceKey;
use reconcile::trigger_time::TriggerTimeTracker;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub(crate) struct EndpointsState {
    triggers: TriggerTimeTracker,
    stale: StaleEndpointsTracker,
}

/// The Endpoints controller.
pub struct EndpointsController {
    client: Client,
    stores: Stores,
    queue: WorkQueue<ServiceKey>,
    state: Mutex<EndpointsState>,
    events: EventRecorder,
    batch_period: Duration,
    syncs: prometheus::IntCounterVec,
}

impl EndpointsController {
    /// A controller reading `stores` and writing through `client`.
    pub fn new(
        client: Client,
        stores: Stores,
        registry: &prometheus::Registry,
        events: EventRecorder,
        batch_period: Duration,
    ) -> Result<Arc<Self>, prometheus::Error> {
        let syncs = prometheus::IntCounterVec::new(
            prometheus::Opts::new(
                "endpoint_controller_syncs",
                "Number of Endpoints syncs, by result",
            ),
            &["result"],
        )?;
        registry.register(Box::new(syncs.clone()))?;
        Ok(Arc::new(Self {
            client,
            stores,
            queue: WorkQueue::with_metrics(QueueConfig::endpoints(), registry)?,
            state: Mutex::new(EndpointsState {
                triggers: TriggerTimeTracker::default(),
                stale: StaleEndpointsTracker::default(),
            }),
            events,
            batch_period,
            syncs,
        }))
    }

    fn state(&self) -> MutexGuard<'_, EndpointsState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues every existing Endpoints object once, so those whose Service is gone are
    /// deleted. Leader-election records kept in Endpoints are left alone.
    pub fn queue_leftovers(&self) {
        for endpoints in self.stores.endpoints.list() {
            let annotated = endpoints
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
            if let (false, Some(ns), Some(name)) = (
                annotated,
                &endpoints.metadata.namespace,
                &endpoints.metadata.name,
            ) {
                self.queue.add(ServiceKey::new(ns, name));
            }
        }
    }

    /// Runs `workers` sync workers until the queue shuts down.
    pub async fn run_workers(self: Arc<Self>, workers: usize) {
        let mut tasks = tokio::task::JoinSet::new();
        crate::worker::spawn_workers(
            &mut tasks,
            &self.queue,
            workers,
            &self,
            |this: Arc<Self>, key| async move { this.sync(key).await },
        );
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
        self.queue.shut_down_with_drain().await;
    }
}
