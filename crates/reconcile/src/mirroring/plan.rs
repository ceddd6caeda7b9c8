//! One sync of one Endpoints object: the whole mirroring decision.
//!
//! Each group (address type and port list) keeps at most one slice, because the per-subset cap
//! makes one slice always enough: the first existing slice of the group (by name) is
//! rewritten when its endpoints, labels or annotations differ, the group's other slices are
//! deleted, and a group without a slice gets a new one. Slices of groups no longer wanted are
//! deleted. Before writing, a create is turned into an update of a slice of the same address
//! type that would be deleted, saving a write.

use crate::event::PlannedEvent;
use crate::mirroring::desired::{desired_state, DesiredGroup, EndpointSet, GroupKey};
use crate::mirroring::metadata::{metadata_drifted, new_mirrored_slice};
use crate::mirroring::selection::mirror_target;
use crate::mirroring::{
    MirroringAction, MirroringFigures, MirroringInput, MirroringPlan, INVALID_IP_ADDRESS,
    TOO_MANY_ADDRESSES_TO_MIRROR,
};
use crate::slice::PortGroupFigures;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Plans one sync of an Endpoints object's mirrored slices. Nothing passed in is modified.
pub fn plan_mirroring(input: &MirroringInput<'_>) -> MirroringPlan {
    // Upstream takes the lister's order; sorting by name makes the kept slice predictable.
    let mut existing: Vec<Arc<EndpointSlice>> = input.existing.to_vec();
    existing.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));

    let endpoints = match mirror_target(input.service, input.endpoints) {
        Ok(endpoints) => endpoints,
        Err(reason) => {
            return MirroringPlan {
                action: MirroringAction::Cleanup(reason),
                create: Vec::new(),
                update: Vec::new(),
                delete: existing,
                events: Vec::new(),
                figures: None,
            }
        }
    };
    let max = input.max_endpoints_per_subset;
    let desired = desired_state(
        endpoints.subsets.as_deref().unwrap_or_default(),
        max,
        input.rules.order_hash,
    );

    let mut events = Vec::new();
    if desired.invalid > 0 {
        events.push(PlannedEvent::warning(
            INVALID_IP_ADDRESS,
            format!(
                "Skipped {} invalid IP addresses when mirroring to EndpointSlices",
                desired.invalid
            ),
        ));
    }
    // Upstream reports the cap whenever more were skipped than were invalid, and gives the
    // total skipped (invalid ones included) in the message.
    if desired.skipped > desired.invalid {
        events.push(PlannedEvent::warning(
            TOO_MANY_ADDRESSES_TO_MIRROR,
            format!(
                "A max of {max} addresses can be mirrored to EndpointSlices per Endpoints subset. {} addresses were skipped",
                desired.skipped
            ),
        ));
    }

    let mut existing_by_key: BTreeMap<GroupKey, Vec<Arc<EndpointSlice>>> = BTreeMap::new();
    for slice in &existing {
        existing_by_key
            .entry(GroupKey::of_slice(slice))
            .or_default()
            .push(Arc::clone(slice));
    }

    let mut figures = MirroringFigures {
        addresses_skipped: desired.skipped,
        ..Default::default()
    };
    let mut create = Vec::new();
    let mut update = Vec::new();
    let mut delete = Vec::new();
    for group in desired.groups {
        let group_existing = existing_by_key
            .get(&group.key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let key = group.key.clone();
        let endpoint_count = group.endpoints.len();
        let out = reconcile_group(endpoints, group_existing, group, max);
        figures.endpoints_added += out.added;
        figures.endpoints_updated += out.updated;
        figures.endpoints_removed += out.removed;
        let created = usize::from(out.create.is_some());
        figures.groups.insert(
            key,
            PortGroupFigures {
                endpoints: endpoint_count,
                slices: group_existing.len() + created - out.delete.len(),
            },
        );
        create.extend(out.create);
        update.extend(out.update);
        delete.extend(out.delete);
    }
    // Slices of groups no longer wanted go too; upstream does not count their endpoints as
    // removed.
    for (key, slices) in existing_by_key {
        if !figures.groups.contains_key(&key) {
            delete.extend(slices);
        }
    }

    recycle_deletes(&mut create, &mut update, &mut delete);
    // No new slices for an Endpoints on its way out: they would only be garbage collected.
    if endpoints.metadata.deletion_timestamp.is_some() {
        create.clear();
    }

    MirroringPlan {
        action: MirroringAction::Mirror,
        create,
        update,
        delete,
        events,
        figures: Some(figures),
    }
}

