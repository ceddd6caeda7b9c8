//! The live v1 Endpoints controller: handlers queue Service keys, workers sync them through
//! `reconcile::plan_endpoints`, and the writer sends the one create, update or delete.

mod handlers;
mod sync;
mod writer;

use crate::instruments::Instruments;
use crate::queue::QueueConfig;
use crate::service_workers::{ControllerParts, ServiceWorkers};
use crate::state_lock::StateLock;
use reconcile::endpoints::stale::StaleEndpointsTracker;
use reconcile::endpoints::LEADER_ANNOTATION;
use reconcile::keys::ServiceKey;
use reconcile::trigger_time::TriggerTimeTracker;
use std::sync::Arc;

/// State upstream keeps between syncs.
#[derive(Default)]
pub(crate) struct EndpointsState {
    triggers: TriggerTimeTracker,
    stale: StaleEndpointsTracker,
    conflicts: crate::stale_cache::Conflicts,
}

/// The Endpoints controller.
pub struct EndpointsController {
    parts: ControllerParts,
    workers: ServiceWorkers,
    state: StateLock<EndpointsState>,
    shadow: Option<Arc<crate::shadow::Shadow>>,
}

impl EndpointsController {
    /// A controller built from `parts`, its metrics registered into `registry`; with
    /// `shadow`, it plans without writing and records there what it would write.
    pub fn new(
        parts: ControllerParts,
        registry: &prometheus::Registry,
        shadow: Option<Arc<crate::shadow::Shadow>>,
    ) -> Result<Arc<Self>, prometheus::Error> {
        let syncs = Instruments::new(registry).metric_vec::<prometheus::IntCounterVec>(
            "endpoint_controller_syncs",
            "Number of Endpoints syncs, by result",
            &["result"],
        )?;
        Ok(Arc::new(Self {
            workers: ServiceWorkers::new(&parts, QueueConfig::endpoints(), registry, syncs)?,
            parts,
            state: StateLock::default(),
            shadow,
        }))
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
}
