//! The one loop that writes EndpointSlices, for both controllers that write them (the
//! EndpointSlice controller and the mirroring controller): creates, then updates, then
//! deletes, as upstream's finalize orders them; each success is reported to the caller, which
//! records it in its tracker and its `changes` metric; the first failure ends the run.

use crate::api_errors::{is_namespace_terminating, is_not_found};
use crate::informer::{Echoes, ObjectKey};
use crate::metrics::SliceTotals;
use crate::wire::objects::Write;
use crate::worker::SyncError;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::DeleteParams;
use kube::Api;
use reconcile::keys::ServiceKey;
use reconcile::projection::StoredSlice;
use reconcile::slice::tracker::SliceTracker;
use std::sync::Arc;

/// A write that went through.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// The slice as the server created it (metadata only).
    Created(&'a EndpointSlice),
    /// The slice as the server stored the update (metadata only).
    Updated(&'a EndpointSlice),
    /// The slice that was deleted, as the plan named it.
    Deleted(&'a EndpointSlice),
}

impl Change<'_> {
    /// The `operation` label of the `changes` metric.
    pub fn operation(&self) -> &'static str {
        match self {
            Change::Created(_) => "create",
            Change::Updated(_) => "update",
            Change::Deleted(_) => "delete",
        }
    }
}

/// Records a write as both controllers do: in the slice tracker (the generation written, or
/// the deletion expected) and in the `changes` metric.
pub fn record(tracker: &mut SliceTracker, totals: &SliceTotals, change: Change<'_>) {
    match change {
        Change::Created(slice) | Change::Updated(slice) => tracker.update(slice),
        Change::Deleted(slice) => tracker.expect_deletion(slice),
    }
    totals.changed(change.operation());
}

/// What one run wrote.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Slices created, updated or deleted, including those before a failure.
    pub changed: usize,
    /// The failure that ended the run, if any.
    pub error: Option<SyncError>,
}

/// The slices one plan writes, in the order they are sent. Those created and replaced are
/// handed over: each one written becomes its echo's projection.
#[derive(Debug, Clone)]
pub struct Writes<'a> {
    /// Created first.
    pub create: Vec<EndpointSlice>,
    /// Then replaced.
    pub update: Vec<EndpointSlice>,
    /// Then deleted.
    pub delete: &'a [Arc<EndpointSlice>],
}

fn name(slice: &EndpointSlice) -> &str {
    slice.metadata.name.as_deref().unwrap_or("")
}

/// Sends `writes` in order. A create refused because the namespace is terminating ends the
/// run quietly (creates keep failing until it is gone, and then nothing is left to write); a
/// slice already deleted counts as deleted by nobody.
pub async fn write_in_order(
    api: &Api<EndpointSlice>,
    wire: &crate::wire::Negotiated,
    echoes: &Echoes<EndpointSlice, StoredSlice>,
    key: &ServiceKey,
    writes: Writes<'_>,
    mut record: impl FnMut(Change<'_>),
) -> Outcome {
    let mut outcome = Outcome::default();
    for slice in writes.create {
        // Named by the server: its echo is recognised once the answer is read.
        let flight = echoes.sending(None);
        match crate::written::write(api, Write::Create, &slice, wire).await {
            Ok(created) => {
                record(Change::Created(&created));
                flight.written(slice, &created.metadata);
                outcome.changed += 1;
            }
            Err(e) if is_namespace_terminating(&e) => return outcome,
            Err(e) => {
                outcome.error = Some(SyncError::slice_write(key, "create", &slice, e));
                return outcome;
            }
        }
    }
    for slice in writes.update {
        let flight = echoes.sending(Some(ObjectKey::new(&key.namespace, name(&slice))));
        let replace = Write::Replace { name: name(&slice) };
        match crate::written::write(api, replace, &slice, wire).await {
            Ok(updated) => {
                record(Change::Updated(&updated));
                flight.written(slice, &updated.metadata);
                outcome.changed += 1;
            }
            Err(e) => {
                outcome.error = Some(SyncError::slice_write(key, "update", &slice, e));
                return outcome;
            }
        }
    }
    for slice in writes.delete {
        match delete(api, key, slice).await {
            Ok(true) => {
                record(Change::Deleted(slice));
                outcome.changed += 1;
            }
            Ok(false) => {}
            Err(e) => {
                outcome.error = Some(e);
                return outcome;
            }
        }
    }
    outcome
}

/// Deletes one slice: `true` when this call deleted it, `false` when it was already gone.
/// (Upstream's mirroring controller fails the sync on a slice already gone and retries; the
/// retry would find nothing left to do, so here it only costs nothing.)
pub async fn delete(
    api: &Api<EndpointSlice>,
    key: &ServiceKey,
    slice: &EndpointSlice,
) -> Result<bool, SyncError> {
    match api.delete(name(slice), &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(e) if is_not_found(&e) => Ok(false),
        Err(e) => Err(SyncError::slice_write(key, "delete", slice, e)),
    }
}

/// Hands a slice update to `changed` with both versions' metadata, unless another object
/// took the name: `handler` then hears of it as a deletion and an addition, since the
/// trackers must hear of the deletion.
pub fn on_slice_update<H: crate::informer::Handler<StoredSlice>>(
    handler: &H,
    old: &Arc<StoredSlice>,
    new: &Arc<StoredSlice>,
    changed: impl FnOnce(&EndpointSlice, &EndpointSlice),
) {
    if old.is_same_object(new) {
        changed(old.without_endpoints(), new.without_endpoints());
    } else {
        handler.on_delete(old);
        handler.on_add(new);
    }
}

/// After a list of slices (the first or a re-list): forgets the slices `tracker` recorded as
/// written that the server no longer holds, and returns their Services to sync again.
/// Without this, a server that came back without a slice we wrote would leave its Service
/// waiting forever for the cache to show it.
pub fn forget_unlisted(
    slices: &crate::informer::Store<StoredSlice>,
    tracker: &mut SliceTracker,
) -> Vec<ServiceKey> {
    let objects: Vec<_> = slices
        .keys()
        .into_iter()
        .filter_map(|key| slices.get(&key))
        .collect();
    let listed: std::collections::HashSet<&str> = objects
        .iter()
        .filter_map(|s| s.without_endpoints().metadata.uid.as_deref())
        .collect();
    let keys = tracker.forget_unlisted(&listed);
    if !keys.is_empty() {
        tracing::info!(
            services = keys.len(),
            "slices written earlier are gone from a fresh list; syncing their Services again"
        );
    }
    keys
}
