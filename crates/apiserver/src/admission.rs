//! What the server does to an object before it is stored: names, uids, timestamps,
//! generation, status rules, defaulting, and the namespace lifecycle check.
//!
//! These are the rules kube-apiserver's registry strategies and admission chain apply, cut down
//! to what the controllers and kubectl can observe. They take the old object (if any) and the
//! request body and return the object to store; the store itself stays rule-free.

use crate::defaults::{
    default_endpoint_slice, default_endpoints, default_pod, default_service, ClusterIpAllocator,
};
use crate::random::Stamps;
use crate::resources::{GenerationRule, Resource};
use crate::status::ApiError;
use crate::store::{meta_list, meta_str, remove_meta, set_meta, Store};
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::{json, Value};

/// Namespaces that cannot be deleted, as on a real cluster.
pub const PROTECTED_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// Whether the object is being deleted.
pub fn is_terminating(object: &Value) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null())
}

/// Whether the object still has finalizers.
pub fn has_finalizers(object: &Value) -> bool {
    !meta_list(object, "finalizers").is_empty()
}

/// Checks that a request body is an object of the resource's kind and returns it.
pub fn parse_body(resource: &Resource, body: &[u8]) -> Result<Value, ApiError> {
    // Protobuf clients (kubectl's typed commands, client-go) send the magic prefix, which can
    // never start JSON.
    if crate::protobuf::payload(body).is_some() {
        return crate::protobuf::decode_body(resource, body);
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?;
    check_type(resource, &value)?;
    Ok(value)
}

/// Rejects an object whose `apiVersion` or `kind`, when present, name another resource.
pub fn check_type(resource: &Resource, value: &Value) -> Result<(), ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    if let Some(kind) = value.get("kind").and_then(Value::as_str) {
        if kind != resource.kind {
            return Err(ApiError::bad_request(format!(
                "the kind of the object ({kind}) does not match the resource ({})",
                resource.kind
            )));
        }
    }
    if let Some(api_version) = value.get("apiVersion").and_then(Value::as_str) {
        if api_version != resource.api_version() {
            return Err(ApiError::bad_request(format!(
                "the apiVersion of the object ({api_version}) does not match the resource ({})",
                resource.api_version()
            )));
        }
    }
    Ok(())
}

/// Checks that objects may be created in `namespace`: it must exist and not be terminating.
pub fn check_namespace(
    store: &Store,
    resource: &Resource,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    let namespaces = crate::resources::namespaces();
    match store.get(namespaces, "", namespace) {
        None => Err(ApiError::not_found(namespaces, namespace)),
        Some(ns) if is_terminating(ns) => {
            Err(ApiError::namespace_terminating(resource, name, namespace))
        }
        Some(_) => Ok(()),
    }
}

