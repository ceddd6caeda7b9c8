//! ServiceAccount tokens: the TokenRequest API that issues them, and the authentication of
//! the requests that carry them.
//!
//! kube-controller-manager with `--use-service-account-credentials` runs each controller as
//! its own ServiceAccount and gets its credentials by creating a TokenRequest on
//! `serviceaccounts/{name}/token`. kube-apiserver answers with a signed JWT bound to the
//! ServiceAccount's uid, its audiences and an expiry; this server answers with an opaque random
//! string and remembers those same facts for it. A request whose `Authorization: Bearer` header
//! carries such a token is authenticated as the ServiceAccount; once the token has expired, or
//! its ServiceAccount is gone (or was re-created, with another uid), the request gets kube's
//! 401. Every other request, with no token or one this server did not issue, is served as
//! before: the server has no other authentication, and tests rely on that.
//!
//! Expiry is measured on tokio's clock, so a test on a paused clock can `advance` past it, and
//! is exact: kube-apiserver accepts a JWT up to a minute past its `exp`, a leeway that would
//! only slow down the tests of short-lived tokens ([`crate::Config::token_lifetime_cap`]).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use k8s_openapi::api::authentication::v1::{
    TokenRequest, TokenRequestStatus, TokenReview, TokenReviewStatus, UserInfo,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tokio::time::Instant;

use crate::rest::{object_response, protobuf_response, Encoding, Target};
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::meta_str;
use crate::validation::field::{self, FieldError, Path};

/// The audience of the API server itself (kube-apiserver's `--api-audiences`, which defaults
/// to its `--service-account-issuer`; this is the issuer kubeadm and kind configure). A token
/// requested without audiences gets this one, and only tokens for it authenticate requests.
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// The group and version of TokenRequests.
pub(crate) const API_VERSION: &str = "authentication.k8s.io/v1";
/// The kind the `token` subresource takes and answers.
pub(crate) const KIND: &str = "TokenRequest";

/// `spec.expirationSeconds` when a TokenRequest leaves it out (upstream's v1 defaulting).
const DEFAULT_EXPIRATION_SECONDS: i64 = 60 * 60;
/// The shortest lifetime upstream's validation allows.
const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;
/// The longest lifetime upstream's validation allows.
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// The group of every ServiceAccount, and the prefix of the group of each namespace's.
const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The group every authenticated user is in.
const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// Who a token this server issued belongs to.
#[derive(Debug)]
pub(crate) struct ServiceAccountUser {
    /// `system:serviceaccount:{namespace}:{name}`.
    pub username: String,
    /// The ServiceAccount's uid.
    pub uid: String,
    /// `system:serviceaccounts`, `system:serviceaccounts:{namespace}`, `system:authenticated`.
    pub groups: Vec<String>,
}

impl ServiceAccountUser {
    fn new(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            username: format!("system:serviceaccount:{namespace}:{name}"),
            uid: uid.to_owned(),
            groups: vec![
                SERVICE_ACCOUNTS_GROUP.to_owned(),
                format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
                AUTHENTICATED_GROUP.to_owned(),
            ],
        }
    }
}

/// What the server knows of one token it issued.
#[derive(Debug)]
struct Issued {
    namespace: String,
    name: String,
    /// The uid of the ServiceAccount when the token was issued: the token dies with it.
    uid: String,
    audiences: Vec<String>,
    expires: Instant,
    user: Arc<ServiceAccountUser>,
}

/// What a bearer token says about a request.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Not a token of this server: the request is served as every request was before.
    NotIssued,
    /// A valid token of this ServiceAccount.
    User(Arc<ServiceAccountUser>),
    /// A token of this server that no longer authenticates, and why.
    Refused(String),
}

