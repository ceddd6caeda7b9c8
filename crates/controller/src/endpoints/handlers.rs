//! Which Services the Endpoints controller queues for each event.

use super::EndpointsController;
use crate::informer::Handler;
use reconcile::keys::ServiceKey;
use reconcile::projection::StoredEndpoints;
use std::sync::Arc;

/// A deleted Endpoints object is recreated if its Service still wants one.
impl Handler<StoredEndpoints> for EndpointsController {
    fn on_add(&self, _endpoints: &Arc<StoredEndpoints>) {}
    fn on_update(&self, _old: &Arc<StoredEndpoints>, _new: &Arc<StoredEndpoints>) {}
    fn on_delete(&self, endpoints: &Arc<StoredEndpoints>) {
        let meta = &endpoints.without_subsets().metadata;
        if let (Some(ns), Some(name)) = (&meta.namespace, &meta.name) {
            self.workers.queue().add(ServiceKey::new(ns, name));
        }
    }
}
