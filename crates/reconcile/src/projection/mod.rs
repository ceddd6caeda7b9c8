//! Compact views of the API objects the controllers read.
//!
//! Informer stores keep these instead of whole objects: a pod here is a few hundred bytes
//! instead of several kilobytes, and every rule in this crate reads only these fields.

mod interner;
mod label_set;
mod node;
mod object_ref;
mod partial_pod;
mod pod;
mod service;
mod stored_endpoints;
mod stored_slice;
mod uid;

pub use interner::Interner;
pub use label_set::{LabelSet, Labels};
pub use node::{parse_cpu_millis, NodeInfo, ZONE_LABEL};
pub use object_ref::CompactRef;
pub use partial_pod::{
    PartialContainer, PartialContainerPort, PartialPod, PartialPodCondition, PartialPodIp,
    PartialPodSpec, PartialPodStatus,
};
#[cfg(any(test, feature = "testing"))]
pub(crate) use pod::TransitionTime;
pub use pod::{NamedPort, PodDns, PodInfo, PodInterner};
pub use service::{ServiceInfo, ServicePortInfo, TargetPort};
pub use stored_endpoints::{StoredAddress, StoredEndpoints, StoredSubset};
pub use stored_slice::{StoredEndpoint, StoredSlice};
pub use uid::{Uid, UidText};

/// Bytes a [`compact_str::CompactString`] keeps on the heap (none when its text fits inside
/// it), for the projections' memory figures.
fn heap_bytes(s: &compact_str::CompactString) -> usize {
    if s.is_heap_allocated() {
        s.capacity()
    } else {
        0
    }
}

/// Trims the lists of a cached object's metadata to their length: decoding grows a list by
/// doubling, and a cached object keeps its slack for as long as it exists.
fn fit_metadata(meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) {
    if let Some(owners) = meta.owner_references.as_mut() {
        owners.shrink_to_fit();
    }
    if let Some(finalizers) = meta.finalizers.as_mut() {
        finalizers.shrink_to_fit();
    }
}

/// `items`, each made into a `U`, in a boxed slice of exactly their number. (Collecting a
/// `Vec`'s iterator into a box reuses the `Vec`'s buffer when the new elements fit in it, and
/// then shrinks it: a reallocation for every list whose elements get smaller.)
pub(crate) fn boxed_map<T, U>(items: Vec<T>, each: impl FnMut(T) -> U) -> Box<[U]> {
    let mut out = Vec::with_capacity(items.len());
    out.extend(items.into_iter().map(each));
    out.into_boxed_slice()
}
