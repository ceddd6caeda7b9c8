//! What a request is: the resource its path names, and the verb it is served, counted,
//! faulted and logged as.
//!
//! Everything after routing keys on `(verb, resource)`: the request counts, the fault rules,
//! the request log. A client that subtracts its own requests from the server's counts (the
//! bench does, to find the controllers' share) must classify them exactly as the server does,
//! so the server's handlers and [`classify`] are built from the same functions here: one
//! reading of a path (`parse_target`), one of a method (`verb_of`), one scope rule
//! (`in_scope`).
//!
//! Resource paths are parsed by hand rather than by route patterns: `/api/v1/namespaces/x/pods`
//! and `/api/v1/nodes/x/status` have the same shape, and only the catalogue of resources can
//! tell a namespaced collection from a subresource.

use crate::resources::{self, Resource};
use crate::rest::Encoding;
use crate::reviews::Review;
use crate::status::ApiError;
use crate::tokens::ServiceAccountUser;
use axum::extract::Query;
use http::{Method, Uri};
use percent_encoding::percent_decode_str;
use std::collections::HashMap;
use std::sync::Arc;

/// The verb and resource the server counts a request under, e.g. `("update",
/// "endpointslices")`, `("patch", "pods/status")` or `("create", "serviceaccounts/token")`:
/// the keys of [`crate::ApiServer::request_counts`] and of the fault rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestClass {
    /// get, list, watch, create, update, patch, delete or deletecollection.
    pub verb: &'static str,
    /// The plural resource name, with `/status` or `/token` for a subresource.
    pub resource: String,
}

/// How the server would count a request with this method and URI, or `None` when it would
/// not count it at all: paths that are not resources (discovery, `/version`, OpenAPI, unknown
/// resources and subresources), a method the path does not serve, an unreadable query or
/// `dryRun` value. What cannot be seen from the method and URI is not considered: a body the
/// server refuses (too large, too deeply nested) or a bearer token it refuses is not counted
/// either.
pub fn classify(method: &Method, uri: &Uri) -> Option<RequestClass> {
    match Route::of(uri.path())? {
        Route::Review(review) => (method == Method::POST).then(|| RequestClass {
            verb: "create",
            resource: review.plural().to_owned(),
        }),
        Route::Resource {
            group,
            version,
            rest,
        } => {
            let target = parse_target(&group, &version, &rest)?;
            let params = query_params(uri).ok()?;
            dry_run(&params).ok()?;
            let verb = verb_of(method, &target, &params)?;
            in_scope(verb, &target).then(|| RequestClass {
                verb,
                resource: target.label(),
            })
        }
    }
}

/// Which handler a path reaches, with its parts percent-decoded as the router hands them
/// over: `/api/v1/{rest}`, `/apis/{group}/{version}/{rest}`, or one of the two review paths
/// (routed on their own, before the group pattern).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// A TokenReview or SubjectAccessReview.
    Review(Review),
    /// A resource path; `group` is empty for the core group.
    Resource {
        group: String,
        version: String,
        rest: String,
    },
}

