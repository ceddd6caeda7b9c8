//! TokenReview and SubjectAccessReview: the two calls a component makes to delegate the
//! authentication and authorization of its own HTTPS endpoints to the API server.
//!
//! kube-controller-manager (and kube-endpoints) check a scraper's bearer token by creating a
//! `TokenReview` (authentication.k8s.io/v1) and ask whether that user may `get /metrics` by
//! creating a `SubjectAccessReview` (authorization.k8s.io/v1) with `nonResourceAttributes`.
//! Neither is stored: the server answers the review with its `status` filled in. Here the
//! answers come from [`Reviews`]: a table of known tokens and a list of non-resource grants,
//! set in [`crate::Config::reviews`] or with [`crate::ApiServer::set_reviews`]. A TokenReview
//! of a token the server issued itself through a TokenRequest is answered from what it knows
//! of that token (`tokens`), as kube-apiserver validates its own service account tokens. The requests
//! are counted, subject to faults and recorded in the request log like any other create, so
//! tests can count review calls and the RBAC test sees them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, MethodRouter};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewStatus, UserInfo};
use k8s_openapi::api::authorization::v1::{SubjectAccessReview, SubjectAccessReviewStatus};
use serde::Serialize;
use serde_json::{json, Value};

use crate::request_log::RequestRecord;
use crate::rest::{content_type, object_response, read_body, RequestParts};
use crate::state::Shared;
use crate::status::ApiError;

/// The group every authenticated user is in, as kube-apiserver adds it.
const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// Who a bearer token belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenUser {
    /// The user name, e.g. `system:serviceaccount:monitoring:prometheus`.
    pub username: String,
    /// The groups besides `system:authenticated`, which every answer adds.
    pub groups: Vec<String>,
}

impl TokenUser {
    /// A user named `username` in `groups`.
    pub fn new(username: impl Into<String>, groups: &[&str]) -> Self {
        Self {
            username: username.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        }
    }
}

/// Who may use which non-resource paths (like an RBAC rule with `nonResourceURLs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NonResourceGrant {
    /// User names granted.
    pub users: BTreeSet<String>,
    /// Groups granted.
    pub groups: BTreeSet<String>,
    /// Verbs, e.g. `get`; `*` is every verb.
    pub verbs: BTreeSet<String>,
    /// Paths, e.g. `/metrics`; a trailing `*` matches by prefix, as RBAC does.
    pub paths: BTreeSet<String>,
}

impl NonResourceGrant {
    /// `get` on `paths` for the user `username`.
    pub fn user_get(username: &str, paths: &[&str]) -> Self {
        Self {
            users: [username.to_owned()].into(),
            verbs: ["get".to_owned()].into(),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            ..Self::default()
        }
    }

    /// Whether this grant covers `verb` on `path` for a user with these groups.
    fn allows(&self, user: &str, groups: &[String], verb: &str, path: &str) -> bool {
        let subject =
            self.users.contains(user) || groups.iter().any(|g| self.groups.contains(g.as_str()));
        let verb_ok = self.verbs.contains("*") || self.verbs.contains(verb);
        let path_ok = self.paths.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => p == path,
        });
        subject && verb_ok && path_ok
    }
}

/// How the server answers reviews. The default knows no token and grants nothing, so every
/// TokenReview answers "not authenticated" and every SubjectAccessReview "not allowed".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reviews {
    /// Bearer tokens and who they belong to.
    pub tokens: BTreeMap<String, TokenUser>,
    /// Non-resource grants a SubjectAccessReview is checked against. Reviews of resource
    /// attributes are always denied: no caller here needs them.
    pub non_resource: Vec<NonResourceGrant>,
}

impl Reviews {
    /// Adds a token for `user`.
    pub fn with_token(mut self, token: &str, user: TokenUser) -> Self {
        self.tokens.insert(token.to_owned(), user);
        self
    }

    /// Adds a grant.
    pub fn with_grant(mut self, grant: NonResourceGrant) -> Self {
        self.non_resource.push(grant);
        self
    }

