//! The live v1 Endpoints controller: handlers queue Service keys, workers sync them through
//! `reconcile::plan_endpoints`, and the writer sends the one create, update or delete.

mod handlers;
mod sync;
mod writer;

use crate::events::EventRecorder;
use crate::index::Stores;
use crate::queue::QueueConfig;
use crate::service_workers::{ServiceSync, ServiceWorkers};
use crate::state_lock::StateLock;
use crate::worker::SyncError;
use kube::Client;
use reconcile::endpoints::stale::StaleEndpointsTracker;
use reconcile::endpoints::LEADER_ANNOTATION;
use reconcile::keys::ServiceKey;
use reconcile::trigger_time::TriggerTimeTracker;
use std::sync::Arc;
use std::time::Duration;

/// State upstream keeps between syncs.
pub(crate) struct EndpointsState {
    triggers: TriggerTimeTracker,
    stale: StaleEndpointsTracker,
    conflicts: crate::stale_cache::Conflicts,
}

/// The Endpoints controller.
pub struct EndpointsController {
    client: Client,
    wire: crate::wire::Negotiated,
    workers: ServiceWorkers,
    state: StateLock<EndpointsState>,
    events: EventRecorder,
    shadow: Option<Arc<crate::shadow::Shadow>>,
}

impl EndpointsController {
    /// A controller reading `stores` and writing through `client`.
    pub fn new(
        client: Client,
        wire: crate::wire::Negotiated,
        stores: Stores,
        registry: &prometheus::Registry,
        events: EventRecorder,
        batch_period: Duration,
        shadow: Option<Arc<crate::shadow::Shadow>>,
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
            wire,
            workers: ServiceWorkers::new(
                stores,
                QueueConfig::endpoints(),
                registry,
                syncs,
                batch_period,
            )?,
            state: StateLock::new(EndpointsState {
                triggers: TriggerTimeTracker::default(),
                stale: StaleEndpointsTracker::default(),
                conflicts: crate::stale_cache::Conflicts::default(),
            }),
            events,
            shadow,
        }))
    }

    /// The shared queue, workers and queuer.
    pub fn workers(&self) -> &ServiceWorkers {
        &self.workers
    }

    /// Queues every existing Endpoints object once, so those whose Service is gone are
    /// deleted. Leader-election records kept in Endpoints are left alone.
    pub fn queue_leftovers(&self) {
        for endpoints in self.workers.stores().endpoints.list() {
            let endpoints = endpoints.without_subsets();
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
                self.workers.queue().add(ServiceKey::new(ns, name));
            }
        }
    }

    /// Runs `workers` sync workers until the queue shuts down.
    pub async fn run_workers(self: Arc<Self>, workers: usize) {
        self.workers.run(Arc::clone(&self), workers).await;
    }
}

impl ServiceSync for EndpointsController {
    fn sync_service(
        &self,
        key: &ServiceKey,
    ) -> impl std::future::Future<Output = Result<(), SyncError>> + Send {
        self.sync(key)
    }
}