impl Route {
    /// The route of `path` as sent (percent-encoded), or `None` for any other path.
    pub fn of(path: &str) -> Option<Self> {
        if let Some(review) = Review::ALL.into_iter().find(|r| r.path() == path) {
            return Some(Self::Review(review));
        }
        let decode = |part: &str| {
            percent_decode_str(part)
                .decode_utf8()
                .ok()
                .map(|s| s.into_owned())
        };
        let (group, version, rest) = match path.strip_prefix("/api/v1/") {
            Some(rest) => ("", "v1", rest),
            None => {
                let (group, rest) = path.strip_prefix("/apis/")?.split_once('/')?;
                let (version, rest) = rest.split_once('/')?;
                if group.is_empty() || version.is_empty() {
                    return None;
                }
                (group, version, rest)
            }
        };
        if rest.is_empty() {
            return None;
        }
        Some(Self::Resource {
            group: decode(group)?,
            version: decode(version)?,
            rest: decode(rest)?,
        })
    }
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
    /// The encoding of the response, from the Accept header (see [`crate::rest`]).
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

/// What the part of a resource path after `/api/v1/` or `/apis/{group}/{version}/` names, or
/// `None` for a resource or subresource the server does not serve there.
pub(crate) fn parse_target(group: &str, version: &str, rest: &str) -> Option<Target> {
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

/// The verb a request is authorised, counted and recorded as, or `None` for a method the
/// path does not serve. The token subresource is create-only.
pub(crate) fn verb_of(method: &Method, target: &Target, params: &Params) -> Option<&'static str> {
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

/// Whether `verb` is served on the target's scope: a namespaced resource addressed without a
/// namespace (`/api/v1/pods`) is listed and watched across namespaces, nothing else.
pub(crate) fn in_scope(verb: &str, target: &Target) -> bool {
    !(target.namespace.is_none() && target.resource.namespaced && verb != "list" && verb != "watch")
}

/// The `dryRun` parameter: `All`, or absent. Anything else is refused.
pub(crate) fn dry_run(params: &Params) -> Result<bool, ApiError> {
    match params.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "unsupported dryRun value {other:?}, only \"All\""
        ))),
    }
}

