use super::label_set::LabelPairs;
use super::{Interner, LabelSet, PartialPod};
use crate::Timestamp;
use compact_str::CompactString;
use std::sync::Arc;
#[cfg(test)]
use {super::heap_bytes, k8s_openapi::api::core::v1::Pod, serde::Deserialize};

/// A named container port a service's `targetPort` can refer to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NamedPort {
    /// The port's name (may be empty: unnamed ports can only match numeric targetPorts).
    pub name: CompactString,
    /// TCP, UDP or SCTP.
    pub protocol: CompactString,
    /// The container port number.
    pub port: i32,
}

/// The fields of a Pod that the two controllers read.
///
/// Its text fields are [`CompactString`]s: names, namespaces, node names and
/// IPs are almost always 24 bytes or shorter and then live inside the struct, so a cached pod
/// is a handful of allocations rather than a dozen (the store holds one per pod).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodInfo {
    /// Namespace.
    pub namespace: CompactString,
    /// Name.
    pub name: CompactString,
    /// UID.
    pub uid: super::Uid,
    /// Labels, matched against service selectors.
    pub labels: LabelSet,
    /// `spec.nodeName`, empty when unscheduled.
    pub node_name: CompactString,
    /// `spec.hostname` and `spec.subdomain`, when either is set. Few pods have them, so they
    /// are kept out of line; read them through [`hostname`](Self::hostname) and
    /// [`subdomain`](Self::subdomain).
    pub dns: Option<Box<PodDns>>,
    /// `status.podIPs`, in order, as written (falls back to `podIP`).
    pub ips: Box<[CompactString]>,
    /// `status.podIP` is an IPv6 address: the family a headless Service without
    /// `ipFamilies` publishes in Endpoints. The address itself is `ips[0]` (the API server
    /// keeps `podIPs[0]` equal to it) and is not kept twice.
    pub pod_ip_v6: bool,
    /// Phase is Failed or Succeeded.
    pub terminal: bool,
    /// The Ready condition is True.
    pub ready: bool,
    /// lastTransitionTime of the Ready condition, if any: read it through
    /// [`ready_transition`](Self::ready_transition).
    pub(crate) ready_transition: TransitionTime,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Ports of regular containers first, then of sidecar (restartPolicy Always) init
    /// containers, each in declaration order: the order FindPort searches them. Shared
    /// between pods of one template when projected through a [`PodInterner`].
    pub ports: Arc<[NamedPort]>,
}

/// A time or none, in 12 bytes where `Option<Timestamp>` takes 24: with the pod's flags
/// beside it, it fills 16, and a cached pod fits the allocator's 192-byte class rather than
/// its 224-byte one. (Packed to 4-byte alignment; its fields are only ever copied out.)
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
pub(crate) struct TransitionTime {
    second: i64,
    /// The fraction, with the sign of `second` as jiff keeps it; [`NONE`](Self::NONE) for
    /// no time.
    nanosecond: i32,
}

impl TransitionTime {
    const NONE: i32 = i32::MIN;

    pub(crate) fn new(time: Option<Timestamp>) -> Self {
        match time {
            Some(t) => Self {
                second: t.as_second(),
                nanosecond: t.subsec_nanosecond(),
            },
            None => Self {
                second: 0,
                nanosecond: Self::NONE,
            },
        }
    }

    fn get(self) -> Option<Timestamp> {
        let (second, nanosecond) = (self.second, self.nanosecond);
        // Made from a valid timestamp, so it makes one again.
        (nanosecond != Self::NONE)
            .then(|| Timestamp::new(second, nanosecond).ok())
            .flatten()
    }
}

impl Default for TransitionTime {
    fn default() -> Self {
        Self::new(None)
    }
}

impl std::fmt::Debug for TransitionTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// What pods of one template have in common, kept once: their labels and container ports.
/// The informer projects every pod through one, so a ReplicaSet's pods share both.
#[derive(Debug, Default)]
pub struct PodInterner {
    labels: Interner<LabelPairs>,
    ports: Interner<[NamedPort]>,
}

