//! Pods, decoded into [`PartialPod`]: the fields the pod projection reads, nothing else.
//!
//! The messages below declare those fields at the numbers `core/v1` gives them. Everything
//! else a Pod carries (managedFields, annotations, owner references, each container's image,
//! command, environment, resources and probes, volumes, container statuses) is skipped by
//! the decoder: its bytes are stepped over, never turned into strings.

use super::meta::time;
use super::{list, map, plain, WireKind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_pb::apimachinery::pkg::apis::meta::v1::Time;
use prost::Message;
use reconcile::projection::{
    PartialContainer, PartialContainerPort, PartialPod, PartialPodCondition, PartialPodIp,
    PartialPodSpec, PartialPodStatus,
};
use std::collections::BTreeMap;

/// `core.v1.Pod`: metadata, spec and status.
#[derive(Clone, PartialEq, Message)]
pub struct PodMessage {
    #[prost(message, optional, tag = "1")]
    metadata: Option<PodMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<PodSpec>,
    #[prost(message, optional, tag = "3")]
    status: Option<PodStatus>,
}

/// `ObjectMeta`: name, namespace, uid, resourceVersion, deletionTimestamp, labels.
#[derive(Clone, PartialEq, Message)]
struct PodMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "5")]
    uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(message, optional, tag = "9")]
    deletion_timestamp: Option<Time>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
}

/// `PodSpec`: containers, init containers, node, hostname, subdomain.
#[derive(Clone, PartialEq, Message)]
struct PodSpec {
    #[prost(message, repeated, tag = "2")]
    containers: Vec<Container>,
    #[prost(string, optional, tag = "10")]
    node_name: Option<String>,
    #[prost(string, optional, tag = "16")]
    hostname: Option<String>,
    #[prost(string, optional, tag = "17")]
    subdomain: Option<String>,
    #[prost(message, repeated, tag = "20")]
    init_containers: Vec<Container>,
}

/// `Container`: ports and restartPolicy.
#[derive(Clone, PartialEq, Message)]
struct Container {
    #[prost(message, repeated, tag = "6")]
    ports: Vec<ContainerPort>,
    #[prost(string, optional, tag = "24")]
    restart_policy: Option<String>,
}

/// `ContainerPort`: name, containerPort, protocol.
#[derive(Clone, PartialEq, Message)]
struct ContainerPort {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(int32, optional, tag = "3")]
    container_port: Option<i32>,
    #[prost(string, optional, tag = "4")]
    protocol: Option<String>,
}

/// `PodStatus`: phase, conditions, podIP, podIPs.
#[derive(Clone, PartialEq, Message)]
struct PodStatus {
    #[prost(string, optional, tag = "1")]
    phase: Option<String>,
    #[prost(message, repeated, tag = "2")]
    conditions: Vec<PodCondition>,
    #[prost(string, optional, tag = "6")]
    pod_ip: Option<String>,
    #[prost(message, repeated, tag = "12")]
    pod_ips: Vec<PodIp>,
}

/// `PodCondition`: type, status, lastTransitionTime.
#[derive(Clone, PartialEq, Message)]
struct PodCondition {
    #[prost(string, optional, tag = "1")]
    r#type: Option<String>,
    #[prost(string, optional, tag = "2")]
    status: Option<String>,
    #[prost(message, optional, tag = "4")]
    last_transition_time: Option<Time>,
}

/// `PodIP`: ip.
#[derive(Clone, PartialEq, Message)]
struct PodIp {
    #[prost(string, optional, tag = "1")]
    ip: Option<String>,
}

impl WireKind for PartialPod {
    type Message = PodMessage;

    fn from_message(pod: PodMessage) -> Self {
        let meta = pod.metadata.unwrap_or_default();
        PartialPod {
            metadata: ObjectMeta {
                name: plain(meta.name),
                namespace: plain(meta.namespace),
                uid: plain(meta.uid),
                resource_version: plain(meta.resource_version),
                deletion_timestamp: time(meta.deletion_timestamp),
                labels: map(meta.labels),
                ..ObjectMeta::default()
            },
            spec: pod.spec.map(|spec| PartialPodSpec {
                node_name: plain(spec.node_name),
                hostname: plain(spec.hostname),
                subdomain: plain(spec.subdomain),
                containers: list(spec.containers.into_iter().map(container).collect()),
                init_containers: list(spec.init_containers.into_iter().map(container).collect()),
            }),
            status: pod.status.map(|status| PartialPodStatus {
                phase: plain(status.phase),
                pod_ip: plain(status.pod_ip),
                pod_ips: list(
                    status
                        .pod_ips
                        .into_iter()
                        .map(|ip| PartialPodIp {
                            ip: ip.ip.unwrap_or_default(),
                        })
                        .collect(),
                ),
                conditions: list(
                    status
                        .conditions
                        .into_iter()
                        .map(|c| PartialPodCondition {
                            type_: c.r#type.unwrap_or_default(),
                            status: c.status.unwrap_or_default(),
                            last_transition_time: time(c.last_transition_time),
                        })
                        .collect(),
                ),
            }),
        }
    }
}

fn container(c: Container) -> PartialContainer {
    PartialContainer {
        ports: list(
            c.ports
                .into_iter()
                .map(|p| PartialContainerPort {
                    name: plain(p.name),
                    container_port: p.container_port.unwrap_or_default(),
                    protocol: plain(p.protocol),
                })
                .collect(),
        ),
        // A pointer field: written only when set.
        restart_policy: c.restart_policy,
    }
}
