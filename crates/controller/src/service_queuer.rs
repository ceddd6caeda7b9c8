//! Service and Pod events, turned into Service keys: the same for both controllers, so each
//! controller's queue is fed by one of these, each with its own batch period.

use crate::index::Stores;
use crate::informer::Handler;
use crate::queue::{Clock, WorkQueue};
use reconcile::keys::ServiceKey;
use reconcile::projection::{PodInfo, ServiceInfo};
use std::sync::Arc;
use std::time::Duration;

/// Queues a Service on its own events at once, and on its pods' events after the batch
/// period, into each Service controller's queue. Both controllers are fed by one queuer, so
/// the Services a pod event concerns are looked up once per event, not once per controller.
pub struct ServiceQueuer {
    stores: Stores,
    /// Each controller's queue, with its batch period for pod events.
    queues: Vec<(WorkQueue<ServiceKey>, Duration)>,
}

impl ServiceQueuer {
    /// A queuer for `queues`, each with its batch period.
    pub fn new(stores: Stores, queues: Vec<(WorkQueue<ServiceKey>, Duration)>) -> Arc<Self> {
        Arc::new(Self { stores, queues })
    }

    fn add(&self, key: ServiceKey) {
        for (queue, _) in &self.queues {
            queue.add(key.clone());
        }
    }

    fn queue_after_batch(&self, keys: Vec<ServiceKey>) {
        if keys.is_empty() {
            return;
        }
        for (queue, batch_period) in &self.queues {
            crate::worker::queue_after(queue, &keys, *batch_period, Clock::Start);
        }
    }
}

impl Handler<ServiceInfo> for ServiceQueuer {
    fn on_add(&self, service: &Arc<ServiceInfo>) {
        self.add(service.key());
    }
    fn on_update(&self, _old: &Arc<ServiceInfo>, new: &Arc<ServiceInfo>) {
        self.add(new.key());
    }
    fn on_delete(&self, service: &Arc<ServiceInfo>) {
        self.add(service.key());
    }
    /// After a re-list, every Service is queued, changed or not. client-go hands each listed
    /// object to the update handler and upstream queues the Service on every update, so a
    /// re-list makes upstream compare every Service's objects again. That is what repairs a
    /// write this replica could not have seen coming: one made by a replica that still took
    /// itself for the leader (a Lease lost in a restore lets two replicas lead for up to the
    /// renew deadline), which no Service or pod event would otherwise bring back.
    fn on_listed(&self) {
        for service in self.stores.services.list() {
            self.add(service.key());
        }
    }
}

impl Handler<PodInfo> for ServiceQueuer {
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
