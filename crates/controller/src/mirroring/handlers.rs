//! Which Endpoints keys the mirroring controller queues for each informer event. The rules
//! are `reconcile::mirroring::triggers`; this only feeds them and queues what they name.

use super::MirroringController;
use crate::informer::Handler;
use crate::queue::Clock;
use crate::worker::queue_after;
use reconcile::mirroring::triggers;
use reconcile::projection::{ServiceInfo, StoredEndpoints, StoredSlice};
use std::sync::Arc;

impl MirroringController {
    fn queue_now(&self, key: Option<reconcile::keys::ServiceKey>) {
        if let Some(key) = key {
            self.workers.queue().add(key);
        }
    }

    /// A mirrored slice of ours came back while its Endpoints waited out a long backoff
    /// for this cache to catch up: it is synced now (see the EndpointSlice controller's
    /// `resume_if_waiting`, whose threshold this shares).
    fn resume_if_waiting(&self, slice: &k8s_openapi::api::discovery::v1::EndpointSlice) {
        if let Some(key) = triggers::mirrored_key(slice) {
            let queue = self.workers.queue();
            if queue.num_requeues(&key) >= crate::endpointslice::WAITED_RETRIES {
                queue.requeue(key);
            }
        }
    }

    /// Slice events wait out the batch period, so a burst of edits costs one sync. Like the
    /// EndpointSlice controller's, they are rechecks the latency SLI does not time.
    fn queue_batched(&self, keys: Vec<reconcile::keys::ServiceKey>) {
        queue_after(
            self.workers.queue(),
            &keys,
            self.parts.batch_period,
            Clock::Keep,
        );
    }
}

/// Service events matter only for Services without a selector, or that gain or lose one.
impl Handler<ServiceInfo> for MirroringController {
    fn on_add(&self, service: &Arc<ServiceInfo>) {
        self.queue_now(triggers::on_service_event(None, Some(service)));
    }
    fn on_update(&self, old: &Arc<ServiceInfo>, new: &Arc<ServiceInfo>) {
        self.queue_now(triggers::on_service_event(Some(old), Some(new)));
    }
    fn on_delete(&self, service: &Arc<ServiceInfo>) {
        self.queue_now(triggers::on_service_event(Some(service), None));
    }
}

/// Endpoints events matter while the object may be mirrored, or just stopped being so.
impl Handler<StoredEndpoints> for MirroringController {
    fn on_add(&self, endpoints: &Arc<StoredEndpoints>) {
        let new = endpoints.without_subsets();
        self.queue_now(triggers::on_endpoints_event(None, Some(new)));
    }
    fn on_update(&self, old: &Arc<StoredEndpoints>, new: &Arc<StoredEndpoints>) {
        let (old, new) = (old.without_subsets(), new.without_subsets());
        self.queue_now(triggers::on_endpoints_event(Some(old), Some(new)));
    }
    fn on_delete(&self, endpoints: &Arc<StoredEndpoints>) {
        let old = endpoints.without_subsets();
        self.queue_now(triggers::on_endpoints_event(Some(old), None));
    }
}

/// Slice events matter for mirrored slices someone else changed; the tracker recognises the
/// echoes of our own writes.
impl Handler<StoredSlice> for MirroringController {
    fn on_add(&self, slice: &Arc<StoredSlice>) {
        let slice = slice.without_endpoints();
        let key = triggers::on_slice_added(slice, &self.state.lock().tracker);
        if key.is_none() {
            self.resume_if_waiting(slice);
        }
        self.queue_batched(key.into_iter().collect());
    }
    fn on_update(&self, old: &Arc<StoredSlice>, new: &Arc<StoredSlice>) {
        crate::slice_writer::on_slice_update(self, old, new, |old, new| {
            let keys = triggers::on_slice_updated(old, new, &self.state.lock().tracker);
            if keys.is_empty() {
                self.resume_if_waiting(new);
            }
            self.queue_batched(keys);
        });
    }
    fn on_delete(&self, slice: &Arc<StoredSlice>) {
        let slice = slice.without_endpoints();
        let key = triggers::on_slice_deleted(slice, &mut self.state.lock().tracker);
        self.queue_batched(key.into_iter().collect());
    }
    fn on_listed(&self) {
        let keys = crate::slice_writer::forget_unlisted(
            &self.workers.stores().slices,
            &mut self.state.lock().tracker,
        );
        for key in keys {
            self.queue_now(Some(key));
        }
    }
}
