//! One sync of one Service: the whole EndpointSlice decision.

use crate::address_family::{slice_address_types, AddressType};
use crate::event::PlannedEvent;
use crate::pod_rules::is_endpoint_candidate;
use crate::slice::endpoint::{pod_to_endpoint, EndpointKey};
use crate::slice::fill::{fill_port_group, DesiredEndpoints};
use crate::slice::finalize::{recycle_deletes, set_trigger_time};
use crate::slice::placeholder::{is_placeholder, placeholder};
use crate::slice::port_groups::{endpoint_ports, PortGroupKey};
use crate::slice::{
    is_owned_by, PortGroupFigures, SliceBatch, SliceFigures, SliceInput, SlicePlan, SliceSets,
};
use crate::topology::messages::{self, with_address_type};
use crate::topology::{hints_enabled, TopologyCache};
use crate::traffic_distribution;
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Plans one sync of a Service's EndpointSlices. The topology cache is read and updated as
/// upstream's is during a sync (hints recorded before the writes are sent).
pub fn plan_slices(input: &SliceInput<'_>, topology: &mut TopologyCache) -> SlicePlan {
    let service = input.service;
    let key = service.key();
    let address_types = slice_address_types(service);
    let hints_on = hints_enabled(&service.annotations);
    let traffic_distribution = service
        .traffic_distribution
        .as_deref()
        .filter(|v| traffic_distribution::is_valid(Some(v)) && !hints_on);

    // Slices of an address type the Service no longer uses are deleted after everything else.
    let mut by_type: BTreeMap<AddressType, Vec<Arc<EndpointSlice>>> = BTreeMap::new();
    let mut unsupported = Vec::new();
    for slice in input.existing {
        match AddressType::parse(&slice.address_type) {
            Some(t) if address_types.contains(&t) => {
                by_type.entry(t).or_default().push(Arc::clone(slice))
            }
            parsed => {
                if let Some(t) = parsed {
                    topology.remove_hints(&key, t);
                }
                unsupported.push(Arc::clone(slice));
            }
        }
    }

    let mut plan = SlicePlan {
        topology_label: if hints_on { "Auto" } else { "Disabled" },
        traffic_distribution_label: traffic_distribution.unwrap_or_default().to_owned(),
        ..Default::default()
    };
    for address_type in address_types {
        let existing = by_type.remove(&address_type).unwrap_or_default();
        plan_address_type(
            input,
            topology,
            address_type,
            &existing,
            hints_on,
            traffic_distribution,
            &mut plan,
        );
    }
    if !unsupported.is_empty() {
        plan.batches.push(SliceBatch {
            address_type: None,
            delete: unsupported,
            ..Default::default()
        });
    }
    plan
}

