//! PATCH in its four formats: JSON patch, merge patch, strategic merge patch and server-side
//! apply.
//!
//! A patch is applied to the stored object and the result goes through the same update path
//! as a PUT, so status rules, generation and finalizers behave identically. A resourceVersion
//! written by the patch acts as a precondition, as on the real server. Server-side apply is
//! served as "create, or merge the applied configuration into the live object"; field
//! ownership is not tracked.

use super::{create, resource_response, update, Target, Written};
use crate::managed_fields::Writer;
use crate::state::{Cluster, Shared};
use crate::status::ApiError;
use crate::store::set_meta;
use crate::strategic_merge;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchKind {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchKind {
    fn from_headers(headers: &HeaderMap) -> Result<Self, ApiError> {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/json-patch+json" => Ok(Self::Json),
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(Self::Apply),
            other => Err(ApiError::unsupported_media_type(other)),
        }
    }
}

fn json_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))
}

/// Apply configurations are YAML (JSON being a subset of it).
fn apply_body(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => serde_norway::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("the apply configuration is not valid YAML: {e}"))
        })?,
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the apply configuration must be an object",
        ));
    }
    Ok(value)
}

fn patch(
    cluster: &mut Cluster,
    target: &Target,
    kind: PatchKind,
    body: &[u8],
) -> Result<(std::sync::Arc<Value>, Written), ApiError> {
    let resource = target.resource;
    let namespace = target.store_namespace();
    let name = target.name.as_deref().unwrap_or_default();
    let Some(current) = cluster.store.get(resource, namespace, name).cloned() else {
        if kind == PatchKind::Apply && !target.is_status() {
            let mut object = apply_body(body)?;
            set_meta(&mut object, "name", json!(name));
            let writer = Writer {
                manager: target.manager.clone(),
                applied: Some(object.clone()),
                subresource: None,
            };
            let ns = target.namespace.as_deref();
            let created = create(cluster, resource, ns, object, Some(&writer))?;
            return Ok((created, Written::Created));
        }
        return Err(ApiError::not_found(resource, name));
    };
    let mut doc = (*current).clone();
    let mut writer = Writer::update(&target.manager, target.is_status());
    match kind {
        PatchKind::Json => {
            let ops: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("the JSON patch is not valid: {e}")))?;
            json_patch::patch(&mut doc, &ops).map_err(|e| {
                ApiError::unprocessable(format!("the JSON patch could not be applied: {e}"))
            })?;
        }
        PatchKind::Merge => json_patch::merge(&mut doc, &json_body(body)?),
        PatchKind::Strategic => {
            strategic_merge::apply(&mut doc, &json_body(body)?, resource.kind)
                .map_err(ApiError::bad_request)?;
        }
        PatchKind::Apply => {
            let config = apply_body(body)?;
            json_patch::merge(&mut doc, &config);
            writer.applied = Some(config);
        }
    }
    let writer = Some(&writer);
    update(
        cluster,
        resource,
        namespace,
        name,
        doc,
        target.is_status(),
        writer,
    )
}

pub(crate) fn patch_request(
    shared: &Shared,
    target: &Target,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let kind = PatchKind::from_headers(headers)?;
    let (object, written) = shared.mutate(target.dry_run, |c| patch(c, target, kind, body))?;
    Ok(resource_response(target, written.code(), &object))
}
