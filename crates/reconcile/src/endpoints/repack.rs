//! Repacking: the canonical layout of an Endpoints object's subsets.
//!
//! Addresses are de-duplicated by IP and pod UID; on any one port a not-ready report beats a
//! ready one; ports offered by exactly the same addresses (with the same readiness) share a
//! subset; addresses are sorted by IP bytes then UID, ports in upstream's hash order.
//!
//! [`repack_subsets`] brings existing subsets into the same layout: the mirroring controller
//! mirrors hand-written Endpoints that way, and the Endpoints controller compares with it, so
//! an object written in another order (by an older kube-controller-manager) is not rewritten
//! for its order alone.

use crate::endpoints::subsets::{AddressOnPort, PortSpec};
use crate::kube_version::OrderHash;
use crate::projection::{StoredAddress, StoredEndpoints, Uid, UidText};
use crate::upstream_order::endpoints_port_dump;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset};
use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::rc::Rc;

type AddressKey = (String, String);

/// An address's identity: its IP and its pod's UID (empty without one), ordered as texts.
pub trait AddressId {
    /// The IP and the pod's UID.
    fn id(&self) -> (&str, UidText<'_>);
}

impl<A: Borrow<EndpointAddress>> AddressId for A {
    fn id(&self) -> (&str, UidText<'_>) {
        let a = self.borrow();
        let uid = a.target_ref.as_ref().and_then(|t| t.uid.as_deref());
        (a.ip.as_str(), UidText::Borrowed(uid.unwrap_or_default()))
    }
}

/// An address of a stored Endpoints object, with the namespace its pod reference is implied
/// in: what the Endpoints controller lays out again to compare, without building it back.
#[derive(Debug, Clone, Copy)]
pub struct HeldAddress<'a> {
    /// The address.
    pub address: &'a StoredAddress,
    /// The namespace of the object holding it.
    pub home: Option<&'a str>,
}

impl<'a> HeldAddress<'a> {
    /// Each address of a stored list, held in `home`.
    pub fn each(
        list: &'a [StoredAddress],
        home: Option<&'a str>,
    ) -> impl ExactSizeIterator<Item = HeldAddress<'a>> {
        list.iter()
            .map(move |address| HeldAddress { address, home })
    }
}

impl AddressId for HeldAddress<'_> {
    fn id(&self) -> (&str, UidText<'_>) {
        let uid = self.address.uid().map_or(UidText::Borrowed(""), Uid::text);
        (self.address.ip(), uid)
    }
}

/// [`AddressId::id`], owned, for sorting by a cached key.
fn address_key(a: &impl AddressId) -> AddressKey {
    let (ip, uid) = a.id();
    (ip.to_owned(), uid.as_str().to_owned())
}

/// One subset of the canonical layout, over owned addresses or borrowed ones.
#[derive(Debug)]
pub struct RepackedSubset<A> {
    /// Ready addresses, sorted.
    pub addresses: Vec<A>,
    /// Not-ready addresses, sorted.
    pub not_ready_addresses: Vec<A>,
    /// Ports, in the order hash's order.
    pub ports: Vec<EndpointPort>,
}

impl<A> RepackedSubset<A> {
    /// The same subset with each address turned into a `B` by `f`.
    fn map_addresses<B>(self, f: impl Fn(A) -> B) -> RepackedSubset<B> {
        RepackedSubset {
            addresses: self.addresses.into_iter().map(&f).collect(),
            not_ready_addresses: self.not_ready_addresses.into_iter().map(&f).collect(),
            ports: self.ports,
        }
    }
}

impl From<RepackedSubset<EndpointAddress>> for EndpointSubset {
    fn from(subset: RepackedSubset<EndpointAddress>) -> Self {
        fn list<T>(items: Vec<T>) -> Option<Vec<T>> {
            (!items.is_empty()).then_some(items)
        }
        EndpointSubset {
            addresses: list(subset.addresses),
            not_ready_addresses: list(subset.not_ready_addresses),
            ports: list(subset.ports),
        }
    }
}

/// Builds the canonical subsets, their ports sorted by `hash`. An address shared by several
/// items (one per port of a pod) is copied only for the subsets past its first.
pub fn repack(items: Vec<AddressOnPort<'_>>, hash: OrderHash) -> Vec<EndpointSubset> {
    lay_out(items, hash)
        .into_iter()
        .map(|subset| subset.map_addresses(Rc::unwrap_or_clone).into())
        .collect()
}

