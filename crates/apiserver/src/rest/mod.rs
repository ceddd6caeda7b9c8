//! The Kubernetes REST paths, routed over axum.
//!
//! What a resource path names and which verb a request is comes from [`crate::classify`], the
//! one reading of a request the server and its clients share. Every resource request is
//! counted and passed through the fault rules before it is served.

mod discovery;
mod negotiate;
mod openapi;
mod patch;
mod read;
mod table;
mod watch;
mod write;

pub(crate) use negotiate::Encoding;
pub(crate) use write::{create, delete, update, DeleteOptions, Written};

pub(crate) use crate::classify::{flag, Params, Subresource, Target};

use crate::admission::parse_body;
use crate::classify::{dry_run, in_scope, parse_target, query_params, verb_of, Route};
use crate::limits;
use crate::protobuf::{self, ProtobufError};
use crate::request_log::RequestRecord;
use crate::reviews::{self, Review};
use crate::state::Shared;
use crate::status::ApiError;
use crate::tokens::{self, ServiceAccountUser, Verdict};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::DefaultBodyLimit;
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use serde_json::Value;
use std::convert::Infallible;
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
        .route(&Review::Token.path(), reviews::route(Review::Token))
        .route(
            &Review::SubjectAccess.path(),
            reviews::route(Review::SubjectAccess),
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
    let headers = request.headers();
    let code = response.status().as_u16();
    let mut record = match Route::of(request.uri().path()) {
        None => return response,
        Some(Route::Review(review)) => {
            RequestRecord::review(review.group(), review.plural(), headers, None, code)
        }
        Some(Route::Resource {
            group,
            version,
            rest,
        }) => {
            let Some(target) = parse_target(&group, &version, &rest) else {
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
pub(crate) fn content_type(response: &Response) -> Option<String> {
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

async fn core_resource(
    State(shared): State<Arc<Shared>>,
    Path(rest): Path<String>,
    request: RequestParts,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    serve(shared, "", "v1", &rest, request, body).await
}

async fn group_resource(
    State(shared): State<Arc<Shared>>,
    Path((group, version, rest)): Path<(String, String, String)>,
    request: RequestParts,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    serve(shared, &group, &version, &rest, request, body).await
}

/// The parts of a request besides its path and body, read as axum's `Method`, `Uri`,
/// `HeaderMap` and `Option<Extension<_>>` extractors read them.
pub(crate) struct RequestParts {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    /// The ServiceAccount the [`authenticate`] layer found, if any.
    pub user: Option<Arc<ServiceAccountUser>>,
}

impl<S: Send + Sync> FromRequestParts<S> for RequestParts {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        _: &S,
    ) -> Result<Self, Infallible> {
        Ok(Self {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
            user: parts.extensions.get().cloned(),
        })
    }
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
    target.dry_run = match dry_run(&params) {
        Ok(dry_run) => dry_run,
        Err(e) => return fail(e),
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
    if !in_scope(verb, &target) {
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
        // The body of a create or an update is one object of the target's resource.
        "create" => parse_body(target.resource, &body)
            .and_then(|object| write::create_request(&shared, &target, object)),
        "update" => parse_body(target.resource, &body)
            .and_then(|object| write::update_request(&shared, &target, object)),
        "patch" => patch::patch_request(&shared, &target, &headers, &body),
        // delete and deletecollection
        _ => write::delete_request(&shared, &target, &params, &body),
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