/// The query parameters of a request.
pub(crate) fn query_params(uri: &Uri) -> Result<Params, ApiError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn c(method: &str, uri: &str) -> Option<(&'static str, String)> {
        classify(&method.parse().unwrap(), &uri.parse().unwrap()).map(|c| (c.verb, c.resource))
    }

    fn k(verb: &'static str, resource: &str) -> Option<(&'static str, String)> {
        Some((verb, resource.to_owned()))
    }

    #[test]
    fn requests_are_classified_as_the_server_counts_them() {
        assert_eq!(c("GET", "/api/v1/namespaces/a/pods"), k("list", "pods"));
        assert_eq!(
            c(
                "GET",
                "/api/v1/namespaces/a/pods?watch=true&resourceVersion=1"
            ),
            k("watch", "pods")
        );
        assert_eq!(
            c("PATCH", "/api/v1/namespaces/a/pods/p/status"),
            k("patch", "pods/status")
        );
        assert_eq!(
            c(
                "PUT",
                "/apis/discovery.k8s.io/v1/namespaces/a/endpointslices/s"
            ),
            k("update", "endpointslices")
        );
        assert_eq!(c("POST", "/api/v1/namespaces"), k("create", "namespaces"));
        assert_eq!(
            c("DELETE", "/api/v1/namespaces/a"),
            k("delete", "namespaces")
        );
        assert_eq!(
            c("DELETE", "/api/v1/namespaces/a/pods"),
            k("deletecollection", "pods")
        );
        assert_eq!(
            c("PATCH", "/api/v1/nodes/n/status"),
            k("patch", "nodes/status")
        );
        assert_eq!(c("GET", "/api/v1/pods"), k("list", "pods"));
        assert_eq!(
            c(
                "POST",
                "/api/v1/namespaces/kube-system/serviceaccounts/sa/token"
            ),
            k("create", "serviceaccounts/token")
        );
        assert_eq!(
            c("POST", "/apis/authentication.k8s.io/v1/tokenreviews"),
            k("create", "tokenreviews")
        );
        assert_eq!(c("GET", "/api"), None);
        assert_eq!(c("GET", "/api/v1"), None);
        assert_eq!(c("GET", "/apis/discovery.k8s.io/v1"), None);
        assert_eq!(c("GET", "/version"), None);
    }

    /// The cases where the bench's own parser (before this module) counted what the server
    /// does not, or counted it under another key.
    #[test]
    fn requests_the_server_does_not_count_are_not_classified() {
        // Unknown resources and subresources: 404.
        assert_eq!(c("GET", "/api/v1/namespaces/a/deployments"), None);
        assert_eq!(c("GET", "/api/v1/namespaces/a/pods/p/log"), None);
        assert_eq!(c("GET", "/api/v1/namespaces/a/endpoints/e/status"), None);
        // A namespaced object without its namespace, and a write to a namespaced resource
        // across namespaces.
        assert_eq!(c("GET", "/api/v1/pods/p"), None);
        assert_eq!(c("POST", "/api/v1/pods"), None);
        // Methods the path does not serve: 405.
        assert_eq!(c("POST", "/api/v1/namespaces/a/pods/p"), None);
        assert_eq!(c("PUT", "/api/v1/namespaces/a/pods"), None);
        assert_eq!(
            c("GET", "/apis/authentication.k8s.io/v1/tokenreviews"),
            None
        );
        assert_eq!(c("HEAD", "/api/v1/namespaces/a/pods"), None);
        // Bad dryRun values: 400.
        assert_eq!(c("POST", "/api/v1/namespaces/a/pods?dryRun=Some"), None);
        assert_eq!(
            c("POST", "/api/v1/namespaces/a/pods?dryRun=All"),
            k("create", "pods")
        );
    }

    #[test]
    fn the_last_watch_parameter_wins_and_paths_are_percent_decoded() {
        assert_eq!(
            c("GET", "/api/v1/namespaces/a/pods?watch=true&watch=false"),
            k("list", "pods")
        );
        assert_eq!(
            c("GET", "/api/v1/namespaces/a/pods?watch=1"),
            k("watch", "pods")
        );
        assert_eq!(c("GET", "/api/v1/namespaces/a/p%6Fds"), k("list", "pods"));
        // An escaped slash is a slash once decoded, as the router decodes it.
        assert_eq!(c("GET", "/api/v1/namespaces%2Fa%2Fpods"), k("list", "pods"));
    }

    /// The classifier against the server itself: each request is sent through the router, and
    /// what the server counted must be what `classify` said, nothing where it said `None`.
    #[tokio::test]
    async fn the_server_counts_each_request_as_classified() {
        use tower::ServiceExt;
        let server = crate::ApiServer::new(crate::Config::default());
        let requests = [
            ("GET", "/api/v1/namespaces/default/pods"),
            (
                "GET",
                "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=0",
            ),
            ("GET", "/api/v1/pods?watch=1&watch=0"),
            ("POST", "/api/v1/namespaces/default/pods"),
            ("PATCH", "/api/v1/namespaces/default/pods/p/status"),
            (
                "PUT",
                "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/s",
            ),
            ("DELETE", "/api/v1/namespaces/default/services"),
            (
                "POST",
                "/api/v1/namespaces/default/serviceaccounts/sa/token",
            ),
            ("POST", "/apis/authentication.k8s.io/v1/tokenreviews"),
            ("GET", "/apis/authentication.k8s.io/v1/tokenreviews"),
            ("GET", "/api/v1/namespaces%2Fdefault%2Fendpoints"),
            ("GET", "/api/v1/namespaces/default/pods/p/log"),
            ("GET", "/api/v1/namespaces/default/endpoints/e/status"),
            ("GET", "/api/v1/pods/p"),
            ("POST", "/api/v1/pods"),
            ("PUT", "/api/v1/namespaces/default/pods"),
            ("POST", "/api/v1/namespaces/default/pods?dryRun=Some"),
            ("GET", "/api/v1/namespaces/default/deployments"),
            ("GET", "/apis/discovery.k8s.io/v1"),
            ("GET", "/version"),
        ];
        for (method, uri) in requests {
            server.reset_request_counts();
            let request = http::Request::builder()
                .method(method)
                .uri(uri)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(axum::body::Body::from("{}"))
                .unwrap();
            // Only whether and how the request was counted matters, not the answer.
            let _answer = server.service().oneshot(request).await.unwrap();
            let counted: Vec<(String, String)> = server.request_counts().into_keys().collect();
            let classified: Vec<(String, String)> = c(method, uri)
                .map(|(verb, resource)| (verb.to_owned(), resource))
                .into_iter()
                .collect();
            assert_eq!(counted, classified, "{method} {uri}");
        }
    }

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
