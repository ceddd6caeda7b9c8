//! Which Services to queue for each informer event. Nothing here decides what a slice holds.

use super::{EndpointSliceController, TopologyKey};
use crate::informer::Handler;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use reconcile::keys::ServiceKey;
use reconcile::projection::{NodeInfo, StoredSlice};
use reconcile::slice::{is_managed_by_us, service_name_of};
use std::sync::Arc;
use std::time::Duration;

impl EndpointSliceController {
    /// Slice events are delayed by at least a second, so a burst of our own writes' echoes
    /// collapses into one sync. They are rechecks, not changes the latency SLI times: most
    /// are echoes of our own writes that came back before the tracker learnt of them.
    fn queue_for_slice(&self, slice: &EndpointSlice) {
        let (Some(ns), Some(name)) = (slice.metadata.namespace.as_deref(), service_name_of(slice))
        else {
            return;
        };
        let delay = self.parts.batch_period.max(Duration::from_secs(1));
        self.workers
            .queue()
            .requeue_after(ServiceKey::new(ns, name), delay);
    }

    /// One of our own writes came back. A Service whose syncs kept finding this cache
    /// behind waits out a backoff that doubles from a second (upstream's), and once the
    /// slice it waited for has come it would still wait, since an echo of our own write
    /// queues nothing: a watch that failed for a few seconds could leave it waiting for
    /// minutes. After [`WAITED_RETRIES`] such retries, the echo syncs it at once instead.
    /// The first retries keep upstream's timing, so ordinary echoes change nothing.
    fn resume_if_waiting(&self, slice: &EndpointSlice) {
        let (Some(ns), Some(name)) = (slice.metadata.namespace.as_deref(), service_name_of(slice))
        else {
            return;
        };
        let key = ServiceKey::new(ns, name);
        let queue = self.workers.queue();
        if queue.num_requeues(&key) >= WAITED_RETRIES {
            queue.requeue(key);
        }
    }
}

/// Retries after which a Service waiting for this cache is synced as soon as one of its
/// slices comes back (its next retry would be at least 8 s away).
pub(crate) const WAITED_RETRIES: u32 = 4;

/// EndpointSlice events: only changes we did not make ourselves resync the Service.
impl Handler<StoredSlice> for EndpointSliceController {
    fn on_add(&self, slice: &Arc<StoredSlice>) {
        let slice = slice.without_endpoints();
        if !is_managed_by_us(slice) {
            return;
        }
        if self.state.lock().tracker.should_sync(slice) {
            self.queue_for_slice(slice);
        } else {
            self.resume_if_waiting(slice);
        }
    }
    fn on_update(&self, old: &Arc<StoredSlice>, new: &Arc<StoredSlice>) {
        crate::slice_writer::on_slice_update(self, old, new, |old, new| {
            if service_name_of(old) != service_name_of(new) {
                self.queue_for_slice(new);
                self.queue_for_slice(old);
                return;
            }
            let managed_by_changed = is_managed_by_us(old) != is_managed_by_us(new);
            if managed_by_changed
                || (is_managed_by_us(new) && self.state.lock().tracker.should_sync(new))
            {
                self.queue_for_slice(new);
            } else if is_managed_by_us(new) {
                self.resume_if_waiting(new);
            }
        });
    }
    fn on_delete(&self, slice: &Arc<StoredSlice>) {
        let slice = slice.without_endpoints();
        if !is_managed_by_us(slice) {
            return;
        }
        // Upstream only resyncs for slices its tracker knows. A slice it does not know yet
        // may be one whose create has not returned; the tracker notes it, and the Service is
        // synced so the slice is written again.
        let unexpected = self.state.lock().tracker.handle_deleted(slice);
        if unexpected {
            self.queue_for_slice(slice);
        }
    }
    fn on_listed(&self) {
        let keys = crate::slice_writer::forget_unlisted(
            &self.workers.stores().slices,
            &mut self.state.lock().tracker,
        );
        for key in keys {
            self.workers.queue().add(key);
        }
    }
}

/// Node events: recompute zone shares when a node comes, goes, or changes readiness or zone.
impl Handler<NodeInfo> for EndpointSliceController {
    fn on_add(&self, _node: &Arc<NodeInfo>) {
        self.topology_queue.add(TopologyKey);
    }
    fn on_update(&self, old: &Arc<NodeInfo>, new: &Arc<NodeInfo>) {
        if old.ready != new.ready
            || old.zone != new.zone
            || old.cpu_millis != new.cpu_millis
            || old.control_plane != new.control_plane
        {
            self.topology_queue.add(TopologyKey);
        }
    }
    fn on_delete(&self, _node: &Arc<NodeInfo>) {
        self.topology_queue.add(TopologyKey);
    }
}
