//! Pod rules for the fields the controllers read: container ports (FindPort resolves named
//! target ports against them), hostname and subdomain (published in Endpoints and slices), the
//! node name, and the pod IPs; and the rule that a pod's spec is fixed once created.

use super::field::{invalid_each, BadValue, FieldError, Path};
use super::formats::{
    dns1123_label, dns1123_subdomain, legacy_ip, parse_ip_sloppy, port_name, Rule,
};
use super::meta::optional_name;
use super::ports;
use k8s_openapi::api::core::v1::{ContainerPort, Pod, PodIP};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::IpAddr;

/// The spec fields an update may change, in upstream's words (its Forbidden message lists
/// them).
const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Checks a pod as it would be stored; `old` is the stored pod on an update.
pub(crate) fn validate(object: &Value, old: Option<&Value>, errors: &mut Vec<FieldError>) {
    let Ok(pod) = Pod::deserialize(object) else {
        // Admission already decoded it; a failure here would be reported there.
        return;
    };
    let spec_path = Path::new("spec");
    if let Some(spec) = &pod.spec {
        let init_containers = spec.init_containers.as_deref().unwrap_or_default();
        for (field, containers) in [
            ("containers", spec.containers.as_slice()),
            ("initContainers", init_containers),
        ] {
            for (i, container) in containers.iter().enumerate() {
                let ports = container.ports.as_deref().unwrap_or_default();
                let path = spec_path.child(field).index(i).child("ports");
                container_ports(ports, &path, errors);
            }
        }
        let names: [(&str, Option<&str>, Rule); 3] = [
            ("hostname", spec.hostname.as_deref(), dns1123_label),
            ("subdomain", spec.subdomain.as_deref(), dns1123_label),
            ("nodeName", spec.node_name.as_deref(), dns1123_subdomain),
        ];
        for (field, value, rule) in names {
            optional_name(value, rule, &spec_path.child(field), errors);
        }
    }
    if let Some(status) = &pod.status {
        pod_ips(
            status.pod_ip.as_deref(),
            status.pod_ips.as_deref().unwrap_or_default(),
            errors,
        );
    }
    if let Some(old) = old {
        if updatable_view(object) != updatable_view(old) {
            errors.push(FieldError::forbidden(
                &spec_path,
                &format!("pod updates may not change fields other than {UPDATABLE}"),
            ));
        }
    }
}

/// Ports of one container: a valid unique name if any, a port number, a known protocol.
fn container_ports(ports: &[ContainerPort], path: &Path, errors: &mut Vec<FieldError>) {
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let path = path.index(i);
        if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
            let problems = port_name(name);
            if !problems.is_empty() {
                invalid_each(errors, &path.child("name"), name, problems);
            } else if !names.insert(name) {
                errors.push(FieldError::duplicate(&path.child("name"), name));
            }
        }
        if port.container_port == 0 {
            errors.push(FieldError::required(&path.child("containerPort"), ""));
        } else {
            ports::number(port.container_port, &path.child("containerPort"), errors);
        }
        if let Some(host) = port.host_port.filter(|p| *p != 0) {
            ports::number(host, &path.child("hostPort"), errors);
        }
        ports::protocol(port.protocol.as_deref(), &path.child("protocol"), errors);
    }
}

/// Go's `%#v` of a pod's IP list, as upstream shows it in the dual-stack error.
fn go_pod_ips(ips: &[PodIP]) -> BadValue {
    let items: Vec<String> = ips
        .iter()
        .map(|ip| format!("core.PodIP{{IP:{}}}", serde_json::json!(ip.ip)))
        .collect();
    BadValue::Printed(format!("[]core.PodIP{{{}}}", items.join(", ")))
}

/// Pod IPs: each a valid IP, and at most one per family. `podIP` is checked on its own only
/// when it is not the first of `podIPs` (defaulting normally makes it so).
fn pod_ips(pod_ip: Option<&str>, ips: &[PodIP], errors: &mut Vec<FieldError>) {
    let path = Path::new("status").child("podIPs");
    for (i, ip) in ips.iter().enumerate() {
        invalid_each(errors, &path.index(i), &ip.ip, legacy_ip(&ip.ip));
    }
    if let Some(ip) = pod_ip.filter(|ip| !ip.is_empty() && ips.first().is_none_or(|f| f.ip != *ip))
    {
        invalid_each(
            errors,
            &Path::new("status").child("podIP"),
            ip,
            legacy_ip(ip),
        );
    }
    if ips.len() > 1 {
        let families: BTreeSet<bool> = ips
            .iter()
            .filter_map(|ip| parse_ip_sloppy(&ip.ip))
            .map(|p| matches!(p.ip, IpAddr::V4(_)))
            .collect();
        if ips.len() > 2 || families.len() != 2 {
            errors.push(FieldError::invalid(
                &path,
                go_pod_ips(ips),
                "may specify no more than one IP for each IP family",
            ));
        }
    }
}

/// The part of a pod's spec an update may not change: the spec without the fields upstream
/// lets an update touch.
fn updatable_view(pod: &Value) -> Value {
    let mut spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(map) = spec.as_object_mut() {
        for field in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
            "schedulingGates",
            "ephemeralContainers",
        ] {
            map.remove(field);
        }
        for list in ["containers", "initContainers"] {
            for container in map
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(c) = container.as_object_mut() {
                    c.remove("image");
                }
            }
        }
    }
    spec
}