    fn authenticate(&self, review: &TokenReview) -> TokenReviewStatus {
        let token = review.spec.token.as_deref().unwrap_or_default();
        match self.tokens.get(token) {
            Some(user) => {
                let mut groups = user.groups.clone();
                if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
                    groups.push(AUTHENTICATED_GROUP.to_owned());
                }
                TokenReviewStatus {
                    authenticated: Some(true),
                    user: Some(UserInfo {
                        username: Some(user.username.clone()),
                        groups: Some(groups),
                        ..UserInfo::default()
                    }),
                    audiences: review.spec.audiences.clone(),
                    error: None,
                }
            }
            None => TokenReviewStatus {
                authenticated: Some(false),
                error: Some("invalid bearer token".to_owned()),
                ..TokenReviewStatus::default()
            },
        }
    }

    fn authorize(&self, review: &SubjectAccessReview) -> SubjectAccessReviewStatus {
        let spec = &review.spec;
        let denied = |reason: &str| SubjectAccessReviewStatus {
            allowed: false,
            reason: Some(reason.to_owned()),
            ..SubjectAccessReviewStatus::default()
        };
        let Some(attributes) = &spec.non_resource_attributes else {
            return denied("only non-resource attributes are granted by this server");
        };
        let user = spec.user.as_deref().unwrap_or_default();
        let groups = spec.groups.as_deref().unwrap_or_default();
        let verb = attributes.verb.as_deref().unwrap_or_default();
        let path = attributes.path.as_deref().unwrap_or_default();
        if self
            .non_resource
            .iter()
            .any(|g| g.allows(user, groups, verb, path))
        {
            SubjectAccessReviewStatus {
                allowed: true,
                reason: Some(format!("a grant allows {verb} {path} to {user:?}")),
                ..SubjectAccessReviewStatus::default()
            }
        } else {
            denied(&format!("no grant allows {verb} {path} to {user:?}"))
        }
    }
}

/// The two review resources, for routing, discovery and the request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    Token,
    SubjectAccess,
}

impl Review {
    pub const ALL: [Review; 2] = [Review::Token, Review::SubjectAccess];

    pub fn group(self) -> &'static str {
        match self {
            Review::Token => "authentication.k8s.io",
            Review::SubjectAccess => "authorization.k8s.io",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Review::Token => "tokenreviews",
            Review::SubjectAccess => "subjectaccessreviews",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Review::Token => "TokenReview",
            Review::SubjectAccess => "SubjectAccessReview",
        }
    }

    /// `/apis/{group}/v1/{plural}`.
    pub fn path(self) -> String {
        format!("/apis/{}/v1/{}", self.group(), self.plural())
    }

    /// The review whose group and version these are.
    pub fn in_group(group: &str, version: &str) -> Option<Review> {
        Self::ALL
            .into_iter()
            .find(|r| r.group() == group && version == "v1")
    }

    /// The discovery entry of the resource: create is its only verb.
    pub fn discovery_entry(self) -> Value {
        json!({
            "name": self.plural(),
            "singularName": "",
            "namespaced": false,
            "kind": self.kind(),
            "verbs": ["create"],
        })
    }
}

/// The route of `review`'s path (`POST /apis/authentication.k8s.io/v1/tokenreviews`, ...).
pub(crate) fn route(review: Review) -> MethodRouter<Arc<Shared>> {
    any(
        move |State(shared): State<Arc<Shared>>,
              request: RequestParts,
              body: Result<Bytes, BytesRejection>| async move {
            serve(&shared, review, request, body).await
        },
    )
}

