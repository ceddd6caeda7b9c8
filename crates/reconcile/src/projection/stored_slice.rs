//! EndpointSlices as the informer keeps them.
//!
//! The controllers cache every slice they manage for as long as it exists, and after the pods
//! these are the largest part of the cache. As decoded, a `discovery/v1` `Endpoint` is about
//! 350 bytes of mostly empty optional fields plus eight heap blocks (each address, the node,
//! the zone, the four fields of the pod reference). A [`StoredSlice`] keeps the slice's
//! metadata, address type and ports as they are, and its endpoints in [`StoredEndpoint`]s:
//! short strings inline, and the fields most endpoints leave unset (hostname, hints,
//! deprecatedTopology) boxed away. [`StoredSlice::to_slice`] gives back
//! the very slice it was made from, so the planners read what the API server sent.

use super::object_ref::{compact, string, CompactRef};
use compact_str::CompactString;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointHints, EndpointSlice};
use std::collections::BTreeMap;

/// An EndpointSlice with its endpoints kept compact.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSlice {
    /// The slice without its endpoints: metadata, address type and ports.
    head: EndpointSlice,
    endpoints: Box<[StoredEndpoint]>,
}

/// One endpoint of a [`StoredSlice`].
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEndpoint {
    addresses: Box<[CompactString]>,
    conditions: Option<EndpointConditions>,
    node_name: Option<CompactString>,
    zone: Option<CompactString>,
    target_ref: Option<CompactRef>,
    rest: Option<Box<Uncommon>>,
}

/// The fields of an endpoint that most do not set.
#[derive(Debug, Clone, PartialEq)]
struct Uncommon {
    deprecated_topology: Option<BTreeMap<String, String>>,
    hints: Option<EndpointHints>,
    hostname: Option<String>,
}

impl StoredSlice {
    /// Keeps `slice` (its managedFields already dropped, if the caller wants them gone).
    pub fn new(mut slice: EndpointSlice) -> Self {
        let home = slice.metadata.namespace.as_deref();
        let endpoints = super::boxed_map(std::mem::take(&mut slice.endpoints), |endpoint| {
            StoredEndpoint::new(endpoint, home)
        });
        super::fit_metadata(&mut slice.metadata);
        if let Some(ports) = slice.ports.as_mut() {
            ports.shrink_to_fit();
        }
        Self {
            head: slice,
            endpoints,
        }
    }

    /// The slice without its endpoints (an empty list): its metadata, address type and ports,
    /// for the rules that read only those (whose slice it is, who manages it, its generation).
    pub fn without_endpoints(&self) -> &EndpointSlice {
        &self.head
    }

    /// Whether `other` is a version of the same object (the same uid), not another object
    /// that took its name. A watch reports a delete and a create for that, but a re-list
    /// (after a watch could not resume, or the API server came back from a backup) only
    /// sees the name's new object in place of the old one.
    pub fn is_same_object(&self, other: &Self) -> bool {
        self.head.metadata.uid == other.head.metadata.uid
    }

    /// How many endpoints the slice has.
    pub fn endpoint_count(&self) -> usize {
        self.endpoints.len()
    }

    /// The endpoints, as kept.
    pub fn endpoints(&self) -> &[StoredEndpoint] {
        &self.endpoints
    }

    /// The namespace the endpoints' pod references are implied in (see [`CompactRef`]).
    pub fn home(&self) -> Option<&str> {
        self.head.metadata.namespace.as_deref()
    }

    /// Whether any endpoint carries hints.
    pub fn has_hints(&self) -> bool {
        self.endpoints
            .iter()
            .any(|e| e.rest.as_ref().is_some_and(|r| r.hints.is_some()))
    }

    /// The whole slice, equal to the one it was made from.
    pub fn to_slice(&self) -> EndpointSlice {
        let home = self.head.metadata.namespace.as_deref();
        EndpointSlice {
            endpoints: self
                .endpoints
                .iter()
                .map(|endpoint| endpoint.to_endpoint(home))
                .collect(),
            ..self.head.clone()
        }
    }
}

impl StoredEndpoint {
    /// Keeps `endpoint` of a slice in namespace `home`.
    fn new(endpoint: Endpoint, home: Option<&str>) -> Self {
        let Endpoint {
            addresses,
            conditions,
            deprecated_topology,
            hints,
            hostname,
            node_name,
            target_ref,
            zone,
        } = endpoint;
        let rest =
            (deprecated_topology.is_some() || hints.is_some() || hostname.is_some()).then(|| {
                Box::new(Uncommon {
                    deprecated_topology,
                    hints: hints.map(fit_hints),
                    hostname,
                })
            });
        Self {
            addresses: addresses.into_iter().map(CompactString::from).collect(),
            conditions,
            node_name: compact(node_name),
            zone: compact(zone),
            target_ref: target_ref.map(|r| CompactRef::new(r, home)),
            rest,
        }
    }

    /// The addresses, as written.
    pub fn addresses(&self) -> &[CompactString] {
        &self.addresses
    }

    /// `hostname`.
    pub fn hostname(&self) -> Option<&str> {
        self.rest.as_ref().and_then(|r| r.hostname.as_deref())
    }

