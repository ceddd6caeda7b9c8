//! One sync of one Service: read the stores, plan through `reconcile`, write, record.

use super::writer::write_batches;
use super::EndpointSliceController;
use crate::events::Involved;
use crate::worker::SyncError;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use reconcile::keys::ServiceKey;
use reconcile::projection::PodInfo;
use reconcile::slice::{failure_event, is_managed_slice_of, NodeZones};
use reconcile::{plan_slices, SliceInput};
use std::sync::Arc;

/// Node zones read straight from the node store.
struct StoreZones<'a>(&'a crate::informer::store::Store<reconcile::projection::NodeInfo>);

impl NodeZones for StoreZones<'_> {
    fn node_zone(&self, name: &str) -> Option<Option<String>> {
        self.0
            .get(&crate::informer::store::ObjectKey::cluster(name))
            .map(|n| n.zone.clone())
    }
}

impl EndpointSliceController {
    /// Syncs one Service.
    pub async fn sync(&self, key: ServiceKey) -> Result<(), SyncError> {
        let result = self.sync_inner(&key).await;
        let label = SyncError::result_label(&result);
        self.metrics.syncs.with_label_values(&[label]).inc();
        result
    }

    async fn sync_inner(&self, key: &ServiceKey) -> Result<(), SyncError> {
        let Some(service) = self.stores.service(key) else {
            // The Service is gone: forget it. Its slices go with it through their owner
            // references (the garbage collector's job).
            let mut state = self.state();
            state.triggers.delete_service(key);
            state.tracker.delete_service(key);
            state.metrics_cache.delete_service(key);
            state.topology.delete_service(key);
            self.update_gauges(&state.metrics_cache);
            return Ok(());
        };
        if service.is_skipped() {
            return Ok(());
        }
        let pods: Vec<Arc<PodInfo>> = self.stores.pods_of(&service);
        let pod_refs: Vec<&PodInfo> = pods.iter().map(|p| &**p).collect();
        let slices: Vec<Arc<EndpointSlice>> = self
            .stores
            .slices_of(key)
            .into_iter()
            .filter(|s| {
                is_managed_slice_of(s, &service.name) && s.metadata.deletion_timestamp.is_none()
            })
            .collect();
        let plan = {
            let mut state = self.state();
            let refs: Vec<&EndpointSlice> = slices.iter().map(|s| &**s).collect();
            if state.tracker.stale_slices(key, &refs) {
                return Err(SyncError::Stale(format!(
                    "EndpointSlice informer cache is out of date for {key}"
                )));
            }
            let trigger_time = state.triggers.compute(&service, &pod_refs);
            let input = SliceInput {
                service: &service,
                pods: &pod_refs,
                existing: &slices,
                nodes: &StoreZones(&self.stores.nodes),
                trigger_time,
                max_endpoints_per_slice: self.max_endpoints_per_slice,
            };
            let plan = plan_slices(&input, &mut state.topology);
            for (_, figures) in &plan.figures {
                state.metrics_cache.update_service(key, figures);
            }
            let td = (!plan.traffic_distribution_label.is_empty())
                .then_some(plan.traffic_distribution_label.as_str());
            state.metrics_cache.update_traffic_distribution(key, td);
            self.update_gauges(&state.metrics_cache);
            plan
        };
        for (_, figures) in &plan.figures {
            self.metrics
                .endpoints_added_per_sync
                .observe(figures.added as f64);
            self.metrics
                .endpoints_removed_per_sync
                .observe(figures.removed as f64);
        }

        let mut errors = plan.errors.clone();
        let changed = write_batches(self, &service, &plan.batches, &mut errors).await;
        self.metrics
            .endpointslices_changed_per_sync
            .with_label_values(&[
                plan.topology_label,
                plan.traffic_distribution_label.as_str(),
            ])
            .observe(changed as f64);

        let involved = Involved {
            kind: "Service",
            namespace: service.namespace.clone(),
            name: service.name.clone(),
            uid: service.uid.clone(),
        };
        for event in plan.events {
            self.events.record(involved.clone(), event);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            self.events.record(
                involved,
                failure_event(&service.namespace, &service.name, &errors),
            );
            Err(SyncError::Failed(errors.join("; ")))
        }
    }

    fn update_gauges(&self, cache: &reconcile::metrics_cache::MetricsCache) {
        let totals = cache.totals();
        self.metrics.endpoints_desired.set(totals.endpoints as f64);
        self.metrics.num_endpoint_slices.set(totals.slices as f64);
        self.metrics
            .desired_endpoint_slices
            .set(totals.desired_slices as f64);
        self.metrics.services_count_by_traffic_distribution.reset();
        for (value, count) in cache.services_by_traffic_distribution() {
            self.metrics
                .services_count_by_traffic_distribution
                .with_label_values(&[value.as_str()])
                .set(count as f64);
        }
    }
}
