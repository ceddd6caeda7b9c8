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
    /// Upstream reacts to no Endpoints update, and neither do we: an object edited by hand
    /// stays as edited until its Service or a pod of it changes.
    fn on_update(&self, _old: &Arc<StoredEndpoints>, _new: &Arc<StoredEndpoints>) {}
    fn on_delete(&self, endpoints: &Arc<StoredEndpoints>) {
        let meta = &endpoints.without_subsets().metadata;
        if let (Some(ns), Some(name)) = (&meta.namespace, &meta.name) {
            self.workers.queue().add(ServiceKey::new(ns, name));
        }
    }
    /// After a re-list, every Service we write Endpoints for is checked once more (no write
    /// when its object is as it should be). A re-list follows a lost contact or a 410: the
    /// server may have come back from a backup without our last writes, and then it hands
    /// back older Endpoints as mere updates, which nothing else would bring to a sync if
    /// the Services and pods re-listed first. The first list is covered by the Services'
    /// own, which queues them all.
    fn on_listed(&self) {
        if self.shadow.is_some() {
            return;
        }
        for service in self.workers.stores().services.list() {
            if !service.is_skipped() {
                self.workers.queue().requeue(service.key());
            }
        }
    }
}
