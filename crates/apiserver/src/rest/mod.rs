//! The Kubernetes REST paths, routed over axum.
//!
//! Resource paths are parsed by hand rather than by route patterns: `/api/v1/namespaces/x/pods`
//! and `/api/v1/nodes/x/status` have the same shape, and only the catalogue of resources can
//! tell a namespaced collection from a subresource. Every resource request is counted and
//! passed through the fault rules before it is served.

mod discovery;
mod negotiate;
mod openapi;
mod patch;
mod read;
mod table;
mod watch;
mod write;

pub(crate) use negotiate::Encoding;
pub(crate) use write::{create, create_as, delete, update, update_as, DeleteOptions};

use crate::limits;
use crate::protobuf::{self, ProtobufError};
use crate::request_log::RequestRecord;
use crate::resources::{self, Resource};
use crate::reviews::{self, Review};
use crate::state::Shared;
use crate::status::ApiError;
use crate::tokens::{self, ServiceAccountUser, Verdict};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Extension;
use axum::Router;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The router serving every path; the same one backs TCP and in-process clients.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    // Discovery and OpenAPI documents are JSON only.
    let documents = Router::new()
        .route("/api", get(discovery::core_versions))
        .route("/api/v1", get(discovery::core_resources))
        .route("/apis", get(discovery::group_list))
        .route("/apis/{group}", get(discovery::group))
        .route("/apis/{group}/{version}", get(discovery::group_resources))
        .route("/openapi/v2", get(openapi::v2))
        .route("/openapi/v3", get(openapi::root))
        .route("/openapi/v3/api/{version}", get(openapi::core))
        .route("/openapi/v3/apis/{group}/{version}", get(openapi::group))
        .route_layer(middleware::from_fn(json_documents));
    Router::new()
        .merge(documents)
        .route("/version", get(discovery::version))
        .route(&Review::Token.path(), any(reviews::token_reviews))
        .route(
            &Review::SubjectAccess.path(),
            any(reviews::subject_access_reviews),
        )
        .route("/api/v1/{*rest}", any(core_resource))
        .route("/apis/{group}/{version}/{*rest}", any(group_resource))
        .fallback(|| async { ApiError::no_route() })
        .layer(DefaultBodyLimit::max(limits::MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(shared.clone(), authenticate))
        .with_state(shared)
}

/// Authenticates a request carrying a bearer token this server issued ([`tokens`]): a valid
/// one adds its ServiceAccount user to the request's extensions for the handlers (and the
/// request log); an expired or revoked one is refused with kube-apiserver's 401, before any
/// handler, count or fault. Any other request passes untouched, at the cost of one header
/// lookup.
async fn authenticate(
    State(shared): State<Arc<Shared>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(token) = tokens::bearer_token(request.headers()) else {
        return next.run(request).await;
    };
    match tokens::authenticate(&shared, token) {
        Verdict::NotIssued => next.run(request).await,
        Verdict::User(user) => {
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        Verdict::Refused(why) => {
            tracing::debug!(path = %request.uri().path(), why, "refused a bearer token");
            let encoding = negotiate::negotiate(request.headers(), true).unwrap_or_default();
            let response = ApiError::unauthorized().into_response_as(encoding);
            log_refused(&shared, &request, response)
        }
    }
}

/// Records a request refused before routing, in the terms its handler would have recorded
/// it: resource requests and reviews (other paths are never recorded).
fn log_refused(shared: &Shared, request: &Request, response: Response) -> Response {
    if !shared.requests.enabled() {
        return response;
    }
    let path = request.uri().path();
    let (group, version, rest) = if let Some(rest) = path.strip_prefix("/api/v1/") {
        ("", "v1", rest)
    } else if let Some(Some((group, Some((version, rest))))) = path
        .strip_prefix("/apis/")
        .map(|p| p.split_once('/').map(|(g, r)| (g, r.split_once('/'))))
    {
        (group, version, rest)
    } else {
        return response;
    };
    let headers = request.headers();
    let code = response.status().as_u16();
    let mut record = match Review::in_group(group, version).filter(|r| r.plural() == rest) {
        Some(review) => RequestRecord::review(review.group(), review.plural(), headers, None, code),
        None => {
            let Some(target) = parse_target(group, version, rest) else {
                return response;
            };
            let params = query_params(request.uri()).unwrap_or_default();
            let Some(verb) = verb_of(request.method(), &target, &params) else {
                return response;
            };
            RequestRecord::new(verb, &target, headers, code)
        }
    };
    record.content_type = content_type(&response);
    shared.requests.push(record);
    response
}

/// The Content-Type of a response, for the request log.
fn content_type(response: &Response) -> Option<String> {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Refuses a request for a JSON-only document that accepts protobuf alone, with 406 as
/// kube-apiserver does for a type it cannot encode so.
async fn json_documents(request: Request, next: Next) -> Response {
    if negotiate::only_protobuf(request.headers()) {
        let supported = ["application/json"];
        return ApiError::not_acceptable(&supported).into_response();
    }
    next.run(request).await
}

/// The subresources the server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// `status`, of resources with [`Resource::status`].
    Status,
    /// `token` of ServiceAccounts ([`Resource::has_token`]): create a TokenRequest.
    Token,
}

impl Subresource {
    /// The name in paths, RBAC rules and the request log.
    pub fn name(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Token => "token",
        }
    }
}

