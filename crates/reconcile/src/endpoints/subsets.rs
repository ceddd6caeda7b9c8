//! One pod's contribution to a Service's Endpoints: an address per service port.

use crate::address_family::endpoints_address;
use crate::find_port::find_port;
use crate::pod_rules::{is_endpoint_candidate, pod_reference, publishes_hostname};
use crate::projection::{PodInfo, ServiceInfo};
use k8s_openapi::api::core::v1::EndpointAddress;
use std::rc::Rc;

/// A port of an Endpoints subset, its strings borrowed from the Service (or from the subset
/// being laid out again): every pod offers its address on every port, and the strings are
/// copied only into the ports of the subsets finally built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortSpec<'a> {
    /// Service port name.
    pub name: &'a str,
    /// Resolved pod port.
    pub port: i32,
    /// Protocol.
    pub protocol: &'a str,
    /// appProtocol.
    pub app_protocol: Option<&'a str>,
}

/// One address offered on one port (or on no port, for a headless Service without ports).
/// The address is shared by a pod's ports when subsets are built from it (the repacker keeps
/// one copy per subset, not one per port), borrowed when existing subsets are only laid out
/// again to be compared.
#[derive(Debug, Clone)]
pub struct AddressOnPort<'a, A = Rc<EndpointAddress>> {
    /// The address.
    pub address: A,
    /// The port; `None` only for port-less headless Services.
    pub port: Option<PortSpec<'a>>,
    /// Ready (or published regardless) versus not ready.
    pub ready: bool,
}

/// Every (address, port) pair the Service's pods offer, before repacking. Pods that are not
/// candidates (terminal, no IP, terminating without publishNotReadyAddresses) or have no IP
/// of the Service's family are left out; a port FindPort cannot resolve is left out for that
/// pod.
pub fn addresses_on_ports<'a>(
    service: &'a ServiceInfo,
    pods: &[&PodInfo],
) -> Vec<AddressOnPort<'a>> {
    let mut out = Vec::new();
    let publish_all = service.publish_not_ready_addresses;
    for pod in pods {
        if !is_endpoint_candidate(pod, publish_all) {
            continue;
        }
        let Some(ip) = endpoints_address(service, pod) else {
            continue;
        };
        let address = Rc::new(EndpointAddress {
            ip,
            node_name: Some(pod.node_name.as_str().to_owned()),
            hostname: publishes_hostname(pod, service).then(|| pod.hostname().to_owned()),
            target_ref: Some(pod_reference(pod)),
        });
        let ready = publish_all || pod.ready;
        if service.ports.is_empty() {
            // Only a headless Service may go without ports.
            if service.cluster_ip == "None" {
                out.push(AddressOnPort {
                    address,
                    port: None,
                    ready,
                });
            }
            continue;
        }
        for sp in &service.ports {
            let Some(port) = find_port(pod, sp) else {
                continue;
            };
            out.push(AddressOnPort {
                address: Rc::clone(&address),
                port: Some(PortSpec {
                    name: &sp.name,
                    port,
                    protocol: &sp.protocol,
                    app_protocol: sp.app_protocol.as_deref(),
                }),
                ready,
            });
        }
    }
    out
}
