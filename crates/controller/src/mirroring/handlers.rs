//! Which Endpoints keys the mirroring controller queues for each informer event. The rules
//! are `reconcile::mirroring::triggers`; this only feeds them and queues what they name.

use super::MirroringController;
use crate::informer::Handler;
use crate::worker::queue_after;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use reconcile::mirroring::triggers;
use reconcile::projection::ServiceInfo;
use std::sync::Arc;

impl MirroringController {
    fn queue_now(&self, key: Option<reconcile::keys::ServiceKey>) {
        if let Some(key) = key {
            self.workers.queue().add(key);
        }
    }

    /// Slice events wait out the batch period, so a burst of edits costs one sync.
    fn queue_batched(&self, keys: Vec<reconcile::keys::ServiceKey>) {
        queue_after(self.workers.queue(), keys, self.batch_period);
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
impl Handler<Endpoints> for MirroringController {
    fn on_add(&self, endpoints: &Arc<Endpoints>) {
        self.queue_now(triggers::on_endpoints_event(None, Some(endpoints)));
    }
    fn on_update(&self, old: &Arc<Endpoints>, new: &Arc<Endpoints>) {
        self.queue_now(triggers::on_endpoints_event(Some(old), Some(new)));
    }
    fn on_delete(&self, endpoints: &Arc<Endpoints>) {
        self.queue_now(triggers::on_endpoints_event(Some(endpoints), None));
    }
}

/// Slice events matter for mirrored slices someone else changed; the tracker recognises the
/// echoes of our own writes.
impl Handler<EndpointSlice> for MirroringController {
    fn on_add(&self, slice: &Arc<EndpointSlice>) {
        let key = triggers::on_slice_added(slice, &self.state.lock().tracker);
        self.queue_batched(key.into_iter().collect());
    }
    fn on_update(&self, old: &Arc<EndpointSlice>, new: &Arc<EndpointSlice>) {
        let keys = triggers::on_slice_updated(old, new, &self.state.lock().tracker);
        self.queue_batched(keys);
    }
    fn on_delete(&self, slice: &Arc<EndpointSlice>) {
        let key = triggers::on_slice_deleted(slice, &mut self.state.lock().tracker);
        self.queue_batched(key.into_iter().collect());
    }
}
