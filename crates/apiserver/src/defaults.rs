//! The defaulting a real kube-apiserver applies when it stores an object.
//!
//! The controllers only ever see stored objects, so `plan` (which reads raw manifests) and the
//! embedded API server both pass every object through these functions first. Without them a
//! manifest that omits, say, a port's protocol would give different slices offline than on a
//! cluster. Only the fields the two controllers read are defaulted.

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::net::IpAddr;

/// Hands out ClusterIPs the way a single- or dual-stack cluster would, so a Service created
/// without one is not mistaken for a headless Service.
#[derive(Debug, Clone)]
pub struct ClusterIpAllocator {
    next_v4: u32,
    next_v6: u128,
}

impl Default for ClusterIpAllocator {
    fn default() -> Self {
        Self {
            // 10.96.0.0/12 is kubeadm's default service range; .1 is the `kubernetes` Service.
            next_v4: u32::from(std::net::Ipv4Addr::new(10, 96, 0, 10)),
            next_v6: u128::from(
                "fd00:10:96::a"
                    .parse::<std::net::Ipv6Addr>()
                    .expect("literal"),
            ),
        }
    }
}

impl ClusterIpAllocator {
    fn allocate(&mut self, family: &str) -> String {
        if family == "IPv6" {
            let ip = std::net::Ipv6Addr::from(self.next_v6);
            self.next_v6 += 1;
            ip.to_string()
        } else {
            let ip = std::net::Ipv4Addr::from(self.next_v4);
            self.next_v4 += 1;
            ip.to_string()
        }
    }
}

fn family_of(ip: &str) -> Option<&'static str> {
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => Some("IPv4"),
        Ok(IpAddr::V6(_)) => Some("IPv6"),
        Err(_) => None,
    }
}

/// Applies the API server's Service defaults: type, port protocol and targetPort, an empty
/// selector stored as none, ClusterIP allocation and the IP family fields.
pub fn default_service(service: &mut Service, ips: &mut ClusterIpAllocator) {
    let Some(spec) = service.spec.as_mut() else {
        return;
    };
    let type_ = spec
        .type_
        .get_or_insert_with(|| "ClusterIP".to_owned())
        .clone();
    // The API server drops empty maps on storage: `selector: {}` reads back as no selector.
    if spec.selector.as_ref().is_some_and(|s| s.is_empty()) {
        spec.selector = None;
    }
    for port in spec.ports.iter_mut().flatten() {
        port.protocol.get_or_insert_with(|| "TCP".to_owned());
        if port.target_port.is_none() {
            port.target_port = Some(IntOrString::Int(port.port));
        }
    }
    if type_ == "ExternalName" {
        return;
    }
    if spec.cluster_ip.is_none() {
        if let Some(first) = spec.cluster_ips.as_ref().and_then(|ips| ips.first()) {
            spec.cluster_ip = Some(first.clone());
        }
    }
    let headless = spec.cluster_ip.as_deref() == Some("None");
    let policy = spec
        .ip_family_policy
        .get_or_insert_with(|| "SingleStack".to_owned())
        .clone();
    if spec.ip_families.as_ref().is_none_or(|f| f.is_empty()) {
        let mut families: Vec<String> = Vec::new();
        if let Some(ip) = spec
            .cluster_ip
            .as_deref()
            .filter(|ip| !ip.is_empty() && *ip != "None")
        {
            families.push(family_of(ip).unwrap_or("IPv4").to_owned());
        } else {
            families.push("IPv4".to_owned());
        }
        if policy != "SingleStack" && families.len() == 1 {
            let other = if families[0] == "IPv4" {
                "IPv6"
            } else {
                "IPv4"
            };
            families.push(other.to_owned());
        }
        spec.ip_families = Some(families);
    }
    if !headless && spec.cluster_ip.as_deref().is_none_or(|ip| ip.is_empty()) {
        let families = spec.ip_families.clone().unwrap_or_default();
        let allocated: Vec<String> = families.iter().map(|f| ips.allocate(f)).collect();
        spec.cluster_ip = allocated.first().cloned();
        spec.cluster_ips = Some(allocated);
    } else if spec.cluster_ips.as_ref().is_none_or(|c| c.is_empty()) {
        spec.cluster_ips = spec.cluster_ip.clone().map(|ip| vec![ip]);
    }
}

