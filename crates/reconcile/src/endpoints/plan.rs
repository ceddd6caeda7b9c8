//! One sync of one Service's v1 Endpoints object.

use crate::endpoints::repack::{repack, stored_layout, HeldAddress, RepackedSubset};
use crate::endpoints::subsets::addresses_on_ports;
use crate::endpoints::truncate::truncate;
use crate::endpoints::{MAX_ADDRESSES, OVER_CAPACITY};
use crate::kube_version::VersionRules;
use crate::labels::{endpoints_labels, ENDPOINTS_MANAGED_BY, HEADLESS};
use crate::projection::{PodInfo, ServiceInfo, StoredEndpoints, StoredSubset};
use crate::trigger_time::{self, ANNOTATION};
use crate::Timestamp;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// Everything one sync reads.
pub struct EndpointsInput<'a> {
    /// The Service (not skipped: the caller handles ExternalName and selector-less ones).
    pub service: &'a ServiceInfo,
    /// The pods its selector matches, in its namespace.
    pub pods: &'a [&'a PodInfo],
    /// The existing Endpoints object of the same name, if any, as the informer keeps it (its
    /// addresses are compared where they are kept).
    pub current: Option<&'a StoredEndpoints>,
    /// The trigger time for this sync (`None` removes the annotation).
    pub trigger_time: Option<Timestamp>,
    /// The rules of the Kubernetes version followed.
    pub rules: VersionRules,
}

/// What to write.
#[derive(Debug, Clone, PartialEq)]
pub enum EndpointsAction {
    /// The object is already right.
    Unchanged,
    /// Create this object.
    Create(Endpoints),
    /// Replace the existing object with this one (it carries the old resourceVersion).
    Update(Endpoints),
}

/// The decision of one sync.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointsPlan {
    /// What to write.
    pub action: EndpointsAction,
    /// Ready addresses published (before truncation), for logs.
    pub ready: usize,
    /// Not-ready addresses published (before truncation), for logs.
    pub not_ready: usize,
}

/// Plans one sync of a Service's Endpoints object.
pub fn plan_endpoints(input: &EndpointsInput<'_>) -> EndpointsPlan {
    let service = input.service;
    let items = addresses_on_ports(service, input.pods);
    let ready = items.iter().filter(|i| i.ready).count();
    let not_ready = items.len() - ready;
    let rules = &input.rules;
    let mut subsets = repack(items, rules.order_hash);
    let labels = endpoints_labels(service);

    if let Some(current) = input.current {
        let head = current.without_subsets();
        // The controller's own labels (headless, managed-by) are not the Service's: compare
        // the rest with the Service's labels, so an object that only lacks them is left alone.
        let same_labels = own_labels_removed(head.metadata.labels.as_ref()) == service.labels;
        if same_labels
            && same_subsets(current, &subsets, rules)
            && capacity_annotation_consistent(
                head.metadata.annotations.as_ref(),
                current.address_count(),
            )
        {
            return EndpointsPlan {
                action: EndpointsAction::Unchanged,
                ready,
                not_ready,
            };
        }
    }

    let mut metadata = match input.current {
        Some(current) => current.without_subsets().metadata.clone(),
        None => ObjectMeta {
            name: Some(service.name.clone()),
            namespace: Some(service.namespace.clone()),
            ..Default::default()
        },
    };
    let mut annotations = metadata.annotations.take().unwrap_or_default();
    match input.trigger_time {
        Some(t) => {
            annotations.insert(ANNOTATION.to_owned(), trigger_time::format(t));
        }
        None => {
            annotations.remove(ANNOTATION);
        }
    }
    if truncate(&mut subsets) {
        annotations.insert(OVER_CAPACITY.to_owned(), "truncated".to_owned());
    } else {
        annotations.remove(OVER_CAPACITY);
    }
    metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    metadata.labels = Some(labels);
    let object = Endpoints {
        metadata,
        subsets: (!subsets.is_empty()).then_some(subsets),
    };
    let action = if input
        .current
        .is_some_and(|c| c.without_subsets().metadata.resource_version.is_some())
    {
        EndpointsAction::Update(object)
    } else {
        EndpointsAction::Create(object)
    };
    EndpointsPlan {
        action,
        ready,
        not_ready,
    }
}

fn own_labels_removed(labels: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    let mut labels = labels.cloned().unwrap_or_default();
    labels.remove(HEADLESS);
    labels.remove(ENDPOINTS_MANAGED_BY);
    labels
}

