//! OpenAPI v3 and v2 documents with the schemas of the served kinds.
//!
//! kubectl reads `/openapi/v3` for two things. `kubectl explain` finds a kind's schema by its
//! `x-kubernetes-group-version-kind` extension and prints field descriptions from it. And
//! `kubectl create -f` / `apply -f` ask whether the server validates fields itself, which they
//! learn from the `fieldValidation` query parameter of each kind's PATCH operation; seeing it,
//! kubectl leaves validation to the server. The schemas come from k8s-openapi (see
//! `schemas`), so nothing here is written by hand. `/openapi/v2` serves the same schemas as a
//! Swagger 2.0 document, in JSON only.

mod schemas;

use super::object_response;
use crate::resources::{Resource, RESOURCES};
use crate::status::ApiError;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemas::{definitions, Layout};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

fn group_version_path(r: &Resource) -> String {
    if r.group.is_empty() {
        format!("api/{}", r.version)
    } else {
        format!("apis/{}/{}", r.group, r.version)
    }
}

/// The v3 documents by group-version path (`api/v1`), built once: they never change.
fn documents() -> &'static BTreeMap<String, Value> {
    static DOCUMENTS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    DOCUMENTS.get_or_init(|| {
        let mut paths: Vec<String> = RESOURCES.iter().map(group_version_path).collect();
        paths.dedup();
        paths
            .into_iter()
            .map(|gv| {
                let doc = document(&gv);
                (gv, doc)
            })
            .collect()
    })
}

/// A content hash for the root listing: kubectl caches each document under its hash.
fn hash(document: &Value) -> String {
    // FNV-1a: stable across runs and builds, unlike std's randomly keyed hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in document.to_string().bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016X}")
}

pub(crate) async fn root() -> Response {
    let paths: Map<String, Value> = documents()
        .iter()
        .map(|(gv, doc)| {
            let url = format!("/openapi/v3/{gv}?hash={}", hash(doc));
            (gv.clone(), json!({"serverRelativeURL": url}))
        })
        .collect();
    object_response(StatusCode::OK, &json!({"paths": paths}))
}

fn patch_operation(r: &Resource) -> Value {
    json!({
        "patch": {
            "operationId": format!("patch{}", r.kind),
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
            "parameters": [
                {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            ],
            "responses": {"200": {"description": "OK"}},
        }
    })
}

fn object_path(gv: &str, r: &Resource) -> String {
    if r.namespaced {
        format!("/{gv}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
    } else {
        format!("/{gv}/{}/{{name}}", r.plural)
    }
}

fn document(gv: &str) -> Value {
    let served: Vec<&Resource> = RESOURCES
        .iter()
        .filter(|r| group_version_path(r) == gv)
        .collect();
    let paths: Map<String, Value> = served
        .iter()
        .map(|r| (object_path(gv, r), patch_operation(r)))
        .collect();
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": definitions(served, Layout::OpenApiV3)},
    })
}

fn respond(gv: &str) -> Response {
    match documents().get(gv) {
        Some(doc) => object_response(StatusCode::OK, doc),
        None => ApiError::no_route().into_response(),
    }
}

pub(crate) async fn core(Path(version): Path<String>) -> Response {
    respond(&format!("api/{version}"))
}

pub(crate) async fn group(Path((group, version)): Path<(String, String)>) -> Response {
    respond(&format!("apis/{group}/{version}"))
}

/// The Swagger 2.0 document, with the schemas of every served kind.
pub(crate) async fn v2() -> Response {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    let document = DOCUMENT.get_or_init(|| {
        json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "paths": {},
            "definitions": definitions(RESOURCES, Layout::SwaggerV2),
        })
    });
    object_response(StatusCode::OK, document)
}
