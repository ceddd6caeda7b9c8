//! Packing one port group's endpoints into slices, reusing existing slices first.
//!
//! 1. Walk the existing slices: keep the endpoints still wanted (in their refreshed form),
//!    drop the rest. A slice left empty is deleted, a changed one updated, one whose labels
//!    drifted updated, the others stay unchanged.
//! 2. Top up the slices already being updated, fullest first.
//! 3. While endpoints remain: when fewer than a slice's worth remain and an unchanged slice
//!    exists, fill the one that will end up closest to full; otherwise start a new slice.
//!
//! Touching as few slices as possible keeps the number of writes (and of watch events every
//! kube-proxy receives) low.

use crate::address_family::AddressType;
use crate::labels::slice_labels;
use crate::projection::{ServiceInfo, StoredSlice};
pub use crate::slice::desired::DesiredEndpoints;
use crate::slice::endpoint::{equal_beyond_key_stored, EndpointKey};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use std::sync::Arc;

/// What packing one port group decided.
#[derive(Debug, Default)]
pub struct GroupOutcome {
    /// New slices.
    pub create: Vec<EndpointSlice>,
    /// Changed existing slices.
    pub update: Vec<EndpointSlice>,
    /// Existing slices left empty.
    pub delete: Vec<Arc<EndpointSlice>>,
    /// Endpoints that were not in any existing slice.
    pub added: usize,
    /// Endpoints dropped from existing slices.
    pub removed: usize,
}

/// A new, empty slice for the Service: generateName `<service>-`, the managed labels and a
/// controller owner reference to the Service.
pub fn new_slice(
    service: &ServiceInfo,
    ports: &[EndpointPort],
    address_type: AddressType,
) -> EndpointSlice {
    let (labels, _) = slice_labels(None, service);
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(generate_name_prefix(&service.name)),
            namespace: Some(service.namespace.clone()),
            labels: Some(labels),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Service".into(),
                name: service.name.clone(),
                uid: service.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        address_type: address_type.as_str().to_owned(),
        endpoints: Vec::new(),
        ports: (!ports.is_empty()).then(|| ports.to_vec()),
    }
}

/// `<name>-`, or the bare name when the dash would make it too long for a generated name.
pub(crate) fn generate_name_prefix(service_name: &str) -> String {
    // A generated name adds 5 characters and must stay a DNS subdomain (253 characters).
    if service_name.len() + 1 > 253 - 5 {
        service_name.to_owned()
    } else {
        format!("{service_name}-")
    }
}

/// Packs one port group. `existing` are the Service's owned slices with this port list, as
/// the informer keeps them: their endpoints are compared where they are, and only a slice
/// the fill keeps whole to add to, or deletes, is built back.
pub fn fill_port_group(
    service: &ServiceInfo,
    existing: &[Arc<StoredSlice>],
    mut desired: DesiredEndpoints,
    ports: &[EndpointPort],
    address_type: AddressType,
    max: usize,
) -> GroupOutcome {
    let mut out = GroupOutcome::default();
    let mut update: Vec<EndpointSlice> = Vec::new();
    let mut unchanged: Vec<&Arc<StoredSlice>> = Vec::new();

    // Step 1: refresh existing slices.
    for slice in existing {
        let (home, held) = (slice.home(), slice.endpoints());
        let mut kept: Vec<Endpoint> = Vec::with_capacity(held.len());
        let mut endpoint_changed = false;
        for endpoint in held {
            if let Some(wanted) = desired.remove(&EndpointKey::of_stored(endpoint, home)) {
                endpoint_changed |= !equal_beyond_key_stored(&wanted, endpoint, home);
                kept.push(wanted);
            }
        }
        let head = slice.without_endpoints();
        let (labels, labels_drifted) = slice_labels(head.metadata.labels.as_ref(), service);
        if endpoint_changed || kept.len() != held.len() {
            out.removed += held.len().saturating_sub(kept.len());
            if kept.is_empty() {
                out.delete.push(Arc::new(slice.to_slice()));
            } else {
                let mut changed = head.clone();
                changed.endpoints = kept;
                changed.metadata.labels = Some(labels);
                update.push(changed);
            }
        } else if labels_drifted {
            let mut changed = slice.to_slice();
            changed.metadata.labels = Some(labels);
            update.push(changed);
        } else {
            unchanged.push(slice);
        }
    }
    out.added = desired.len();

    // Step 2: top up the slices being updated anyway, fullest first.
    if !desired.is_empty() && !update.is_empty() {
        let mut order: Vec<usize> = (0..update.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(update[i].endpoints.len()));
        for i in order {
            take_into(&mut update[i], &mut desired, max);
        }
    }

    // Step 3: fit the rest into an unchanged slice when it is less than a slice's worth,
    // otherwise into new slices.
    while !desired.is_empty() {
        let mut target = None;
        if desired.len() < max && !unchanged.is_empty() {
            target = closest_to_full(&unchanged, desired.len(), max);
        }
        match target {
            Some(i) => {
                let mut slice = unchanged.remove(i).to_slice();
                take_into(&mut slice, &mut desired, max);
                update.push(slice);
            }
            None => {
                let mut slice = new_slice(service, ports, address_type);
                take_into(&mut slice, &mut desired, max);
                out.create.push(slice);
            }
        }
    }
    out.update = update;
    out
}

fn take_into(slice: &mut EndpointSlice, desired: &mut DesiredEndpoints, max: usize) {
    while slice.endpoints.len() < max {
        match desired.pop_first() {
            Some(endpoint) => slice.endpoints.push(endpoint),
            None => break,
        }
    }
}

/// The unchanged slice that ends closest to full once `adding` endpoints are added, without
/// going over. The first one found wins ties.
fn closest_to_full(slices: &[&Arc<StoredSlice>], adding: usize, max: usize) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, slice) in slices.iter().enumerate() {
        let total = adding + slice.endpoint_count();
        if total > max {
            continue;
        }
        let room = max - total;
        if best.is_none_or(|(_, r)| room < r) && room < max {
            best = Some((i, room));
            if room == 0 {
                break;
            }
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests;
