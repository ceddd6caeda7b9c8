use super::LabelSet;
use crate::Timestamp;
use k8s_openapi::api::core::v1::Pod;

/// A named container port a service's `targetPort` can refer to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPort {
    /// The port's name (may be empty: unnamed ports can only match numeric targetPorts).
    pub name: String,
    /// TCP, UDP or SCTP.
    pub protocol: String,
    /// The container port number.
    pub port: i32,
}

/// The fields of a Pod that the two controllers read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodInfo {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// resourceVersion, to ignore resync updates.
    pub resource_version: String,
    /// Labels, matched against service selectors.
    pub labels: LabelSet,
    /// `spec.nodeName`, empty when unscheduled.
    pub node_name: String,
    /// `spec.hostname`.
    pub hostname: String,
    /// `spec.subdomain`.
    pub subdomain: String,
    /// `status.podIP`, as written.
    pub pod_ip: String,
    /// `status.podIPs`, in order, as written (falls back to `podIP`).
    pub ips: Vec<String>,
    /// Phase is Failed or Succeeded.
    pub terminal: bool,
    /// The Ready condition is True.
    pub ready: bool,
    /// lastTransitionTime of the Ready condition, if any.
    pub ready_transition: Option<Timestamp>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Ports of regular containers first, then of sidecar (restartPolicy Always) init
    /// containers, each in declaration order: the order FindPort searches them.
    pub ports: Vec<NamedPort>,
}

impl PodInfo {
    /// Projects a full Pod. Returns `None` for a pod without namespace or name.
    pub fn from_pod(pod: &Pod) -> Option<Self> {
        let meta = &pod.metadata;
        let namespace = meta.namespace.clone().filter(|n| !n.is_empty())?;
        let name = meta.name.clone().filter(|n| !n.is_empty())?;
        let spec = pod.spec.as_ref();
        let status = pod.status.as_ref();
        let ready_condition = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|conds| conds.iter().find(|c| c.type_ == "Ready"));
        let pod_ip = status.and_then(|s| s.pod_ip.clone()).unwrap_or_default();
        let mut ips: Vec<String> = status
            .and_then(|s| s.pod_ips.as_ref())
            .map(|ips| ips.iter().map(|ip| ip.ip.clone()).collect())
            .unwrap_or_default();
        if ips.is_empty() && !pod_ip.is_empty() {
            ips.push(pod_ip.clone());
        }
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
        let mut ports = Vec::new();
        if let Some(spec) = spec {
            let regular = spec.containers.iter();
            let sidecars = spec
                .init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"));
            for container in regular.chain(sidecars) {
                for p in container.ports.iter().flatten() {
                    ports.push(NamedPort {
                        name: p.name.clone().unwrap_or_default(),
                        protocol: p.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
                        port: p.container_port,
                    });
                }
            }
        }
        Some(Self {
            namespace,
            name,
            uid: meta.uid.clone().unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            labels: meta.labels.as_ref().map(LabelSet::from).unwrap_or_default(),
            node_name: spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
            hostname: spec.and_then(|s| s.hostname.clone()).unwrap_or_default(),
            subdomain: spec.and_then(|s| s.subdomain.clone()).unwrap_or_default(),
            pod_ip,
            ips,
            terminal: phase == "Failed" || phase == "Succeeded",
            ready: ready_condition.is_some_and(|c| c.status == "True"),
            ready_transition: ready_condition
                .and_then(|c| c.last_transition_time.as_ref())
                .map(|t| t.0),
            deleting: meta.deletion_timestamp.is_some(),
            ports,
        })
    }

    /// Rough heap and inline size of this projection, for the memory figures in the README.
    pub fn approximate_bytes(&self) -> usize {
        let strings = [
            &self.namespace,
            &self.name,
            &self.uid,
            &self.resource_version,
            &self.node_name,
            &self.hostname,
            &self.subdomain,
            &self.pod_ip,
        ];
        std::mem::size_of::<Self>()
            + strings.iter().map(|s| s.capacity()).sum::<usize>()
            + self.labels.heap_bytes()
            + self.ips.iter().map(|s| s.capacity() + 24).sum::<usize>()
            + self
                .ports
                .iter()
                .map(|p| {
                    std::mem::size_of::<NamedPort>() + p.name.capacity() + p.protocol.capacity()
                })
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod as the conformance corpus has them: two labels, an app container with a named
    /// port, a sidecar with another, one IP, a Ready condition.
    fn typical() -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "app1-0042", "namespace": "team", "uid": "e2cb817e-448e-5a3f-882e-b9d97b902424",
                         "resourceVersion": "123456", "labels": {"app": "app1", "pod-template-hash": "5d8f9c7b6d"}},
            "spec": {"nodeName": "node-c",
                     "containers": [{"name": "app", "image": "registry.example/app:1", "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}],
                     "initContainers": [{"name": "sidecar", "image": "registry.example/sidecar:1", "restartPolicy": "Always",
                                          "ports": [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}]}]},
            "status": {"phase": "Running", "podIP": "10.1.0.3", "podIPs": [{"ip": "10.1.0.3"}],
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .unwrap()
    }

    #[test]
    fn projection_keeps_what_the_rules_read() {
        let p = PodInfo::from_pod(&typical()).unwrap();
        assert_eq!(p.ips, vec!["10.1.0.3"]);
        assert!(p.ready);
        assert_eq!(p.ports.len(), 2);
        assert_eq!(p.ports[1].name, "metrics");
    }

    #[test]
    fn a_typical_pod_projection_stays_well_under_a_kilobyte() {
        let p = PodInfo::from_pod(&typical()).unwrap();
        let bytes = p.approximate_bytes();
        let full = serde_json::to_vec(&typical()).unwrap().len();
        println!("projection ~{bytes} bytes; the object's JSON alone is {full} bytes");
        assert!(bytes < 1024, "{bytes}");
    }
}