/// Whether the current subsets already say what the planned ones say. From v1.35, when they
/// differ as written, they are compared once more in the canonical layout: an object written
/// by a kube-controller-manager that ordered ports by another hash is then left alone rather
/// than rewritten for its order alone (upstream compares twice in the same way). Up to v1.34
/// the port order counts, so such an object is rewritten into that version's order. Both
/// comparisons read the addresses where the informer keeps them.
fn same_subsets(
    current: &StoredEndpoints,
    planned: &[EndpointSubset],
    rules: &VersionRules,
) -> bool {
    subsets_equal(&held_subsets(current), planned)
        || (rules.endpoints_skip_repacked
            && subsets_equal(&stored_layout(current, rules.order_hash), planned))
}

/// A stored subset with the namespace its addresses' pod references are implied in.
struct HeldSubset<'a> {
    subset: &'a StoredSubset,
    home: Option<&'a str>,
}

/// The subsets of a stored object, each held in its namespace.
fn held_subsets(current: &StoredEndpoints) -> Vec<HeldSubset<'_>> {
    let home = current.home();
    current
        .subsets()
        .iter()
        .map(|subset| HeldSubset { subset, home })
        .collect()
}

/// A current subset, as written or laid out again: its three lists.
trait SubsetLists {
    fn ready(&self) -> impl ExactSizeIterator<Item = HeldAddress<'_>>;
    fn not_ready(&self) -> impl ExactSizeIterator<Item = HeldAddress<'_>>;
    fn ports(&self) -> &[EndpointPort];
}

impl SubsetLists for HeldSubset<'_> {
    fn ready(&self) -> impl ExactSizeIterator<Item = HeldAddress<'_>> {
        HeldAddress::each(self.subset.addresses(), self.home)
    }
    fn not_ready(&self) -> impl ExactSizeIterator<Item = HeldAddress<'_>> {
        HeldAddress::each(self.subset.not_ready_addresses(), self.home)
    }
    fn ports(&self) -> &[EndpointPort] {
        self.subset.ports()
    }
}

impl SubsetLists for RepackedSubset<HeldAddress<'_>> {
    fn ready(&self) -> impl ExactSizeIterator<Item = HeldAddress<'_>> {
        self.addresses.iter().copied()
    }
    fn not_ready(&self) -> impl ExactSizeIterator<Item = HeldAddress<'_>> {
        self.not_ready_addresses.iter().copied()
    }
    fn ports(&self) -> &[EndpointPort] {
        &self.ports
    }
}

/// Subsets compared as multisets, ignoring targetRef resourceVersions and nil-versus-empty
/// lists. The order of subsets carries no meaning (upstream orders them by a hash of pod
/// UIDs). Runs on every sync of a Service with an Endpoints object, so it compares fields in
/// place instead of rendering each subset.
fn subsets_equal(current: &[impl SubsetLists], planned: &[EndpointSubset]) -> bool {
    if current.len() != planned.len() {
        return false;
    }
    // `subset_eq` is an equivalence, so matching each subset of `current` with the first
    // unused equal one of `planned` finds a pairing whenever one exists. Services have a
    // subset per distinct port list: a handful.
    let mut used = vec![false; planned.len()];
    current.iter().all(|x| {
        let found = planned
            .iter()
            .zip(used.iter_mut())
            .find(|(y, used)| !**used && subset_eq(x, y));
        found.map(|(_, used)| *used = true).is_some()
    })
}

fn subset_eq(current: &impl SubsetLists, planned: &EndpointSubset) -> bool {
    fn addresses_eq<'a>(
        held: impl ExactSizeIterator<Item = HeldAddress<'a>>,
        planned: Option<&Vec<EndpointAddress>>,
    ) -> bool {
        let planned = planned.map_or(&[][..], Vec::as_slice);
        held.len() == planned.len()
            && held
                .zip(planned)
                .all(|(held, planned)| held.address.same_as(held.home, planned))
    }
    addresses_eq(current.ready(), planned.addresses.as_ref())
        && addresses_eq(current.not_ready(), planned.not_ready_addresses.as_ref())
        && current.ports() == planned.ports.as_deref().unwrap_or_default()
}

/// False when the object holds more addresses than allowed (it must be truncated), or when
/// the over-capacity annotation is set although it is within capacity.
fn capacity_annotation_consistent(
    annotations: Option<&BTreeMap<String, String>>,
    addresses: usize,
) -> bool {
    if addresses > MAX_ADDRESSES {
        return false;
    }
    !annotations.is_some_and(|a| a.contains_key(OVER_CAPACITY))
}

#[cfg(test)]
mod tests;
