//! `Status` bodies shaped like kube-apiserver's, so clients branch on them as they would on a
//! real cluster: kube-rs reads `code` and `reason`, the watcher re-lists on a 410, and the
//! controllers look for the `NamespaceTerminating` cause.

use crate::resources::Resource;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};
use serde_json::{json, Map, Value};

/// A failed request, answered with a `Status` body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    code: u16,
    reason: &'static str,
    message: String,
    details: Option<Value>,
}

fn details(resource: &Resource, name: &str) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), json!(name));
    if !resource.group.is_empty() {
        d.insert("group".into(), json!(resource.group));
    }
    d.insert("kind".into(), json!(resource.plural));
    Value::Object(d)
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// An error about the object `name` of `resource`, with details naming it; `message` is
    /// written from the resource's qualified name.
    fn about(
        resource: &Resource,
        name: &str,
        code: u16,
        reason: &'static str,
        message: impl FnOnce(&str) -> String,
    ) -> Self {
        let q = resource.qualified_name();
        Self::new(code, reason, message(&q)).with_details(details(resource, name))
    }

    /// HTTP status code.
    pub fn code(&self) -> u16 {
        self.code
    }

    /// The `reason` field, e.g. `NotFound`.
    pub fn reason(&self) -> &str {
        self.reason
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// 404 for a named object.
    pub fn not_found(resource: &Resource, name: &str) -> Self {
        Self::about(resource, name, 404, "NotFound", |q| {
            format!("{q} \"{name}\" not found")
        })
    }

    /// 404 for a path the server does not serve.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// 409 for a create whose name is taken.
    pub fn already_exists(resource: &Resource, name: &str) -> Self {
        Self::about(resource, name, 409, "AlreadyExists", |q| {
            format!("{q} \"{name}\" already exists")
        })
    }

    /// 409 for a write whose resourceVersion (or other precondition) is stale.
    pub fn conflict(resource: &Resource, name: &str, why: &str) -> Self {
        Self::about(resource, name, 409, "Conflict", |q| {
            format!("Operation cannot be fulfilled on {q} \"{name}\": {why}")
        })
    }

    /// An injected 409 for a request on `resource` (a fault-rule name such as `pods`).
    pub fn injected_conflict(resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"),
        )
        .with_details(json!({ "name": name, "kind": resource }))
    }

    /// An injected RBAC refusal, worded as kube-apiserver's authorizer words one.
    pub fn injected_forbidden(verb: &str, resource: &str, name: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("{resource} \"{name}\" is forbidden: User \"system:anonymous\" cannot {verb} resource \"{resource}\""),
        )
        .with_details(json!({ "name": name, "kind": resource }))
    }

    /// The stale-resourceVersion conflict, worded as kube-apiserver words it.
    pub fn stale(resource: &Resource, name: &str) -> Self {
        Self::conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 403 for a create in a namespace that is being deleted, with the `NamespaceTerminating`
    /// cause kube-apiserver's lifecycle admission adds.
    pub fn namespace_terminating(resource: &Resource, name: &str, namespace: &str) -> Self {
        let why = format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        );
        let mut error = Self::forbidden(resource, name, &why);
        if let Some(details) = &mut error.details {
            details["causes"] = json!([{
                "reason": "NamespaceTerminating",
                "message": format!("namespace {namespace} is being terminated"),
                "field": "metadata.namespace",
            }]);
        }
        error
    }

    /// 403 with a plain reason.
    pub fn forbidden(resource: &Resource, name: &str, why: &str) -> Self {
        Self::about(resource, name, 403, "Forbidden", |q| {
            format!("{q} \"{name}\" is forbidden: {why}")
        })
    }

    /// 422 for an object that fails validation on one field.
    pub fn invalid(resource: &Resource, name: &str, field: &str, cause: &str, why: &str) -> Self {
        let kind = resource.kind;
        let mut d = details(resource, name);
        d["kind"] = json!(kind);
        d["causes"] = json!([{ "reason": cause, "message": why, "field": field }]);
        Self::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {field}: {why}"),
        )
        .with_details(d)
    }

    /// 422 for an object that fails validation, with one cause per field error (as
    /// `{reason, message, field}` objects) and `summary` after "is invalid: ". The kind is
    /// qualified by its group outside the core group (`EndpointSlice.discovery.k8s.io`), as
    /// kube-apiserver writes it.
    pub(crate) fn invalid_fields(
        resource: &Resource,
        name: &str,
        summary: &str,
        causes: Vec<Value>,
    ) -> Self {
        let kind = if resource.group.is_empty() {
            resource.kind.to_owned()
        } else {
            format!("{}.{}", resource.kind, resource.group)
        };
        let mut d = details(resource, name);
        d["kind"] = json!(resource.kind);
        d["causes"] = Value::Array(causes);
        Self::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {summary}"),
        )
        .with_details(d)
    }

    /// 422 for an object of a kind that is not a stored resource (a TokenRequest), in the
    /// same shape as [`Self::invalid_fields`]; an empty `name` is left out of the details, as
    /// kube-apiserver leaves it out.
    pub(crate) fn invalid_kind(
        group: &str,
        kind: &str,
        name: &str,
        summary: &str,
        causes: Vec<Value>,
    ) -> Self {
        let mut d = Map::new();
        if !name.is_empty() {
            d.insert("name".into(), json!(name));
        }
        d.insert("group".into(), json!(group));
        d.insert("kind".into(), json!(kind));
        d.insert("causes".into(), Value::Array(causes));
        Self::new(
            422,
            "Invalid",
            format!("{kind}.{group} \"{name}\" is invalid: {summary}"),
        )
        .with_details(Value::Object(d))
    }

    /// 422 for list or watch options that do not go together, with one `(field, reason,
    /// message)` per error, worded as kube-apiserver's ListOptions validation.
    pub fn invalid_list_options(errors: &[(&str, &str, String)]) -> Self {
        let summary: Vec<String> = errors
            .iter()
            .map(|(field, reason, message)| format!("{field}: {reason}: {message}"))
            .collect();
        let causes: Vec<Value> = errors
            .iter()
            .map(|(field, reason, message)| {
                let cause = match *reason {
                    "Forbidden" => "FieldValueForbidden",
                    "Unsupported value" => "FieldValueNotSupported",
                    _ => "FieldValueInvalid",
                };
                json!({"reason": cause, "message": format!("{reason}: {message}"), "field": field})
            })
            .collect();
        let summary = match summary.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        Self::new(
            422,
            "Invalid",
            format!("ListOptions.meta.k8s.io \"\" is invalid: {summary}"),
        )
        .with_details(json!({"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes}))
    }

    /// 504 for a list or watch from a resourceVersion the server has not reached, shaped like
    /// kube-apiserver's watch cache answer (reason `Timeout`, cause `ResourceVersionTooLarge`).
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        }))
    }

    /// 413 for a request body over `limit` bytes, worded as kube-apiserver words it.
    pub fn request_entity_too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 422 for a patch that cannot be applied.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message)
    }

    /// 400 for a request the server cannot read.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 405 for a verb the path does not support.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(json!({}))
    }

    /// 415 for a request body in an encoding the server cannot read for this resource.
    pub fn unsupported_body(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// 406 for an Accept header naming no media type the server can answer in, worded as
    /// kube-apiserver words it.
    pub fn not_acceptable(supported: &[&str]) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                supported.join(", ")
            ),
        )
    }

    /// 415 for a patch type the server does not know.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json; got {content_type:?}"))
    }

    /// 410 for a watch from a resourceVersion older than the kept history.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 500, as injected by faults.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(json!({ "causes": [{ "message": message }] }))
    }

    /// 401 for a request whose credentials do not authenticate, worded as kube-apiserver
    /// words it (no details).
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 429, as injected by faults.
    pub fn too_many_requests() -> Self {
        Self::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        )
        .with_details(json!({ "retryAfterSeconds": 1 }))
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            status["details"] = d.clone();
        }
        status
    }
}