/// The tokens one server issued.
pub(crate) struct Tokens {
    /// Starts every token of this server, so that one it issued and has since forgotten
    /// (expired tokens are dropped) is still told from one it never issued, such as a token
    /// of another server in the same test process.
    prefix: String,
    issued: RwLock<HashMap<String, Arc<Issued>>>,
    /// Test-only: the longest lifetime granted ([`crate::Config::token_lifetime_cap`]).
    lifetime_cap: RwLock<Option<Duration>>,
    /// Feeds the random draws, so no two are of the same input.
    draws: AtomicU64,
}

/// Credentials stay out of debug output: only how many tokens are live.
impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let issued = self
            .issued
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Tokens")
            .field("issued", &issued)
            .field("lifetime_cap", &self.lifetime_cap)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    pub fn new(lifetime_cap: Option<Duration>) -> Self {
        let draws = AtomicU64::new(0);
        let prefix = format!("kube-endpoints.{}.", random_hex(&draws, 1));
        Self {
            prefix,
            issued: RwLock::default(),
            lifetime_cap: RwLock::new(lifetime_cap),
            draws,
        }
    }

    pub fn set_lifetime_cap(&self, cap: Option<Duration>) {
        *self
            .lifetime_cap
            .write()
            .unwrap_or_else(PoisonError::into_inner) = cap;
    }

    /// How long a token asked for `seconds` lives: that long, or the cap when it is shorter.
    fn lifetime(&self, seconds: i64) -> Duration {
        let asked = Duration::from_secs(u64::try_from(seconds).unwrap_or_default());
        let cap = *self
            .lifetime_cap
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        cap.map_or(asked, |cap| asked.min(cap))
    }

    /// Remembers `issued` under a new token and returns the token. Tokens past their expiry
    /// are forgotten here, which keeps the table as small as the live tokens.
    fn issue(&self, issued: Issued) -> String {
        let token = format!("{}{}", self.prefix, random_hex(&self.draws, 4));
        let now = Instant::now();
        let mut table = self.issued.write().unwrap_or_else(PoisonError::into_inner);
        table.retain(|_, t| t.expires > now);
        table.insert(token.clone(), Arc::new(issued));
        token
    }

    /// Checks `token` for `audiences` (the request's, or the API server's own): a token of this
    /// server must be unexpired, meant for one of them, and its ServiceAccount must still be
    /// the one it was issued for. Returns the audiences the token is valid for as well.
    fn check(&self, shared: &Shared, token: &str, audiences: &[String]) -> (Verdict, Vec<String>) {
        if !token.starts_with(&self.prefix) {
            return (Verdict::NotIssued, Vec::new());
        }
        // Not held while the store is read below: no lock is ever taken inside another here.
        let found = self
            .issued
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .cloned();
        let Some(issued) = found else {
            // Ours by its prefix: expired and forgotten, or made up.
            return (refused("invalid bearer token"), Vec::new());
        };
        if Instant::now() >= issued.expires {
            return (refused("service account token has expired"), Vec::new());
        }
        let valid_for: Vec<String> = audiences
            .iter()
            .filter(|a| issued.audiences.contains(a))
            .cloned()
            .collect();
        if valid_for.is_empty() {
            let why = format!(
                "token audiences {:?} is invalid for the target audiences {audiences:?}",
                issued.audiences
            );
            return (Verdict::Refused(why), Vec::new());
        }
        let accounts = crate::resources::service_accounts();
        let current_uid = shared.read(|c| {
            c.store
                .get(accounts, &issued.namespace, &issued.name)
                .and_then(|sa| meta_str(sa, "uid"))
                .map(str::to_owned)
        });
        match current_uid {
            Some(uid) if uid == issued.uid => (Verdict::User(issued.user.clone()), valid_for),
            Some(_) => (
                refused("service account UID does not match the token's"),
                Vec::new(),
            ),
            None => (refused("service account has been deleted"), Vec::new()),
        }
    }
}

fn refused(why: &str) -> Verdict {
    Verdict::Refused(why.to_owned())
}