/// Lays addresses out in the canonical subsets; an address offered in several subsets is
/// cloned into all but the last.
fn lay_out<A: AddressId + Clone>(
    items: Vec<AddressOnPort<'_, A>>,
    hash: OrderHash,
) -> Vec<RepackedSubset<A>> {
    let ranks = address_ranks(&items);
    let distinct = ranks.iter().max().map_or(0, |r| r + 1);
    // The first report of an address is the one kept.
    let mut addresses: Vec<Option<A>> = vec![None; distinct];
    // Port (None = no port) -> address rank -> ready.
    let mut by_port: BTreeMap<Option<PortSpec>, BTreeMap<usize, bool>> = BTreeMap::new();
    for (item, rank) in items.into_iter().zip(ranks) {
        if addresses[rank].is_none() {
            addresses[rank] = Some(item.address);
        }
        let ready = by_port
            .entry(item.port)
            .or_default()
            .entry(rank)
            .or_insert(item.ready);
        // Not ready wins: once any report for this port says not ready, it stays so.
        *ready = *ready && item.ready;
    }

    // Ports that share an identical address set (with readiness) share a subset.
    let mut groups: BTreeMap<Vec<(usize, bool)>, Vec<PortSpec>> = BTreeMap::new();
    for (port, addrs) in by_port {
        let set: Vec<(usize, bool)> = addrs.into_iter().collect();
        let ports = groups.entry(set).or_default();
        if let Some(port) = port {
            ports.push(port);
        }
    }
    // An address in one subset only (the usual case) moves into it; one in several is copied
    // into all but the last.
    let mut uses = vec![0usize; distinct];
    for set in groups.keys() {
        for &(rank, _) in set {
            uses[rank] += 1;
        }
    }

    let mut subsets: Vec<RepackedSubset<A>> = groups
        .into_iter()
        .map(|(set, ports)| {
            // Ranks follow (IP, UID) order, so both lists come out sorted.
            let mut ready = Vec::new();
            let mut not_ready = Vec::new();
            for (rank, is_ready) in set {
                uses[rank] -= 1;
                let address = if uses[rank] == 0 {
                    addresses[rank].take()
                } else {
                    addresses[rank].clone()
                };
                let Some(address) = address else { continue };
                if is_ready {
                    ready.push(address);
                } else {
                    not_ready.push(address);
                }
            }
            let mut ports: Vec<EndpointPort> = ports
                .into_iter()
                .map(|p| EndpointPort {
                    name: Some(p.name.to_owned()),
                    port: p.port,
                    protocol: Some(p.protocol.to_owned()),
                    app_protocol: p.app_protocol.map(str::to_owned),
                })
                .collect();
            sort_ports(&mut ports, hash);
            RepackedSubset {
                addresses: ready,
                not_ready_addresses: not_ready,
                ports,
            }
        })
        .collect();
    // Upstream orders subsets by a hash that includes pod UIDs; any stable order will do, as
    // long as it does not depend on input order.
    subsets.sort_by_cached_key(subset_order_key);
    subsets
}

