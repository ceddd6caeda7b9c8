//! Which Services the Endpoints controller queues for each event.

use super::EndpointsController;
use crate::informer::Handler;
use reconcile::keys::ServiceKey;
use reconcile::labels::{ENDPOINTS_CONTROLLER_NAME, ENDPOINTS_MANAGED_BY};
use reconcile::projection::StoredEndpoints;
use std::sync::Arc;

/// A deleted Endpoints object is recreated if its Service still wants one, and one of ours
/// that appears without its Service is deleted.
impl Handler<StoredEndpoints> for EndpointsController {
    fn on_add(&self, endpoints: &Arc<StoredEndpoints>) {
        // Upstream looks for Endpoints whose Service is gone only at start
        // (`queue_leftovers`). One can also appear later: written by a replica whose cache
        // had not seen the Service deleted yet (a leader that lost its lease mid-sync, a cache
        // behind a server restart). Ours alone are queued; the sync deletes them.
        let meta = &endpoints.without_subsets().metadata;
        let ours = meta
            .labels
            .as_ref()
            .and_then(|l| l.get(ENDPOINTS_MANAGED_BY))
            .is_some_and(|m| m == ENDPOINTS_CONTROLLER_NAME);
        if let (true, Some(ns), Some(name)) = (ours, &meta.namespace, &meta.name) {
            let key = ServiceKey::new(ns, name);
            if self.workers.stores().service(&key).is_none() {
                self.workers.queue().add(key);
            }
        }
    }
    fn on_update(&self, _old: &Arc<StoredEndpoints>, _new: &Arc<StoredEndpoints>) {}
    fn on_delete(&self, endpoints: &Arc<StoredEndpoints>) {
        let meta = &endpoints.without_subsets().metadata;
        if let (Some(ns), Some(name)) = (&meta.namespace, &meta.name) {
            self.workers.queue().add(ServiceKey::new(ns, name));
        }
    }
}
