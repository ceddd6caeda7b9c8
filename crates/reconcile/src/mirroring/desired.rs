//! The desired endpoints of one Endpoints object, grouped by address type and port list.
//!
//! Upstream first repacks the subsets into their canonical layout (the same repacking the
//! Endpoints controller uses), so subsets offering the same ports merge and an address both
//! ready and not ready counts as not ready. Each repacked subset then maps to one group per
//! address type, keyed by address type and port list (port order does not matter); the cap
//! `--mirroring-max-endpoints-per-subset` applies per repacked subset, ready addresses first,
//! and only valid addresses count against it. Endpoints with the same identity (addresses,
//! hostname, targetRef name) within a group collapse into one, the later winning.

use crate::address_family::AddressType;
use crate::endpoints::repack::{addresses_with_readiness, repack_subsets};
use crate::kube_version::OrderHash;
use crate::mirroring::address::{address_to_endpoint, slice_ports};
use crate::slice::endpoint::EndpointKey;
use crate::slice::port_groups::{sort_ports, PortGroupKey};
use k8s_openapi::api::core::v1::EndpointSubset;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use std::collections::HashMap;

/// Identifies the slices of one address type and port list. The address type is kept as a
/// string so that existing slices of a type we never write (FQDN) get a key of their own and
/// are deleted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    address_type: String,
    ports: PortGroupKey,
}

impl GroupKey {
    /// The key of desired endpoints of this type on these ports.
    pub fn new(address_type: AddressType, ports: &[EndpointPort]) -> Self {
        Self {
            address_type: address_type.as_str().to_owned(),
            ports: PortGroupKey::of(Some(ports)),
        }
    }

    /// The key of an existing slice.
    pub fn of_slice(slice: &EndpointSlice) -> Self {
        Self {
            address_type: slice.address_type.clone(),
            ports: PortGroupKey::of(slice.ports.as_deref()),
        }
    }

    /// The address type, as written in `addressType`.
    pub fn address_type(&self) -> &str {
        &self.address_type
    }

    /// A readable rendering, for logs and messages.
    pub fn render(&self) -> String {
        format!("{}-{}", self.address_type, self.ports.render())
    }
}

/// Endpoints by identity, in the order they were first inserted.
#[derive(Debug, Default, Clone)]
pub struct EndpointSet {
    endpoints: Vec<Endpoint>,
    index: HashMap<EndpointKey, usize>,
}

impl EndpointSet {
    /// Adds an endpoint; one with the same identity is replaced in place.
    pub fn insert(&mut self, endpoint: Endpoint) {
        let key = EndpointKey::of(&endpoint);
        match self.index.get(&key) {
            Some(&i) => self.endpoints[i] = endpoint,
            None => {
                self.index.insert(key, self.endpoints.len());
                self.endpoints.push(endpoint);
            }
        }
    }

    /// The endpoint with the same identity as `endpoint`, if any.
    pub fn get(&self, endpoint: &Endpoint) -> Option<&Endpoint> {
        self.index
            .get(&EndpointKey::of(endpoint))
            .map(|&i| &self.endpoints[i])
    }

    /// Number of endpoints.
    pub fn len(&self) -> usize {
        self.endpoints.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.endpoints.is_empty()
    }

    /// The endpoints, in insertion order.
    pub fn into_vec(self) -> Vec<Endpoint> {
        self.endpoints
    }
}

/// The desired endpoints of one address type and port list.
#[derive(Debug, Clone)]
pub struct DesiredGroup {
    /// The group's key.
    pub key: GroupKey,
    /// The address type of its slices.
    pub address_type: AddressType,
    /// Its slices' ports, in the slice port hash order of the followed version.
    pub ports: Vec<EndpointPort>,
    /// Its endpoints (possibly none: every subset yields an IPv4 and an IPv6 group, and an
    /// empty group still removes the slices it has).
    pub endpoints: EndpointSet,
}

/// Everything the subsets ask for.
#[derive(Debug, Default, Clone)]
pub struct DesiredState {
    /// Groups in the order their subsets were repacked, IPv4 before IPv6.
    pub groups: Vec<DesiredGroup>,
    /// Addresses whose IP does not parse.
    pub invalid: usize,
    /// Addresses left out: the invalid ones plus those beyond the per-subset cap.
    pub skipped: usize,
}

/// Builds the desired state from an Endpoints object's subsets (which are not modified),
/// repacked and with each group's ports sorted by `hash`, as upstream does.
pub fn desired_state(
    subsets: &[EndpointSubset],
    max_per_subset: usize,
    hash: OrderHash,
) -> DesiredState {
    let mut state = DesiredState::default();
    let mut positions: HashMap<GroupKey, usize> = HashMap::new();
    for subset in repack_subsets(subsets, hash) {
        // Upstream keys the group by the port list with `NewPortMapKey`, which sorts the list
        // in place by the slice port hash, and writes the list in the order it leaves.
        let mut ports = slice_ports(subset.ports.as_deref().unwrap_or_default());
        sort_ports(&mut ports, hash);
        let mut group_of = |address_type: AddressType, state: &mut DesiredState| -> usize {
            let key = GroupKey::new(address_type, &ports);
            *positions.entry(key.clone()).or_insert_with(|| {
                state.groups.push(DesiredGroup {
                    key,
                    address_type,
                    ports: ports.clone(),
                    endpoints: EndpointSet::default(),
                });
                state.groups.len() - 1
            })
        };
        let by_type = [
            group_of(AddressType::IPv4, &mut state),
            group_of(AddressType::IPv6, &mut state),
        ];

        let total = subset.addresses.as_ref().map_or(0, Vec::len)
            + subset.not_ready_addresses.as_ref().map_or(0, Vec::len);
        let mut added = 0;
        for (address, is_ready) in addresses_with_readiness(&subset) {
            // Upstream stops at the cap separately in both lists, with the same count, so one
            // walk over both is the same thing.
            if added >= max_per_subset {
                break;
            }
            match address_to_endpoint(address, is_ready) {
                Some((address_type, endpoint)) => {
                    let i = by_type[usize::from(address_type == AddressType::IPv6)];
                    state.groups[i].endpoints.insert(endpoint);
                    added += 1;
                }
                None => state.invalid += 1,
            }
        }
        state.skipped += total - added;
    }
    state
}

#[cfg(test)]
mod tests;
