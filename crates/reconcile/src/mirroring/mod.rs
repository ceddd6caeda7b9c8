//! The EndpointSlice mirroring controller: hand-written v1 Endpoints of selector-less Services,
//! copied into EndpointSlices.
//!
//! Services without a selector get their Endpoints from a user or another controller, and
//! consumers that read only EndpointSlices would never see them. Upstream's third controller of
//! the family mirrors each such Endpoints object into slices it labels as its own; we replace
//! it, so the slices must come out as upstream writes them. The pieces follow one sync:
//! [`selection`] decides whether the Endpoints is mirrored at all (otherwise every mirrored
//! slice goes), [`address`] turns each address into an endpoint of its IP's family,
//! [`desired`] canonicalises the subsets and groups endpoints by address type and port list
//! under the per-subset cap, [`metadata`] builds the slices' labels, annotations and owner,
//! and [`plan`](plan_mirroring) compares with the existing slices. [`metrics`] keeps the
//! figures behind the `endpoint_slice_mirroring_controller_*` gauges, and [`triggers`] says
//! which watch events queue which Endpoints key.

pub mod address;
pub mod desired;
pub mod metadata;
pub mod metrics;
mod plan;
pub mod selection;
pub mod triggers;

use crate::event::PlannedEvent;
use crate::kube_version::VersionRules;
use crate::labels::{MIRRORING_CONTROLLER_NAME, SERVICE_NAME};
use crate::mirroring::desired::GroupKey;
use crate::projection::ServiceInfo;
use crate::slice::PortGroupFigures;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use plan::plan_mirroring;
pub use selection::CleanupReason;

/// Default `--mirroring-max-endpoints-per-subset`.
pub const DEFAULT_MAX_ENDPOINTS_PER_SUBSET: usize = 1000;
/// Largest `--mirroring-max-endpoints-per-subset` kube-controller-manager accepts.
pub const MAX_ENDPOINTS_PER_SUBSET_LIMIT: usize = 1000;
/// The `source.component` of the events this controller records.
pub const EVENT_COMPONENT: &str = "endpoint-slice-mirroring-controller";
/// Event reason: addresses that are not IPs were left out.
pub const INVALID_IP_ADDRESS: &str = "InvalidIPAddress";
/// Event reason: a subset held more addresses than the per-subset cap.
pub const TOO_MANY_ADDRESSES_TO_MIRROR: &str = "TooManyAddressesToMirror";

/// Everything one sync of one Endpoints object reads. The Service and the Endpoints share the
/// key being synced; either may be gone.
pub struct MirroringInput<'a> {
    /// The Service of the same namespace and name, if it exists.
    pub service: Option<&'a ServiceInfo>,
    /// The Endpoints object, if it exists.
    pub endpoints: Option<&'a Endpoints>,
    /// The slices this controller mirrored for that name (see [`is_mirrored_slice_of`]). Their
    /// order does not matter: the plan sorts them by name.
    pub existing: &'a [Arc<EndpointSlice>],
    /// `--mirroring-max-endpoints-per-subset`.
    pub max_endpoints_per_subset: usize,
    /// The rules of the Kubernetes version followed.
    pub rules: VersionRules,
}

/// Why this sync writes what it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MirroringAction {
    /// The Endpoints is mirrored: the writes bring its slices in line. The writer sends them
    /// in order (creates, updates, deletes), stops at the first failure, records each success
    /// in the slice tracker and counts it in `endpoint_slice_mirroring_controller_changes`.
    Mirror,
    /// Nothing is to be mirrored: every existing slice is deleted. Upstream attempts every
    /// delete even after one fails, reports them together, does not count them in `changes`,
    /// forgets the key in its slice tracker and drops its figures from the metrics cache.
    Cleanup(CleanupReason),
}

/// Per-sync figures for the `endpoint_slice_mirroring_controller_*` metrics.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MirroringFigures {
    /// `endpoints_added_per_sync`.
    pub endpoints_added: usize,
    /// `endpoints_updated_per_sync`.
    pub endpoints_updated: usize,
    /// `endpoints_removed_per_sync`.
    pub endpoints_removed: usize,
    /// `addresses_skipped_per_sync`: invalid IPs plus addresses beyond the per-subset cap.
    pub addresses_skipped: usize,
    /// Per address type and port list: desired endpoints and the slices used after this sync,
    /// for the gauges kept by [`metrics::MirroringMetricsCache`].
    pub groups: BTreeMap<GroupKey, PortGroupFigures>,
}

/// What one sync decided.
#[derive(Debug, Clone)]
pub struct MirroringPlan {
    /// Mirror or clean up.
    pub action: MirroringAction,
    /// New slices (generateName set, no name). Empty while the Endpoints is being deleted.
    pub create: Vec<EndpointSlice>,
    /// Full replacements of existing slices (name set).
    pub update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub delete: Vec<Arc<EndpointSlice>>,
    /// Events to record on the Endpoints object (not the Service), before the writes.
    pub events: Vec<PlannedEvent>,
    /// Figures for the metrics; `None` on cleanup, where upstream observes none.
    pub figures: Option<MirroringFigures>,
}

impl MirroringPlan {
    /// Total number of writes.
    pub fn write_count(&self) -> usize {
        self.create.len() + self.update.len() + self.delete.len()
    }
}

/// True when the slice is one this controller mirrored for the Endpoints of that name: the
/// label selector upstream lists them with (service-name and the mirroring managed-by value).
pub fn is_mirrored_slice_of(slice: &EndpointSlice, endpoints_name: &str) -> bool {
    let Some(labels) = slice.metadata.labels.as_ref() else {
        return false;
    };
    labels.get(SERVICE_NAME).map(String::as_str) == Some(endpoints_name) && is_mirrored(slice)
}

/// True when the slice's managed-by label names the mirroring controller.
pub fn is_mirrored(slice: &EndpointSlice) -> bool {
    crate::slice::managed_by(slice) == Some(MIRRORING_CONTROLLER_NAME)
}