/// What a resource path names, and who asks.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub resource: &'static Resource,
    /// The namespace in the path; `None` for cluster-scoped resources and all-namespace lists.
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<Subresource>,
    /// `dryRun=All`: answer as the write would, but store nothing.
    pub dry_run: bool,
    /// The field manager a write is recorded under (see [`crate::managed_fields`]).
    pub manager: String,
    /// The encoding of the response, from the Accept header (see [`negotiate`]).
    pub encoding: Encoding,
    /// The ServiceAccount whose token authenticated the request; `None` for the
    /// unauthenticated requests that are the server's usual fare.
    pub user: Option<Arc<ServiceAccountUser>>,
}

impl Target {
    /// The namespace key in the store: empty for cluster-scoped objects.
    pub fn store_namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or_default()
    }

    /// Whether the path names the status subresource.
    pub fn is_status(&self) -> bool {
        self.subresource == Some(Subresource::Status)
    }

    /// The resource name used for counters and fault rules: `pods`, `pods/status` or
    /// `serviceaccounts/token`.
    pub fn label(&self) -> String {
        match self.subresource {
            Some(sub) => format!("{}/{}", self.resource.plural, sub.name()),
            None => self.resource.plural.to_owned(),
        }
    }
}

fn parse_target(group: &str, version: &str, rest: &str) -> Option<Target> {
    let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let find = |plural: &str| resources::find(group, version, plural);
    let (resource, namespace, tail) = match parts.as_slice() {
        ["namespaces", ns, plural, tail @ ..] if find(plural).is_some_and(|r| r.namespaced) => {
            (find(plural)?, Some((*ns).to_owned()), tail)
        }
        [plural, tail @ ..] => (find(plural)?, None, tail),
        [] => return None,
    };
    let (name, subresource) = match tail {
        [] => (None, None),
        [name] => (Some((*name).to_owned()), None),
        [name, "status"] if resource.status => {
            (Some((*name).to_owned()), Some(Subresource::Status))
        }
        [name, "token"] if resource.has_token() => {
            (Some((*name).to_owned()), Some(Subresource::Token))
        }
        _ => return None,
    };
    // A namespaced object must be addressed through its namespace.
    if resource.namespaced && namespace.is_none() && name.is_some() {
        return None;
    }
    Some(Target {
        resource,
        namespace,
        name,
        subresource,
        dry_run: false,
        manager: String::new(),
        encoding: Encoding::Json,
        user: None,
    })
}

/// The verb a request is authorised and recorded as, or `None` for a method the path does
/// not serve. The token subresource is create-only.
fn verb_of(method: &Method, target: &Target, params: &Params) -> Option<&'static str> {
    use Subresource::{Status, Token};
    let verb = match (method, target.name.is_some(), target.subresource) {
        (&Method::GET, true, None | Some(Status)) => "get",
        (&Method::GET, false, None) if flag(params, "watch") => "watch",
        (&Method::GET, false, None) => "list",
        (&Method::POST, false, None) | (&Method::POST, true, Some(Token)) => "create",
        (&Method::PUT, true, None | Some(Status)) => "update",
        (&Method::PATCH, true, None | Some(Status)) => "patch",
        (&Method::DELETE, true, None) => "delete",
        (&Method::DELETE, false, None) => "deletecollection",
        _ => return None,
    };
    Some(verb)
}

/// The query parameters of a request.
fn query_params(uri: &Uri) -> Result<Params, ApiError> {
    match Query::<Vec<(String, String)>>::try_from_uri(uri) {
        Ok(Query(pairs)) => Ok(pairs.into_iter().collect()),
        Err(e) => Err(ApiError::bad_request(format!("invalid query: {e}"))),
    }
}

/// Query parameters, last value wins.
pub(crate) type Params = HashMap<String, String>;

/// Whether a boolean query parameter is set (`1` or `true`).
pub(crate) fn flag(params: &Params, key: &str) -> bool {
    params.get(key).is_some_and(|v| v == "1" || v == "true")
}

/// The ServiceAccount the [`authenticate`] layer found, if any.
type User = Option<Extension<Arc<ServiceAccountUser>>>;

