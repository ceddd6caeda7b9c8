//! One Endpoints address or port, in EndpointSlice form.
//!
//! The address type comes from each address's own IP, not from the Service: a selector-less
//! Service's Endpoints may hold any mix. Upstream parses the IP leniently and writes it back in
//! canonical form, and copies only what a v1 address knows: readiness (as `ready` alone, with
//! no serving or terminating), hostname, node and targetRef. Zones and hints never appear.

use crate::address_family::AddressType;
use crate::ip::parse_sloppy;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort as CorePort};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};
use std::net::IpAddr;

/// The endpoint an address becomes, with its address type; `None` when the IP does not parse
/// (the caller counts it as skipped and warns).
pub fn address_to_endpoint(
    address: &EndpointAddress,
    ready: bool,
) -> Option<(AddressType, Endpoint)> {
    let ip = parse_sloppy(&address.ip)?;
    let address_type = match ip {
        IpAddr::V4(_) => AddressType::IPv4,
        IpAddr::V6(_) => AddressType::IPv6,
    };
    let endpoint = Endpoint {
        addresses: vec![ip.to_string()],
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: None,
            terminating: None,
        }),
        // An empty hostname in v1 means none.
        hostname: address.hostname.clone().filter(|h| !h.is_empty()),
        node_name: address.node_name.clone(),
        target_ref: address.target_ref.clone(),
        ..Default::default()
    };
    Some((address_type, endpoint))
}

/// A subset's ports as slice ports, in the same order. Every field is set, as upstream copies
/// the v1 values (an unnamed port gets the name `""`; the API server defaults the protocol).
pub fn slice_ports(ports: &[CorePort]) -> Vec<EndpointPort> {
    ports
        .iter()
        .map(|p| EndpointPort {
            name: Some(p.name.clone().unwrap_or_default()),
            port: Some(p.port),
            protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".to_owned())),
            app_protocol: p.app_protocol.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;

    fn addr(ip: &str) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            ..Default::default()
        }
    }

    #[test]
    fn address_type_follows_each_ip() {
        let cases = [
            ("10.0.0.1", Some(AddressType::IPv4)),
            ("fd00::1", Some(AddressType::IPv6)),
            ("::ffff:10.0.0.1", Some(AddressType::IPv4)),
            ("not-an-ip", None),
            ("10.0.0", None),
        ];
        for (ip, want) in cases {
            assert_eq!(
                address_to_endpoint(&addr(ip), true).map(|(t, _)| t),
                want,
                "{ip}"
            );
        }
    }

    #[test]
    fn ips_are_written_in_canonical_form() {
        let (_, ep) = address_to_endpoint(&addr("010.000.000.001"), true).unwrap();
        assert_eq!(ep.addresses, vec!["10.0.0.1"]);
        let (_, ep) = address_to_endpoint(&addr("FD00:0:0::0001"), true).unwrap();
        assert_eq!(ep.addresses, vec!["fd00::1"]);
    }

    #[test]
    fn endpoint_carries_ready_hostname_node_and_target_ref_only() {
        let target = ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("default".into()),
            name: Some("db-0".into()),
            uid: Some("u1".into()),
            resource_version: Some("7".into()),
            ..Default::default()
        };
        let address = EndpointAddress {
            ip: "10.0.0.1".into(),
            hostname: Some("db-0".into()),
            node_name: Some("node-a".into()),
            target_ref: Some(target.clone()),
        };
        let (_, ready) = address_to_endpoint(&address, true).unwrap();
        assert_eq!(
            ready,
            Endpoint {
                addresses: vec!["10.0.0.1".into()],
                conditions: Some(EndpointConditions {
                    ready: Some(true),
                    serving: None,
                    terminating: None,
                }),
                hostname: Some("db-0".into()),
                node_name: Some("node-a".into()),
                target_ref: Some(target),
                ..Default::default()
            }
        );
        let (_, not_ready) = address_to_endpoint(&address, false).unwrap();
        assert_eq!(not_ready.conditions.unwrap().ready, Some(false));
    }

    #[test]
    fn empty_hostname_is_left_out() {
        let mut a = addr("10.0.0.1");
        a.hostname = Some(String::new());
        assert_eq!(address_to_endpoint(&a, true).unwrap().1.hostname, None);
    }

    #[test]
    fn ports_keep_name_number_protocol_and_app_protocol() {
        let ports = slice_ports(&[CorePort {
            name: None,
            port: 8080,
            protocol: Some("UDP".into()),
            app_protocol: Some("h2c".into()),
        }]);
        assert_eq!(
            ports,
            vec![EndpointPort {
                name: Some(String::new()),
                port: Some(8080),
                protocol: Some("UDP".into()),
                app_protocol: Some("h2c".into()),
            }]
        );
    }
}