/// A pod's `spec.hostname` and `spec.subdomain` (either may be empty).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodDns {
    /// `spec.hostname`.
    pub hostname: CompactString,
    /// `spec.subdomain`.
    pub subdomain: CompactString,
}

impl PodInfo {
    /// Projects a full Pod (for the tests; the informer decodes [`PartialPod`] directly).
    /// Returns `None` for a pod without namespace or name.
    #[cfg(test)]
    pub fn from_pod(pod: &Pod) -> Option<Self> {
        // Through the pod's JSON, so that this and the informer share one projection.
        let value = serde_json::to_value(pod).ok()?;
        Self::from_partial(&PartialPod::deserialize(value).ok()?)
    }

    /// Projects a pod as the informer decodes it. Returns `None` for a pod without namespace
    /// or name.
    pub fn from_partial(pod: &PartialPod) -> Option<Self> {
        Self::project(pod, None)
    }

    /// [`PodInfo::from_partial`], with labels and ports shared with the pods `interner`
    /// projected before.
    pub fn from_partial_shared(pod: &PartialPod, interner: &mut PodInterner) -> Option<Self> {
        Self::project(pod, Some(interner))
    }

    fn project(pod: &PartialPod, interner: Option<&mut PodInterner>) -> Option<Self> {
        let meta = &pod.metadata;
        let namespace = CompactString::from(meta.namespace.as_deref().filter(|n| !n.is_empty())?);
        let name = CompactString::from(meta.name.as_deref().filter(|n| !n.is_empty())?);
        let spec = pod.spec.as_ref();
        let status = pod.status.as_ref();
        let ready_condition = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|conds| conds.iter().find(|c| c.type_ == "Ready"));
        let pod_ip = compact(status.and_then(|s| s.pod_ip.as_deref()));
        let mut ips: Vec<CompactString> = status
            .and_then(|s| s.pod_ips.as_ref())
            .map(|ips| ips.iter().map(|ip| CompactString::from(&ip.ip)).collect())
            .unwrap_or_default();
        if ips.is_empty() && !pod_ip.is_empty() {
            ips.push(pod_ip.clone());
        }
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
        let mut ports: Vec<NamedPort> = Vec::new();
        if let Some(spec) = spec {
            let regular = spec.containers.iter().flatten();
            let sidecars = spec
                .init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"));
            for container in regular.chain(sidecars) {
                for p in container.ports.iter().flatten() {
                    ports.push(NamedPort {
                        name: compact(p.name.as_deref()),
                        protocol: CompactString::from(p.protocol.as_deref().unwrap_or("TCP")),
                        port: p.container_port,
                    });
                }
            }
        }
        let labels = meta.labels.as_ref();
        let (labels, ports) = match interner {
            Some(interner) => (
                labels
                    .map(|l| LabelSet::interned(l, &mut interner.labels))
                    .unwrap_or_default(),
                interner.ports.intern(ports),
            ),
            None => (
                labels.map(LabelSet::from).unwrap_or_default(),
                Arc::from(ports),
            ),
        };
        Some(Self {
            namespace,
            name,
            uid: meta.uid.as_deref().map(super::Uid::new).unwrap_or_default(),
            labels,
            node_name: compact(spec.and_then(|s| s.node_name.as_deref())),
            dns: PodDns::boxed(
                compact(spec.and_then(|s| s.hostname.as_deref())),
                compact(spec.and_then(|s| s.subdomain.as_deref())),
            ),
            pod_ip_v6: crate::ip::is_ipv6(&pod_ip),
            ips: ips.into_boxed_slice(),
            terminal: phase == "Failed" || phase == "Succeeded",
            ready: ready_condition.is_some_and(|c| c.status == "True"),
            ready_transition: TransitionTime::new(
                ready_condition
                    .and_then(|c| c.last_transition_time.as_ref())
                    .map(|t| t.0),
            ),
            deleting: meta.deletion_timestamp.is_some(),
            ports,
        })
    }

    /// lastTransitionTime of the Ready condition, if any.
    pub fn ready_transition(&self) -> Option<Timestamp> {
        self.ready_transition.get()
    }

    /// `spec.hostname`, empty when unset.
    pub fn hostname(&self) -> &str {
        self.dns.as_ref().map_or("", |d| d.hostname.as_str())
    }

    /// `spec.subdomain`, empty when unset.
    pub fn subdomain(&self) -> &str {
        self.dns.as_ref().map_or("", |d| d.subdomain.as_str())
    }

    /// Rough heap and inline size of this projection, for the memory figure a test prints.
    #[cfg(test)]
    pub fn approximate_bytes(&self) -> usize {
        let strings = [&self.namespace, &self.name, &self.node_name];
        std::mem::size_of::<Self>()
            + strings.iter().map(|s| heap_bytes(s)).sum::<usize>()
            + self.uid.heap_bytes()
            + self.labels.heap_bytes()
            + self.dns.as_ref().map_or(0, |d| {
                std::mem::size_of::<PodDns>() + heap_bytes(&d.hostname) + heap_bytes(&d.subdomain)
            })
            + self
                .ips
                .iter()
                .map(|s| std::mem::size_of::<CompactString>() + heap_bytes(s))
                .sum::<usize>()
            + self
                .ports
                .iter()
                .map(|p| {
                    std::mem::size_of::<NamedPort>() + heap_bytes(&p.name) + heap_bytes(&p.protocol)
                })
                .sum::<usize>()
    }
}

