//! One sync of one Service's Endpoints object: read the stores, plan through `reconcile`,
//! hand the action to the writer.

use super::EndpointsController;
use crate::informer::store::ObjectKey;
use crate::worker::SyncError;
use reconcile::endpoints::{EndpointsAction, EndpointsInput};
use reconcile::keys::ServiceKey;
use reconcile::plan_endpoints;
use reconcile::projection::PodInfo;

impl EndpointsController {
    /// Syncs one Service.
    pub async fn sync(&self, key: &ServiceKey) -> Result<(), SyncError> {
        let stores = self.workers.stores();
        let Some(service) = stores.service(key) else {
            // The Service is gone: so goes its Endpoints object.
            self.delete(key).await?;
            let mut state = self.state.lock();
            state.triggers.delete_service(key);
            state.stale.delete(key);
            return Ok(());
        };
        if service.is_skipped() {
            return Ok(());
        }
        let pods = stores.pods_of(&service);
        let pod_refs: Vec<&PodInfo> = pods.iter().map(|p| &**p).collect();
        let current = stores
            .endpoints
            .get(&ObjectKey::new(&key.namespace, &key.name));
        let plan = {
            let mut state = self.state.lock();
            let current_rv = current
                .as_ref()
                .and_then(|c| c.metadata.resource_version.as_deref());
            if current_rv.is_some_and(|rv| state.stale.is_stale(key, rv)) {
                // The cache handed back a version we already replaced.
                return Err(SyncError::StaleCache {
                    cache: "Endpoints",
                    service: key.clone(),
                });
            }
            let trigger_time = state.triggers.compute(&service, &pod_refs);
            plan_endpoints(&EndpointsInput {
                service: &service,
                pods: &pod_refs,
                current: current.as_deref(),
                trigger_time,
            })
        };
        match plan.action {
            EndpointsAction::Unchanged => Ok(()),
            EndpointsAction::Create(object) => self.create(key, &object).await,
            EndpointsAction::Update(object) => {
                let replaced = self.update(key, current.as_deref(), &object).await?;
                // Remember the version we replaced: if the cache hands it back, it is stale.
                if replaced.new_rv != replaced.old_rv {
                    self.state.lock().stale.replaced(key, &replaced.old_rv);
                }
                Ok(())
            }
        }
    }
}
