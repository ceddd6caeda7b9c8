//! One sync of one Service's v1 Endpoints object.

use crate::endpoints::repack::{repack, repacked_layout, RepackedSubset};
use crate::endpoints::subsets::addresses_on_ports;
use crate::endpoints::truncate::truncate;
use crate::endpoints::{MAX_ADDRESSES, OVER_CAPACITY};
use crate::kube_version::VersionRules;
use crate::labels::{endpoints_labels, ENDPOINTS_MANAGED_BY, HEADLESS};
use crate::pod_rules::same_reference;
use crate::projection::{PodInfo, ServiceInfo};
use crate::trigger_time::{self, ANNOTATION};
use crate::Timestamp;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::borrow::Borrow;
use std::collections::BTreeMap;

/// Everything one sync reads.
pub struct EndpointsInput<'a> {
    /// The Service (not skipped: the caller handles ExternalName and selector-less ones).
    pub service: &'a ServiceInfo,
    /// The pods its selector matches, in its namespace.
    pub pods: &'a [&'a PodInfo],
    /// The existing Endpoints object of the same name, if any.
    pub current: Option<&'a Endpoints>,
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
        let current_subsets = current.subsets.as_deref().unwrap_or(&[]);
        // The controller's own labels (headless, managed-by) are not the Service's: compare
        // the rest with the Service's labels, so an object that only lacks them is left alone.
        let same_labels = own_labels_removed(current.metadata.labels.as_ref()) == service.labels;
        if same_labels
            && same_subsets(current_subsets, &subsets, rules)
            && capacity_annotation_consistent(
                current.metadata.annotations.as_ref(),
                current_subsets,
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
        Some(current) => current.metadata.clone(),
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
        .is_some_and(|c| c.metadata.resource_version.is_some())
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
/// the port order counts, so such an object is rewritten into that version's order.
fn same_subsets(
    current: &[EndpointSubset],
    planned: &[EndpointSubset],
    rules: &VersionRules,
) -> bool {
    subsets_equal(current, planned)
        || (rules.endpoints_skip_repacked
            && subsets_equal(&repacked_layout(current, rules.order_hash), planned))
}

/// A subset's three lists, whether it is an object's or a layout's.
trait SubsetLists {
    fn ready(&self) -> impl ExactSizeIterator<Item = &EndpointAddress>;
    fn not_ready(&self) -> impl ExactSizeIterator<Item = &EndpointAddress>;
    fn ports(&self) -> &[EndpointPort];
}

impl SubsetLists for EndpointSubset {
    fn ready(&self) -> impl ExactSizeIterator<Item = &EndpointAddress> {
        self.addresses.as_deref().unwrap_or_default().iter()
    }
    fn not_ready(&self) -> impl ExactSizeIterator<Item = &EndpointAddress> {
        self.not_ready_addresses
            .as_deref()
            .unwrap_or_default()
            .iter()
    }
    fn ports(&self) -> &[EndpointPort] {
        self.ports.as_deref().unwrap_or_default()
    }
}

impl<A: Borrow<EndpointAddress>> SubsetLists for RepackedSubset<A> {
    fn ready(&self) -> impl ExactSizeIterator<Item = &EndpointAddress> {
        self.addresses.iter().map(Borrow::borrow)
    }
    fn not_ready(&self) -> impl ExactSizeIterator<Item = &EndpointAddress> {
        self.not_ready_addresses.iter().map(Borrow::borrow)
    }
    fn ports(&self) -> &[EndpointPort] {
        &self.ports
    }
}

/// Subsets compared as multisets, ignoring targetRef resourceVersions and nil-versus-empty
/// lists. The order of subsets carries no meaning (upstream orders them by a hash of pod
/// UIDs). Runs on every sync of a Service with an Endpoints object, so it compares fields in
/// place instead of rendering each subset.
fn subsets_equal(a: &[impl SubsetLists], b: &[impl SubsetLists]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    // `subset_eq` is an equivalence, so matching each subset of `a` with the first unused
    // equal one of `b` finds a pairing whenever one exists. Services have a subset per
    // distinct port list: a handful.
    let mut used = vec![false; b.len()];
    a.iter().all(|x| {
        let found = b
            .iter()
            .zip(used.iter_mut())
            .find(|(y, used)| !**used && subset_eq(x, *y));
        found.map(|(_, used)| *used = true).is_some()
    })
}

fn subset_eq(x: &impl SubsetLists, y: &impl SubsetLists) -> bool {
    fn addresses_eq<'a>(
        p: impl ExactSizeIterator<Item = &'a EndpointAddress>,
        q: impl ExactSizeIterator<Item = &'a EndpointAddress>,
    ) -> bool {
        p.len() == q.len() && p.zip(q).all(|(p, q)| address_eq(p, q))
    }
    addresses_eq(x.ready(), y.ready())
        && addresses_eq(x.not_ready(), y.not_ready())
        && x.ports() == y.ports()
}

/// Equal but for the targetRef's resourceVersion. (Destructured, so that a field added to
/// either type fails to compile here rather than being ignored.)
fn address_eq(a: &EndpointAddress, b: &EndpointAddress) -> bool {
    let EndpointAddress {
        hostname,
        ip,
        node_name,
        target_ref,
    } = a;
    same_reference(target_ref.as_ref(), b.target_ref.as_ref())
        && *ip == b.ip
        && *hostname == b.hostname
        && *node_name == b.node_name
}

/// False when the object holds more addresses than allowed (it must be truncated), or when
/// the over-capacity annotation is set although it is within capacity.
fn capacity_annotation_consistent(
    annotations: Option<&BTreeMap<String, String>>,
    subsets: &[EndpointSubset],
) -> bool {
    let count: usize = subsets
        .iter()
        .map(|s| {
            s.addresses.as_ref().map_or(0, Vec::len)
                + s.not_ready_addresses.as_ref().map_or(0, Vec::len)
        })
        .sum();
    if count > MAX_ADDRESSES {
        return false;
    }
    !annotations.is_some_and(|a| a.contains_key(OVER_CAPACITY))
}

#[cfg(test)]
mod tests;