    /// `nodeName`.
    pub fn node_name(&self) -> Option<&str> {
        self.node_name.as_deref()
    }

    /// `zone`.
    pub fn zone(&self) -> Option<&str> {
        self.zone.as_deref()
    }

    /// `conditions`.
    pub fn conditions(&self) -> Option<&EndpointConditions> {
        self.conditions.as_ref()
    }

    /// `targetRef`, compact (its namespace implied by the slice's, see [`CompactRef`]).
    pub fn target_ref(&self) -> Option<&CompactRef> {
        self.target_ref.as_ref()
    }

    fn to_endpoint(&self, home: Option<&str>) -> Endpoint {
        let rest = self.rest.as_deref();
        Endpoint {
            addresses: self
                .addresses
                .iter()
                .map(|a| a.as_str().to_owned())
                .collect(),
            conditions: self.conditions.clone(),
            deprecated_topology: rest.and_then(|r| r.deprecated_topology.clone()),
            hints: rest.and_then(|r| r.hints.clone()),
            hostname: rest.and_then(|r| r.hostname.clone()),
            node_name: string(&self.node_name),
            target_ref: self.target_ref.as_ref().map(|r| r.to_object_ref(home)),
            zone: string(&self.zone),
        }
    }
}

/// Hints trimmed to their length (decoding grows lists by doubling).
fn fit_hints(mut hints: EndpointHints) -> EndpointHints {
    if let Some(zones) = hints.for_zones.as_mut() {
        zones.shrink_to_fit();
    }
    if let Some(nodes) = hints.for_nodes.as_mut() {
        nodes.shrink_to_fit();
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::decoded;
    use serde_json::json;

    /// A slice with every field an endpoint can carry, set, unset and set to empty values,
    /// decoded from text as the informer decodes it.
    fn every_field() -> EndpointSlice {
        decoded(json!({
            "metadata": {
                "name": "web-abcde", "namespace": "shop", "generation": 3,
                "resourceVersion": "812", "uid": "5e7ab1f2-0000-4000-8000-000000000001",
                "labels": {"kubernetes.io/service-name": "web"},
                "annotations": {"a": "b"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web",
                    "uid": "u", "controller": true, "blockOwnerDeletion": true}]
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "appProtocol": "h2c"},
                      {"name": "", "port": 53, "protocol": "UDP"}],
            "endpoints": [
                {"addresses": ["10.0.0.1"],
                 "conditions": {"ready": true, "serving": true, "terminating": false},
                 "nodeName": "node-1", "zone": "zone-a",
                 "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-0",
                     "uid": "0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11"}},
                {"addresses": ["10.0.0.2", "10.0.0.3"],
                 "conditions": {"ready": false},
                 "hostname": "web-1",
                 "hints": {"forZones": [{"name": "zone-a"}, {"name": "zone-b"}],
                           "forNodes": [{"name": "node-2"}]},
                 "deprecatedTopology": {"kubernetes.io/hostname": "node-2"},
                 "targetRef": {"apiVersion": "v1", "kind": "Pod", "name": "a-name-longer-than-twenty-four-bytes",
                     "resourceVersion": "77", "fieldPath": "spec"}},
                {"addresses": ["10.0.0.4"], "conditions": {}, "nodeName": "", "zone": "",
                 "targetRef": {}},
                {"addresses": []}
            ]
        }))
    }

    #[test]
    fn a_stored_slice_gives_back_the_slice_it_was_made_from() {
        let slice = every_field();
        let stored = StoredSlice::new(slice.clone());
        assert_eq!(stored.to_slice(), slice);
        assert_eq!(stored.endpoint_count(), 4);

        let head = stored.without_endpoints();
        assert!(head.endpoints.is_empty());
        assert_eq!(head.metadata, slice.metadata);
        assert_eq!(head.ports, slice.ports);
        assert_eq!(head.address_type, slice.address_type);
        // Decoding left room for more owners and ports than there are; the cache does not.
        assert_eq!(
            head.metadata.owner_references.as_ref().unwrap().capacity(),
            1
        );
        assert_eq!(head.ports.as_ref().unwrap().capacity(), 2);

        let empty = EndpointSlice::default();
        assert_eq!(StoredSlice::new(empty.clone()).to_slice(), empty);
    }

    #[test]
    fn a_slice_is_the_same_object_while_its_uid_is() {
        let slice = every_field();
        let stored = StoredSlice::new(slice.clone());
        let mut changed = slice.clone();
        changed.metadata.generation = Some(4);
        changed.endpoints.pop();
        assert!(stored.is_same_object(&StoredSlice::new(changed)));
        let mut recreated = slice;
        recreated.metadata.uid = Some("another-uid".into());
        assert!(!stored.is_same_object(&StoredSlice::new(recreated)));
    }

    #[test]
    fn a_stored_endpoint_is_half_the_size_of_a_decoded_one() {
        // Inline sizes only; the heap blocks shrink further (one address list instead of
        // eight strings: the pod's uid is kept in 16 inline bytes).
        assert!(std::mem::size_of::<StoredEndpoint>() <= 184);
        assert!(std::mem::size_of::<Endpoint>() >= 2 * 170);
    }
}
