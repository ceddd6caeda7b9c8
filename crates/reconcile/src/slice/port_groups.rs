//! The port list of a pod's endpoints, and the key that groups endpoints by it.

use crate::find_port::find_port;
use crate::projection::{PodInfo, ServiceInfo};
use crate::upstream_order::{fnv128a, slice_port_dump};
use k8s_openapi::api::discovery::v1::EndpointPort;

/// The ports a pod serves for a Service: one per service port FindPort resolves, sorted in
/// upstream's order. A headless Service without ports has none.
pub fn endpoint_ports(service: &ServiceInfo, pod: &PodInfo) -> Vec<EndpointPort> {
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
    sort_ports(&mut ports);
    ports
}

/// Sorts ports by the hash upstream orders them by, so equal lists compare equal and are
/// written in the same order.
pub fn sort_ports(ports: &mut [EndpointPort]) {
    ports.sort_by_cached_key(|p| {
        fnv128a(
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

/// Groups endpoints that share a port list; missing and empty lists are the same group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortGroupKey(Vec<PortTuple>);

impl PortGroupKey {
    /// The key of a port list (sorted into upstream order first, in a copy).
    pub fn of(ports: Option<&[EndpointPort]>) -> Self {
        let mut ports = ports.map(<[EndpointPort]>::to_vec).unwrap_or_default();
        sort_ports(&mut ports);
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
        let ka = PortGroupKey::of(Some(&endpoint_ports(&svc, &a)));
        let kb = PortGroupKey::of(Some(&endpoint_ports(&svc, &b)));
        assert_ne!(ka, kb);
    }

    #[test]
    fn unresolved_ports_are_left_out() {
        let svc = service("s")
            .port(service_port("http", 80).named("http"))
            .port(service_port("metrics", 9090).named("metrics"))
            .build();
        let p = pod("a").port("http", "TCP", 8080).build();
        let ports = endpoint_ports(&svc, &p);
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
        let ports = endpoint_ports(&svc, &pod("a").build());
        let names: Vec<_> = ports.iter().map(|p| p.name.clone().unwrap()).collect();
        // Recorded from kube-controller-manager: http sorts before metrics.
        assert_eq!(names, vec!["http", "metrics"]);
    }
}
