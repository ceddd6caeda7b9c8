//! A minimal OpenAPI v3 document, just enough for kubectl.
//!
//! kubectl 1.27+ validates manifests by asking whether the server accepts the
//! `fieldValidation` query parameter, which it learns from the PATCH operation of each kind in
//! `/openapi/v3`. Without that document `kubectl create -f` and `kubectl apply -f` stop with
//! "failed to download openapi". We describe only those PATCH operations, without schemas or
//! request bodies; kubectl then leaves validation to the server and computes apply patches from
//! its built-in types, which it does for every kind we serve.

use super::object_response;
use crate::resources::{Resource, RESOURCES};
use crate::status::ApiError;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

fn group_version_path(r: &Resource) -> String {
    if r.group.is_empty() {
        format!("api/{}", r.version)
    } else {
        format!("apis/{}/{}", r.group, r.version)
    }
}

pub(crate) async fn root() -> Response {
    let mut paths = Map::new();
    for r in RESOURCES {
        let gv = group_version_path(r);
        // The hash only has to change when the document does, which it never does.
        paths.insert(
            gv.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash=0")}),
        );
    }
    object_response(StatusCode::OK, &json!({"paths": paths}))
}

fn document(gv: &str) -> Option<Value> {
    let mut paths = Map::new();
    for r in RESOURCES.iter().filter(|r| group_version_path(r) == gv) {
        let object_path = if r.namespaced {
            format!("/{gv}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("/{gv}/{}/{{name}}", r.plural)
        };
        paths.insert(
            object_path,
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
            }),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

pub(crate) async fn core(Path(version): Path<String>) -> Response {
    match document(&format!("api/{version}")) {
        Some(doc) => object_response(StatusCode::OK, &doc),
        None => ApiError::no_route().into_response(),
    }
}

pub(crate) async fn group(Path((group, version)): Path<(String, String)>) -> Response {
    match document(&format!("apis/{group}/{version}")) {
        Some(doc) => object_response(StatusCode::OK, &doc),
        None => ApiError::no_route().into_response(),
    }
}
