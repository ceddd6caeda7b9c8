//! Reading what the controllers wrote: endpoints by pod, conditions, ports, addresses.

use std::collections::BTreeMap;
use std::fmt::Debug;

use k8s_openapi::api::core::v1::{Endpoints, Pod};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use reconcile::trigger_time::ANNOTATION as TRIGGER_TIME;

/// Pretty JSON for failure messages.
pub fn pretty<T: serde::Serialize + Debug>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| format!("{value:?}"))
}

// ---- reading slices ----

/// Every endpoint of the slices, with the pod it points at.
pub fn endpoints_by_pod(slices: &[EndpointSlice]) -> BTreeMap<String, Endpoint> {
    slices
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter_map(|e| {
            let pod = e.target_ref.as_ref()?.name.clone()?;
            Some((pod, e.clone()))
        })
        .collect()
}

/// The names of the pods the slices point at, sorted.
pub fn pod_names(slices: &[EndpointSlice]) -> Vec<String> {
    endpoints_by_pod(slices).into_keys().collect()
}

/// The endpoint of `pod` in the slices, if any.
pub fn endpoint_of(slices: &[EndpointSlice], pod: &str) -> Option<Endpoint> {
    endpoints_by_pod(slices).remove(pod)
}

/// An endpoint's (ready, serving, terminating) conditions.
pub fn conditions(endpoint: &Endpoint) -> (Option<bool>, Option<bool>, Option<bool>) {
    let c = endpoint.conditions.clone().unwrap_or_default();
    (c.ready, c.serving, c.terminating)
}

/// The (name, port, protocol) of each port of a slice.
pub fn ports(slice: &EndpointSlice) -> Vec<(String, i32, String)> {
    slice
        .ports
        .iter()
        .flatten()
        .map(|p| {
            (
                p.name.clone().unwrap_or_default(),
                p.port.unwrap_or_default(),
                p.protocol.clone().unwrap_or_default(),
            )
        })
        .collect()
}

// ---- reading Endpoints ----

/// The IPs of the ready and of the not-ready addresses, each sorted.
pub fn addresses(endpoints: Option<&Endpoints>) -> (Vec<String>, Vec<String>) {
    let mut ready = Vec::new();
    let mut not_ready = Vec::new();
    for subset in endpoints
        .and_then(|e| e.subsets.as_ref())
        .into_iter()
        .flatten()
    {
        ready.extend(subset.addresses.iter().flatten().map(|a| a.ip.clone()));
        not_ready.extend(
            subset
                .not_ready_addresses
                .iter()
                .flatten()
                .map(|a| a.ip.clone()),
        );
    }
    ready.sort();
    not_ready.sort();
    (ready, not_ready)
}

/// The (name, port) of every port of every subset.
pub fn endpoints_ports(endpoints: Option<&Endpoints>) -> Vec<(String, i32)> {
    endpoints
        .and_then(|e| e.subsets.as_ref())
        .into_iter()
        .flatten()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| (p.name.clone().unwrap_or_default(), p.port))
        .collect()
}

/// Owned strings from literals.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The trigger-time annotation parsed, if present.
pub fn trigger_time(meta: &kube::api::ObjectMeta) -> Option<k8s_openapi::jiff::Timestamp> {
    meta.annotations.as_ref()?.get(TRIGGER_TIME)?.parse().ok()
}

/// The lastTransitionTime of a stored pod's Ready condition.
pub fn ready_transition(pod: &Pod) -> Option<k8s_openapi::jiff::Timestamp> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}
