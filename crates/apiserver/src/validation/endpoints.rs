//! Endpoints rules: every subset has addresses, every address a valid IP that can be a
//! destination, valid hostnames and node names, and ports as upstream allows them.

use super::field::{invalid_each, FieldError, Path};
use super::formats::{dns1123_label, dns1123_subdomain, endpoint_ip, legacy_ip};
use super::meta::optional_name;
use super::ports;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, Endpoints};
use serde::Deserialize;
use serde_json::Value;

/// Checks an Endpoints object as it would be stored.
pub(crate) fn validate(object: &Value, errors: &mut Vec<FieldError>) {
    let Ok(endpoints) = Endpoints::deserialize(object) else {
        return;
    };
    let path = Path::new("subsets");
    for (i, subset) in endpoints.subsets.iter().flatten().enumerate() {
        let path = path.index(i);
        let ready = subset.addresses.as_deref().unwrap_or_default();
        let not_ready = subset.not_ready_addresses.as_deref().unwrap_or_default();
        if ready.is_empty() && not_ready.is_empty() {
            errors.push(FieldError::required(
                &path,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (j, address) in ready.iter().enumerate() {
            endpoint_address(address, &path.child("addresses").index(j), errors);
        }
        for (j, address) in not_ready.iter().enumerate() {
            endpoint_address(address, &path.child("notReadyAddresses").index(j), errors);
        }
        let ports = subset.ports.as_deref().unwrap_or_default();
        for (j, port) in ports.iter().enumerate() {
            endpoint_port(port, ports.len(), &path.child("ports").index(j), errors);
        }
    }
}

fn endpoint_address(address: &EndpointAddress, path: &Path, errors: &mut Vec<FieldError>) {
    let before = errors.len();
    let ip_path = path.child("ip");
    invalid_each(errors, &ip_path, &address.ip, legacy_ip(&address.ip));
    let hostname = address.hostname.as_deref();
    optional_name(hostname, dns1123_label, &path.child("hostname"), errors);
    let node = address.node_name.as_deref();
    optional_name(node, dns1123_subdomain, &path.child("nodeName"), errors);
    // Upstream looks for special addresses only once the address is otherwise valid.
    if errors.len() == before {
        invalid_each(errors, &ip_path, &address.ip, endpoint_ip(&address.ip));
    }
}

/// A port of a subset of `ports` ports.
fn endpoint_port(port: &EndpointPort, ports: usize, path: &Path, errors: &mut Vec<FieldError>) {
    let name = port.name.as_deref().unwrap_or_default();
    ports::name(name, ports, &path.child("name"), errors);
    ports::number(port.port, &path.child("port"), errors);
    ports::protocol(port.protocol.as_deref(), &path.child("protocol"), errors);
    let app = port.app_protocol.as_deref();
    ports::app_protocol(app, &path.child("appProtocol"), errors);
}