/// Each item's address as its rank among the distinct addresses in (IP, UID) order: the
/// repacker groups and sorts these numbers instead of copies of the strings.
fn address_ranks<A: AddressId>(items: &[AddressOnPort<'_, A>]) -> Vec<usize> {
    let mut distinct: Vec<(&str, UidText<'_>)> = items.iter().map(|i| i.address.id()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    items
        .iter()
        .map(|item| {
            // Always found: `distinct` holds every item's key.
            let id = item.address.id();
            distinct.binary_search(&id).unwrap_or_else(|at| at)
        })
        .collect()
}

/// Repacks existing subsets into the canonical layout (the input is not modified).
pub fn repack_subsets(subsets: &[EndpointSubset], hash: OrderHash) -> Vec<EndpointSubset> {
    // Laid out borrowed first, so that only the addresses kept are copied.
    repacked_layout(subsets, hash)
        .into_iter()
        .map(|subset| subset.map_addresses(EndpointAddress::clone).into())
        .collect()
}

/// Existing subsets laid out again in the canonical layout, their addresses borrowed: for
/// comparing them with a layout without copying them.
pub fn repacked_layout(
    subsets: &[EndpointSubset],
    hash: OrderHash,
) -> Vec<RepackedSubset<&EndpointAddress>> {
    lay_out(addresses_on_ports(subsets), hash)
}

/// A stored Endpoints object's subsets laid out again in the canonical layout, their
/// addresses borrowed as stored: for comparing them with a layout without building them back.
pub fn stored_layout(
    endpoints: &StoredEndpoints,
    hash: OrderHash,
) -> Vec<RepackedSubset<HeldAddress<'_>>> {
    let home = endpoints.home();
    let mut items = Vec::new();
    for subset in endpoints.subsets() {
        let ready = HeldAddress::each(subset.addresses(), home).map(|a| (a, true));
        let not_ready = HeldAddress::each(subset.not_ready_addresses(), home).map(|a| (a, false));
        let addresses: Vec<(HeldAddress<'_>, bool)> = ready.chain(not_ready).collect();
        push_on_ports(&mut items, subset.ports(), &addresses);
    }
    lay_out(items, hash)
}

/// Flattens subsets into the repacker's input: every address on every port of its subset (or
/// on no port when the subset has none), ready addresses before not-ready ones, so the first
/// copy of an address is the one upstream keeps.
fn addresses_on_ports(subsets: &[EndpointSubset]) -> Vec<AddressOnPort<'_, &EndpointAddress>> {
    let mut items = Vec::new();
    for subset in subsets {
        let addresses: Vec<(&EndpointAddress, bool)> = addresses_with_readiness(subset).collect();
        push_on_ports(
            &mut items,
            subset.ports.as_deref().unwrap_or_default(),
            &addresses,
        );
    }
    items
}

/// Pushes each of `addresses` (with its readiness) on each of `ports`, or on no port when
/// there are none.
fn push_on_ports<'p, A: Copy>(
    items: &mut Vec<AddressOnPort<'p, A>>,
    ports: &'p [EndpointPort],
    addresses: &[(A, bool)],
) {
    let ports: Vec<Option<PortSpec<'p>>> = if ports.is_empty() {
        vec![None]
    } else {
        ports
            .iter()
            .map(|p| {
                Some(PortSpec {
                    name: p.name.as_deref().unwrap_or_default(),
                    port: p.port,
                    protocol: p.protocol.as_deref().unwrap_or("TCP"),
                    app_protocol: p.app_protocol.as_deref(),
                })
            })
            .collect()
    };
    for port in ports {
        for &(address, ready) in addresses {
            items.push(AddressOnPort {
                address,
                port,
                ready,
            });
        }
    }
}

/// A subset's addresses with their readiness: the ready ones first, then the not-ready ones.
pub fn addresses_with_readiness(
    subset: &EndpointSubset,
) -> impl Iterator<Item = (&EndpointAddress, bool)> {
    let ready = subset.addresses.iter().flatten().map(|a| (a, true));
    let not_ready = subset
        .not_ready_addresses
        .iter()
        .flatten()
        .map(|a| (a, false));
    ready.chain(not_ready)
}

/// Sorts addresses by IP bytes, then pod UID.
pub fn sort_addresses(addresses: &mut [EndpointAddress]) {
    addresses.sort_by_cached_key(address_key);
}

/// Sorts subset ports by `hash` of their debug dump, as upstream does.
pub fn sort_ports(ports: &mut [EndpointPort], hash: OrderHash) {
    ports.sort_by_cached_key(|p| {
        hash.digest(
            endpoints_port_dump(
                p.name.as_deref().unwrap_or(""),
                p.port,
                p.protocol.as_deref().unwrap_or(""),
                p.app_protocol.as_deref(),
            )
            .as_bytes(),
        )
    });
}

fn subset_order_key<A: AddressId>(s: &RepackedSubset<A>) -> (Vec<(String, i32)>, Vec<AddressKey>) {
    let ports = s
        .ports
        .iter()
        .map(|p| (p.name.clone().unwrap_or_default(), p.port))
        .collect();
    let addrs = s
        .addresses
        .iter()
        .chain(&s.not_ready_addresses)
        .take(1)
        .map(address_key)
        .collect();
    (ports, addrs)
}

#[cfg(test)]
mod tests;