impl ApiError {
    /// The error as a response whose Status body is in `encoding`: protobuf (kind Status,
    /// apiVersion v1) when the client negotiated it, as kube-apiserver answers.
    pub(crate) fn into_response_as(self, encoding: crate::rest::Encoding) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let status = self.to_status();
        let protobuf = match encoding {
            crate::rest::Encoding::Protobuf => {
                crate::protobuf::encode_object("v1", "Status", &status).ok()
            }
            crate::rest::Encoding::Json => None,
        };
        let mut response = match protobuf {
            Some(body) => (
                code,
                [(header::CONTENT_TYPE, crate::protobuf::MEDIA_TYPE)],
                body,
            )
                .into_response(),
            None => (code, axum::Json(status)).into_response(),
        };
        if self.code == 429 {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.into_response_as(crate::rest::Encoding::Json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    #[test]
    fn namespace_terminating_status_matches_kube_apiserver() {
        let pods = find("", "v1", "pods").unwrap();
        let status = ApiError::namespace_terminating(pods, "web", "gone").to_status();
        assert_eq!(status["code"], 403);
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(
            status["message"],
            "pods \"web\" is forbidden: unable to create new content in namespace gone because it is being terminated"
        );
        assert_eq!(
            status["details"]["causes"][0]["reason"],
            "NamespaceTerminating"
        );
        assert_eq!(status["details"]["kind"], "pods");
    }

    #[test]
    fn grouped_resources_are_qualified_in_messages() {
        let slices = find("discovery.k8s.io", "v1", "endpointslices").unwrap();
        let status = ApiError::not_found(slices, "s").to_status();
        assert_eq!(
            status["message"],
            "endpointslices.discovery.k8s.io \"s\" not found"
        );
        assert_eq!(status["details"]["group"], "discovery.k8s.io");
    }
}
