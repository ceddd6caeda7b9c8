//! Assigning zone hints to a Service's endpoints.

use crate::address_family::AddressType;
use crate::event::PlannedEvent;
use crate::keys::ServiceKey;
use crate::slice::{endpoint_ready, SliceSets};
use crate::topology::allocation::{allocate, Allocation, AllocationError};
use crate::topology::cache::{TopologyCache, ZoneCounts};
use crate::topology::messages::{self, with_address_type};
use k8s_openapi::api::discovery::v1::{EndpointHints, EndpointSlice, ForZone};
use std::collections::BTreeMap;

const DISABLED: &str = "TopologyAwareHintsDisabled";
const ENABLED: &str = "TopologyAwareHintsEnabled";

fn zone_hint(zone: &str) -> Option<EndpointHints> {
    Some(EndpointHints {
        for_zones: Some(vec![ForZone {
            name: zone.to_owned(),
        }]),
        for_nodes: None,
    })
}

impl TopologyCache {
    /// Sets zone hints on the slices of one address type of a Service, and returns the events
    /// to record. When hints cannot be given, they are removed everywhere instead (and the
    /// event says why).
    pub fn add_hints(
        &mut self,
        key: &ServiceKey,
        address_type: AddressType,
        sets: &mut SliceSets,
    ) -> Vec<PlannedEvent> {
        let ready: usize = sets
            .create
            .iter()
            .chain(sets.update.iter())
            .chain(sets.unchanged.iter().map(|s| &**s))
            .map(|s| s.endpoints.iter().filter(|e| endpoint_ready(e)).count())
            .sum();
        let allocations = match self.allocations(ready) {
            Ok(a) => a,
            Err(message) => return self.give_up(key, address_type, sets, &message),
        };

        // Unchanged slices keep their hints only while those still fit the allocations.
        let mut hinted: ZoneCounts = BTreeMap::new();
        let mut keep = Vec::with_capacity(sets.unchanged.len());
        for slice in std::mem::take(&mut sets.unchanged) {
            match hints_by_zone(&slice, &hinted, &allocations) {
                Some(counts) => {
                    for (zone, n) in counts {
                        *hinted.entry(zone).or_default() += n;
                    }
                    keep.push(slice);
                }
                None => sets.update.push(EndpointSlice::clone(&slice)),
            }
        }
        sets.unchanged = keep;

        // Step 1: every ready endpoint being written first hints its own zone.
        let mut missing_zone = false;
        for endpoint in sets.writable_endpoints_mut() {
            if !endpoint_ready(endpoint) {
                continue;
            }
            match endpoint.zone.as_deref().filter(|z| !z.is_empty()) {
                Some(zone) => {
                    *hinted.entry(zone.to_owned()).or_default() += 1;
                    endpoint.hints = zone_hint(zone);
                }
                None => {
                    missing_zone = true;
                    break;
                }
            }
        }
        if missing_zone {
            return self.give_up(key, address_type, sets, messages::NO_ZONE_SPECIFIED);
        }

        // Steps 2 and 3: move hints from zones with a surplus to zones with a deficit.
        let (mut giving, mut receiving) = giving_and_receiving(&allocations, &hinted);
        for (zone, diff) in redistribute(sets, &mut giving, &mut receiving) {
            let entry = hinted.entry(zone).or_default();
            *entry = (*entry as i64 + diff).max(0) as usize;
        }
        if hinted.is_empty() {
            return self.give_up(
                key,
                address_type,
                sets,
                messages::NO_ALLOCATED_HINTS_FOR_ZONES,
            );
        }

        let was_enabled = self.has_populated_hints(key);
        self.set_hints(key, address_type, hinted);
        if was_enabled {
            Vec::new()
        } else {
            vec![PlannedEvent::normal(
                ENABLED,
                with_address_type(messages::ENABLED, address_type),
            )]
        }
    }

    fn allocations(&self, ready: usize) -> Result<BTreeMap<String, Allocation>, String> {
        let Some(ratios) = self.cpu_ratios.as_ref() else {
            return Err(messages::INSUFFICIENT_NODE_INFO.to_owned());
        };
        if ratios.len() < 2 {
            return Err(messages::NODES_READY_IN_ONE_ZONE_ONLY.to_owned());
        }
        allocate(ratios, ready).map_err(|e| {
            let what = match e {
                AllocationError::TooFewEndpoints => messages::INSUFFICIENT_NUMBER_OF_ENDPOINTS,
                AllocationError::MinimumsExceedEndpoints => {
                    messages::MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD
                }
            };
            format!("{what} ({ready} endpoints, {} zones)", ratios.len())
        })
    }