/// Answers a POST of a review: counted, subject to faults and recorded like other creates.
async fn serve(
    shared: &Shared,
    review: Review,
    request: RequestParts,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if request.method != Method::POST {
        return ApiError::method_not_allowed().into_response();
    }
    let body = match read_body(body) {
        Ok(body) => body,
        Err(e) => return e.into_response(),
    };
    shared.count("create", review.plural());
    let decision = shared.faults.decide("create", review.plural(), "");
    if !decision.delay.is_zero() {
        tokio::time::sleep(decision.delay).await;
    }
    let response = match decision.error {
        Some(error) => error.into_response(),
        None => answer(shared, review, &body).unwrap_or_else(IntoResponse::into_response),
    };
    if shared.requests.enabled() {
        let mut record = RequestRecord::review(
            review.group(),
            review.plural(),
            &request.headers,
            request.user.as_deref(),
            response.status().as_u16(),
        );
        record.content_type = content_type(&response);
        shared.requests.push(record);
    }
    response
}

fn answer(shared: &Shared, review: Review, body: &[u8]) -> Result<Response, ApiError> {
    let reviews = shared.reviews();
    match review {
        Review::Token => {
            let mut request: TokenReview = parse(body)?;
            // Tokens this server issued first; the configured table answers for the rest.
            let status = crate::tokens::review(shared, &request)
                .unwrap_or_else(|| reviews.authenticate(&request));
            request.status = Some(status);
            respond(&request)
        }
        Review::SubjectAccess => {
            let mut request: SubjectAccessReview = parse(body)?;
            request.status = Some(reviews.authorize(&request));
            respond(&request)
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("decoding the review: {e}")))
}

/// Reviews are answered with 201 Created, as kube-apiserver does.
fn respond(review: &impl Serialize) -> Result<Response, ApiError> {
    let value = serde_json::to_value(review)
        .map_err(|e| ApiError::internal(format!("encoding the review: {e}")))?;
    Ok(object_response(StatusCode::CREATED, &value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::TokenReviewSpec;
    use k8s_openapi::api::authorization::v1::{NonResourceAttributes, SubjectAccessReviewSpec};

    fn reviews() -> Reviews {
        Reviews::default()
            .with_token(
                "scraper-token",
                TokenUser::new("prometheus", &["monitoring"]),
            )
            .with_grant(NonResourceGrant::user_get("prometheus", &["/metrics"]))
            .with_grant(NonResourceGrant {
                groups: ["ops".to_owned()].into(),
                verbs: ["*".to_owned()].into(),
                paths: ["/debug/*".to_owned()].into(),
                ..NonResourceGrant::default()
            })
    }

    fn token_review(token: &str) -> TokenReview {
        TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        }
    }

    fn access(user: &str, groups: &[&str], verb: &str, path: &str) -> bool {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.to_owned()),
                groups: Some(groups.iter().map(|g| (*g).to_owned()).collect()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some(verb.to_owned()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        reviews().authorize(&review).allowed
    }

    #[test]
    fn a_known_token_authenticates_as_its_user_in_the_authenticated_group() {
        let status = reviews().authenticate(&token_review("scraper-token"));
        assert_eq!(status.authenticated, Some(true));
        let user = status.user.unwrap();
        assert_eq!(user.username.as_deref(), Some("prometheus"));
        assert_eq!(
            user.groups.unwrap(),
            ["monitoring".to_owned(), AUTHENTICATED_GROUP.to_owned()]
        );
    }

    #[test]
    fn an_unknown_token_is_not_authenticated() {
        let status = reviews().authenticate(&token_review("guess"));
        assert_eq!(status.authenticated, Some(false));
        assert!(status.user.is_none());
    }

    #[test]
    fn non_resource_grants_match_user_group_verb_and_path() {
        assert!(access("prometheus", &[], "get", "/metrics"));
        assert!(!access("prometheus", &[], "create", "/metrics"));
        assert!(!access("prometheus", &[], "get", "/metrics/extra"));
        assert!(!access("someone", &[], "get", "/metrics"));
        assert!(access("someone", &["ops"], "delete", "/debug/pprof"));
        assert!(!access("someone", &["ops"], "get", "/metrics"));
    }

    #[test]
    fn resource_attributes_are_never_granted() {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some("prometheus".to_owned()),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        assert!(!reviews().authorize(&review).allowed);
    }
}
