//! One sync of one Service's Endpoints object.

use super::EndpointsController;
use crate::endpointslice::{is_already_exists, is_namespace_terminating, is_not_found};
use crate::events::Involved;
use crate::informer::store::ObjectKey;
use crate::worker::SyncError;
use k8s_openapi::api::core::v1::Endpoints;
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use reconcile::endpoints::{EndpointsAction, EndpointsInput};
use reconcile::event::PlannedEvent;
use reconcile::keys::ServiceKey;
use reconcile::plan_endpoints;
use reconcile::projection::PodInfo;

impl EndpointsController {
    /// Syncs one Service.
    pub async fn sync(&self, key: ServiceKey) -> Result<(), SyncError> {
        let result = self.sync_inner(&key).await;
        let label = SyncError::result_label(&result);
        self.syncs.with_label_values(&[label]).inc();
        result
    }

    async fn sync_inner(&self, key: &ServiceKey) -> Result<(), SyncError> {
        let api: Api<Endpoints> = Api::namespaced(self.client.clone(), &key.namespace);
        let Some(service) = self.stores.service(key) else {
            // The Service is gone: so goes its Endpoints object (already gone is fine).
            match api.delete(&key.name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(SyncError::Failed(format!("deleting Endpoints {key}: {e}"))),
            }
            let mut state = self.state();
            state.triggers.delete_service(key);
            state.stale.delete(key);
            return Ok(());
        };
        if service.is_skipped() {
            return Ok(());
        }
        let pods = self.stores.pods_of(&service);
        let pod_refs: Vec<&PodInfo> = pods.iter().map(|p| &**p).collect();
        let current = self
            .stores
            .endpoints
            .get(&ObjectKey::new(&key.namespace, &key.name));
        let plan = {
            let mut state = self.state();
            if let Some(rv) = current
                .as_ref()
                .and_then(|c| c.metadata.resource_version.as_deref())
            {
                if state.stale.is_stale(key, rv) {
                    return Err(SyncError::Stale(format!(
                        "endpoints informer cache is out of date, resource version {rv} already processed for endpoints {key}"
                    )));
                }
            }
            let trigger_time = state.triggers.compute(&service, &pod_refs);
            plan_endpoints(&EndpointsInput {
                service: &service,
                pods: &pod_refs,
                current: current.as_deref(),
                trigger_time,
            })
        };
        let involved = Involved {
            kind: "Endpoints",
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            uid: String::new(),
        };
        match plan.action {
            EndpointsAction::Unchanged => Ok(()),
            EndpointsAction::Create(object) => {
                match api.create(&PostParams::default(), &object).await {
                    Ok(_) => Ok(()),
                    // Creates keep failing while the namespace terminates: drop the work quietly.
                    Err(e) if is_namespace_terminating(&e) => Ok(()),
                    // Our own earlier create has not reached the cache yet: retry once it has,
                    // rather than report a failure that is only the cache lagging.
                    Err(e) if is_already_exists(&e) => Err(SyncError::Stale(format!(
                        "endpoints informer cache has not seen Endpoints {key} yet"
                    ))),
                    Err(e) => {
                        let message = format!("Failed to create endpoint for service {key}: {e}");
                        self.events.record(
                            involved,
                            PlannedEvent::warning("FailedToCreateEndpoint", message.clone()),
                        );
                        Err(SyncError::Failed(message))
                    }
                }
            }
            EndpointsAction::Update(object) => match api
                .replace(&key.name, &PostParams::default(), &object)
                .await
            {
                Ok(updated) => {
                    // Remember the version we replaced: if the cache hands it back, it is stale.
                    let old_rv = current
                        .as_ref()
                        .and_then(|c| c.metadata.resource_version.clone())
                        .unwrap_or_default();
                    if updated.metadata.resource_version.as_deref() != Some(old_rv.as_str()) {
                        self.state().stale.replaced(key, &old_rv);
                    }
                    Ok(())
                }
                Err(e) => {
                    let message = format!("Failed to update endpoint {key}: {e}");
                    self.events.record(
                        involved,
                        PlannedEvent::warning("FailedToUpdateEndpoint", message.clone()),
                    );
                    Err(SyncError::Failed(message))
                }
            },
        }
    }
}
