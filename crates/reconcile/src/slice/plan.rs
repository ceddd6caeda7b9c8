//! One sync of one Service: the whole EndpointSlice decision.

use crate::address_family::{slice_address_types, AddressType};
use crate::event::PlannedEvent;
use crate::find_port::find_port;
use crate::kube_version::OrderHash;
use crate::pod_rules::is_endpoint_candidate;
use crate::projection::{PodInfo, ServiceInfo, StoredSlice};
use crate::slice::endpoint::{endpoint_zone, pod_to_endpoint, EndpointKey};
use crate::slice::fill::{fill_port_group, DesiredEndpoints};
use crate::slice::finalize::{recycle_deletes, set_trigger_time};
use crate::slice::placeholder::{is_placeholder, placeholder};
use crate::slice::port_groups::{endpoint_ports, sort_ports, PortGroupKey};
use crate::slice::{
    is_owned_by, MissingNode, PortGroupFigures, SliceBatch, SliceFigures, SliceInput, SlicePlan,
    SliceSets,
};
use crate::topology::messages::{self, with_address_type};
use crate::topology::{hints_enabled, TopologyCache};
use crate::traffic_distribution;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use std::collections::{BTreeMap, HashMap, HashSet};
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
        .filter(|v| traffic_distribution::acts_on(Some(v), &input.rules) && !hints_on);

    // Slices of an address type the Service no longer uses are deleted after everything else.
    let mut by_type: BTreeMap<AddressType, Vec<Arc<StoredSlice>>> = BTreeMap::new();
    let mut unsupported = Vec::new();
    for slice in input.existing {
        match AddressType::parse(&slice.without_endpoints().address_type) {
            Some(t) if address_types.contains(&t) => {
                by_type.entry(t).or_default().push(Arc::clone(slice))
            }
            parsed => {
                if let Some(t) = parsed {
                    topology.remove_hints(&key, t);
                }
                unsupported.push(Arc::new(slice.to_slice()));
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
        let step = AddressTypeSync {
            input,
            address_type,
            hints_on,
            traffic_distribution,
        };
        step.plan(topology, &existing, &mut plan);
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

/// Existing slices by port group.
type ExistingGroups = BTreeMap<PortGroupKey, Vec<Arc<StoredSlice>>>;

/// Endpoints wanted per port group (with their keys, in pod order), with the group's ports.
type DesiredGroups = BTreeMap<PortGroupKey, (Vec<EndpointPort>, Vec<(EndpointKey, Endpoint)>)>;

/// The port groups a sync's pods resolved to so far, by the numbers their Service's ports
/// resolved to (`None` where a named port is not found). Nearly every pod of a Service
/// resolves its ports alike, so a pod resolving like the pod before it finds its group without
/// building its port list and the list's key (a few strings each) only to drop them.
#[derive(Default)]
struct PortResolutions {
    /// Each resolution seen, with its group's key.
    seen: Vec<(Vec<Option<i32>>, PortGroupKey)>,
    /// Where in `seen` each resolution is.
    at: HashMap<Vec<Option<i32>>, usize>,
    /// The resolution of the pod before.
    last: Option<usize>,
}

impl PortResolutions {
    /// The key of the group of `pod`'s ports; `new_group` is given the ports of a resolution
    /// not seen before (in `hash`'s order) and returns their key.
    fn group_of(
        &mut self,
        service: &ServiceInfo,
        pod: &PodInfo,
        hash: OrderHash,
        new_group: impl FnOnce(Vec<EndpointPort>) -> PortGroupKey,
    ) -> &PortGroupKey {
        let resolves_as = |numbers: &[Option<i32>]| {
            service
                .ports
                .iter()
                .zip(numbers)
                .all(|(port, number)| find_port(pod, port) == *number)
        };
        let at = match self.last {
            Some(last) if resolves_as(&self.seen[last].0) => last,
            _ => {
                let numbers: Vec<Option<i32>> =
                    service.ports.iter().map(|p| find_port(pod, p)).collect();
                match self.at.get(&numbers) {
                    Some(&at) => at,
                    None => {
                        let key = new_group(endpoint_ports(service, pod, hash));
                        self.at.insert(numbers.clone(), self.seen.len());
                        self.seen.push((numbers, key));
                        self.seen.len() - 1
                    }
                }
            }
        };
        self.last = Some(at);
        &self.seen[at].1
    }
}

/// The slices of one address type after the fill, before hints and finalize.
#[derive(Default)]
struct Filled {
    create: Vec<EndpointSlice>,
    update: Vec<EndpointSlice>,
    delete: Vec<Arc<EndpointSlice>>,
    figures: SliceFigures,
}

/// One address type's part of a sync: the steps upstream's reconciler takes for each.
struct AddressTypeSync<'a, 'i> {
    input: &'a SliceInput<'i>,
    address_type: AddressType,
    hints_on: bool,
    traffic_distribution: Option<&'a str>,
}

impl AddressTypeSync<'_, '_> {
    /// Plans this address type and appends its batch, figures and events to `plan`.
    fn plan(
        &self,
        topology: &mut TopologyCache,
        existing: &[Arc<StoredSlice>],
        plan: &mut SlicePlan,
    ) {
        let (existing_groups, foreign) = self.group_owned(existing);
        let mut desired = self.desired_groups(&mut plan.missing_nodes);
        let mut filled = self.fill(&existing_groups, &mut desired, foreign);
        self.keep_or_add_placeholder(existing, &mut filled);
        let sets = SliceSets {
            unchanged: self.unchanged_slices(existing, &filled),
            create: filled.create,
            update: filled.update,
        };
        let sets = self.set_hints(topology, sets, &mut plan.events);
        let batch = self.finalize(sets, filled.delete);
        plan.figures.push((self.address_type, filled.figures));
        plan.batches.push(batch);
    }

    /// Existing slices owned by the Service, by port group, and those it does not own (which
    /// are deleted).
    fn group_owned(
        &self,
        existing: &[Arc<StoredSlice>],
    ) -> (ExistingGroups, Vec<Arc<EndpointSlice>>) {
        let mut groups = ExistingGroups::new();
        let mut foreign = Vec::new();
        for slice in existing {
            let head = slice.without_endpoints();
            if is_owned_by(head, self.input.service) {
                groups
                    .entry(PortGroupKey::of(head.ports.as_deref()))
                    .or_default()
                    .push(Arc::clone(slice));
            } else {
                foreign.push(Arc::new(slice.to_slice()));
            }
        }
        (groups, foreign)
    }

    /// The endpoint each selected pod contributes, grouped by its resolved ports. Pods on
    /// nodes the cache does not know are noted in `missing_nodes`.
    fn desired_groups(&self, missing_nodes: &mut Vec<MissingNode>) -> DesiredGroups {
        let (input, service) = (self.input, self.input.service);
        let mut groups = DesiredGroups::new();
        let mut resolutions = PortResolutions::default();
        for pod in input.pods {
            if !is_endpoint_candidate(pod, true) {
                continue;
            }
            let group_key = resolutions.group_of(service, pod, input.rules.order_hash, |ports| {
                let key = PortGroupKey::of(Some(&ports));
                groups
                    .entry(key.clone())
                    .or_insert_with(|| (ports, Vec::with_capacity(input.pods.len())));
                key
            });
            let Some(group) = groups.get_mut(group_key) else {
                continue;
            };
            let zone = match endpoint_zone(input.nodes, pod, service) {
                Ok(zone) => zone,
                Err(missing) => {
                    if !missing_nodes.contains(&missing) {
                        missing_nodes.push(missing);
                    }
                    continue;
                }
            };
            let endpoint = pod_to_endpoint(pod, zone.as_deref(), service, self.address_type);
            if !endpoint.addresses.is_empty() {
                group.1.push((EndpointKey::of(&endpoint), endpoint));
            }
        }
        groups
    }

    /// Runs the three-step fill for every wanted port group; groups no longer wanted are
    /// deleted whole, after `foreign` (slices the Service does not own), in upstream's order.
    fn fill(
        &self,
        existing_groups: &ExistingGroups,
        desired: &mut DesiredGroups,
        foreign: Vec<Arc<EndpointSlice>>,
    ) -> Filled {
        let mut filled = Filled {
            delete: foreign,
            ..Filled::default()
        };
        let empty = Vec::new();
        for (group_key, (ports, endpoints)) in desired.iter_mut() {
            let group_existing = existing_groups.get(group_key).unwrap_or(&empty);
            let endpoints: DesiredEndpoints = std::mem::take(endpoints).into_iter().collect();
            let wanted = endpoints.len();
            let out = fill_port_group(
                self.input.service,
                group_existing,
                endpoints,
                ports,
                self.address_type,
                self.input.max_endpoints_per_slice,
            );
            filled.figures.added += out.added;
            filled.figures.removed += out.removed;
            filled.figures.groups.insert(
                group_key.render(),
                PortGroupFigures {
                    endpoints: wanted,
                    slices: group_existing.len() + out.create.len() - out.delete.len(),
                },
            );
            filled.create.extend(out.create);
            filled.update.extend(out.update);
            filled.delete.extend(out.delete);
        }
        for (group_key, slices) in existing_groups {
            if !desired.contains_key(group_key) {
                filled
                    .delete
                    .extend(slices.iter().map(|s| Arc::new(s.to_slice())));
            }
        }
        filled
    }

    /// The existing slices the fill neither updates nor deletes, as far as the hints read
    /// them: all of them when topology or trafficDistribution hints are set, otherwise only
    /// those holding hints (to be cleared). The others are left as stored.
    fn unchanged_slices(
        &self,
        existing: &[Arc<StoredSlice>],
        filled: &Filled,
    ) -> Vec<Arc<EndpointSlice>> {
        let changed: HashSet<&str> = filled
            .update
            .iter()
            .chain(filled.delete.iter().map(|s| &**s))
            .filter_map(|s| s.metadata.name.as_deref())
            .collect();
        let all = self.hints_on || self.traffic_distribution.is_some();
        existing
            .iter()
            .filter(|s| {
                !s.without_endpoints()
                    .metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| changed.contains(n))
            })
            .filter(|s| all || s.has_hints())
            .map(|s| Arc::new(s.to_slice()))
            .collect()
    }

    /// A Service whose slices would all disappear keeps (or gets) an empty placeholder.
    fn keep_or_add_placeholder(&self, existing: &[Arc<StoredSlice>], filled: &mut Filled) {
        if existing.len() != filled.delete.len() || !filled.create.is_empty() {
            return;
        }
        let wanted = placeholder(self.input.service, self.address_type);
        if filled.delete.len() == 1 && is_placeholder(&filled.delete[0], &wanted) {
            filled.delete.clear();
        } else {
            filled.create.push(wanted);
        }
        filled.figures.groups.insert(
            PortGroupKey::of(None).render(),
            PortGroupFigures {
                endpoints: 0,
                slices: 1,
            },
        );
    }

    /// Topology hints (the annotation) or trafficDistribution hints, as upstream sets them
    /// before writing; returns the sets with hints in place.
    fn set_hints(
        &self,
        topology: &mut TopologyCache,
        mut sets: SliceSets,
        events: &mut Vec<PlannedEvent>,
    ) -> SliceSets {
        let key = self.input.service.key();
        if self.hints_on {
            events.extend(topology.add_hints(&key, self.address_type, &mut sets));
        } else {
            if topology.has_populated_hints(&key) {
                events.push(PlannedEvent::warning(
                    "TopologyAwareHintsDisabled",
                    with_address_type(messages::DISABLED, self.address_type),
                ));
            }
            topology.remove_hints(&key, self.address_type);
            if self.traffic_distribution.is_none() {
                sets.remove_hints();
            }
        }
        if let Some(value) = self.traffic_distribution {
            traffic_distribution::reconcile_hints(Some(value), &mut sets);
        }
        sets
    }

    /// Upstream's finalize: creates recycle slices about to be deleted, a Service being
    /// deleted gets no creates, and every written slice carries the trigger time. An updated
    /// slice carries its ports in the followed version's order: upstream sorts the cached
    /// slice's ports in place when it keys it by its port list, and updates a copy of it.
    fn finalize(&self, sets: SliceSets, mut delete: Vec<Arc<EndpointSlice>>) -> SliceBatch {
        let service = self.input.service;
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
            set_trigger_time(slice, self.input.trigger_time);
        }
        for ports in update.iter_mut().filter_map(|s| s.ports.as_mut()) {
            sort_ports(ports, self.input.rules.order_hash);
        }
        SliceBatch {
            address_type: Some(self.address_type),
            create,
            update,
            delete,
        }
    }
}

/// The Warning event upstream records when a sync fails; `errors` are the failures' messages.
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