impl PodDns {
    /// The pair, boxed, or `None` when both are empty (the usual case).
    pub fn boxed(hostname: CompactString, subdomain: CompactString) -> Option<Box<Self>> {
        (!hostname.is_empty() || !subdomain.is_empty()).then(|| {
            Box::new(Self {
                hostname,
                subdomain,
            })
        })
    }
}

/// An optional field as a [`CompactString`], empty when absent.
fn compact(value: Option<&str>) -> CompactString {
    value.map(CompactString::from).unwrap_or_default()
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

    /// The pod as the API server sends it: managedFields, annotations, owner, a sidecar, an
    /// init container that is not one, env and resources, a second IP, more conditions.
    fn wire_pod() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "shop", "uid": "4f0c7a52-1111-4d7a-9f3e-2b8f6a1c9e01",
                "resourceVersion": "981", "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z",
                "deletionTimestamp": "2026-01-02T00:00:00Z", "deletionGracePeriodSeconds": 30,
                "labels": {"app": "web", "pod-template-hash": "7c9d8f6b5"},
                "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7c9d8f6b5",
                                     "uid": "u-rs", "controller": true, "blockOwnerDeletion": true}],
                "finalizers": ["example.com/hold"],
                "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-01-01T00:00:01Z", "fieldsType": "FieldsV1", "subresource": "status",
                    "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}},
                                              "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"10.1.0.3\"}": {}}}}}]},
            "spec": {"nodeName": "node-b", "hostname": "web-0", "subdomain": "web",
                "containers": [{"name": "app", "image": "registry.example/app:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
                    "ports": [{"name": "http", "containerPort": 8080}, {"containerPort": 9000, "protocol": "UDP"}]}],
                "initContainers": [
                    {"name": "setup", "image": "registry.example/setup:1", "ports": [{"name": "skip", "containerPort": 1}]},
                    {"name": "proxy", "image": "registry.example/proxy:1", "restartPolicy": "Always",
                     "ports": [{"name": "proxy", "containerPort": 15001, "protocol": "TCP"}]}],
                "volumes": [{"name": "data", "emptyDir": {}}]},
            "status": {"phase": "Running", "podIP": "10.1.0.3", "podIPs": [{"ip": "10.1.0.3"}, {"ip": "fd00::3"}],
                "hostIP": "192.168.0.2", "qosClass": "Burstable",
                "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                               {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:05Z"}],
                "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0, "image": "registry.example/app:1",
                                       "imageID": "", "state": {"running": {"startedAt": "2026-01-01T00:00:02Z"}}}]}
        })
    }

    #[test]
    fn the_informers_partial_decoding_projects_as_the_whole_pod_does() {
        let text = wire_pod().to_string();
        let partial: PartialPod = serde_json::from_str(&text).unwrap();
        let whole: Pod = serde_json::from_str(&text).unwrap();
        let p = PodInfo::from_partial(&partial).unwrap();
        assert_eq!(Some(&p), PodInfo::from_pod(&whole).as_ref());
        assert_eq!((p.namespace.as_str(), p.name.as_str()), ("shop", "web-0"));
        assert_eq!(p.uid, "4f0c7a52-1111-4d7a-9f3e-2b8f6a1c9e01");
        assert_eq!(p.labels.get("pod-template-hash"), Some("7c9d8f6b5"));
        assert_eq!((p.hostname(), p.subdomain()), ("web-0", "web"));
        assert_eq!(&*p.ips, ["10.1.0.3", "fd00::3"]);
        assert!(p.deleting && !p.ready && !p.terminal);
        assert_eq!(
            p.ready_transition(),
            Some(crate::testing::ts("2026-01-01T00:00:05Z"))
        );
        let ports: Vec<_> = p
            .ports
            .iter()
            .map(|p| (p.name.as_str(), p.protocol.as_str(), p.port))
            .collect();
        assert_eq!(
            ports,
            [
                ("http", "TCP", 8080),
                ("", "UDP", 9000),
                ("proxy", "TCP", 15001)
            ]
        );
        // Only the fields the projection reads are kept.
        assert!(
            partial.metadata.managed_fields.is_none() && partial.metadata.annotations.is_none()
        );
    }

    #[test]
    fn absent_and_null_parts_read_as_empty() {
        for text in [
            r#"{"metadata": {"name": "a", "namespace": "n"}}"#,
            r#"{"metadata": {"name": "a", "namespace": "n", "labels": null}, "spec": null, "status": null}"#,
            r#"{"metadata": {"name": "a", "namespace": "n"}, "spec": {"containers": null}, "status": {"podIPs": null, "conditions": null}}"#,
        ] {
            let partial: PartialPod = serde_json::from_str(text).unwrap();
            let p = PodInfo::from_partial(&partial).unwrap();
            assert!(
                p.ips.is_empty() && p.ports.is_empty() && p.labels.is_empty() && !p.ready,
                "{text}"
            );
        }
        let nameless: PartialPod =
            serde_json::from_str(r#"{"metadata": {"namespace": "n"}}"#).unwrap();
        assert!(PodInfo::from_partial(&nameless).is_none());
    }

    #[test]
    fn projection_keeps_what_the_rules_read() {
        let p = PodInfo::from_pod(&typical()).unwrap();
        assert_eq!(&*p.ips, ["10.1.0.3"]);
        assert!(p.dns.is_none());
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
        // With the Arc's two counters, a cached pod fits mimalloc's 192-byte size class.
        assert!(
            std::mem::size_of::<PodInfo>() + 16 <= 192,
            "{}",
            std::mem::size_of::<PodInfo>()
        );
        assert!(bytes < 512, "{bytes}");
        // The server's uid is kept in the struct, not in a heap block of its own.
        assert_eq!(p.uid.heap_bytes(), 0);
    }

    #[test]
    fn a_transition_time_gives_back_the_time_it_was_made_from() {
        for text in [
            "2026-01-01T00:00:05Z",
            "2026-01-01T00:00:05.123456789Z",
            "1960-06-01T00:00:00.5Z",
            "1970-01-01T00:00:00Z",
        ] {
            let t = crate::testing::ts(text);
            assert_eq!(TransitionTime::new(Some(t)).get(), Some(t), "{text}");
        }
        assert_eq!(TransitionTime::new(None).get(), None);
        assert_eq!(TransitionTime::default(), TransitionTime::new(None));
        assert_eq!(std::mem::size_of::<TransitionTime>(), 12);
    }
}