async fn core_resource(
    State(shared): State<Arc<Shared>>,
    Path(rest): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    user: User,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request = RequestParts {
        method,
        uri,
        headers,
        user: user.map(|Extension(u)| u),
    };
    serve(shared, "", "v1", &rest, request, body).await
}

async fn group_resource(
    State(shared): State<Arc<Shared>>,
    Path((group, version, rest)): Path<(String, String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    user: User,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request = RequestParts {
        method,
        uri,
        headers,
        user: user.map(|Extension(u)| u),
    };
    serve(shared, &group, &version, &rest, request, body).await
}

/// The parts of a resource request besides its path and body.
struct RequestParts {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    user: Option<Arc<ServiceAccountUser>>,
}

async fn serve(
    shared: Arc<Shared>,
    group: &str,
    version: &str,
    rest: &str,
    request: RequestParts,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let RequestParts {
        method,
        uri,
        headers,
        user,
    } = request;
    // A Status has a protobuf form, so errors follow the Accept header whatever the path.
    let errors = negotiate::negotiate(&headers, true).unwrap_or_default();
    let fail = |error: ApiError| error.into_response_as(errors);
    let Some(mut target) = parse_target(group, version, rest) else {
        return fail(ApiError::no_route());
    };
    target.user = user;
    let body = match read_body(body) {
        Ok(body) => body,
        Err(e) => return fail(e),
    };
    let params = match query_params(&uri) {
        Ok(params) => params,
        Err(e) => return fail(e),
    };
    target.dry_run = match params.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return fail(ApiError::bad_request(format!(
                "unsupported dryRun value {other:?}, only \"All\""
            )))
        }
    };
    target.manager = crate::managed_fields::manager_name(
        params.get("fieldManager").map(String::as_str),
        headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
    );
    let Some(verb) = verb_of(&method, &target, &params) else {
        return fail(ApiError::method_not_allowed());
    };
    if target.namespace.is_none() && target.resource.namespaced && verb != "list" && verb != "watch"
    {
        return fail(ApiError::method_not_allowed());
    }
    let label = target.label();
    shared.count(verb, &label);
    let decision = shared
        .faults
        .decide(verb, &label, target.name.as_deref().unwrap_or_default());
    if !decision.delay.is_zero() {
        tokio::time::sleep(decision.delay).await;
    }
    if let Some(error) = decision.error {
        // Refused by an injected fault: still a request the client sent.
        return log_request(&shared, verb, &target, &headers, fail(error));
    }
    let table = match table::requested(&headers, &params) {
        Ok(table) => table,
        Err(e) => return fail(e),
    };
    // Tables are JSON; objects and lists are protobuf when the client asks for it first.
    let token = target.subresource == Some(Subresource::Token);
    let has_protobuf = if token {
        protobuf::supports_kind(tokens::API_VERSION, tokens::KIND)
    } else {
        protobuf::supports(target.resource)
    };
    target.encoding = match table {
        Some(_) => Encoding::Json,
        None => match negotiate::negotiate(&headers, has_protobuf) {
            Ok(encoding) => encoding,
            Err(e) => return log_request(&shared, verb, &target, &headers, e.into_response()),
        },
    };
    let result = match verb {
        "get" => match table {
            Some(table) => table::get(&shared, &target, table),
            None => read::get(&shared, &target),
        },
        "list" => match table {
            Some(table) => table::list(&shared, &target, &params, table),
            None => read::list(&shared, &target, &params),
        },
        "watch" => {
            let response = watch::watch(shared.clone(), target.clone(), &params, table);
            return log_request(&shared, verb, &target, &headers, response);
        }
        "create" if token => tokens::request_token(&shared, &target, &body),
        "create" => write::create_request(&shared, &target, &body),
        "update" => write::update_request(&shared, &target, &body),
        "patch" => patch::patch_request(&shared, &target, &headers, &body),
        "delete" => write::delete_request(&shared, &target, &params, &body),
        _ => write::delete_collection_request(&shared, &target, &params, &body),
    };
    let response = result.unwrap_or_else(fail);
    log_request(&shared, verb, &target, &headers, response)
}

/// The object a write was answered with, carried in the response's extensions for the
/// request log whatever the encoding of the body.
#[derive(Clone)]
struct Answered(Arc<Value>);

