//! One sync of one Service: read the stores, plan through `reconcile`, write, record.

use super::EndpointSliceController;
use crate::events::Involved;
use crate::service_workers::{ServiceSync, ServiceWorkers};
use crate::worker::SyncError;
use crate::write_latency::Wrote;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use reconcile::keys::ServiceKey;
use reconcile::projection::{PodInfo, StoredSlice};
use reconcile::slice::{failure_event, is_managed_slice_of, NodeZones, SlicePlan};
use reconcile::{plan_slices, SliceInput};
use std::sync::Arc;

/// Node zones read straight from the node store.
struct StoreZones<'a>(&'a crate::informer::store::Store<reconcile::projection::NodeInfo>);

impl NodeZones for StoreZones<'_> {
    fn node_zone(&self, name: &str) -> Option<Option<compact_str::CompactString>> {
        self.0
            .get(&crate::informer::store::ObjectKey::cluster(name))
            .map(|n| n.zone.as_deref().map(Into::into))
    }
}

impl ServiceSync for EndpointSliceController {
    /// Syncs one Service.
    async fn sync_service(&self, key: &ServiceKey) -> Result<Wrote, SyncError> {
        let stores = self.workers.stores();
        let Some(service) = stores.service(key) else {
            if let Some(shadow) = &self.shadow {
                // Deleting the slices is the garbage collector's job, not ours.
                shadow.check("EndpointSlice", key, Vec::new());
            }
            // The Service is gone: forget it. Its slices go with it through their owner
            // references (the garbage collector's job).
            let mut state = self.state.lock();
            state.triggers.delete_service(key);
            state.tracker.delete_service(key);
            state.metrics_cache.delete_service(key);
            state.topology.delete_service(key);
            self.update_gauges(&state.metrics_cache);
            return Ok(Wrote::Nothing);
        };
        if service.is_skipped() {
            return Ok(Wrote::Nothing);
        }
        let pods: Vec<Arc<PodInfo>> = stores.pods_of(&service);
        let pod_refs: Vec<&PodInfo> = pods.iter().map(|p| &**p).collect();
        let slices: Vec<Arc<StoredSlice>> = stores.stored_slices_of(key, |s| {
            is_managed_slice_of(s, &service.name) && s.metadata.deletion_timestamp.is_none()
        });
        let (mut plan, trigger_time) = {
            let mut state = self.state.lock();
            let refs: Vec<&EndpointSlice> = slices.iter().map(|s| s.without_endpoints()).collect();
            if state.tracker.stale_slices(key, &refs) {
                return Err(SyncError::StaleCache {
                    cache: "EndpointSlice",
                    service: key.clone(),
                });
            }
            let trigger_time = state.triggers.compute(&service, &pod_refs);
            let input = SliceInput {
                service: &service,
                pods: &pod_refs,
                existing: &slices,
                nodes: &StoreZones(&stores.nodes),
                trigger_time,
                max_endpoints_per_slice: self.max_endpoints_per_slice,
                rules: self.parts.rules,
            };
            let plan = plan_slices(&input, &mut state.topology);
            for (_, figures) in &plan.figures {
                state.metrics_cache.update_service(key, figures);
            }
            let td = (!plan.traffic_distribution_label.is_empty())
                .then_some(plan.traffic_distribution_label.as_str());
            state.metrics_cache.update_traffic_distribution(key, td);
            self.update_gauges(&state.metrics_cache);
            (plan, trigger_time)
        };
        self.observe_figures(&plan);
        if let Some(shadow) = &self.shadow {
            let existing: Vec<EndpointSlice> = slices.iter().map(|s| s.to_slice()).collect();
            let would = would_write(&plan, &existing);
            if let crate::shadow::Check::Pending(after) = shadow.check("EndpointSlice", key, would)
            {
                self.workers.queue().requeue_after(key.clone(), after);
            }
            return Ok(Wrote::Nothing);
        }

        let written = self
            .write_batches(key, std::mem::take(&mut plan.batches))
            .await;
        let wrote = Wrote::when(written.changed > 0, trigger_time);
        self.metrics
            .endpointslices_changed_per_sync
            .with_label_values(&[
                plan.topology_label,
                plan.traffic_distribution_label.as_str(),
            ])
            .observe(written.changed as f64);

        let mut errors = Vec::new();
        if !plan.missing_nodes.is_empty() {
            errors.push(SyncError::NodeNotFound {
                service: key.clone(),
                nodes: plan.missing_nodes,
            });
        }
        errors.extend(written.errors);
        let involved = Involved {
            kind: "Service",
            namespace: service.namespace.clone(),
            name: service.name.clone(),
            uid: service.uid.clone(),
        };
        for event in plan.events {
            self.parts.events.record(involved.clone(), event);
        }
        match SyncError::combine(key, errors) {
            None => Ok(wrote),
            Some(error) => {
                self.parts.events.record(
                    involved,
                    failure_event(&service.namespace, &service.name, &error.messages()),
                );
                Err(error)
            }
        }
    }

