//! Objects reduced to what must match between the live controllers and a run from scratch.

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;

/// The annotation that records when the change behind a write happened; it differs between
/// a live sync and a plan from scratch by construction.
use reconcile::trigger_time::ANNOTATION as TRIGGER_TIME;

/// Slices reduced to what must match between the live controller and a plan from scratch:
/// names, uids, resourceVersions, generations, timestamps, the trigger-time annotation,
/// hints and the order of endpoints are left out; the result is sorted.
pub fn comparable_slices(slices: &[EndpointSlice]) -> Vec<EndpointSlice> {
    let mut out: Vec<EndpointSlice> = slices
        .iter()
        .map(|slice| {
            let mut slice = slice.clone();
            let meta = &mut slice.metadata;
            *meta = kube::api::ObjectMeta {
                namespace: meta.namespace.take(),
                labels: meta.labels.take(),
                annotations: meta
                    .annotations
                    .take()
                    .map(|mut a| {
                        a.remove(TRIGGER_TIME);
                        a
                    })
                    .filter(|a| !a.is_empty()),
                // The copy run from scratch assigned its own uids; ownership by the live
                // Service is checked on its own (`wait_for_planned_slices_with`).
                owner_references: meta.owner_references.take().map(|mut owners| {
                    owners.iter_mut().for_each(|o| o.uid.clear());
                    owners
                }),
                ..Default::default()
            };
            for endpoint in &mut slice.endpoints {
                endpoint.hints = None;
                if let Some(target) = &mut endpoint.target_ref {
                    target.uid = None;
                    target.resource_version = None;
                }
            }
            slice
                .endpoints
                .sort_by_key(|e| serde_json::to_string(e).unwrap_or_default());
            slice
        })
        .collect();
    out.sort_by_key(|s| serde_json::to_string(s).unwrap_or_default());
    out
}

/// An Endpoints object reduced to its namespace, name, labels, annotations other than the
/// trigger time, and subsets.
pub fn comparable_endpoints(endpoints: &Endpoints) -> Endpoints {
    let meta = &endpoints.metadata;
    Endpoints {
        metadata: kube::api::ObjectMeta {
            namespace: meta.namespace.clone(),
            name: meta.name.clone(),
            labels: meta.labels.clone(),
            annotations: meta
                .annotations
                .clone()
                .map(|mut a| {
                    a.remove(TRIGGER_TIME);
                    a
                })
                .filter(|a| !a.is_empty()),
            ..Default::default()
        },
        subsets: endpoints
            .subsets
            .clone()
            .filter(|s| !s.is_empty())
            .map(|mut subsets| {
                // The copy run from scratch assigned its own pod uids.
                for subset in &mut subsets {
                    for address in subset
                        .addresses
                        .iter_mut()
                        .flatten()
                        .chain(subset.not_ready_addresses.iter_mut().flatten())
                    {
                        if let Some(target) = &mut address.target_ref {
                            target.uid = None;
                            target.resource_version = None;
                        }
                    }
                }
                subsets
            }),
    }
}
