//! The EndpointSlice reconciler: from a Service, its pods, its existing slices and the
//! nodes, the slices to create, update and delete.
//!
//! The pieces follow the order of a sync: [`endpoint`] turns pods into endpoints,
//! [`port_groups`] groups them by their port lists, [`fill`] packs each group into slices
//! (reusing existing ones), [`placeholder`] keeps an empty slice for a Service with no
//! endpoints, hints come from [`crate::topology`] or [`crate::traffic_distribution`], and
//! [`finalize`] turns creates into updates of slices that would otherwise be deleted.
//! [`tracker`] is the runtime's memory of what it wrote, used to spot a stale cache.

pub mod desired;
pub mod endpoint;
pub mod fill;
pub mod finalize;
pub mod placeholder;
mod plan;
pub mod port_groups;
pub mod tracker;

use crate::address_family::AddressType;
use crate::event::PlannedEvent;
use crate::kube_version::VersionRules;
use crate::labels::{SERVICE_NAME, SLICE_CONTROLLER_NAME, SLICE_MANAGED_BY};
use crate::projection::{NodeInfo, PodInfo, ServiceInfo, StoredSlice};
use crate::Timestamp;
use compact_str::CompactString;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub use plan::{failure_event, plan_slices};

/// Default `--max-endpoints-per-slice`.
pub const DEFAULT_MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// Upper bound the API accepts for endpoints in one slice.
pub const MAX_ENDPOINTS_PER_SLICE_LIMIT: usize = 1000;

/// Where the reconciler learns a node's zone. `None` means the node does not exist.
pub trait NodeZones {
    /// The node's zone (`Some(None)` for a node without one), or `None` for an unknown node.
    /// Asked once per pod of every sync: a zone name short enough (as zone names are) comes
    /// back without a heap block.
    fn node_zone(&self, name: &str) -> Option<Option<CompactString>>;
}

impl NodeZones for BTreeMap<String, NodeInfo> {
    fn node_zone(&self, name: &str) -> Option<Option<CompactString>> {
        self.get(name)
            .map(|n| n.zone.as_deref().map(CompactString::from))
    }
}

impl NodeZones for HashMap<String, Arc<NodeInfo>> {
    fn node_zone(&self, name: &str) -> Option<Option<CompactString>> {
        self.get(name)
            .map(|n| n.zone.as_deref().map(CompactString::from))
    }
}

/// Everything one sync of one Service reads.
pub struct SliceInput<'a> {
    /// The Service (not skipped: the caller handles ExternalName and selector-less ones).
    pub service: &'a ServiceInfo,
    /// The pods its selector matches, in its namespace.
    pub pods: &'a [&'a PodInfo],
    /// Its slices: labelled with its name and managed by us, not being deleted; as the
    /// informer keeps them (a sync builds back only the slices it must).
    pub existing: &'a [Arc<StoredSlice>],
    /// Node zones.
    pub nodes: &'a dyn NodeZones,
    /// The trigger time for this sync (`None` removes the annotation).
    pub trigger_time: Option<Timestamp>,
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
    /// The rules of the Kubernetes version followed.
    pub rules: VersionRules,
}

/// The writes for one address type, in the order they are sent: creates, updates, deletes.
/// A failed write ends its batch; the next batch is still attempted.
#[derive(Debug, Default, Clone)]
pub struct SliceBatch {
    /// The address type this batch reconciles.
    pub address_type: Option<AddressType>,
    /// New slices (generateName set, no name).
    pub create: Vec<EndpointSlice>,
    /// Full replacements of existing slices (name set).
    pub update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub delete: Vec<Arc<EndpointSlice>>,
}

/// Per port group: how many endpoints it has and how many slices it will use.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PortGroupFigures {
    /// Endpoints in the group.
    pub endpoints: usize,
    /// Slices the group uses after this sync.
    pub slices: usize,
}

/// Figures for metrics, per address type, as upstream records them.
#[derive(Debug, Default, Clone)]
pub struct SliceFigures {
    /// Endpoints added to slices.
    pub added: usize,
    /// Endpoints removed from slices.
    pub removed: usize,
    /// Per port group efficiency (keys are the groups' port lists, rendered).
    pub groups: BTreeMap<String, PortGroupFigures>,
}

/// What one sync decided.
#[derive(Debug, Default, Clone)]
pub struct SlicePlan {
    /// One batch per address type the Service uses, then (if any) a last batch deleting the
    /// slices of address types it no longer uses.
    pub batches: Vec<SliceBatch>,
    /// Events to record on the Service after the writes.
    pub events: Vec<PlannedEvent>,
    /// Pods left out because the node cache does not know their node yet: the sync must fail
    /// and be retried even if every write succeeds.
    pub missing_nodes: Vec<MissingNode>,
    /// Figures per address type, in batch order.
    pub figures: Vec<(AddressType, SliceFigures)>,
    /// `topology` label of `endpointslices_changed_per_sync`: "Auto" or "Disabled".
    pub topology_label: &'static str,
    /// `traffic_distribution` label: the Service's value when it is in effect, else "".
    pub traffic_distribution_label: String,
}

