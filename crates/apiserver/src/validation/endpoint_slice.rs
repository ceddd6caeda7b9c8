//! EndpointSlice rules (upstream's `pkg/apis/discovery/validation`): a supported, immutable
//! address type; at most 1000 endpoints of 1 to 100 addresses each, every address of the
//! slice's type; valid hostnames, node names, topology and hints; and ports with unique valid
//! names and known protocols. Upstream checks no port number range on slices (a missing port
//! means "all ports"), so neither do we.

use super::field::{at_most, invalid_each, FieldError, Path};
use super::formats::{
    dns1123_label, dns1123_subdomain, endpoint_ip, fully_qualified_domain_name, ip_of_family,
    label_value, Family, Rule,
};
use super::meta::{optional_name, validate_labels};
use super::ports;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointHints, EndpointPort, EndpointSlice};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// The address types a slice may have. The deprecated `IP` type is no longer accepted, on
/// create or update (upstream dropped it from both).
const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20_000;
const MAX_TOPOLOGY_LABELS: usize = 16;
const MAX_ZONE_HINTS: usize = 8;
const MAX_NODE_HINTS: usize = 8;

/// Checks a slice as it would be stored; `old` is the stored slice on an update.
pub(crate) fn validate(object: &Value, old: Option<&Value>, errors: &mut Vec<FieldError>) {
    let Ok(slice) = EndpointSlice::deserialize(object) else {
        return;
    };
    let address_type = slice.address_type.as_str();
    let type_path = Path::new("addressType");
    if address_type.is_empty() {
        errors.push(FieldError::required(&type_path, ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        errors.push(FieldError::not_supported(
            &type_path,
            address_type,
            ADDRESS_TYPES,
        ));
    }
    endpoints(&slice.endpoints, address_type, errors);
    slice_ports(slice.ports.as_deref().unwrap_or_default(), errors);
    if let Some(old_type) = old
        .and_then(|o| o.get("addressType"))
        .and_then(Value::as_str)
    {
        if old_type != address_type {
            errors.push(FieldError::invalid(
                &type_path,
                address_type,
                "field is immutable",
            ));
        }
    }
}

fn endpoints(endpoints: &[Endpoint], address_type: &str, errors: &mut Vec<FieldError>) {
    let path = Path::new("endpoints");
    if !at_most(errors, &path, endpoints.len(), MAX_ENDPOINTS) {
        // Upstream stops here: checking a thousand more endpoints would only bury this error.
        return;
    }
    for (i, endpoint) in endpoints.iter().enumerate() {
        let path = path.index(i);
        let addresses_path = path.child("addresses");
        let addresses = &endpoint.addresses;
        if addresses.is_empty() {
            errors.push(FieldError::required(
                &addresses_path,
                "must contain at least 1 address",
            ));
        } else {
            at_most(errors, &addresses_path, addresses.len(), MAX_ADDRESSES);
        }
        for (j, address) in addresses.iter().enumerate() {
            let path = addresses_path.index(j);
            let family = match address_type {
                "IPv4" => Family::V4,
                "IPv6" => Family::V6,
                "FQDN" => {
                    if let Some((value, message)) = fully_qualified_domain_name(address) {
                        errors.push(FieldError::invalid(&path, value.as_str(), &message));
                    }
                    continue;
                }
                // An unknown type is reported once above; its addresses cannot be judged.
                _ => continue,
            };
            let problems = ip_of_family(address, family);
            if problems.is_empty() {
                invalid_each(errors, &path, address, endpoint_ip(address));
            } else {
                invalid_each(errors, &path, address, problems);
            }
        }
        let node = endpoint.node_name.as_deref();
        optional_name(node, dns1123_subdomain, &path.child("nodeName"), errors);
        if let Some(topology) = &endpoint.deprecated_topology {
            let topology_path = path.child("deprecatedTopology");
            at_most(errors, &topology_path, topology.len(), MAX_TOPOLOGY_LABELS);
            let pairs = topology.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            validate_labels(pairs, &topology_path, errors);
        }
        if let Some(hostname) = endpoint.hostname.as_deref() {
            // Unlike elsewhere, an empty hostname is invalid here: it is set or absent.
            invalid_each(
                errors,
                &path.child("hostname"),
                hostname,
                dns1123_label(hostname),
            );
        }
        if let Some(hints) = &endpoint.hints {
            endpoint_hints(hints, &path.child("hints"), errors);
        }
    }
}

fn endpoint_hints(hints: &EndpointHints, path: &Path, errors: &mut Vec<FieldError>) {
    let zones = hints.for_zones.iter().flatten().map(|z| z.name.as_str());
    let nodes = hints.for_nodes.iter().flatten().map(|n| n.name.as_str());
    let kinds: [(&str, Vec<&str>, usize, Rule); 2] = [
        ("forZones", zones.collect(), MAX_ZONE_HINTS, label_value),
        (
            "forNodes",
            nodes.collect(),
            MAX_NODE_HINTS,
            dns1123_subdomain,
        ),
    ];
    for (field, names, max, rule) in kinds {
        hint_names(&names, max, rule, &path.child(field), errors);
    }
}

/// The names of one kind of hint (zones or nodes): at most `max`, each given once and valid
/// as `rule` says.
fn hint_names(names: &[&str], max: usize, rule: Rule, path: &Path, errors: &mut Vec<FieldError>) {
    if !at_most(errors, path, names.len(), max) {
        return;
    }
    let mut seen = BTreeSet::new();
    for (i, name) in names.iter().enumerate() {
        let name_path = path.index(i).child("name");
        if !seen.insert(name) {
            errors.push(FieldError::duplicate(&name_path, *name));
        }
        invalid_each(errors, &name_path, name, rule(name));
    }
}

fn slice_ports(ports: &[EndpointPort], errors: &mut Vec<FieldError>) {
    let path = Path::new("ports");
    if !at_most(errors, &path, ports.len(), MAX_PORTS) {
        return;
    }
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let path = path.index(i);
        let name = port.name.as_deref().unwrap_or_default();
        if !name.is_empty() {
            invalid_each(errors, &path.child("name"), name, dns1123_label(name));
        }
        if !names.insert(name) {
            errors.push(FieldError::duplicate(&path.child("name"), name));
        }
        ports::protocol(port.protocol.as_deref(), &path.child("protocol"), errors);
        let app = port.app_protocol.as_deref();
        ports::app_protocol(app, &path.child("appProtocol"), errors);
    }
}