/// `count` random 64-bit words as hex. Tokens are credentials, so they come from std's
/// randomly keyed SipHash (keys drawn from the OS once per thread) rather than from the seeded
/// generator of [`crate::random`], whose draws anyone knowing the seed could repeat.
fn random_hex(draws: &AtomicU64, count: usize) -> String {
    (0..count)
        .map(|_| {
            let draw = draws.fetch_add(1, Ordering::Relaxed);
            format!("{:016x}", RandomState::new().hash_one(draw))
        })
        .collect()
}

/// The token of an `Authorization: Bearer <token>` header, as kube-apiserver reads it.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let mut parts = value.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Authenticates a request's bearer token, for the API server's own audience.
pub(crate) fn authenticate(shared: &Shared, token: &str) -> Verdict {
    shared
        .tokens
        .check(shared, token, &[API_AUDIENCE.to_owned()])
        .0
}

/// The status of a TokenReview of a token this server issued, or `None` for any other token
/// (which the configured [`crate::Reviews`] then answer). As kube-apiserver does, the token
/// must be valid for one of the review's audiences (the API server's when it names none), and
/// `status.audiences` lists those it is valid for.
pub(crate) fn review(shared: &Shared, review: &TokenReview) -> Option<TokenReviewStatus> {
    let token = review.spec.token.as_deref().unwrap_or_default();
    let audiences = match review.spec.audiences.as_deref() {
        Some(audiences) if !audiences.is_empty() => audiences.to_vec(),
        _ => vec![API_AUDIENCE.to_owned()],
    };
    match shared.tokens.check(shared, token, &audiences) {
        (Verdict::NotIssued, _) => None,
        (Verdict::User(user), valid_for) => Some(TokenReviewStatus {
            authenticated: Some(true),
            user: Some(UserInfo {
                username: Some(user.username.clone()),
                uid: Some(user.uid.clone()),
                groups: Some(user.groups.clone()),
                extra: None,
            }),
            audiences: Some(valid_for),
            error: None,
        }),
        (Verdict::Refused(why), _) => Some(TokenReviewStatus {
            authenticated: Some(false),
            error: Some(why),
            ..TokenReviewStatus::default()
        }),
    }
}