fn plan_address_type(
    input: &SliceInput<'_>,
    topology: &mut TopologyCache,
    address_type: AddressType,
    existing: &[Arc<EndpointSlice>],
    hints_on: bool,
    traffic_distribution: Option<&str>,
    plan: &mut SlicePlan,
) {
    let service = input.service;
    let mut delete: Vec<Arc<EndpointSlice>> = Vec::new();
    let mut existing_groups: BTreeMap<PortGroupKey, Vec<Arc<EndpointSlice>>> = BTreeMap::new();
    for slice in existing {
        if is_owned_by(slice, service) {
            existing_groups
                .entry(PortGroupKey::of(slice.ports.as_deref()))
                .or_default()
                .push(Arc::clone(slice));
        } else {
            delete.push(Arc::clone(slice));
        }
    }

    let mut desired_groups: BTreeMap<PortGroupKey, (Vec<EndpointPort>, DesiredEndpoints)> =
        BTreeMap::new();
    for pod in input.pods {
        if !is_endpoint_candidate(pod, true) {
            continue;
        }
        let ports = endpoint_ports(service, pod);
        let group = desired_groups
            .entry(PortGroupKey::of(Some(&ports)))
            .or_insert_with(|| (ports, DesiredEndpoints::new()));
        let zone = match input.nodes.node_zone(&pod.node_name) {
            Some(zone) => zone,
            // A pod on a node the cache does not know is left out (its slice is still
            // written) and the sync fails so it is retried; with publishNotReadyAddresses the
            // user asked for every pod, so it goes in without a zone.
            None if !service.publish_not_ready_addresses => {
                plan.errors.push(format!(
                    "skipping Pod {} for Service {}/{}: Node {} Not Found",
                    pod.name, service.namespace, service.name, pod.node_name
                ));
                continue;
            }
            None => None,
        };
        let endpoint = pod_to_endpoint(pod, zone.as_deref(), service, address_type);
        if !endpoint.addresses.is_empty() {
            group.1.insert(EndpointKey::of(&endpoint), endpoint);
        }
    }

    let mut figures = SliceFigures::default();
    let mut create = Vec::new();
    let mut update = Vec::new();
    let empty = Vec::new();
    for (group_key, (ports, desired)) in desired_groups.iter_mut() {
        let group_existing = existing_groups.get(group_key).unwrap_or(&empty);
        let endpoints = desired.len();
        let out = fill_port_group(
            service,
            group_existing,
            std::mem::take(desired),
            ports,
            address_type,
            input.max_endpoints_per_slice,
        );
        figures.added += out.added;
        figures.removed += out.removed;
        figures.groups.insert(
            group_key.render(),
            PortGroupFigures {
                endpoints,
                slices: group_existing.len() + out.create.len() - out.delete.len(),
            },
        );
        create.extend(out.create);
        update.extend(out.update);
        delete.extend(out.delete);
    }
    for (group_key, slices) in existing_groups {
        if !desired_groups.contains_key(&group_key) {
            delete.extend(slices);
        }
    }

    // A Service whose slices would all disappear keeps (or gets) an empty placeholder.
    if existing.len() == delete.len() && create.is_empty() {
        let wanted = placeholder(service, address_type);
        if delete.len() == 1 && is_placeholder(&delete[0], &wanted) {
            delete.clear();
        } else {
            create.push(wanted);
        }
        figures.groups.insert(
            PortGroupKey::of(None).render(),
            PortGroupFigures {
                endpoints: 0,
                slices: 1,
            },
        );
    }

    let changed: std::collections::HashSet<&str> = update
        .iter()
        .filter_map(|s| s.metadata.name.as_deref())
        .chain(delete.iter().filter_map(|s| s.metadata.name.as_deref()))
        .collect();
    let unchanged: Vec<Arc<EndpointSlice>> = existing
        .iter()
        .filter(|s| {
            !s.metadata
                .name
                .as_deref()
                .is_some_and(|n| changed.contains(n))
        })
        .cloned()
        .collect();
    let mut sets = SliceSets {
        create,
        update,
        unchanged,
    };

    let key = service.key();
    if hints_on {
        plan.events
            .extend(topology.add_hints(&key, address_type, &mut sets));
    } else {
        if topology.has_populated_hints(&key) {
            plan.events.push(PlannedEvent::warning(
                "TopologyAwareHintsDisabled",
                with_address_type(messages::DISABLED, address_type),
            ));
        }
        topology.remove_hints(&key, address_type);
        if traffic_distribution.is_none() {
            sets.remove_hints();
        }
    }
    if let Some(value) = traffic_distribution {
        traffic_distribution::reconcile_hints(Some(value), &mut sets);
    }

    let SliceSets {
        mut create,
        mut update,
        ..
    } = sets;
    recycle_deletes(service, &mut create, &mut update, &mut delete);
    if service.deleting {
        // No new slices for a Service being deleted: they would race the garbage collector.
        create.clear();
    }
    for slice in create.iter_mut().chain(update.iter_mut()) {
        set_trigger_time(slice, input.trigger_time);
    }
    plan.figures.push((address_type, figures));
    plan.batches.push(SliceBatch {
        address_type: Some(address_type),
        create,
        update,
        delete,
    });
}

/// The Warning event upstream records when a sync fails.
pub fn failure_event(namespace: &str, name: &str, errors: &[String]) -> PlannedEvent {
    let detail = if errors.len() == 1 {
        errors[0].clone()
    } else {
        format!("[{}]", errors.join(", "))
    };
    PlannedEvent::warning(
        "FailedToUpdateEndpointSlices",
        format!("Error updating Endpoint Slices for Service {namespace}/{name}: {detail}"),
    )
}

#[cfg(test)]
mod tests;
