//! Applying a mirroring plan. Mirroring writes creates, then updates, then deletes, records
//! each success in the tracker and counts it in `changes`, and stops at the first failure.
//! Cleanup tries every delete, counts none and expects none (the tracker already forgot the
//! key), as upstream's does.

use super::MirroringController;
use crate::api_errors::{is_namespace_terminating, is_not_found};
use crate::worker::SyncError;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::DeleteParams;
use kube::Api;
use reconcile::keys::ServiceKey;
use reconcile::mirroring::MirroringPlan;
use std::sync::Arc;

fn name(slice: &EndpointSlice) -> &str {
    slice.metadata.name.as_deref().unwrap_or("")
}

impl MirroringController {
    fn api(&self, key: &ServiceKey) -> Api<EndpointSlice> {
        Api::namespaced(self.client.clone(), &key.namespace)
    }

    /// Sends a mirroring plan's writes in order; the first failure ends the sync.
    pub(super) async fn write_plan(
        &self,
        key: &ServiceKey,
        plan: &MirroringPlan,
    ) -> Result<(), SyncError> {
        let api = self.api(key);
        for slice in &plan.create {
            match crate::written::create(&api, slice).await {
                Ok(created) => self.wrote(&created, "create"),
                // Creates keep failing while the namespace terminates: drop the work quietly.
                Err(e) if is_namespace_terminating(&e) => return Ok(()),
                Err(e) => return Err(SyncError::slice_write(key, "create", slice, e)),
            }
        }
        for slice in &plan.update {
            match crate::written::replace(&api, name(slice), slice).await {
                Ok(updated) => self.wrote(&updated, "update"),
                Err(e) => return Err(SyncError::slice_write(key, "update", slice, e)),
            }
        }
        for slice in &plan.delete {
            match api.delete(name(slice), &DeleteParams::default()).await {
                Ok(_) => {
                    self.state.lock().tracker.expect_deletion(slice);
                    self.metrics.totals.changed("delete");
                }
                // Already gone, as we wanted. Upstream fails the sync here and retries; the
                // retry would find nothing left to do, so the failure only costs a backoff.
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(SyncError::slice_write(key, "delete", slice, e)),
            }
        }
        Ok(())
    }

    fn wrote(&self, slice: &EndpointSlice, operation: &str) {
        self.state.lock().tracker.update(slice);
        self.metrics.totals.changed(operation);
    }

    /// Deletes every slice mirrored for an Endpoints that is no longer mirrored; returns the
    /// failures.
    pub(super) async fn delete_all(
        &self,
        key: &ServiceKey,
        slices: &[Arc<EndpointSlice>],
    ) -> Vec<SyncError> {
        let api = self.api(key);
        let mut errors = Vec::new();
        for slice in slices {
            match api.delete(name(slice), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => errors.push(SyncError::slice_write(key, "delete", slice, e)),
            }
        }
        errors
    }
}
