//! Endpoints objects as the informer keeps them.
//!
//! Like slices (see `stored_slice`), every Endpoints object of a Service with a selector is
//! ours and cached for as long as it exists. An `EndpointAddress` as decoded is 240 bytes
//! (an IP, a hostname, a node and a seven-field pod reference) plus six heap blocks; a
//! [`StoredAddress`] keeps short strings inline. [`StoredEndpoints::to_endpoints`] gives back
//! the very object it was made from.

use super::object_ref::{compact, string, CompactRef};
use compact_str::CompactString;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};

/// An Endpoints object with its addresses kept compact.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEndpoints {
    /// The object without its subsets: its metadata.
    head: Endpoints,
    subsets: Option<Box<[StoredSubset]>>,
}

/// One subset of a [`StoredEndpoints`].
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSubset {
    addresses: Option<Box<[StoredAddress]>>,
    not_ready_addresses: Option<Box<[StoredAddress]>>,
    ports: Option<Box<[EndpointPort]>>,
}

/// One address of a [`StoredSubset`].
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAddress {
    ip: CompactString,
    hostname: Option<CompactString>,
    node_name: Option<CompactString>,
    target_ref: Option<CompactRef>,
}

impl StoredEndpoints {
    /// Keeps `endpoints` (its managedFields already dropped, if the caller wants them gone).
    pub fn new(mut endpoints: Endpoints) -> Self {
        let home = endpoints.metadata.namespace.as_deref();
        let subsets = endpoints
            .subsets
            .take()
            .map(|subsets| super::boxed_map(subsets, |subset| StoredSubset::new(subset, home)));
        super::fit_metadata(&mut endpoints.metadata);
        Self {
            head: endpoints,
            subsets,
        }
    }

    /// The object without its subsets (none): its metadata, for the rules that read only
    /// that (whose object it is, whether it is mirrored).
    pub fn without_subsets(&self) -> &Endpoints {
        &self.head
    }

    /// The subsets, as kept (none when the object has none).
    pub fn subsets(&self) -> &[StoredSubset] {
        self.subsets.as_deref().unwrap_or_default()
    }

    /// The namespace the addresses' pod references are implied in (see [`CompactRef`]).
    pub fn home(&self) -> Option<&str> {
        self.head.metadata.namespace.as_deref()
    }

    /// How many addresses, ready and not, the subsets hold.
    pub fn address_count(&self) -> usize {
        self.subsets()
            .iter()
            .map(|s| s.addresses().len() + s.not_ready_addresses().len())
            .sum()
    }

    /// The whole object, equal to the one it was made from.
    pub fn to_endpoints(&self) -> Endpoints {
        let home = self.head.metadata.namespace.as_deref();
        Endpoints {
            subsets: self
                .subsets
                .as_ref()
                .map(|subsets| subsets.iter().map(|s| s.to_subset(home)).collect()),
            ..self.head.clone()
        }
    }
}

impl StoredSubset {
    fn new(subset: EndpointSubset, home: Option<&str>) -> Self {
        let addresses = |list: Option<Vec<EndpointAddress>>| {
            list.map(|list| super::boxed_map(list, |address| StoredAddress::new(address, home)))
        };
        Self {
            addresses: addresses(subset.addresses),
            not_ready_addresses: addresses(subset.not_ready_addresses),
            ports: subset.ports.map(Vec::into_boxed_slice),
        }
    }

    /// `addresses` (none when unset).
    pub fn addresses(&self) -> &[StoredAddress] {
        self.addresses.as_deref().unwrap_or_default()
    }

    /// `notReadyAddresses` (none when unset).
    pub fn not_ready_addresses(&self) -> &[StoredAddress] {
        self.not_ready_addresses.as_deref().unwrap_or_default()
    }

    /// `ports` (none when unset).
    pub fn ports(&self) -> &[EndpointPort] {
        self.ports.as_deref().unwrap_or_default()
    }

