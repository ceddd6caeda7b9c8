//! Which Services the Endpoints controller queues for each event.

use super::EndpointsController;
use crate::informer::Handler;
use k8s_openapi::api::core::v1::Endpoints;
use reconcile::keys::ServiceKey;
use std::sync::Arc;

/// A deleted Endpoints object is recreated if its Service still wants one.
impl Handler<Endpoints> for EndpointsController {
    fn on_add(&self, _endpoints: &Arc<Endpoints>) {}
    fn on_update(&self, _old: &Arc<Endpoints>, _new: &Arc<Endpoints>) {}
    fn on_delete(&self, endpoints: &Arc<Endpoints>) {
        if let (Some(ns), Some(name)) = (&endpoints.metadata.namespace, &endpoints.metadata.name) {
            self.workers.queue().add(ServiceKey::new(ns, name));
        }
    }
}
