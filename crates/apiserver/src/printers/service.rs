//! NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, and SELECTOR with `-o wide`, for services.

use super::{column, created, format_labels, name, wide, Column, AGE, NAME};
use k8s_openapi::api::core::v1::{Service, ServiceSpec};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use std::collections::BTreeSet;

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    column("Type", "type determines how the Service is exposed."),
    column("Cluster-IP", "clusterIP is the IP address of the service."),
    column("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
    column("Port(s)", "The list of ports that are exposed by this service."),
    AGE,
    wide("Selector", "Route service traffic to pods with label keys and values matching this selector."),
];

fn external_ip(svc: &Service, spec: &ServiceSpec) -> String {
    let external = spec.external_ips.clone().unwrap_or_default();
    match spec.type_.as_deref().unwrap_or("ClusterIP") {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            // The server renders wide cells, so the balancer list is never clipped here.
            let balancers: BTreeSet<String> = svc
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.as_ref())
                .and_then(|lb| lb.ingress.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    i.ip.clone()
                        .filter(|ip| !ip.is_empty())
                        .or_else(|| i.hostname.clone().filter(|h| !h.is_empty()))
                })
                .collect();
            let all: Vec<String> = balancers.into_iter().chain(external).collect();
            if all.is_empty() {
                "<pending>".to_owned()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => spec.external_name.clone().unwrap_or_default(),
        _ => "<unknown>".to_owned(),
    }
}

fn ports(spec: &ServiceSpec) -> String {
    let ports: Vec<String> = spec
        .ports
        .iter()
        .flatten()
        .map(|p| {
            let protocol = p.protocol.as_deref().unwrap_or("TCP");
            match p.node_port.filter(|n| *n > 0) {
                Some(node_port) => format!("{}:{node_port}/{protocol}", p.port),
                None => format!("{}/{protocol}", p.port),
            }
        })
        .collect();
    if ports.is_empty() {
        "<none>".to_owned()
    } else {
        ports.join(",")
    }
}

pub(super) fn cells(svc: &Service, now: Timestamp) -> Vec<Value> {
    let spec = svc.spec.clone().unwrap_or_default();
    let cluster_ip = spec
        .cluster_ips
        .as_ref()
        .and_then(|ips| ips.first())
        .cloned()
        .unwrap_or_else(|| "<none>".to_owned());
    vec![
        name(&svc.metadata),
        Value::from(spec.type_.clone().unwrap_or_default()),
        Value::from(cluster_ip),
        Value::from(external_ip(svc, &spec)),
        Value::from(ports(&spec)),
        Value::from(created(&svc.metadata, now)),
        Value::from(format_labels(spec.selector.as_ref())),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::printed;
    use super::*;
    use serde_json::json;

    #[test]
    fn service_cells_show_ports_with_node_ports_and_a_pending_balancer() {
        let svc = json!({
            "metadata": {"name": "web"},
            "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"},
                "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]},
        });
        assert_eq!(
            printed(cells, svc),
            json!([
                "web",
                "LoadBalancer",
                "10.96.0.10",
                "<pending>",
                "80:30080/TCP,53/UDP",
                "<unknown>",
                "app=web"
            ])
        );
    }
}
