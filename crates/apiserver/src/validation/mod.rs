//! Validation of objects before they are stored, as kube-apiserver's validation would do it,
//! for the fields the controllers read or write.
//!
//! A test server that stores what a real cluster refuses lets tests pass on inputs no cluster
//! holds: `addressType: bogus`, a Service port 70000, a pod IP `not-an-ip`. So every create,
//! update and patch passes its final object (after admission and defaulting) through
//! [`validate`], which answers a 422 `Invalid` Status with one cause per field error, worded
//! and placed as upstream's `pkg/apis/core/validation` and `pkg/apis/discovery/validation`
//! word and place them. Checked:
//!
//! - every kind: the name (a DNS label for Namespaces, an RFC 1035 label for Services, a DNS
//!   subdomain otherwise) and label keys and values;
//! - Pods: container ports, hostname, subdomain, node name, pod IPs, and that an update leaves
//!   the spec alone except where upstream allows changes;
//! - Services: ports, target ports, selector, type, ClusterIPs, trafficDistribution (whose
//!   values depend on the version imitated);
//! - Endpoints: addresses, hostnames, node names, ports;
//! - EndpointSlices: address type, endpoint and address counts, addresses by type, hostnames,
//!   node names, topology, hints, ports.
//!
//! Upstream validates much more (container images, resource quantities, probes...). Those
//! fields mean nothing to the controllers, and tests build pods without them, so they are not
//! checked here.

mod endpoint_slice;
mod endpoints;
pub(crate) mod field;
mod formats;
mod meta;
mod pod;
mod ports;
mod service;

use crate::resources::Resource;
use crate::status::ApiError;
use crate::store::meta_str;
use crate::version::ServerVersion;
use serde_json::Value;

/// Checks an object about to be stored; `old` is the stored object on an update. `version`
/// is the kube-apiserver version imitated, with its feature gates.
pub(crate) fn validate(
    resource: &Resource,
    object: &Value,
    old: Option<&Value>,
    version: &ServerVersion,
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    meta::validate(resource, object, &mut errors);
    match (resource.group, resource.kind) {
        ("", "Pod") => pod::validate(object, old, &mut errors),
        ("", "Service") => service::validate(object, old, version, &mut errors),
        ("", "Endpoints") => endpoints::validate(object, &mut errors),
        ("discovery.k8s.io", "EndpointSlice") => endpoint_slice::validate(object, old, &mut errors),
        _ => {}
    }
    if errors.is_empty() {
        return Ok(());
    }
    let name = meta_str(object, "name").unwrap_or_default();
    Err(field::into_api_error(resource, name, &errors))
}

/// Checks that the body of a PUT names the object of the URL. kube-apiserver refuses a body
/// with another name, or none (`{"metadata": null}`), rather than guess: a replacement without
/// metadata would otherwise wipe the object's labels and spec.
pub(crate) fn check_put_name(body: &Value, url_name: &str) -> Result<(), ApiError> {
    let body_name = meta_str(body, "name").unwrap_or_default();
    if body_name == url_name {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
    )))
}
