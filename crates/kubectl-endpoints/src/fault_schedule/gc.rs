//! The sweep of kube-controller-manager's garbage collector that the embedded server lacks.
//!
//! The embedded server collects dependents inside the owner's delete. A controller working
//! from a stale cache can create a slice for a Service deleted a moment before: the slice
//! names an owner uid that no longer exists, and nothing removes it. In a cluster the garbage
//! collector notices such a dependent and deletes it; a fault schedule makes that race common
//! (a slow watch, a re-list), so the driver sweeps the same way before judging.

use super::api::{is_not_found, retrying};
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};
use std::collections::BTreeSet;

/// Deletes every EndpointSlice whose owners (Services or Endpoints) are all gone. Returns
/// how many it deleted.
pub async fn sweep(client: &Client) -> Result<usize> {
    let lp = ListParams::default();
    let services = Api::<Service>::all(client.clone());
    let endpoints = Api::<Endpoints>::all(client.clone());
    let slices = Api::<EndpointSlice>::all(client.clone());
    let mut owners: BTreeSet<String> = BTreeSet::new();
    for service in retrying(|| services.list(&lp)).await?.items {
        owners.extend(service.metadata.uid);
    }
    for endpoints in retrying(|| endpoints.list(&lp)).await?.items {
        owners.extend(endpoints.metadata.uid);
    }
    let mut deleted = 0;
    for slice in retrying(|| slices.list(&lp)).await?.items {
        let references = slice
            .metadata
            .owner_references
            .as_deref()
            .unwrap_or_default();
        let orphaned = !references.is_empty()
            && references
                .iter()
                .filter(|r| matches!(r.kind.as_str(), "Service" | "Endpoints"))
                .count()
                == references.len()
            && references.iter().all(|r| !owners.contains(&r.uid));
        let (true, Some(ns), Some(name)) = (
            orphaned,
            slice.metadata.namespace.as_deref(),
            slice.metadata.name.as_deref(),
        ) else {
            continue;
        };
        // Slice names are generated, so the name still means this very slice.
        let dp = DeleteParams::default();
        let api = Api::<EndpointSlice>::namespaced(client.clone(), ns);
        match retrying(|| api.delete(name, &dp)).await {
            Ok(_) => deleted += 1,
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e).with_context(|| format!("collecting slice {ns}/{name}")),
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::PostParams;
    use serde_json::json;

    fn owned_slice(name: &str, owner_uid: &str) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {
                "name": name,
                "namespace": "default",
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Service", "name": "web",
                    "uid": owner_uid, "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "addressType": "IPv4",
            "endpoints": [],
        }))
        .expect("a slice")
    }

    #[tokio::test]
    async fn the_sweep_deletes_slices_whose_owner_is_gone_and_keeps_the_others() {
        let server = apiserver::ApiServer::new(apiserver::Config::default());
        let client = Client::new(server.service(), "default");
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"ports": [{"port": 80}]},
        }))
        .expect("a Service");
        let pp = PostParams::default();
        let created = Api::<Service>::namespaced(client.clone(), "default")
            .create(&pp, &service)
            .await
            .expect("the Service is created");
        let uid = created.metadata.uid.expect("a uid");
        let slices = Api::<EndpointSlice>::namespaced(client.clone(), "default");
        for slice in [
            owned_slice("web-live", &uid),
            owned_slice("web-orphan", "uid-of-a-deleted-service"),
        ] {
            slices
                .create(&pp, &slice)
                .await
                .expect("the slice is created");
        }

        assert_eq!(sweep(&client).await.expect("the sweep runs"), 1);
        let names: Vec<String> = slices
            .list(&ListParams::default())
            .await
            .expect("a list")
            .items
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect();
        assert_eq!(names, ["web-live"]);
    }
}