/// `POST .../serviceaccounts/{name}/token`: issues a token for the ServiceAccount, answered
/// with the TokenRequest (201) as kube-apiserver answers it, in JSON or protobuf (kubectl and
/// client-go send and accept protobuf). A dry run answers the same but issues nothing that
/// authenticates. `boundObjectRef` is echoed, not checked.
pub(crate) fn request_token(
    shared: &Shared,
    target: &Target,
    body: &[u8],
) -> Result<Response, ApiError> {
    let mut decoded = if crate::protobuf::payload(body).is_some() {
        crate::protobuf::decode_kind_body(API_VERSION, KIND, body)?
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
        })?
    };
    // The server fills the status in; what the client sent there is dropped, and a protobuf
    // body always carries one (with a zero expiration time, JSON `null`).
    if let Some(object) = decoded.as_object_mut() {
        object.remove("status");
    }
    let mut request: TokenRequest = serde_json::from_value(decoded)
        .map_err(|e| ApiError::bad_request(format!("decoding the TokenRequest: {e}")))?;
    let accounts = target.resource;
    let namespace = target.namespace.as_deref().unwrap_or_default();
    let name = target.name.as_deref().unwrap_or_default();
    let meta = &request.metadata;
    for (field, given, want) in [
        ("name", &meta.name, name),
        ("namespace", &meta.namespace, namespace),
    ] {
        if let Some(given) = given.as_deref().filter(|g| !g.is_empty() && *g != want) {
            let path = Path::new("metadata").child(field);
            let detail = format!("must match the service account {field} if specified");
            let error = FieldError::invalid(&path, given, &detail);
            return Err(invalid(name, &[error]));
        }
    }
    let uid = shared
        .read(|c| {
            c.store
                .get(accounts, namespace, name)
                .map(|sa| meta_str(sa, "uid").unwrap_or_default().to_owned())
        })
        .ok_or_else(|| ApiError::not_found(accounts, name))?;

    let spec = &mut request.spec;
    if spec.audiences.is_empty() {
        spec.audiences = vec![API_AUDIENCE.to_owned()];
    }
    let asked = *spec
        .expiration_seconds
        .get_or_insert(DEFAULT_EXPIRATION_SECONDS);
    let path = Path::new("spec").child("expirationSeconds");
    if asked < MIN_EXPIRATION_SECONDS {
        let detail = "may not specify a duration less than 10 minutes";
        return Err(invalid("", &[FieldError::invalid(&path, asked, detail)]));
    }
    if asked > MAX_EXPIRATION_SECONDS {
        let detail = "may not specify a duration larger than 2^32 seconds";
        return Err(invalid("", &[FieldError::invalid(&path, asked, detail)]));
    }
    let lifetime = shared.tokens.lifetime(asked);
    // The answer says the lifetime granted, in whole seconds: a capped one rounds up.
    let granted =
        i64::try_from(lifetime.as_secs() + u64::from(lifetime.subsec_nanos() > 0)).unwrap_or(asked);
    spec.expiration_seconds = Some(granted);

    let meta = &mut request.metadata;
    meta.name = Some(name.to_owned());
    meta.namespace = Some(namespace.to_owned());
    if meta.uid.as_deref().is_none_or(str::is_empty) {
        meta.uid = Some(uid.clone());
    }
    let now = crate::random::wall_clock();
    meta.creation_timestamp = Some(Time(now));
    let expires_at = now
        .checked_add(SignedDuration::try_from(lifetime).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX);
    let issued = Issued {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        user: Arc::new(ServiceAccountUser::new(namespace, name, &uid)),
        uid,
        audiences: request.spec.audiences.clone(),
        expires: Instant::now() + lifetime,
    };
    let token = if target.dry_run {
        random_hex(&shared.tokens.draws, 4)
    } else {
        shared.tokens.issue(issued)
    };
    request.status = Some(TokenRequestStatus {
        token,
        expiration_timestamp: Time(expires_at),
    });
    let value = serde_json::to_value(&request)
        .map_err(|e| ApiError::internal(format!("encoding the TokenRequest: {e}")))?;
    Ok(match target.encoding {
        Encoding::Json => object_response(StatusCode::CREATED, &value),
        Encoding::Protobuf => protobuf_response(
            StatusCode::CREATED,
            crate::protobuf::encode_object(API_VERSION, KIND, &value),
        ),
    })
}

/// kube-apiserver's 422 for a TokenRequest, which names the kind, not the resource.
fn invalid(name: &str, errors: &[FieldError]) -> ApiError {
    field::into_kind_error("authentication.k8s.io", "TokenRequest", name, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_as_kube_apiserver_reads_them() {
        let cases = [
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("  Bearer abc  ", Some("abc")),
            ("Basic abc", None),
            ("Bearer", None),
        ];
        for (authorization, want) in cases {
            let headers = [(header::AUTHORIZATION, authorization.parse().unwrap())];
            let headers = HeaderMap::from_iter(headers);
            assert_eq!(bearer_token(&headers), want, "{authorization:?}");
        }
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn a_capped_lifetime_is_never_longer_than_the_cap() {
        let tokens = Tokens::new(Some(Duration::from_millis(1500)));
        assert_eq!(tokens.lifetime(3600), Duration::from_millis(1500));
        tokens.set_lifetime_cap(None);
        assert_eq!(tokens.lifetime(3600), Duration::from_secs(3600));
    }

    #[test]
    fn tokens_are_distinct_and_carry_their_server_prefix() {
        let (a, b) = (Tokens::new(None), Tokens::new(None));
        assert_ne!(a.prefix, b.prefix, "each server has its own prefix");
        let first = random_hex(&a.draws, 4);
        assert_eq!(first.len(), 64);
        assert_ne!(first, random_hex(&a.draws, 4));
    }
}