    fn to_subset(&self, home: Option<&str>) -> EndpointSubset {
        let addresses = |list: &Option<Box<[StoredAddress]>>| {
            list.as_ref()
                .map(|list| list.iter().map(|a| a.to_address(home)).collect())
        };
        EndpointSubset {
            addresses: addresses(&self.addresses),
            not_ready_addresses: addresses(&self.not_ready_addresses),
            ports: self.ports.as_ref().map(|ports| ports.to_vec()),
        }
    }
}

impl StoredAddress {
    fn new(address: EndpointAddress, home: Option<&str>) -> Self {
        Self {
            ip: CompactString::from(address.ip),
            hostname: compact(address.hostname),
            node_name: compact(address.node_name),
            target_ref: address.target_ref.map(|r| CompactRef::new(r, home)),
        }
    }

    /// `ip`.
    pub fn ip(&self) -> &str {
        &self.ip
    }

    /// The uid of the pod it points at, if any.
    pub fn uid(&self) -> Option<&super::Uid> {
        self.target_ref.as_ref().and_then(CompactRef::uid)
    }

    /// Whether it equals `address` but for the targetRef's resourceVersion, compared in
    /// place; `home` is the namespace of the object holding it.
    pub fn same_as(&self, home: Option<&str>, address: &EndpointAddress) -> bool {
        // Every field named, so that a field the type gains must be decided on here.
        let EndpointAddress {
            hostname,
            ip,
            node_name,
            target_ref,
        } = address;
        self.ip == ip.as_str()
            && self.hostname.as_deref() == hostname.as_deref()
            && self.node_name.as_deref() == node_name.as_deref()
            && match (&self.target_ref, target_ref) {
                (Some(held), Some(other)) => held.same_as(home, other),
                (held, other) => held.is_none() && other.is_none(),
            }
    }

    fn to_address(&self, home: Option<&str>) -> EndpointAddress {
        EndpointAddress {
            hostname: string(&self.hostname),
            ip: self.ip.as_str().to_owned(),
            node_name: string(&self.node_name),
            target_ref: self.target_ref.as_ref().map(|r| r.to_object_ref(home)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::decoded;
    use serde_json::json;

    /// An Endpoints object with every field set, unset and set to empty values, decoded from
    /// text as the informer decodes it.
    fn every_field() -> Endpoints {
        decoded(json!({
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "9",
                "labels": {"endpoints.kubernetes.io/managed-by": "endpoint-controller"},
                "annotations": {"endpoints.kubernetes.io/last-change-trigger-time":
                    "2026-01-01T00:00:00Z"}},
            "subsets": [
                {"addresses": [
                    {"ip": "10.0.0.1", "nodeName": "node-1", "targetRef": {"kind": "Pod",
                        "namespace": "shop", "name": "web-0",
                        "uid": "0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11"}},
                    {"ip": "10.0.0.2", "hostname": "web-1", "targetRef": {"kind": "Pod",
                        "name": "web-1", "resourceVersion": "12", "apiVersion": "v1",
                        "fieldPath": "spec"}}],
                 "notReadyAddresses": [{"ip": "10.0.0.3", "nodeName": "", "hostname": ""}],
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP",
                            "appProtocol": "http"}]},
                {"addresses": [], "ports": []},
                {}
            ]
        }))
    }

    #[test]
    fn stored_endpoints_give_back_the_object_they_were_made_from() {
        let endpoints = every_field();
        let stored = StoredEndpoints::new(endpoints.clone());
        assert_eq!(stored.to_endpoints(), endpoints);
        assert_eq!(stored.without_subsets().subsets, None);
        assert_eq!(stored.without_subsets().metadata, endpoints.metadata);

        for subsets in [None, Some(Vec::new())] {
            let endpoints = Endpoints {
                subsets,
                ..Endpoints::default()
            };
            assert_eq!(
                StoredEndpoints::new(endpoints.clone()).to_endpoints(),
                endpoints
            );
        }
    }

    #[test]
    fn a_stored_address_is_smaller_than_a_decoded_one() {
        assert!(std::mem::size_of::<StoredAddress>() <= 176);
        assert!(std::mem::size_of::<EndpointAddress>() >= 240);
    }
}
