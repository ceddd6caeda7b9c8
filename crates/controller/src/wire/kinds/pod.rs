//! Pods, decoded into [`PartialPod`]: the fields the pod projection reads, nothing else.
//!
//! The messages below declare those fields at the numbers `core/v1` gives them. Everything
//! else a Pod carries (managedFields, annotations, owner references, each container's image,
//! command, environment, resources and probes, volumes, container statuses) is skipped by
//! the decoder: its bytes are stepped over, never turned into strings.

use super::partial::{conditions, Condition, PartialObject, Unread};
use super::{list, plain, WireKind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prost::Message;
use reconcile::projection::{
    PartialContainer, PartialContainerPort, PartialPod, PartialPodCondition, PartialPodIp,
    PartialPodSpec, PartialPodStatus,
};

impl WireKind for PartialPod {
    type Message = PartialObject<Unread, PodSpec, PodStatus>;

    fn from_message(pod: Self::Message) -> Self {
        PartialPod {
            // The pod's JSON reader keeps neither of these (see `PartialPod`): nor do we, so
            // that a pod reads the same in both encodings.
            metadata: ObjectMeta {
                creation_timestamp: None,
                generation: None,
                ..pod.metadata.unwrap_or_default().into()
            },
            spec: pod.spec.map(Into::into),
            status: pod.status.map(Into::into),
        }
    }
}

/// `PodSpec`: containers, init containers, node, hostname, subdomain.
#[derive(Clone, PartialEq, Message)]
pub struct PodSpec {
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
pub struct PodStatus {
    #[prost(string, optional, tag = "1")]
    phase: Option<String>,
    #[prost(message, repeated, tag = "2")]
    conditions: Vec<Condition>,
    #[prost(string, optional, tag = "6")]
    pod_ip: Option<String>,
    #[prost(message, repeated, tag = "12")]
    pod_ips: Vec<PodIp>,
}

/// `PodIP`: ip.
#[derive(Clone, PartialEq, Message)]
struct PodIp {
    #[prost(string, optional, tag = "1")]
    ip: Option<String>,
}

impl From<PodSpec> for PartialPodSpec {
    fn from(spec: PodSpec) -> Self {
        PartialPodSpec {
            node_name: plain(spec.node_name),
            hostname: plain(spec.hostname),
            subdomain: plain(spec.subdomain),
            containers: list(spec.containers.into_iter().map(container).collect()),
            init_containers: list(spec.init_containers.into_iter().map(container).collect()),
        }
    }
}

impl From<PodStatus> for PartialPodStatus {
    fn from(status: PodStatus) -> Self {
        PartialPodStatus {
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
            conditions: conditions(status.conditions, |type_, status, last_transition_time| {
                PartialPodCondition {
                    type_,
                    status,
                    last_transition_time,
                }
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
