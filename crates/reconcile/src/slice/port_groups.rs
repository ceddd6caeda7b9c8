//! The port list of a pod's endpoints, and the key that groups endpoints by it.

use crate::find_port::find_port;
use crate::kube_version::OrderHash;
use crate::projection::{PodInfo, ServiceInfo};
use crate::upstream_order::slice_port_dump;
use k8s_openapi::api::discovery::v1::EndpointPort;

/// The ports a pod serves for a Service: one per service port FindPort resolves, sorted by
/// `hash` as upstream sorts them. A headless Service without ports has none.
pub fn endpoint_ports(service: &ServiceInfo, pod: &PodInfo, hash: OrderHash) -> Vec<EndpointPort> {
    let mut ports: Vec<EndpointPort> = service
        .ports
        .iter()
        .filter_map(|sp| {
            find_port(pod, sp).map(|n| EndpointPort {
                name: Some(sp.name.clone()),
                port: Some(n),
                protocol: Some(sp.protocol.clone()),
                app_protocol: sp.app_protocol.clone(),
            })
        })
        .collect();
    sort_ports(&mut ports, hash);
    ports
}

/// Sorts ports by `hash` of their debug dump, as upstream's `NewPortMapKey` sorts the list it
/// is given (in place: the order it leaves is the order upstream writes).
pub fn sort_ports(ports: &mut [EndpointPort], hash: OrderHash) {
    ports.sort_by_cached_key(|p| {
        hash.digest(
            slice_port_dump(
                p.name.as_deref(),
                p.protocol.as_deref(),
                p.port,
                p.app_protocol.as_deref(),
            )
            .as_bytes(),
        )
    });
}

/// One port of a group key: name, protocol, number, appProtocol.
type PortTuple = (Option<String>, Option<String>, Option<i32>, Option<String>);

/// Groups endpoints that share a port list; missing and empty lists are the same group. The
/// key holds the ports in one canonical order whatever version is followed, so the same list
/// in any order is the same key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortGroupKey(Vec<PortTuple>);

impl PortGroupKey {
    /// The key of a port list (sorted into the canonical order first, in a copy).
    pub fn of(ports: Option<&[EndpointPort]>) -> Self {
        let mut ports = ports.map(<[EndpointPort]>::to_vec).unwrap_or_default();
        sort_ports(&mut ports, OrderHash::Fnv128a);
        Self(
            ports
                .into_iter()
                .map(|p| (p.name, p.protocol, p.port, p.app_protocol))
                .collect(),
        )
    }

    /// A readable rendering, for metrics keys and messages.
    pub fn render(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(name, proto, port, _)| {
                format!(
                    "{}:{}/{}",
                    name.as_deref().unwrap_or(""),
                    port.map(|p| p.to_string()).unwrap_or_default(),
                    proto.as_deref().unwrap_or("")
                )
            })
            .collect();
        format!("[{}]", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{pod, service, service_port};

    #[test]
    fn named_port_resolving_to_different_numbers_makes_different_groups() {
        let svc = service("s")
            .port(service_port("http", 80).named("http"))
            .build();
        let a = pod("a").port("http", "TCP", 8080).build();
        let b = pod("b").port("http", "TCP", 8081).build();
        let ka = PortGroupKey::of(Some(&endpoint_ports(&svc, &a, OrderHash::Fnv128a)));
        let kb = PortGroupKey::of(Some(&endpoint_ports(&svc, &b, OrderHash::Fnv128a)));
        assert_ne!(ka, kb);
    }

    #[test]
    fn unresolved_ports_are_left_out() {
        let svc = service("s")
            .port(service_port("http", 80).named("http"))
            .port(service_port("metrics", 9090).named("metrics"))
            .build();
        let p = pod("a").port("http", "TCP", 8080).build();
        let ports = endpoint_ports(&svc, &p, OrderHash::Fnv128a);
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].port, Some(8080));
    }

    #[test]
    fn missing_and_empty_port_lists_group_together() {
        assert_eq!(PortGroupKey::of(None), PortGroupKey::of(Some(&[])));
    }

    #[test]
    fn port_order_follows_upstream_hash_not_declaration() {
        let svc = service("s")
            .port(service_port("metrics", 9090).target(9100))
            .port(service_port("http", 80).target(8080))
            .build();
        let ports = endpoint_ports(&svc, &pod("a").build(), OrderHash::Fnv128a);
        let names: Vec<_> = ports.iter().map(|p| p.name.clone().unwrap()).collect();
        // Recorded from kube-controller-manager: http sorts before metrics.
        assert_eq!(names, vec!["http", "metrics"]);
    }
}
