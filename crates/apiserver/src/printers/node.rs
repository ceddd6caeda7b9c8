//! NAME STATUS ROLES AGE VERSION, and the addresses and system info `-o wide` adds, for nodes.

use super::{column, created, name, wide, Column, AGE, NAME};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use std::collections::BTreeSet;

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    column("Status", "The status of the node"),
    column("Roles", "The roles of the node"),
    AGE,
    column("Version", "Kubelet Version reported by the node."),
    wide("Internal-IP", "List of addresses reachable to the node."),
    wide("External-IP", "List of addresses reachable to the node."),
    wide("OS-Image", "OS Image reported by the node."),
    wide("Kernel-Version", "Kernel Version reported by the node."),
    wide(
        "Container-Runtime",
        "ContainerRuntime Version reported by the node.",
    ),
];

/// Roles come from `node-role.kubernetes.io/<role>` label keys and the older
/// `kubernetes.io/role=<role>` label, sorted and without duplicates.
fn roles(node: &Node) -> String {
    let mut roles = BTreeSet::new();
    for (key, value) in node.metadata.labels.iter().flatten() {
        if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.insert(role.to_owned());
            }
        } else if key == "kubernetes.io/role" && !value.is_empty() {
            roles.insert(value.clone());
        }
    }
    if roles.is_empty() {
        return "<none>".to_owned();
    }
    roles.into_iter().collect::<Vec<_>>().join(",")
}

fn status(node: &Node) -> String {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    let mut status = vec![match ready {
        Some(c) if c.status == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

fn address(node: &Node, kind: &str) -> String {
    node.status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.iter().find(|a| a.type_ == kind))
        .map_or_else(|| "<none>".to_owned(), |a| a.address.clone())
}

pub(super) fn cells(node: &Node, now: Timestamp) -> Vec<Value> {
    let info = node.status.as_ref().and_then(|s| s.node_info.as_ref());
    let field = |f: fn(&k8s_openapi::api::core::v1::NodeSystemInfo) -> &String| {
        info.map(f)
            .filter(|v| !v.is_empty())
            .cloned()
            .unwrap_or_else(|| "<unknown>".to_owned())
    };
    vec![
        name(&node.metadata),
        Value::from(status(node)),
        Value::from(roles(node)),
        Value::from(created(&node.metadata, now)),
        Value::from(info.map(|i| i.kubelet_version.clone()).unwrap_or_default()),
        Value::from(address(node, "InternalIP")),
        Value::from(address(node, "ExternalIP")),
        Value::from(field(|i| &i.os_image)),
        Value::from(field(|i| &i.kernel_version)),
        Value::from(field(|i| &i.container_runtime_version)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::printed;
    use super::*;
    use serde_json::json;

    #[test]
    fn node_status_and_roles_read_the_ready_condition_and_role_labels() {
        let node = json!({
            "metadata": {"name": "n1", "labels": {
                "node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]},
        });
        assert_eq!(
            printed(cells, node),
            json!([
                "n1",
                "NotReady,SchedulingDisabled",
                "control-plane,edge",
                "<unknown>",
                "",
                "10.0.0.1",
                "<none>",
                "<unknown>",
                "<unknown>",
                "<unknown>"
            ])
        );
    }
}