/// Records the request in the server's request log when recording is on, with the
/// Content-Type it was answered in. Accepted writes keep the object the server answered; a
/// create takes its name from it (it may be generated).
fn log_request(
    shared: &Shared,
    verb: &str,
    target: &Target,
    headers: &HeaderMap,
    response: Response,
) -> Response {
    if !shared.requests.enabled() {
        return response;
    }
    let code = response.status();
    let mut record = RequestRecord::new(verb, target, headers, code.as_u16());
    record.content_type = content_type(&response);
    let keep_object = code.is_success()
        && !target.dry_run
        && matches!(verb, "create" | "update" | "patch" | "delete");
    if let Some(Answered(object)) = response.extensions().get().filter(|_| keep_object) {
        // Only objects are kept, never a Status.
        if object.get("kind").and_then(Value::as_str) != Some("Status") {
            if record.name.is_none() {
                record.name = crate::store::meta_str(object, "name").map(str::to_owned);
            }
            record.object = serde_json::value::to_raw_value(&**object).ok();
        }
    }
    shared.requests.push(record);
    response
}

/// The request body, refused when it is over [`limits::MAX_BODY_BYTES`] (413) or nested
/// deeper than [`limits::MAX_NESTING`] (400), before any parser spends time on it.
pub(crate) fn read_body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::request_entity_too_large(limits::MAX_BODY_BYTES)
        } else {
            ApiError::bad_request(format!("reading the request body: {rejection}"))
        }
    })?;
    limits::check_nesting(&body, limits::MAX_NESTING)
        .map_err(|e| ApiError::bad_request(format!("the request body is {e}")))?;
    Ok(body)
}

/// A response with one object of the target's resource, in the negotiated encoding.
pub(crate) fn resource_response(
    target: &Target,
    code: StatusCode,
    object: &Arc<Value>,
) -> Response {
    let mut response = match target.encoding {
        Encoding::Json => object_response(code, object),
        Encoding::Protobuf => protobuf_response(
            code,
            protobuf::encode_object(&target.resource.api_version(), target.resource.kind, object),
        ),
    };
    response.extensions_mut().insert(Answered(object.clone()));
    response
}

/// A protobuf response from encoded bytes.
pub(crate) fn protobuf_response(
    code: StatusCode,
    bytes: Result<Vec<u8>, ProtobufError>,
) -> Response {
    match bytes {
        Ok(bytes) => (
            code,
            [(http::header::CONTENT_TYPE, protobuf::MEDIA_TYPE)],
            bytes,
        )
            .into_response(),
        Err(e) => ApiError::internal(format!("encoding the response as protobuf: {e}"))
            .into_response_as(Encoding::Protobuf),
    }
}

/// A JSON response with one object.
pub(crate) fn object_response(code: StatusCode, object: &Value) -> Response {
    json_response(code, serde_json::to_vec(object))
}

/// A JSON response from serialised bytes.
pub(crate) fn json_response(code: StatusCode, bytes: serde_json::Result<Vec<u8>>) -> Response {
    match bytes {
        Ok(bytes) => (
            code,
            [(http::header::CONTENT_TYPE, "application/json")],
            bytes,
        )
            .into_response(),
        Err(e) => ApiError::internal(format!("encoding the response: {e}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_collections_objects_and_subresources() {
        let t = parse_target("", "v1", "namespaces/default/pods").unwrap();
        assert_eq!(
            (t.resource.plural, t.namespace.as_deref(), t.name),
            ("pods", Some("default"), None)
        );
        let t = parse_target("", "v1", "namespaces/default/pods/web/status").unwrap();
        assert_eq!((t.name.as_deref(), t.is_status()), (Some("web"), true));
        let t = parse_target("", "v1", "namespaces/default").unwrap();
        assert_eq!(
            (t.resource.plural, t.name.as_deref()),
            ("namespaces", Some("default"))
        );
        let t = parse_target("", "v1", "namespaces/default/status").unwrap();
        assert!(t.is_status());
        let t = parse_target("", "v1", "nodes/n1/status").unwrap();
        assert_eq!((t.resource.plural, t.is_status()), ("nodes", true));
        let t = parse_target("", "v1", "namespaces/kube-system/serviceaccounts/sa/token").unwrap();
        assert_eq!(t.subresource, Some(Subresource::Token));
        assert_eq!(t.label(), "serviceaccounts/token");
        let t = parse_target("", "v1", "pods").unwrap();
        assert_eq!((t.resource.plural, t.namespace), ("pods", None));
        let t = parse_target("discovery.k8s.io", "v1", "namespaces/a/endpointslices/s").unwrap();
        assert_eq!(t.resource.kind, "EndpointSlice");
    }

    #[test]
    fn unknown_or_malformed_paths_are_not_served() {
        assert!(parse_target("", "v1", "deployments").is_none());
        assert!(parse_target("", "v1", "pods/web").is_none());
        assert!(parse_target("", "v1", "namespaces/a/endpoints/e/status").is_none());
        assert!(parse_target("", "v1", "namespaces/a/pods/p/token").is_none());
        assert!(parse_target("", "v1", "namespaces//pods").is_none());
        assert!(parse_target("discovery.k8s.io", "v1", "nodes").is_none());
    }
}
