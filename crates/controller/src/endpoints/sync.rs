//! One sync of one Service's Endpoints object: read the stores, plan through `reconcile`,
//! hand the action to the writer.

use super::EndpointsController;
use crate::informer::store::ObjectKey;
use crate::service_workers::{ServiceSync, ServiceWorkers};
use crate::worker::SyncError;
use crate::write_latency::Wrote;
use reconcile::endpoints::{EndpointsAction, EndpointsInput};
use reconcile::keys::ServiceKey;
use reconcile::plan_endpoints;
use reconcile::projection::{PodInfo, StoredEndpoints};

impl ServiceSync for EndpointsController {
    /// Syncs one Service.
    async fn sync_service(&self, key: &ServiceKey) -> Result<Wrote, SyncError> {
        let stores = self.workers.stores();
        let Some(service) = stores.service(key) else {
            if let Some(shadow) = &self.shadow {
                let exists = stores
                    .endpoints
                    .get(&ObjectKey::new(&key.namespace, &key.name))
                    .is_some();
                let would = exists.then(|| format!("delete Endpoints {key}"));
                self.shadow_check(shadow, key, would.into_iter().collect());
                return Ok(Wrote::Nothing);
            }
            // The Service is gone: so goes its Endpoints object.
            let deleted = self.delete(key).await?;
            let mut state = self.state.lock();
            state.triggers.delete_service(key);
            state.stale.delete(key);
            return Ok(Wrote::when(deleted, None));
        };
        if service.is_skipped() {
            return Ok(Wrote::Nothing);
        }
        let pods = stores.pods_of(&service);
        let pod_refs: Vec<&PodInfo> = pods.iter().map(|p| &**p).collect();
        // As stored: the planner compares the addresses where they are kept.
        let current = stores
            .endpoints
            .get(&ObjectKey::new(&key.namespace, &key.name));
        let current_head = current.as_deref().map(StoredEndpoints::without_subsets);
        let (plan, trigger_time) = {
            let mut state = self.state.lock();
            let current_rv = current_head.and_then(|c| c.metadata.resource_version.as_deref());
            if current_rv.is_some_and(|rv| state.stale.is_stale(key, rv)) {
                // The cache handed back a version we already replaced.
                return Err(SyncError::StaleCache {
                    cache: "Endpoints",
                    service: key.clone(),
                });
            }
            let trigger_time = state.triggers.compute(&service, &pod_refs);
            let plan = plan_endpoints(&EndpointsInput {
                service: &service,
                pods: &pod_refs,
                current: current.as_deref(),
                trigger_time,
                rules: self.parts.rules,
            });
            (plan, trigger_time)
        };
        if let Some(shadow) = &self.shadow {
            let current = current.as_deref().map(StoredEndpoints::to_endpoints);
            let would = match &plan.action {
                EndpointsAction::Unchanged => Vec::new(),
                EndpointsAction::Create(object) => {
                    vec![format!("create Endpoints {key}: {}", describe(object))]
                }
                EndpointsAction::Update(object) => vec![format!(
                    "update Endpoints {key}: {}; {} (the cluster holds {})",
                    what_differs(object, current.as_ref(), &self.parts.rules),
                    describe(object),
                    current
                        .as_ref()
                        .map_or_else(|| "nothing".to_owned(), describe)
                )],
            };
            self.shadow_check(shadow, key, would);
            return Ok(Wrote::Nothing);
        }
        match plan.action {
            EndpointsAction::Unchanged => Ok(Wrote::Nothing),
            EndpointsAction::Create(object) => {
                let created = self.create(key, object).await?;
                Ok(Wrote::when(created, trigger_time))
            }
            EndpointsAction::Update(object) => {
                let replaced = self.update(key, current_head, object).await?;
                let wrote = Wrote::now(trigger_time);
                // Remember the version we replaced: if the cache hands it back, it is stale.
                if replaced.new_rv != replaced.old_rv {
                    self.state.lock().stale.replaced(key, &replaced.old_rv);
                }
                Ok(wrote)
            }
        }
    }

    fn workers(&self) -> &ServiceWorkers {
        &self.workers
    }
}

impl EndpointsController {
    /// Shadow mode: records what this sync would write, and checks again later when needed.
    fn shadow_check(&self, shadow: &crate::shadow::Shadow, key: &ServiceKey, would: Vec<String>) {
        if let crate::shadow::Check::Pending(after) = shadow.check("Endpoints", key, would) {
            self.workers.queue().requeue_after(key.clone(), after);
        }
    }
}

/// In a few words, what an update would change: `ports in another order` when the cluster's
/// object differs only in its ports' order (which the followed version rewrites), otherwise
/// the differences as the comparison names them (`Endpoints labels differ`, ...).
fn what_differs(
    planned: &k8s_openapi::api::core::v1::Endpoints,
    current: Option<&k8s_openapi::api::core::v1::Endpoints>,
    rules: &reconcile::VersionRules,
) -> String {
    use reconcile::compare::{differences, Objects, Rules, Sides};
    let Some(current) = current else {
        return "missing from the cluster".to_owned();
    };
    let repacked = reconcile::endpoints::repack::repack_subsets(
        current.subsets.as_deref().unwrap_or_default(),
        rules.order_hash,
    );
    let same_labels = planned.metadata.labels == current.metadata.labels;
    if same_labels && planned.subsets.as_deref().unwrap_or_default() == repacked.as_slice() {
        return rules.port_order_rewritten();
    }
    let sides = Sides {
        ours: "shadow",
        theirs: "cluster",
    };
    let found = differences(
        &Objects::of_endpoints([planned]),
        &Objects::of_endpoints([current]),
        Rules::Planned,
        sides,
    );
    let summaries: Vec<String> = found.iter().take(3).map(|d| d.summary()).collect();
    if summaries.is_empty() {
        "its annotations".to_owned()
    } else {
        summaries.join("; ")
    }
}

/// A one-line summary of an Endpoints object: its subsets' ready and not-ready addresses.
fn describe(endpoints: &k8s_openapi::api::core::v1::Endpoints) -> String {
    let subsets = endpoints.subsets.as_deref().unwrap_or_default();
    let ips = |list: Option<&Vec<k8s_openapi::api::core::v1::EndpointAddress>>| {
        list.into_iter()
            .flatten()
            .map(|a| a.ip.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    let parts: Vec<String> = subsets
        .iter()
        .map(|s| {
            format!(
                "[ready {} not-ready {}]",
                ips(s.addresses.as_ref()),
                ips(s.not_ready_addresses.as_ref())
            )
        })
        .collect();
    format!("{} subset(s) {}", subsets.len(), parts.join(" "))
}