/// Makes the URL's namespace the object's, rejecting a body that names another one.
fn place(resource: &Resource, namespace: Option<&str>, object: &mut Value) -> Result<(), ApiError> {
    let body_ns = meta_str(object, "namespace")
        .filter(|ns| !ns.is_empty())
        .map(str::to_owned);
    match (resource.namespaced, namespace) {
        (true, Some(ns)) => {
            if body_ns.as_deref().is_some_and(|b| b != ns) {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            set_meta(object, "namespace", json!(ns));
        }
        _ => {
            remove_meta(object, "namespace");
        }
    }
    Ok(())
}

/// Runs the typed defaulting for Pods and Services and the typed shape check for all kinds.
fn admit_shape(
    resource: &Resource,
    object: Value,
    ips: &mut ClusterIpAllocator,
    name: &str,
) -> Result<Value, ApiError> {
    let bad = |e: String| {
        ApiError::bad_request(format!(
            "{} \"{name}\" could not be decoded: {e}",
            resource.kind
        ))
    };
    fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(
        object: Value,
        default: impl FnOnce(&mut T),
    ) -> Result<Value, String> {
        let mut typed: T = serde_json::from_value(object).map_err(|e| e.to_string())?;
        default(&mut typed);
        serde_json::to_value(typed).map_err(|e| e.to_string())
    }
    let value = match (resource.group, resource.kind) {
        ("", "Pod") => typed::<Pod>(object, default_pod),
        ("", "Service") => typed::<Service>(object, |s| default_service(s, ips)),
        ("", "Endpoints") => typed::<Endpoints>(object, default_endpoints),
        ("discovery.k8s.io", "EndpointSlice") => {
            typed::<EndpointSlice>(object, default_endpoint_slice)
        }
        _ => resource.normalize(object),
    }
    .map_err(bad)?;
    Ok(value)
}

/// The status a new object starts with: kube-apiserver ignores the status sent on create for
/// pods, services and namespaces (nodes keep theirs).
fn initial_status(resource: &Resource) -> Option<Value> {
    match (resource.group, resource.kind) {
        ("", "Pod") => Some(json!({"phase": "Pending"})),
        ("", "Service") => Some(json!({"loadBalancer": {}})),
        ("", "Namespace") => Some(json!({"phase": "Active"})),
        _ => None,
    }
}

/// Prepares a new object. `exists` says whether a name is taken, so a generated name can be
/// drawn again on a collision.
pub fn prepare_create(
    resource: &Resource,
    namespace: Option<&str>,
    mut object: Value,
    stamps: &mut Stamps,
    ips: &mut ClusterIpAllocator,
    exists: impl Fn(&str) -> bool,
) -> Result<Value, ApiError> {
    check_type(resource, &object)?;
    place(resource, namespace, &mut object)?;
    let mut name = meta_str(&object, "name").unwrap_or_default().to_owned();
    if name.is_empty() {
        let Some(prefix) = meta_str(&object, "generateName").filter(|p| !p.is_empty()) else {
            return Err(ApiError::invalid(
                resource,
                "",
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            ));
        };
        let prefix = prefix.to_owned();
        // Five characters from a 27-letter alphabet rarely collide; a few draws settle it.
        for _ in 0..8 {
            name = format!(
                "{prefix}{}",
                stamps.name_suffix(namespace.unwrap_or_default(), &prefix)
            );
            if !exists(&name) {
                break;
            }
        }
        set_meta(&mut object, "name", json!(name));
    }
    for server_owned in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        remove_meta(&mut object, server_owned);
    }
    let uid = stamps.uid(resource.plural, namespace.unwrap_or_default(), &name);
    set_meta(&mut object, "uid", json!(uid));
    set_meta(&mut object, "creationTimestamp", stamps.timestamp(0));
    if resource.generation != GenerationRule::None {
        set_meta(&mut object, "generation", json!(1));
    } else {
        remove_meta(&mut object, "generation");
    }
    if let Some(status) = initial_status(resource) {
        object["status"] = status;
    }
    if resource.plural == "namespaces" && resource.group.is_empty() {
        object["spec"] = json!({"finalizers": ["kubernetes"]});
    }
    admit_shape(resource, object, ips, &name)
}

/// The part of an object compared to decide whether its generation bumps.
fn generation_view(rule: GenerationRule, object: &Value) -> Option<Value> {
    match rule {
        GenerationRule::None => None,
        GenerationRule::Spec => Some(object.get("spec").cloned().unwrap_or(Value::Null)),
        GenerationRule::AllButMetadata => {
            let mut rest = object.as_object().cloned().unwrap_or_default();
            rest.remove("metadata");
            Some(Value::Object(rest))
        }
    }
}

