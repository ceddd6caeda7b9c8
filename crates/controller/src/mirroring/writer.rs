//! Applying a mirroring plan through the one slice writer ([`crate::slice_writer`]): creates,
//! then updates, then deletes, each success recorded in the tracker and counted in `changes`,
//! the first failure ending the sync. Cleanup tries every delete, counts none and expects none
//! (the tracker already forgot the key), as upstream's does.

use super::MirroringController;
use crate::slice_writer::{self, Change, Writes};
use crate::worker::SyncError;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use reconcile::keys::ServiceKey;
use reconcile::mirroring::MirroringPlan;
use std::sync::Arc;

impl MirroringController {
    fn api(&self, key: &ServiceKey) -> Api<EndpointSlice> {
        Api::namespaced(self.parts.client.clone(), &key.namespace)
    }

    /// Sends a mirroring plan's writes in order; the first failure ends the sync. Returns how
    /// many slices were written.
    pub(super) async fn write_plan(
        &self,
        key: &ServiceKey,
        plan: MirroringPlan,
    ) -> Result<usize, SyncError> {
        let writes = Writes {
            create: plan.create,
            update: plan.update,
            delete: &plan.delete,
        };
        let outcome = slice_writer::write_in_order(
            &self.api(key),
            &self.parts.wire,
            &self.parts.stores.slice_echoes,
            key,
            writes,
            |change| self.record(change),
        )
        .await;
        outcome.error.map_or(Ok(outcome.changed), Err)
    }

    /// Records a write in the tracker and the `changes` metric.
    fn record(&self, change: Change<'_>) {
        slice_writer::record(&mut self.state.lock().tracker, &self.metrics.totals, change);
    }

    /// Deletes every slice mirrored for an Endpoints that is no longer mirrored; returns how
    /// many were deleted, and the failures.
    pub(super) async fn delete_all(
        &self,
        key: &ServiceKey,
        slices: &[Arc<EndpointSlice>],
    ) -> (usize, Vec<SyncError>) {
        let api = self.api(key);
        let (mut deleted, mut errors) = (0, Vec::new());
        for slice in slices {
            match slice_writer::delete(&api, key, slice).await {
                Ok(true) => deleted += 1,
                Ok(false) => {}
                Err(e) => errors.push(e),
            }
        }
        (deleted, errors)
    }
}
