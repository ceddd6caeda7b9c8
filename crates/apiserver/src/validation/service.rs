//! Service rules for the fields the controllers read: ports (names, numbers, protocols,
//! target ports), the selector, the type, and the ClusterIPs that tell a headless Service
//! from one with a virtual IP.

use super::field::{go_string_list, invalid_each, FieldError, Path};
use super::formats::{dns1123_subdomain, legacy_ip};
use super::meta::validate_labels;
use super::ports;
use crate::version::ServerVersion;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;

const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// Checks a Service as it would be stored (after defaulting); `old` is the stored one on an
/// update.
pub(crate) fn validate(
    object: &Value,
    old: Option<&Value>,
    version: &ServerVersion,
    errors: &mut Vec<FieldError>,
) {
    let Ok(service) = Service::deserialize(object) else {
        return;
    };
    let spec = service.spec.unwrap_or_default();
    let path = Path::new("spec");
    let type_ = spec.type_.as_deref().unwrap_or_default();
    let cluster_ips = spec.cluster_ips.as_deref().unwrap_or_default();
    let headless = type_ == "ClusterIP" && cluster_ips.first().is_some_and(|ip| ip == "None");
    let ports = spec.ports.as_deref().unwrap_or_default();
    if ports.is_empty() && !headless && type_ != "ExternalName" {
        errors.push(FieldError::required(&path.child("ports"), ""));
    }
    if type_ == "ExternalName" {
        external_name(&spec, &path, errors);
    }
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        service_port(
            port,
            ports.len(),
            &mut names,
            &path.child("ports").index(i),
            errors,
        );
    }
    if let Some(selector) = &spec.selector {
        let pairs = selector.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        validate_labels(pairs, &path.child("selector"), errors);
    }
    if type_.is_empty() {
        errors.push(FieldError::required(&path.child("type"), ""));
    } else if !TYPES.contains(&type_) {
        errors.push(FieldError::not_supported(&path.child("type"), type_, TYPES));
    }
    if type_ != "ExternalName" {
        cluster_ip_fields(&spec, &path, errors);
    }
    traffic_distribution(&spec, old, version, &path, errors);
}

/// `spec.trafficDistribution` takes the values the version's gates allow. As kube-apiserver
/// ratchets, an update may keep a value the Service already held.
fn traffic_distribution(
    spec: &ServiceSpec,
    old: Option<&Value>,
    version: &ServerVersion,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    let Some(value) = spec.traffic_distribution.as_deref() else {
        return;
    };
    let supported = version.traffic_distributions();
    if supported.contains(&value) {
        return;
    }
    let held = old
        .and_then(|o| o.pointer("/spec/trafficDistribution"))
        .and_then(Value::as_str);
    if held == Some(value) {
        return;
    }
    errors.push(FieldError::not_supported(
        &path.child("trafficDistribution"),
        value,
        supported,
    ));
}

fn external_name(spec: &ServiceSpec, path: &Path, errors: &mut Vec<FieldError>) {
    if spec.cluster_ips.as_ref().is_some_and(|ips| !ips.is_empty()) {
        errors.push(FieldError::forbidden(
            &path.child("clusterIPs"),
            "may not be set for ExternalName services",
        ));
    }
    // The CNAME may end in a dot to mark it fully qualified.
    let name = spec.external_name.as_deref().unwrap_or_default();
    let cname = name.strip_suffix('.').unwrap_or(name);
    if cname.is_empty() {
        errors.push(FieldError::required(&path.child("externalName"), ""));
    } else {
        invalid_each(
            errors,
            &path.child("externalName"),
            cname,
            dns1123_subdomain(cname),
        );
    }
}

/// A port of a Service with `ports` ports; `names` holds the names of the ports before it.
fn service_port(
    port: &ServicePort,
    ports: usize,
    names: &mut BTreeSet<String>,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    let name = port.name.as_deref().unwrap_or_default();
    ports::name(name, ports, &path.child("name"), errors);
    if !name.is_empty() && !names.insert(name.to_owned()) {
        errors.push(FieldError::duplicate(&path.child("name"), name));
    }
    ports::number(port.port, &path.child("port"), errors);
    ports::protocol(port.protocol.as_deref(), &path.child("protocol"), errors);
    if let Some(target) = &port.target_port {
        ports::number_or_name(target, &path.child("targetPort"), errors);
    }
    let app = port.app_protocol.as_deref();
    ports::app_protocol(app, &path.child("appProtocol"), errors);
}

/// `clusterIP` and `clusterIPs` agree, hold at most two valid IPs, and "None" only alone.
fn cluster_ip_fields(spec: &ServiceSpec, path: &Path, errors: &mut Vec<FieldError>) {
    let ips_path = path.child("clusterIPs");
    let cluster_ip = spec.cluster_ip.as_deref().unwrap_or_default();
    let ips = spec.cluster_ips.as_deref().unwrap_or_default();
    if !cluster_ip.is_empty() {
        match ips.first() {
            None => errors.push(FieldError::required(&ips_path, "")),
            Some(first) if first != cluster_ip => errors.push(FieldError::invalid(
                &ips_path,
                go_string_list(ips),
                "first value must match `clusterIP`",
            )),
            Some(_) => {}
        }
    } else if !ips.is_empty() {
        errors.push(FieldError::invalid(
            &ips_path,
            go_string_list(ips),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                errors.push(FieldError::invalid(
                    &ips_path,
                    go_string_list(ips),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        invalid_each(errors, &ips_path.index(i), ip, legacy_ip(ip));
    }
    if ips.len() > 2 {
        errors.push(FieldError::invalid(
            &ips_path,
            go_string_list(ips),
            "may only hold up to 2 values",
        ));
    }
}
