//! IP families: which address types a Service's slices carry, and which family an Endpoints
//! object publishes.

use crate::ip::is_ipv6;
use crate::projection::{PodInfo, ServiceInfo};
use std::fmt;

/// An EndpointSlice address type the controller writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AddressType {
    /// IPv4 addresses.
    IPv4,
    /// IPv6 addresses.
    IPv6,
}

impl AddressType {
    /// The string used in `addressType`.
    pub fn as_str(self) -> &'static str {
        match self {
            AddressType::IPv4 => "IPv4",
            AddressType::IPv6 => "IPv6",
        }
    }

    /// Parses `addressType`; the legacy "IP" and "FQDN" types are not ours and give `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "IPv4" => Some(AddressType::IPv4),
            "IPv6" => Some(AddressType::IPv6),
            _ => None,
        }
    }

    /// True when an address string belongs to this family.
    pub fn matches(self, ip: &str) -> bool {
        is_ipv6(ip) == (self == AddressType::IPv6)
    }
}

impl fmt::Display for AddressType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The address types a Service's slices use: its `ipFamilies`; failing that (a Service
/// stored by an old API server) the family of its ClusterIP; a headless one gets both.
pub fn slice_address_types(service: &ServiceInfo) -> Vec<AddressType> {
    let mut types: Vec<AddressType> = service
        .ip_families
        .iter()
        .filter_map(|f| AddressType::parse(f))
        .collect();
    types.sort();
    types.dedup();
    if !types.is_empty() {
        return types;
    }
    if service.is_ip_set() {
        return vec![if is_ipv6(&service.cluster_ip) {
            AddressType::IPv6
        } else {
            AddressType::IPv4
        }];
    }
    vec![AddressType::IPv4, AddressType::IPv6]
}

/// The single address a v1 Endpoints object publishes for a pod: the first pod IP of the
/// service's primary family. The family is `ipFamilies[0]`; without families, that of a set
/// ClusterIP; for a headless service without families, that of the pod's `podIP`.
pub fn endpoints_address(service: &ServiceInfo, pod: &PodInfo) -> Option<String> {
    let want_v6 = match service.ip_families.first() {
        Some(family) => family == "IPv6",
        None if service.is_ip_set() => is_ipv6(&service.cluster_ip),
        None => pod.pod_ip_v6,
    };
    pod.ips
        .iter()
        .find(|ip| is_ipv6(ip) == want_v6)
        .map(|ip| ip.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{pod, service};

    #[test]
    fn address_types_come_from_ip_families() {
        let svc = service("s").families(&["IPv6", "IPv4"]).build();
        assert_eq!(
            slice_address_types(&svc),
            vec![AddressType::IPv4, AddressType::IPv6]
        );
    }

    #[test]
    fn without_families_a_cluster_ip_decides() {
        let svc = service("s").cluster_ip("fd00::1").families(&[]).build();
        assert_eq!(slice_address_types(&svc), vec![AddressType::IPv6]);
    }

    #[test]
    fn headless_without_families_gets_both_types() {
        let svc = service("s").cluster_ip("None").families(&[]).build();
        assert_eq!(
            slice_address_types(&svc),
            vec![AddressType::IPv4, AddressType::IPv6]
        );
    }

    #[test]
    fn endpoints_use_the_first_pod_ip_of_the_primary_family() {
        let svc = service("s").families(&["IPv6", "IPv4"]).build();
        let p = pod("a").ip("10.0.0.1").ip("fd00::1").ip("fd00::2").build();
        assert_eq!(endpoints_address(&svc, &p).as_deref(), Some("fd00::1"));
    }

    #[test]
    fn legacy_headless_endpoints_follow_the_pod_ip_family() {
        let svc = service("s").cluster_ip("None").families(&[]).build();
        let p = pod("a").ip("fd00::9").ip("10.0.0.9").build();
        assert_eq!(endpoints_address(&svc, &p).as_deref(), Some("fd00::9"));
    }

    #[test]
    fn pods_without_an_ip_of_the_family_get_no_address() {
        let svc = service("s").families(&["IPv6"]).build();
        let p = pod("a").ip("10.0.0.1").build();
        assert_eq!(endpoints_address(&svc, &p), None);
    }
}
