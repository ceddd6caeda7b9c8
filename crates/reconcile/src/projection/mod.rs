//! Compact views of the API objects the controllers read.
//!
//! Informer stores keep these instead of whole objects: a pod here is a few hundred bytes
//! instead of several kilobytes, and every rule in this crate reads only these fields.

mod label_set;
mod node;
mod partial_pod;
mod pod;
mod service;

pub use label_set::{LabelSet, Labels};
pub use node::{parse_cpu_millis, NodeInfo, ZONE_LABEL};
pub use partial_pod::{
    PartialContainer, PartialContainerPort, PartialPod, PartialPodCondition, PartialPodIp,
    PartialPodSpec, PartialPodStatus,
};
pub use pod::{NamedPort, PodDns, PodInfo};
pub use service::{ServiceInfo, ServicePortInfo, TargetPort};
