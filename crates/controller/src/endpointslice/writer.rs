//! Applying a plan: per address type, creates, then updates, then deletes; each success is
//! recorded in the tracker; the first failure ends that address type's batch (upstream's
//! finalize). Slices of address types the Service no longer uses are each tried.

use super::EndpointSliceController;
use crate::api_errors::{is_namespace_terminating, is_not_found};
use crate::worker::SyncError;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::DeleteParams;
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

fn name(slice: &EndpointSlice) -> &str {
    slice.metadata.name.as_deref().unwrap_or("")
}

impl EndpointSliceController {
    /// Writes every batch of a plan.
    pub(super) async fn write_batches(&self, key: &ServiceKey, batches: &[SliceBatch]) -> Written {
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), &key.namespace);
        let mut written = Written::default();
        for batch in batches {
            if batch.address_type.is_none() {
                for slice in &batch.delete {
                    match self.delete(&api, key, slice).await {
                        Ok(()) => written.changed += 1,
                        Err(e) => written.errors.push(e),
                    }
                }
                continue;
            }
            let batch = self.write_batch(&api, key, batch).await;
            written.changed += batch.changed;
            written.errors.extend(batch.errors);
        }
        written
    }

    /// Creates, updates, deletes; stops at the first failure. The count includes the writes
    /// that went through before a failure.
    async fn write_batch(
        &self,
        api: &Api<EndpointSlice>,
        key: &ServiceKey,
        batch: &SliceBatch,
    ) -> Written {
        let mut written = Written::default();
        for slice in &batch.create {
            match crate::written::create(api, slice).await {
                Ok(created) => {
                    self.state.lock().tracker.update(&created);
                    self.metrics.totals.changed("create");
                    written.changed += 1;
                }
                // Creates keep failing while the namespace terminates: drop the work quietly.
                Err(e) if is_namespace_terminating(&e) => return written,
                Err(e) => {
                    written
                        .errors
                        .push(SyncError::slice_write(key, "create", slice, e));
                    return written;
                }
            }
        }
        for slice in &batch.update {
            match crate::written::replace(api, name(slice), slice).await {
                Ok(updated) => {
                    self.state.lock().tracker.update(&updated);
                    self.metrics.totals.changed("update");
                    written.changed += 1;
                }
                Err(e) => {
                    written
                        .errors
                        .push(SyncError::slice_write(key, "update", slice, e));
                    return written;
                }
            }
        }
        for slice in &batch.delete {
            match self.delete(api, key, slice).await {
                Ok(()) => written.changed += 1,
                Err(e) => {
                    written.errors.push(e);
                    return written;
                }
            }
        }
        written
    }

    async fn delete(
        &self,
        api: &Api<EndpointSlice>,
        key: &ServiceKey,
        slice: &EndpointSlice,
    ) -> Result<(), SyncError> {
        match api.delete(name(slice), &DeleteParams::default()).await {
            Ok(_) => {
                self.state.lock().tracker.expect_deletion(slice);
                self.metrics.totals.changed("delete");
                Ok(())
            }
            // Already gone: nothing to expect.
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(SyncError::slice_write(key, "delete", slice, e)),
        }
    }
}
