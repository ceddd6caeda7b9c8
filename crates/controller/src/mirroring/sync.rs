//! One sync of one Endpoints object: read the stores, plan through `reconcile`, write, record.

use super::MirroringController;
use crate::events::Involved;
use crate::service_workers::{ServiceSync, ServiceWorkers};
use crate::worker::SyncError;
use crate::write_latency::Wrote;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use reconcile::keys::ServiceKey;
use reconcile::mirroring::metrics::MirroringMetricsCache;
use reconcile::mirroring::{
    is_mirrored_slice_of, plan_mirroring, MirroringAction, MirroringFigures, MirroringInput,
};
use std::sync::Arc;

impl ServiceSync for MirroringController {
    /// Syncs one Endpoints object, timing it for `endpoints_sync_duration`.
    async fn sync_service(&self, key: &ServiceKey) -> Result<Wrote, SyncError> {
        let start = tokio::time::Instant::now();
        let result = self.sync_endpoints(key).await;
        self.metrics
            .endpoints_sync_duration
            .observe(start.elapsed().as_secs_f64());
        result
    }

    fn workers(&self) -> &ServiceWorkers {
        &self.workers
    }
}

impl MirroringController {
    async fn sync_endpoints(&self, key: &ServiceKey) -> Result<Wrote, SyncError> {
        let stores = self.workers.stores();
        let service = stores.service(key);
        let endpoints = stores.endpoints_of(key);
        let existing: Vec<Arc<EndpointSlice>> =
            stores.slices_of(key, |s| is_mirrored_slice_of(s, &key.name));
        let plan = {
            let mut state = self.state.lock();
            let plan = plan_mirroring(&MirroringInput {
                service: service.as_deref(),
                endpoints: endpoints.as_ref(),
                existing: &existing,
                max_endpoints_per_subset: self.max_endpoints_per_subset,
                rules: self.parts.rules,
            });
            match (&plan.action, &plan.figures) {
                (MirroringAction::Cleanup(reason), _) => {
                    tracing::debug!(endpoints = %key, ?reason, "not mirrored: removing its mirrored slices");
                    state.tracker.delete_service(key);
                    state.metrics_cache.delete(key);
                }
                (MirroringAction::Mirror, figures) => {
                    let refs: Vec<&EndpointSlice> = existing.iter().map(|s| &**s).collect();
                    if state.tracker.stale_slices(key, &refs) {
                        return Err(SyncError::StaleCache {
                            cache: "EndpointSlice",
                            service: key.clone(),
                        });
                    }
                    if let Some(figures) = figures {
                        state.metrics_cache.update(key, figures);
                        self.observe_figures(figures);
                    }
                }
            }
            self.update_gauges(&state.metrics_cache);
            plan
        };

        if let MirroringAction::Cleanup(_) = plan.action {
            let (deleted, errors) = self.delete_all(key, &plan.delete).await;
            return match SyncError::combine(key, errors) {
                None => Ok(Wrote::when(deleted > 0, None)),
                Some(error) => Err(error),
            };
        }
        // Mirrored slices do not carry the Endpoints' trigger time, but it is still when the
        // change began, for whoever wrote the Endpoints and stamped one.
        let trigger_time = endpoints
            .as_ref()
            .and_then(|e| e.metadata.annotations.as_ref())
            .and_then(|a| a.get(reconcile::trigger_time::ANNOTATION))
            .and_then(|t| t.parse().ok());
        if let Some(endpoints) = &endpoints {
            let involved = Involved {
                kind: "Endpoints",
                namespace: key.namespace.to_string(),
                name: key.name.to_string(),
                uid: endpoints.metadata.uid.clone().unwrap_or_default(),
            };
            for event in plan.events.iter().cloned() {
                self.parts.events.record(involved.clone(), event);
            }
        }
        let written = self.write_plan(key, plan).await?;
        Ok(Wrote::when(written > 0, trigger_time))
    }

    fn observe_figures(&self, figures: &MirroringFigures) {
        let m = &self.metrics;
        m.endpoints_added_per_sync
            .observe(figures.endpoints_added as f64);
        m.endpoints_updated_per_sync
            .observe(figures.endpoints_updated as f64);
        m.endpoints_removed_per_sync
            .observe(figures.endpoints_removed as f64);
        m.addresses_skipped_per_sync
            .observe(figures.addresses_skipped as f64);
    }

    fn update_gauges(&self, cache: &MirroringMetricsCache) {
        let totals = cache.totals();
        self.metrics
            .totals
            .set(totals.endpoints, totals.slices, totals.desired_slices);
    }
}