/// Prepares the replacement of `old` by `body`. On the main resource the status is kept from
/// `old` (for kinds with a status subresource); on `status` only the status is taken from
/// `body`. Server-owned metadata always comes from `old`. The resourceVersion precondition is
/// checked by the caller.
pub fn prepare_update(
    resource: &Resource,
    old: &Value,
    body: Value,
    status_only: bool,
    ips: &mut ClusterIpAllocator,
) -> Result<Value, ApiError> {
    check_type(resource, &body)?;
    let name = meta_str(old, "name").unwrap_or_default().to_owned();
    if let Some(body_name) = meta_str(&body, "name").filter(|n| !n.is_empty()) {
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
    }
    if let Some(body_ns) = meta_str(&body, "namespace").filter(|n| !n.is_empty()) {
        if resource.namespaced && Some(body_ns) != meta_str(old, "namespace") {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    let object = if status_only {
        let mut object = old.clone();
        match body.get("status") {
            Some(status) => object["status"] = status.clone(),
            None => {
                if let Some(map) = object.as_object_mut() {
                    map.remove("status");
                }
            }
        }
        object
    } else {
        let mut object = body;
        if resource.status {
            match old.get("status") {
                Some(status) => object["status"] = status.clone(),
                None => {
                    if let Some(map) = object.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
        }
        for kept in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            match old.get("metadata").and_then(|m| m.get(kept)) {
                Some(v) => set_meta(&mut object, kept, v.clone()),
                None => {
                    remove_meta(&mut object, kept);
                }
            }
        }
        if resource.kind == "Service" && resource.group.is_empty() {
            keep_cluster_ips(old, &mut object);
        }
        object
    };
    // Compare after defaulting, so fields the server fills in never count as a change.
    let mut object = admit_shape(resource, object, ips, &name)?;
    if let (Some(before), Some(after)) = (
        generation_view(resource.generation, old),
        generation_view(resource.generation, &object),
    ) {
        if before != after {
            let generation = old
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            set_meta(&mut object, "generation", json!(generation + 1));
        }
    }
    Ok(object)
}

/// ClusterIPs are immutable: a replacement that leaves them out keeps the allocated ones
/// instead of being handed new ones by defaulting.
fn keep_cluster_ips(old: &Value, new: &mut Value) {
    let (Some(old_spec), Some(new_spec)) = (
        old.get("spec").and_then(Value::as_object),
        new.get_mut("spec").and_then(Value::as_object_mut),
    ) else {
        return;
    };
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if new_spec.get(field).is_none_or(|v| v.is_null() || v == "") {
            if let Some(v) = old_spec.get(field) {
                new_spec.insert(field.to_owned(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    fn create(resource: &Resource, object: Value) -> Result<Value, ApiError> {
        prepare_create(
            resource,
            Some("default"),
            object,
            &mut Stamps::new(1, None),
            &mut ClusterIpAllocator::default(),
            |_| false,
        )
    }

    fn pods() -> &'static Resource {
        find("", "v1", "pods").unwrap()
    }

    fn slices() -> &'static Resource {
        find("discovery.k8s.io", "v1", "endpointslices").unwrap()
    }

    /// Slice `s` of type IPv4 holding `endpoints`.
    fn slice(endpoints: Value) -> Value {
        json!({"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": endpoints})
    }

    /// An update of the main resource from `old` to `object`.
    fn update(resource: &Resource, old: &Value, object: Value) -> Result<Value, ApiError> {
        prepare_update(
            resource,
            old,
            object,
            false,
            &mut ClusterIpAllocator::default(),
        )
    }

    /// An update of the status subresource from `old` to `object`.
    fn update_status(resource: &Resource, old: &Value, object: Value) -> Result<Value, ApiError> {
        prepare_update(
            resource,
            old,
            object,
            true,
            &mut ClusterIpAllocator::default(),
        )
    }

    #[test]
    fn generate_name_appends_five_characters() {
        let pod = create(pods(), json!({"metadata": {"generateName": "web-"}})).unwrap();
        let name = meta_str(&pod, "name").unwrap();
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        assert_eq!(meta_str(&pod, "namespace"), Some("default"));
        assert!(meta_str(&pod, "uid").is_some());
        assert!(meta_str(&pod, "creationTimestamp").is_some());
    }

    #[test]
    fn create_without_a_name_is_invalid() {
        let err = create(pods(), json!({"metadata": {}})).unwrap_err();
        assert_eq!((err.code(), err.reason()), (422, "Invalid"));
    }

    #[test]
    fn create_ignores_pod_status_and_starts_slices_at_generation_one() {
        let pod = json!({"metadata": {"name": "p"}, "status": {"podIP": "10.0.0.1"}});
        let pod = create(pods(), pod).unwrap();
        assert_eq!(pod["status"], json!({"phase": "Pending"}));
        let slice = create(slices(), slice(json!([]))).unwrap();
        assert_eq!(slice["metadata"]["generation"], 1);
    }

    #[test]
    fn slice_generation_bumps_when_anything_but_metadata_changes() {
        let old = create(slices(), slice(json!([]))).unwrap();
        let mut relabel = slice(json!([]));
        relabel["metadata"]["labels"] = json!({"a": "b"});
        let relabelled = update(slices(), &old, relabel).unwrap();
        assert_eq!(relabelled["metadata"]["generation"], 1);
        let more = slice(json!([{"addresses": ["10.0.0.1"]}]));
        let changed = update(slices(), &old, more).unwrap();
        assert_eq!(changed["metadata"]["generation"], 2);
    }

    #[test]
    fn main_resource_update_keeps_status_and_status_update_keeps_spec() {
        let old = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
        let old = create(pods(), old).unwrap();
        let running = |containers: Value| json!({"metadata": {"name": "p"}, "spec": {"containers": containers}, "status": {"phase": "Running"}});
        let main = update(pods(), &old, running(json!([{"name": "c"}]))).unwrap();
        assert_eq!(main["status"]["phase"], "Pending");
        let status = update_status(pods(), &old, running(json!([]))).unwrap();
        assert_eq!(status["status"]["phase"], "Running");
        assert_eq!(status["spec"]["containers"][0]["name"], "c");
    }

    #[test]
    fn update_cannot_rename() {
        let old = create(pods(), json!({"metadata": {"name": "p"}})).unwrap();
        let err = update(pods(), &old, json!({"metadata": {"name": "q"}})).unwrap_err();
        assert_eq!(err.code(), 400);
    }
}
