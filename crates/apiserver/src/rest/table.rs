//! Server-side `Table` output, which kubectl asks for to print `get` results.
//!
//! kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` (then v1beta1, then
//! plain JSON) and prints whatever columns the server returns; without a Table it can only
//! show NAME and AGE. Rows carry every column, wide ones included, and the object as
//! `PartialObjectMetadata` unless `includeObject` says otherwise, as kube-apiserver does.

use super::read::{named, selected};
use super::{object_response, Params, Target};
use crate::printers;
use crate::resources::Resource;
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::meta_str;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

/// What to put in each row's `object`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IncludeObject {
    None,
    Metadata,
    Object,
}

/// A request for a Table: which `meta.k8s.io` version to answer with and what rows carry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TableRequest {
    api_version: &'static str,
    include: IncludeObject,
}

/// The Table the request asks for, if its Accept header names one the server can produce.
pub(crate) fn requested(
    headers: &HeaderMap,
    params: &Params,
) -> Result<Option<TableRequest>, ApiError> {
    let Some(api_version) = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(table_version)
    else {
        return Ok(None);
    };
    let include = match params.get("includeObject").map(String::as_str) {
        None | Some("") | Some("Metadata") => IncludeObject::Metadata,
        Some("None") => IncludeObject::None,
        Some("Object") => IncludeObject::Object,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unsupported includeObject {other:?}, only None, Metadata or Object"
            )))
        }
    };
    Ok(Some(TableRequest {
        api_version,
        include,
    }))
}

/// The `meta.k8s.io` version of one media range, when it asks for a Table.
fn table_version(range: &str) -> Option<&'static str> {
    let mut parts = range.split(';').map(str::trim);
    if parts.next()? != "application/json" {
        return None;
    }
    let (mut table, mut group, mut version) = (false, false, None);
    for param in parts {
        match param.split_once('=')? {
            ("as", "Table") => table = true,
            ("g", "meta.k8s.io") => group = true,
            ("v", "v1") => version = Some("meta.k8s.io/v1"),
            ("v", "v1beta1") => version = Some("meta.k8s.io/v1beta1"),
            _ => {}
        }
    }
    (table && group).then_some(version).flatten()
}

fn column_definitions(resource: &Resource) -> Vec<Value> {
    printers::columns(resource)
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": c.cell_type,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            })
        })
        .collect()
}

fn row(
    resource: &Resource,
    object: &Value,
    request: TableRequest,
    now: printers::Timestamp,
) -> Value {
    let mut row = json!({ "cells": printers::cells(resource, object, now) });
    if let Some(conditions) = printers::row_conditions(resource, object) {
        row["conditions"] = conditions;
    }
    match request.include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
            });
        }
        IncludeObject::Object => row["object"] = object.clone(),
    }
    row
}

/// A Table of `objects`. Watch events carry a one-row Table each, with the columns every
/// time: kubectl prints the header again only when the columns change.
pub(crate) fn table<'a>(
    resource: &Resource,
    objects: impl IntoIterator<Item = &'a Value>,
    resource_version: &str,
    request: TableRequest,
) -> Value {
    let now = printers::now();
    json!({
        "kind": "Table",
        "apiVersion": request.api_version,
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": column_definitions(resource),
        "rows": objects.into_iter().map(|o| row(resource, o, request, now)).collect::<Vec<_>>(),
    })
}

/// GET of one object as a Table.
pub(crate) fn get(
    shared: &Shared,
    target: &Target,
    request: TableRequest,
) -> Result<Response, ApiError> {
    let object = named(shared, target)?;
    let rv = meta_str(&object, "resourceVersion")
        .unwrap_or_default()
        .to_owned();
    let body = table(target.resource, [object.as_ref()], &rv, request);
    Ok(object_response(StatusCode::OK, &body))
}

/// A list as a Table.
pub(crate) fn list(
    shared: &Shared,
    target: &Target,
    params: &Params,
    request: TableRequest,
) -> Result<Response, ApiError> {
    let (items, rv) = selected(shared, target, params)?;
    let body = table(
        target.resource,
        items.iter().map(AsRef::as_ref),
        &rv.to_string(),
        request,
    );
    Ok(object_response(StatusCode::OK, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accept_headers_ask_for_a_v1_table() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            kubectl.split(',').find_map(table_version),
            Some("meta.k8s.io/v1")
        );
        assert_eq!(
            table_version("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            Some("meta.k8s.io/v1beta1")
        );
        assert_eq!(table_version("application/json"), None);
        assert_eq!(
            table_version("application/json;as=Table;v=v2;g=meta.k8s.io"),
            None
        );
        assert_eq!(
            table_version("application/yaml;as=Table;v=v1;g=meta.k8s.io"),
            None
        );
    }
}
