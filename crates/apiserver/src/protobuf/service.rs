//! `Service` from protobuf to JSON, for `kubectl create service`.

use super::{map, meta, object, string, strings};
use k8s_pb::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

/// An `IntOrString` is a number when its type is 0 and a name when it is 1.
fn int_or_string(value: &IntOrString) -> Value {
    match value.r#type {
        Some(1) => Value::from(value.str_val.clone().unwrap_or_default()),
        _ => Value::from(value.int_val.unwrap_or(0)),
    }
}

fn port(port: &ServicePort) -> Value {
    object([
        ("name", string(&port.name)),
        ("protocol", string(&port.protocol)),
        ("appProtocol", string(&port.app_protocol)),
        ("port", port.port.map(Value::from)),
        ("targetPort", port.target_port.as_ref().map(int_or_string)),
        ("nodePort", port.node_port.map(Value::from)),
    ])
}

fn spec(spec: &ServiceSpec) -> Value {
    let ports: Vec<Value> = spec.ports.iter().map(port).collect();
    let affinity = spec.session_affinity_config.as_ref().map(|c| {
        object([(
            "clientIP",
            c.client_ip
                .as_ref()
                .map(|ip| object([("timeoutSeconds", ip.timeout_seconds.map(Value::from))])),
        )])
    });
    object([
        ("ports", (!ports.is_empty()).then(|| Value::from(ports))),
        ("selector", map(&spec.selector)),
        ("clusterIP", string(&spec.cluster_ip)),
        ("clusterIPs", strings(&spec.cluster_ips)),
        ("type", string(&spec.r#type)),
        ("externalIPs", strings(&spec.external_ips)),
        ("sessionAffinity", string(&spec.session_affinity)),
        ("loadBalancerIP", string(&spec.load_balancer_ip)),
        (
            "loadBalancerSourceRanges",
            strings(&spec.load_balancer_source_ranges),
        ),
        ("externalName", string(&spec.external_name)),
        (
            "externalTrafficPolicy",
            string(&spec.external_traffic_policy),
        ),
        (
            "healthCheckNodePort",
            spec.health_check_node_port.map(Value::from),
        ),
        (
            "publishNotReadyAddresses",
            spec.publish_not_ready_addresses.map(Value::from),
        ),
        ("sessionAffinityConfig", affinity),
        ("ipFamilies", strings(&spec.ip_families)),
        ("ipFamilyPolicy", string(&spec.ip_family_policy)),
        (
            "allocateLoadBalancerNodePorts",
            spec.allocate_load_balancer_node_ports.map(Value::from),
        ),
        ("loadBalancerClass", string(&spec.load_balancer_class)),
        (
            "internalTrafficPolicy",
            string(&spec.internal_traffic_policy),
        ),
        ("trafficDistribution", string(&spec.traffic_distribution)),
    ])
}

/// The service as JSON; its status is left out, as create and update ignore it.
pub(super) fn to_json(svc: &Service) -> Value {
    object([
        ("metadata", svc.metadata.as_ref().map(meta::to_json)),
        ("spec", svc.spec.as_ref().map(spec)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn service_ports_keep_numeric_and_named_target_ports() {
        let svc = Service {
            spec: Some(ServiceSpec {
                r#type: Some("ClusterIP".to_owned()),
                selector: [("app".to_owned(), "s".to_owned())].into(),
                ports: vec![
                    ServicePort {
                        name: Some("80-8080".to_owned()),
                        protocol: Some("TCP".to_owned()),
                        port: Some(80),
                        target_port: Some(IntOrString {
                            r#type: Some(0),
                            int_val: Some(8080),
                            str_val: Some(String::new()),
                        }),
                        ..Default::default()
                    },
                    ServicePort {
                        port: Some(443),
                        target_port: Some(IntOrString {
                            r#type: Some(1),
                            int_val: Some(0),
                            str_val: Some("https".to_owned()),
                        }),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            to_json(&svc),
            json!({"spec": {"type": "ClusterIP", "selector": {"app": "s"}, "ports": [
                {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                {"port": 443, "targetPort": "https"},
            ]}})
        );
    }
}