/// What reconciling one group decided.
#[derive(Debug, Default)]
struct GroupOutcome {
    create: Option<EndpointSlice>,
    update: Option<EndpointSlice>,
    delete: Vec<Arc<EndpointSlice>>,
    added: usize,
    updated: usize,
    removed: usize,
}

fn reconcile_group(
    endpoints: &Endpoints,
    existing: &[Arc<EndpointSlice>],
    group: DesiredGroup,
    max: usize,
) -> GroupOutcome {
    let mut out = GroupOutcome::default();
    if group.endpoints.is_empty() {
        out.removed = existing.iter().map(|s| s.endpoints.len()).sum();
        out.delete = existing.to_vec();
        return out;
    }
    let name = match existing.split_first() {
        None => {
            out.added = group.endpoints.len();
            None
        }
        Some((kept, rest)) => {
            out.delete = rest.to_vec();
            let changes = total_changes(kept, &group.endpoints);
            out.added = changes.added;
            out.updated = changes.updated;
            out.removed = changes.removed;
            if changes.is_none() && !metadata_drifted(kept, endpoints) {
                return out;
            }
            kept.metadata.name.clone()
        }
    };
    let replaces = name.is_some();
    let mut slice = new_mirrored_slice(endpoints, &group.ports, group.address_type, name);
    slice.endpoints = group.endpoints.into_vec();
    slice.endpoints.truncate(max);
    if replaces {
        out.update = Some(slice);
    } else {
        out.create = Some(slice);
    }
    out
}

/// Endpoint changes needed for a slice to hold exactly the desired set.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Changes {
    added: usize,
    updated: usize,
    removed: usize,
}

impl Changes {
    fn is_none(self) -> bool {
        self == Self::default()
    }
}

fn total_changes(existing: &EndpointSlice, desired: &EndpointSet) -> Changes {
    let mut changes = Changes::default();
    let mut matches = 0;
    for endpoint in &existing.endpoints {
        match desired.get(endpoint) {
            None => changes.removed += 1,
            Some(want) => {
                matches += 1;
                if !equal_beyond_identity(want, endpoint) {
                    changes.updated += 1;
                }
            }
        }
    }
    changes.added = desired.len().saturating_sub(matches);
    changes
}

/// True when two endpoints of the same identity need no update. Unlike the EndpointSlice
/// controller's check, the targetRef is compared whole (resourceVersion included, since it is
/// copied from the Endpoints as is) and hints count: upstream compares every field it hashes
/// around.
fn equal_beyond_identity(a: &Endpoint, b: &Endpoint) -> bool {
    let conditions = |e: &Endpoint| {
        let c = e.conditions.clone().unwrap_or_default();
        (c.ready, c.serving, c.terminating)
    };
    a.node_name == b.node_name
        && a.zone == b.zone
        && conditions(a) == conditions(b)
        && a.hints == b.hints
        && a.target_ref == b.target_ref
}

/// Turns creates into updates of slices of the same address type that would be deleted,
/// pairing them in order, so a changed port list costs one write instead of two. The new
/// slice keeps its generateName and takes the old one's name, as upstream's does.
fn recycle_deletes(
    create: &mut Vec<EndpointSlice>,
    update: &mut Vec<EndpointSlice>,
    delete: &mut Vec<Arc<EndpointSlice>>,
) {
    let mut types: Vec<String> = create.iter().map(|s| s.address_type.clone()).collect();
    types.sort();
    types.dedup();
    for address_type in types {
        while let Some(c) = create.iter().position(|s| s.address_type == address_type) {
            let Some(d) = delete.iter().position(|s| s.address_type == address_type) else {
                break;
            };
            let mut slice = create.remove(c);
            let doomed = delete.remove(d);
            slice.metadata.name = doomed.metadata.name.clone();
            update.push(slice);
        }
    }
}

#[cfg(test)]
mod tests;