    fn give_up(
        &mut self,
        key: &ServiceKey,
        address_type: AddressType,
        sets: &mut SliceSets,
        message: &str,
    ) -> Vec<PlannedEvent> {
        self.remove_hints(key, address_type);
        sets.remove_hints();
        vec![PlannedEvent::warning(
            DISABLED,
            with_address_type(message, address_type),
        )]
    }
}

/// The hints of an unchanged slice counted per zone, or `None` when the slice must be
/// rewritten: a ready endpoint without a zone hint, a hint for a zone not in the allocations,
/// or more hints for a zone than its maximum allows.
fn hints_by_zone(
    slice: &EndpointSlice,
    already: &ZoneCounts,
    allocations: &BTreeMap<String, Allocation>,
) -> Option<ZoneCounts> {
    let mut counts = ZoneCounts::new();
    for endpoint in slice.endpoints.iter().filter(|e| endpoint_ready(e)) {
        let zones = endpoint
            .hints
            .as_ref()
            .and_then(|h| h.for_zones.as_ref())
            .filter(|z| !z.is_empty())?;
        for zone in zones {
            if !allocations.contains_key(&zone.name) {
                return None;
            }
            *counts.entry(zone.name.clone()).or_default() += 1;
        }
    }
    for (zone, n) in &counts {
        let allocation = allocations.get(zone)?;
        if n + already.get(zone).copied().unwrap_or(0) > allocation.maximum {
            return None;
        }
    }
    Some(counts)
}

/// How many endpoints each zone gives and receives. The zone with the largest surplus gives
/// one to the zone with the largest deficit until both are under one, or either is under a
/// half.
fn giving_and_receiving(
    allocations: &BTreeMap<String, Allocation>,
    hinted: &ZoneCounts,
) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let mut surplus: BTreeMap<String, f64> = BTreeMap::new();
    let mut deficit: BTreeMap<String, f64> = BTreeMap::new();
    for (zone, allocation) in allocations {
        let have = hinted.get(zone).copied().unwrap_or(0) as f64;
        if have > allocation.desired {
            surplus.insert(zone.clone(), have - allocation.desired);
        } else if have < allocation.desired {
            deficit.insert(zone.clone(), allocation.desired - have);
        }
    }
    let most = |m: &BTreeMap<String, f64>| {
        let mut best: Option<(String, f64)> = None;
        for (zone, &n) in m {
            if n > best.as_ref().map_or(0.0, |(_, b)| *b) {
                best = Some((zone.clone(), n));
            }
        }
        best
    };
    let mut giving = BTreeMap::new();
    let mut receiving = BTreeMap::new();
    while let (Some((give_zone, give)), Some((take_zone, take))) = (most(&surplus), most(&deficit))
    {
        if (give < 1.0 && take < 1.0) || give < 0.5 || take < 0.5 {
            break;
        }
        *giving.entry(give_zone.clone()).or_insert(0) += 1;
        *surplus.get_mut(&give_zone).expect("picked from map") -= 1.0;
        *receiving.entry(take_zone.clone()).or_insert(0) += 1;
        *deficit.get_mut(&take_zone).expect("picked from map") -= 1.0;
    }
    (giving, receiving)
}

/// Re-hints endpoints of giving zones to receiving zones; returns the change per zone.
fn redistribute(
    sets: &mut SliceSets,
    giving: &mut BTreeMap<String, usize>,
    receiving: &mut BTreeMap<String, usize>,
) -> BTreeMap<String, i64> {
    let mut changes: BTreeMap<String, i64> = BTreeMap::new();
    for endpoint in sets.writable_endpoints_mut() {
        if !endpoint_ready(endpoint) {
            continue;
        }
        if giving.is_empty() || receiving.is_empty() {
            break;
        }
        let Some(zone) = endpoint.zone.clone().filter(|z| !z.is_empty()) else {
            continue;
        };
        if giving.get(&zone).copied().unwrap_or(0) == 0 {
            continue;
        }
        let Some(target) = receiving
            .iter()
            .find(|(_, &n)| n > 0)
            .map(|(z, _)| z.clone())
        else {
            continue;
        };
        endpoint.hints = zone_hint(&target);
        decrement(giving, &zone);
        decrement(receiving, &target);
        *changes.entry(target).or_default() += 1;
        *changes.entry(zone).or_default() -= 1;
    }
    changes
}

fn decrement(map: &mut BTreeMap<String, usize>, zone: &str) {
    if let Some(n) = map.get_mut(zone) {
        if *n <= 1 {
            map.remove(zone);
        } else {
            *n -= 1;
        }
    }
}

#[cfg(test)]
mod tests;
