//! One sync of one Service's v1 Endpoints object.

use crate::endpoints::repack::repack;
use crate::endpoints::subsets::addresses_on_ports;
use crate::endpoints::truncate::truncate;
use crate::endpoints::{MAX_ADDRESSES, OVER_CAPACITY};
use crate::labels::{endpoints_labels, ENDPOINTS_MANAGED_BY, HEADLESS};
use crate::projection::{PodInfo, ServiceInfo};
use crate::trigger_time::{self, ANNOTATION};
use crate::Timestamp;
use k8s_openapi::api::core::v1::{EndpointSubset, Endpoints};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
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
    let mut subsets = repack(items);
    let labels = endpoints_labels(service);

    if let Some(current) = input.current {
        let current_subsets = current.subsets.as_deref().unwrap_or(&[]);
        // The controller's own labels (headless, managed-by) are not the Service's: compare
        // the rest with the Service's labels, so an object that only lacks them is left alone.
        let same_labels = own_labels_removed(current.metadata.labels.as_ref()) == service.labels;
        if same_labels
            && subsets_equal(current_subsets, &subsets)
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

/// Subsets compared as sets, ignoring targetRef resourceVersions and nil-versus-empty. The
/// order of subsets carries no meaning (upstream orders them by a hash of pod UIDs).
fn subsets_equal(a: &[EndpointSubset], b: &[EndpointSubset]) -> bool {
    let canonical = |list: &[EndpointSubset]| {
        let mut out: Vec<String> = list
            .iter()
            .map(|s| {
                let strip = |addrs: &Option<Vec<k8s_openapi::api::core::v1::EndpointAddress>>| {
                    addrs
                        .iter()
                        .flatten()
                        .map(|a| {
                            let mut a = a.clone();
                            if let Some(t) = a.target_ref.as_mut() {
                                t.resource_version = None;
                            }
                            a
                        })
                        .collect::<Vec<_>>()
                };
                let value = serde_json::json!({
                    "a": strip(&s.addresses),
                    "n": strip(&s.not_ready_addresses),
                    "p": s.ports.clone().unwrap_or_default(),
                });
                value.to_string()
            })
            .collect();
        out.sort();
        out
    };
    a.len() == b.len() && canonical(a) == canonical(b)
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