/// Applies the API server's Pod defaults: container port protocols, and `podIP` / `podIPs`
/// kept in step (either one may be written by a client; the server fills in the other).
pub fn default_pod(pod: &mut Pod) {
    if let Some(spec) = pod.spec.as_mut() {
        let containers = spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten());
        for container in containers {
            for port in container.ports.iter_mut().flatten() {
                port.protocol.get_or_insert_with(|| "TCP".to_owned());
            }
        }
    }
    if let Some(status) = pod.status.as_mut() {
        let has_ips = status.pod_ips.as_ref().is_some_and(|ips| !ips.is_empty());
        match (&status.pod_ip, has_ips) {
            (Some(ip), false) if !ip.is_empty() => {
                status.pod_ips = Some(vec![k8s_openapi::api::core::v1::PodIP { ip: ip.clone() }]);
            }
            (None, true) => {
                status.pod_ip = status
                    .pod_ips
                    .as_ref()
                    .and_then(|ips| ips.first())
                    .map(|ip| ip.ip.clone());
            }
            _ => {}
        }
    }
}

/// Applies the API server's Endpoints defaults: a port's protocol is TCP when unset.
pub fn default_endpoints(endpoints: &mut Endpoints) {
    let ports = endpoints
        .subsets
        .iter_mut()
        .flatten()
        .flat_map(|s| s.ports.iter_mut().flatten());
    for port in ports {
        port.protocol.get_or_insert_with(|| "TCP".to_owned());
    }
}

/// Applies the API server's EndpointSlice defaults: a port's name is "" and its protocol TCP
/// when unset, so a slice written without them reads back like one from a real cluster.
pub fn default_endpoint_slice(slice: &mut EndpointSlice) {
    for port in slice.ports.iter_mut().flatten() {
        port.name.get_or_insert_with(String::new);
        port.protocol.get_or_insert_with(|| "TCP".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ServicePort, ServiceSpec};

    fn service(spec: ServiceSpec) -> Service {
        Service {
            spec: Some(spec),
            ..Default::default()
        }
    }

    #[test]
    fn empty_selector_is_stored_as_none() {
        let mut s = service(ServiceSpec {
            selector: Some(Default::default()),
            ..Default::default()
        });
        default_service(&mut s, &mut ClusterIpAllocator::default());
        assert_eq!(s.spec.unwrap().selector, None);
    }

    #[test]
    fn service_without_cluster_ip_gets_one_and_is_not_headless() {
        let mut s = service(ServiceSpec {
            ports: Some(vec![ServicePort {
                port: 80,
                ..Default::default()
            }]),
            ..Default::default()
        });
        default_service(&mut s, &mut ClusterIpAllocator::default());
        let spec = s.spec.unwrap();
        assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.10"));
        assert_eq!(spec.ip_families, Some(vec!["IPv4".to_owned()]));
        let port = &spec.ports.unwrap()[0];
        assert_eq!(port.protocol.as_deref(), Some("TCP"));
        assert_eq!(port.target_port, Some(IntOrString::Int(80)));
    }

    #[test]
    fn headless_dual_stack_policy_gets_both_families() {
        let mut s = service(ServiceSpec {
            cluster_ip: Some("None".into()),
            ip_family_policy: Some("PreferDualStack".into()),
            ..Default::default()
        });
        default_service(&mut s, &mut ClusterIpAllocator::default());
        let spec = s.spec.unwrap();
        assert_eq!(
            spec.ip_families,
            Some(vec!["IPv4".to_owned(), "IPv6".to_owned()])
        );
        assert_eq!(spec.cluster_ips, Some(vec!["None".to_owned()]));
    }

    #[test]
    fn slice_and_endpoints_ports_get_a_protocol_and_slice_ports_a_name() {
        use k8s_openapi::api::core::v1::{EndpointPort as CorePort, EndpointSubset};
        use k8s_openapi::api::discovery::v1::EndpointPort;
        let mut slice = EndpointSlice {
            ports: Some(vec![EndpointPort {
                port: Some(80),
                ..Default::default()
            }]),
            ..Default::default()
        };
        default_endpoint_slice(&mut slice);
        let port = &slice.ports.unwrap()[0];
        assert_eq!(
            (port.name.as_deref(), port.protocol.as_deref()),
            (Some(""), Some("TCP"))
        );
        let mut endpoints = Endpoints {
            subsets: Some(vec![EndpointSubset {
                ports: Some(vec![CorePort {
                    port: 80,
                    ..Default::default()
                }]),
                ..Default::default()
            }]),
            ..Default::default()
        };
        default_endpoints(&mut endpoints);
        assert_eq!(
            endpoints.subsets.unwrap()[0].ports.as_ref().unwrap()[0]
                .protocol
                .as_deref(),
            Some("TCP")
        );
    }

    #[test]
    fn pod_ip_and_pod_ips_are_kept_in_step() {
        let mut p = Pod {
            status: Some(k8s_openapi::api::core::v1::PodStatus {
                pod_ip: Some("10.0.0.1".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        default_pod(&mut p);
        assert_eq!(p.status.unwrap().pod_ips.unwrap()[0].ip, "10.0.0.1");
    }
}