    fn workers(&self) -> &ServiceWorkers {
        &self.workers
    }

    /// Runs `workers` sync workers and the topology worker until the queues shut down.
    async fn run_workers(self: Arc<Self>, workers: usize) {
        let topology = async {
            while let Some(key) = self.topology_queue.get().await {
                self.check_topology();
                self.topology_queue.forget(&key);
                self.topology_queue.done(&key);
            }
        };
        tokio::join!(self.workers.run(Arc::clone(&self), workers), topology);
    }
}

impl EndpointSliceController {
    fn observe_figures(&self, plan: &SlicePlan) {
        for (_, figures) in &plan.figures {
            self.metrics
                .endpoints_added_per_sync
                .observe(figures.added as f64);
            self.metrics
                .endpoints_removed_per_sync
                .observe(figures.removed as f64);
        }
    }

    fn update_gauges(&self, cache: &reconcile::metrics_cache::MetricsCache) {
        let totals = cache.totals();
        self.metrics
            .totals
            .set(totals.endpoints, totals.slices, totals.desired_slices);
        self.metrics.services_count_by_traffic_distribution.reset();
        for (value, count) in cache.services_by_traffic_distribution() {
            self.metrics
                .services_count_by_traffic_distribution
                .with_label_values(&[value.as_str()])
                .set(*count as f64);
        }
    }
}

/// What a plan would send, one line per write, for shadow mode. An update names the endpoints
/// it would add or remove relative to the slice the cluster holds.
fn would_write(plan: &SlicePlan, existing: &[EndpointSlice]) -> Vec<String> {
    let addresses = |slice: &EndpointSlice| -> std::collections::BTreeSet<String> {
        slice
            .endpoints
            .iter()
            .map(|e| {
                let ready = e.conditions.as_ref().and_then(|c| c.ready);
                format!("{} ready={ready:?}", e.addresses.join(","))
            })
            .collect()
    };
    let mut lines = Vec::new();
    for batch in &plan.batches {
        let kind = batch.address_type.map_or("unsupported", |t| t.as_str());
        for slice in &batch.create {
            lines.push(format!(
                "create {kind} EndpointSlice with {} endpoint(s)",
                slice.endpoints.len()
            ));
        }
        for slice in &batch.update {
            let name = slice.metadata.name.as_deref().unwrap_or_default();
            let current = existing
                .iter()
                .find(|s| s.metadata.name.as_deref() == Some(name));
            let (ours, theirs) = (
                addresses(slice),
                current.map(&addresses).unwrap_or_default(),
            );
            let added: Vec<&String> = ours.difference(&theirs).collect();
            let removed: Vec<&String> = theirs.difference(&ours).collect();
            lines.push(format!(
                "update {kind} EndpointSlice {name}: endpoints to add {added:?}, to remove {removed:?}"
            ));
        }
        for slice in &batch.delete {
            lines.push(format!(
                "delete {kind} EndpointSlice {}",
                slice.metadata.name.as_deref().unwrap_or_default()
            ));
        }
    }
    lines
}
