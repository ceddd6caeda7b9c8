//! Applying a plan: per address type, creates, then updates, then deletes through the one
//! slice writer ([`crate::slice_writer`]), each success recorded in the tracker; the first
//! failure ends that address type's batch (upstream's finalize). Slices of address types the
//! Service no longer uses are each tried.

use super::EndpointSliceController;
use crate::slice_writer::{self, Change, Writes};
use crate::worker::SyncError;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use reconcile::keys::ServiceKey;
use reconcile::slice::SliceBatch;

/// What writing a plan did.
#[derive(Debug, Default)]
pub(super) struct Written {
    /// Slices created, updated or deleted.
    pub changed: usize,
    /// Failures, at most one per address type plus one per unsupported slice.
    pub errors: Vec<SyncError>,
}

impl EndpointSliceController {
    /// Writes every batch of a plan.
    pub(super) async fn write_batches(
        &self,
        key: &ServiceKey,
        batches: Vec<SliceBatch>,
    ) -> Written {
        let api: Api<EndpointSlice> = Api::namespaced(self.parts.client.clone(), &key.namespace);
        let mut written = Written::default();
        for batch in batches {
            if batch.address_type.is_none() {
                for slice in &batch.delete {
                    match slice_writer::delete(&api, key, slice).await {
                        Ok(true) => {
                            self.record(Change::Deleted(slice));
                            written.changed += 1;
                        }
                        Ok(false) => {}
                        Err(e) => written.errors.push(e),
                    }
                }
                continue;
            }
            let writes = Writes {
                create: batch.create,
                update: batch.update,
                delete: &batch.delete,
            };
            let outcome = slice_writer::write_in_order(
                &api,
                &self.parts.wire,
                &self.parts.stores.slice_echoes,
                key,
                writes,
                |change| self.record(change),
            )
            .await;
            written.changed += outcome.changed;
            written.errors.extend(outcome.error);
        }
        written
    }

    /// Records a write in the tracker and the `changes` metric.
    fn record(&self, change: Change<'_>) {
        slice_writer::record(&mut self.state.lock().tracker, &self.metrics.totals, change);
    }
}
