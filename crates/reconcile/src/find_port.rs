//! FindPort: which pod port a service port's `targetPort` means.

use crate::projection::{PodInfo, ServicePortInfo, TargetPort};

/// Resolves a service port against a pod. A numeric targetPort is used as is, whether or not
/// the pod declares it. A named one must match a container port with the same name and
/// protocol, searched in regular containers first and then in sidecar init containers
/// (`restartPolicy: Always`); other init containers never serve. `None` when nothing matches:
/// that pod is skipped for that port.
pub fn find_port(pod: &PodInfo, port: &ServicePortInfo) -> Option<i32> {
    match &port.target_port {
        TargetPort::Number(n) => Some(*n),
        TargetPort::Name(name) => pod
            .ports
            .iter()
            .find(|p| p.name == name && p.protocol == port.protocol)
            .map(|p| p.port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{pod, service_port};

    #[test]
    fn numeric_target_port_is_used_even_if_the_pod_does_not_declare_it() {
        let p = pod("a").build();
        assert_eq!(
            find_port(&p, &service_port("http", 80).target(8080)),
            Some(8080)
        );
    }

    #[test]
    fn named_target_port_needs_same_name_and_protocol() {
        let p = pod("a").port("http", "TCP", 8080).build();
        assert_eq!(
            find_port(&p, &service_port("web", 80).named("http")),
            Some(8080)
        );
        let udp = service_port("web", 80).named("http").protocol("UDP");
        assert_eq!(find_port(&p, &udp), None);
    }

    #[test]
    fn regular_containers_win_over_sidecars() {
        // The builder lists ports in search order: containers first, then sidecars.
        let p = pod("a")
            .port("metrics", "TCP", 9000)
            .port("metrics", "TCP", 9100)
            .build();
        assert_eq!(
            find_port(&p, &service_port("m", 90).named("metrics")),
            Some(9000)
        );
    }

    #[test]
    fn sidecar_ports_resolve_but_plain_init_containers_do_not() {
        use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec};
        let port = |name: &str, n| ContainerPort {
            name: Some(name.into()),
            container_port: n,
            protocol: Some("TCP".into()),
            ..Default::default()
        };
        let full = Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    ..Default::default()
                }],
                init_containers: Some(vec![
                    Container {
                        name: "setup".into(),
                        ports: Some(vec![port("setup", 7000)]),
                        ..Default::default()
                    },
                    Container {
                        name: "proxy".into(),
                        restart_policy: Some("Always".into()),
                        ports: Some(vec![port("proxy", 15001)]),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let p = PodInfo::from_pod(&full).unwrap();
        assert_eq!(
            find_port(&p, &service_port("x", 1).named("proxy")),
            Some(15001)
        );
        assert_eq!(find_port(&p, &service_port("x", 1).named("setup")), None);
    }
}