impl SlicePlan {
    /// Total number of writes.
    pub fn write_count(&self) -> usize {
        self.batches
            .iter()
            .map(|b| b.create.len() + b.update.len() + b.delete.len())
            .sum()
    }
}

/// A selected pod whose node the node cache does not know (yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingNode {
    /// The pod's name (in the Service's namespace).
    pub pod: String,
    /// The node it names.
    pub node: String,
}

impl MissingNode {
    /// Upstream's error text for it, which ends up in the failure event.
    pub fn message(&self, service: &crate::keys::ServiceKey) -> String {
        format!(
            "skipping Pod {} for Service {service}: Node {} Not Found",
            self.pod, self.node
        )
    }
}

/// True when a slice is one this controller manages for the named Service.
pub fn is_managed_slice_of(slice: &EndpointSlice, service_name: &str) -> bool {
    let labels = slice.metadata.labels.as_ref();
    labels.and_then(|l| l.get(SERVICE_NAME)).map(String::as_str) == Some(service_name)
        && is_managed_by_us(slice)
}

/// The controller a slice's managed-by label names, if any.
pub fn managed_by(slice: &EndpointSlice) -> Option<&str> {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SLICE_MANAGED_BY))
        .map(String::as_str)
}

/// True when the slice's managed-by label names this controller.
pub fn is_managed_by_us(slice: &EndpointSlice) -> bool {
    managed_by(slice) == Some(SLICE_CONTROLLER_NAME)
}

/// True when the slice is owned by the Service (ownerReference v1 Service with its uid).
pub fn is_owned_by(slice: &EndpointSlice, service: &ServiceInfo) -> bool {
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == service.uid && o.kind == "Service" && o.api_version == "v1")
}

/// The service a slice belongs to, from its service-name label.
pub fn service_name_of(slice: &EndpointSlice) -> Option<&str> {
    slice
        .metadata
        .labels
        .as_ref()?
        .get(SERVICE_NAME)
        .map(String::as_str)
        .filter(|n| !n.is_empty())
}

/// The slices of one address type on their way to being written, as the hint logic sees
/// them: hints are set on creates and updates, and an unchanged slice whose hints are wrong
/// moves to the updates.
#[derive(Debug, Default, Clone)]
pub struct SliceSets {
    /// Slices to create.
    pub create: Vec<EndpointSlice>,
    /// Slices to update.
    pub update: Vec<EndpointSlice>,
    /// Existing slices nothing else changes.
    pub unchanged: Vec<Arc<EndpointSlice>>,
}

impl SliceSets {
    /// Moves the unchanged slices `pick` selects into the updates (as copies).
    pub fn promote_unchanged(&mut self, mut pick: impl FnMut(&EndpointSlice) -> bool) {
        let mut keep = Vec::with_capacity(self.unchanged.len());
        for slice in std::mem::take(&mut self.unchanged) {
            if pick(&slice) {
                self.update.push(EndpointSlice::clone(&slice));
            } else {
                keep.push(slice);
            }
        }
        self.unchanged = keep;
    }

    /// Every endpoint of the creates and updates, for changing hints in place.
    pub fn writable_endpoints_mut(
        &mut self,
    ) -> impl Iterator<Item = &mut k8s_openapi::api::discovery::v1::Endpoint> {
        self.create
            .iter_mut()
            .chain(self.update.iter_mut())
            .flat_map(|s| s.endpoints.iter_mut())
    }

    /// Removes every hint: cleared on creates and updates, and unchanged slices that carry
    /// any hint are updated without them.
    pub fn remove_hints(&mut self) {
        for endpoint in self.writable_endpoints_mut() {
            endpoint.hints = None;
        }
        let mut moved = Vec::new();
        self.unchanged.retain(|slice| {
            if slice.endpoints.iter().any(|e| e.hints.is_some()) {
                let mut copy = EndpointSlice::clone(slice);
                for e in &mut copy.endpoints {
                    e.hints = None;
                }
                moved.push(copy);
                false
            } else {
                true
            }
        });
        self.update.extend(moved);
    }
}

/// True when the endpoint's Ready condition is true.
pub fn endpoint_ready(endpoint: &k8s_openapi::api::discovery::v1::Endpoint) -> bool {
    endpoint.conditions.as_ref().and_then(|c| c.ready) == Some(true)
}
