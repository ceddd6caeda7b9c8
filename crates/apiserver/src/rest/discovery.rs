//! Discovery documents, so kubectl and kube-rs can map kinds and short names to paths.
//!
//! Only the legacy (unaggregated) documents are served. kubectl asks for the aggregated form
//! first, sees a plain `application/json` answer, and falls back to reading `/api/v1` and each
//! `/apis/{group}/{version}`, which is all it needs for get, apply, patch and delete.

use super::object_response;
use crate::resources::{self, Resource, RESOURCES};
use crate::reviews::Review;
use crate::state::Shared;
use crate::status::ApiError;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

fn verbs(subresource: bool) -> Value {
    if subresource {
        json!(["get", "patch", "update"])
    } else {
        json!([
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ])
    }
}

/// The resources in kube-apiserver's `all` category that this server serves, so that
/// `kubectl get all` lists them.
const CATEGORY_ALL: &[(&str, &str)] = &[("", "pods"), ("", "services")];

fn categories(r: &Resource) -> Vec<&'static str> {
    if CATEGORY_ALL.contains(&(r.group, r.plural)) {
        vec!["all"]
    } else {
        Vec::new()
    }
}

fn resource_entries(group: &str, version: &str) -> Vec<Value> {
    let mut entries = Vec::new();
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        entries.push(json!({
            "categories": categories(r),
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": verbs(false),
            "shortNames": r.short_names,
            "storageVersionHash": "",
        }));
        if r.status {
            entries.push(json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": verbs(true),
            }));
        }
        if r.has_token() {
            // A subresource of another group's kind, as kube-apiserver lists it.
            entries.push(json!({
                "name": format!("{}/token", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            }));
        }
    }
    entries
}

fn group_version(r: &Resource) -> Value {
    json!({"groupVersion": r.api_version(), "version": r.version})
}

fn group_entry(group: &str) -> Option<Value> {
    let version = match RESOURCES.iter().find(|r| r.group == group) {
        Some(first) => group_version(first),
        // The review groups hold no stored resource, only their one create-only resource.
        None => {
            let review = Review::ALL.into_iter().find(|r| r.group() == group)?;
            json!({"groupVersion": format!("{}/v1", review.group()), "version": "v1"})
        }
    };
    Some(json!({
        "name": group,
        "versions": [version],
        "preferredVersion": version,
    }))
}

pub(crate) async fn core_versions() -> Response {
    object_response(
        StatusCode::OK,
        &json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
        }),
    )
}

pub(crate) async fn core_resources() -> Response {
    object_response(
        StatusCode::OK,
        &json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "v1",
            "resources": resource_entries("", "v1"),
        }),
    )
}

pub(crate) async fn group_list() -> Response {
    let groups: Vec<Value> = resources::groups()
        .into_iter()
        .chain(Review::ALL.map(Review::group))
        .filter_map(group_entry)
        .collect();
    object_response(
        StatusCode::OK,
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
    )
}

pub(crate) async fn group(Path(group): Path<String>) -> Response {
    match group_entry(&group) {
        Some(mut entry) => {
            entry["kind"] = json!("APIGroup");
            entry["apiVersion"] = json!("v1");
            object_response(StatusCode::OK, &entry)
        }
        None => ApiError::no_route().into_response(),
    }
}

pub(crate) async fn group_resources(Path((group, version)): Path<(String, String)>) -> Response {
    let mut entries = resource_entries(&group, &version);
    entries.extend(Review::in_group(&group, &version).map(Review::discovery_entry));
    if entries.is_empty() {
        return ApiError::no_route().into_response();
    }
    object_response(
        StatusCode::OK,
        &json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": format!("{group}/{version}"),
            "resources": entries,
        }),
    )
}

/// The kube-apiserver version the server imitates ([`crate::Config::version`]).
pub(crate) async fn version(State(shared): State<Arc<Shared>>) -> Response {
    let version = shared.version;
    object_response(
        StatusCode::OK,
        &json!({
            "major": version.version.major.to_string(),
            "minor": version.version.minor.to_string(),
            "gitVersion": version.git_version(),
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": "",
            "compiler": "rustc",
            "platform": "linux/amd64",
        }),
    )
}
