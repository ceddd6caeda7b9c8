//! Which Services the Endpoints controller queues for each event.

use super::EndpointsController;
use crate::informer::Handler;
use k8s_openapi::api::core::v1::Endpoints;
use reconcile::keys::ServiceKey;
use reconcile::projection::{PodInfo, ServiceInfo};
use std::sync::Arc;

impl EndpointsController {
    fn queue_after_batch(&self, keys: Vec<ServiceKey>) {
        crate::worker::queue_after(&self.queue, keys, self.batch_period);
    }
}

/// Service events.
impl Handler<ServiceInfo> for EndpointsController {
    fn on_add(&self, service: &Arc<ServiceInfo>) {
        self.queue.add(service.key());
    }
    fn on_update(&self, _old: &Arc<ServiceInfo>, new: &Arc<ServiceInfo>) {
        self.queue.add(new.key());
    }
    fn on_delete(&self, service: &Arc<ServiceInfo>) {
        self.queue.add(service.key());
    }
}

/// Pod events, after the batch period.
impl Handler<PodInfo> for EndpointsController {
    fn on_add(&self, pod: &Arc<PodInfo>) {
        self.queue_after_batch(self.stores.services_matching(&pod.namespace, &pod.labels));
    }
    fn on_update(&self, old: &Arc<PodInfo>, new: &Arc<PodInfo>) {
        self.queue_after_batch(self.stores.services_for_pod_update(old, new));
    }
    fn on_delete(&self, pod: &Arc<PodInfo>) {
        self.queue_after_batch(self.stores.services_matching(&pod.namespace, &pod.labels));
    }
}

/// A deleted Endpoints object is recreated if its Service still wants one.
impl Handler<Endpoints> for EndpointsController {
    fn on_add(&self, _endpoints: &Arc<Endpoints>) {}
    fn on_update(&self, _old: &Arc<Endpoints>, _new: &Arc<Endpoints>) {}
    fn on_delete(&self, endpoints: &Arc<Endpoints>) {
        if let (Some(ns), Some(name)) = (&endpoints.metadata.namespace, &endpoints.metadata.name) {
            self.queue.add(ServiceKey::new(ns, name));
        }
    }
}
