//! GET of one object and of a list.

use super::{json_response, protobuf_response, resource_response, Encoding, Params, Target};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::Shared;
use crate::status::ApiError;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// The label and field selectors of a list, watch or deletecollection.
#[derive(Debug, Default)]
pub(crate) struct Selection {
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Selection {
    pub fn from_params(params: &Params) -> Result<Self, ApiError> {
        let labels = match params.get("labelSelector") {
            Some(s) => LabelSelector::parse(s)
                .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?,
            None => LabelSelector::default(),
        };
        let fields = match params.get("fieldSelector") {
            Some(s) => FieldSelector::parse(s)
                .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?,
            None => FieldSelector::default(),
        };
        Ok(Self { labels, fields })
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }
}

pub(crate) fn get(shared: &Shared, target: &Target) -> Result<Response, ApiError> {
    let object = named(shared, target)?;
    Ok(resource_response(target, StatusCode::OK, &object))
}

/// The object the path names, or 404.
pub(crate) fn named(shared: &Shared, target: &Target) -> Result<Arc<Value>, ApiError> {
    let name = target.name.as_deref().unwrap_or_default();
    shared
        .read(|c| {
            c.store
                .get(target.resource, target.store_namespace(), name)
                .cloned()
        })
        .ok_or_else(|| ApiError::not_found(target.resource, name))
}

/// The objects of a collection path that the query's selectors select, and the
/// resourceVersion they were read at.
pub(crate) fn selected(
    shared: &Shared,
    target: &Target,
    params: &Params,
) -> Result<(Vec<Arc<Value>>, u64), ApiError> {
    let selection = Selection::from_params(params)?;
    Ok(select(shared, target, &selection))
}

/// The selected objects of a collection path and the resourceVersion they were read at.
pub(crate) fn select(
    shared: &Shared,
    target: &Target,
    selection: &Selection,
) -> (Vec<Arc<Value>>, u64) {
    shared.read(|c| {
        let items = c
            .store
            .list(target.resource, target.namespace.as_deref())
            .filter(|o| selection.matches(o))
            .cloned()
            .collect();
        (items, c.store.resource_version())
    })
}

#[derive(Serialize)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    continue_: Option<String>,
}

#[derive(Serialize)]
struct List<'a> {
    kind: String,
    #[serde(rename = "apiVersion")]
    api_version: String,
    metadata: ListMeta,
    items: Vec<&'a Value>,
}

/// A `<Kind>List` response, in the negotiated encoding.
pub(crate) fn list_response(
    target: &Target,
    items: &[Arc<Value>],
    resource_version: u64,
) -> Response {
    page_response(target, items, resource_version, None)
}

fn page_response(
    target: &Target,
    items: &[Arc<Value>],
    resource_version: u64,
    continue_: Option<String>,
) -> Response {
    let metadata = ListMeta {
        resource_version: resource_version.to_string(),
        continue_,
    };
    if target.encoding == Encoding::Protobuf {
        let metadata = serde_json::to_value(&metadata).unwrap_or_default();
        let bytes = crate::protobuf::encode_list(
            &target.resource.api_version(),
            target.resource.kind,
            &metadata,
            items.iter().map(|o| o.as_ref()),
        );
        return protobuf_response(StatusCode::OK, bytes);
    }
    let list = List {
        kind: format!("{}List", target.resource.kind),
        api_version: target.resource.api_version(),
        metadata,
        items: items.iter().map(|o| o.as_ref()).collect(),
    };
    json_response(StatusCode::OK, serde_json::to_vec(&list))
}

pub(crate) fn list(
    shared: &Shared,
    target: &Target,
    params: &Params,
) -> Result<Response, ApiError> {
    let (items, rv) = selected(shared, target, params)?;
    check_list_version(shared, params, rv)?;
    let limit = match params.get("limit").map(String::as_str) {
        None | Some("") => 0,
        Some(l) => l
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
    };
    let after = params.get("continue").filter(|c| !c.is_empty());
    if limit == 0 && after.is_none() {
        return Ok(list_response(target, &items, rv));
    }
    // Pages follow the store's (namespace, name) order; the token names the last object
    // served and the resourceVersion of the first page, which every page reports. Unlike
    // etcd, later pages see the current state, not a snapshot: enough for clients that page
    // to bound their memory, as informers do.
    let (first_rv, start) = match after {
        Some(token) => {
            let (rv, key) = token
                .split_once('/')
                .and_then(|(rv, key)| Some((rv.parse::<u64>().ok()?, key)))
                .ok_or_else(|| {
                    ApiError::bad_request(format!("invalid continue token {token:?}"))
                })?;
            let (ns, name) = key.split_once('/').unwrap_or(("", key));
            let start = items.partition_point(|o| {
                (
                    crate::store::meta_str(o, "namespace").unwrap_or_default(),
                    crate::store::meta_str(o, "name").unwrap_or_default(),
                ) <= (ns, name)
            });
            (rv, start)
        }
        None => (rv, 0),
    };
    let end = if limit == 0 {
        items.len()
    } else {
        (start + limit).min(items.len())
    };
    let page = &items[start.min(end)..end];
    let continue_ = (end < items.len()).then(|| {
        let last = &items[end - 1];
        format!(
            "{first_rv}/{}/{}",
            crate::store::meta_str(last, "namespace").unwrap_or_default(),
            crate::store::meta_str(last, "name").unwrap_or_default()
        )
    });
    Ok(page_response(target, page, first_rv, continue_))
}

/// Refuses a list from a resourceVersion this server has not reached, as kube-apiserver does
/// (a client that saw a later one talks to a server restarted with fresh state), and an
/// `Exact` list from before the kept history (410, as after an etcd compaction). Other lists
/// are served from the current state, which is never older than the one asked for; that
/// includes an `Exact` list from inside the history, which a real server would answer with
/// the older state (no client of ours asks for one).
fn check_list_version(shared: &Shared, params: &Params, current: u64) -> Result<(), ApiError> {
    let requested = match params.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => return Ok(()),
        Some(rv) => rv
            .parse::<u64>()
            .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
    };
    if requested > current {
        return Err(ApiError::too_large_resource_version(requested, current));
    }
    if params.get("resourceVersionMatch").map(String::as_str) == Some("Exact") {
        shared
            .read(|c| c.store.history().since(requested).map(drop))
            .map_err(|e| ApiError::expired(e.requested, e.oldest))?;
    }
    Ok(())
}
