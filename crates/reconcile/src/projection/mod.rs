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

/// Bytes a [`compact_str::CompactString`] keeps on the heap (none when its text fits inside
/// it), for the projections' memory figures.
fn heap_bytes(s: &compact_str::CompactString) -> usize {
    if s.is_heap_allocated() {
        s.capacity()
    } else {
        0
    }
}
