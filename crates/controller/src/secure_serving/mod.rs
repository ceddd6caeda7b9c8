//! HTTPS for `/metrics`, `/healthz`, `/livez` and `/readyz`, with authentication and
//! authorization delegated to the API server, as kube-controller-manager serves them on
//! `--secure-port` (10257).
//!
//! Every request goes through one guard in front of [`crate::health::router`]'s handlers:
//!
//! 1. A bearer token, if the request carries one, is checked with a TokenReview
//!    ([`authn`]); a token the API server does not recognise gets 401, even on a health path.
//! 2. Paths in `--authorization-always-allow-paths` (`/healthz,/readyz,/livez`) are served,
//!    so the kubelet's probes need no credentials.
//! 3. Any other path needs a token (401 without one) and a SubjectAccessReview ([`authz`])
//!    allowing its verb on the path (`get /metrics`); a denial gets 403.
//!
//! Upstream treats a request without credentials as `system:anonymous` and asks the API
//! server about that user, which on a default cluster ends in 403. We answer 401 at once: a
//! scraper without a token gets told to authenticate, and no review is spent on it.
//! Client certificates (`--client-ca-file`, `--requestheader-*`) are not supported.

pub mod authn;
pub mod authz;
mod cache;
pub mod tls;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use kube::Client;
use rustls::ServerConfig;
use serde_json::json;
use tokio::net::TcpListener;
use tracing::{debug, warn};

use crate::client::{build_client, ClientError, ClientSettings};
use authn::{TokenAuthenticator, User};
use authz::{AlwaysAllowPaths, Authorizer};
pub use tls::{CertSource, ServingCert, TlsError, TlsListener};

/// kube-controller-manager's `--secure-port` default.
pub const DEFAULT_SECURE_PORT: u16 = 10257;

/// `--secure-port`, the certificate flags and the delegated authentication and authorization
/// flags, with kube-controller-manager's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct SecureServingSettings {
    /// `--secure-port` (10257); 0 turns HTTPS serving off, as upstream.
    pub port: u16,
    /// `--tls-cert-file`/`--tls-private-key-file`, or a generated certificate (`--cert-dir`).
    pub cert: CertSource,
    /// `--authentication-kubeconfig`: where TokenReviews go; `None` uses the controllers'
    /// own connection (`--kubeconfig`, or the in-cluster config).
    pub authentication_kubeconfig: Option<PathBuf>,
    /// `--authentication-token-webhook-cache-ttl` (10s).
    pub token_cache_ttl: Duration,
    /// `--authorization-kubeconfig`: where SubjectAccessReviews go; `None` as above.
    pub authorization_kubeconfig: Option<PathBuf>,
    /// `--authorization-always-allow-paths` (`/healthz,/readyz,/livez`).
    pub always_allow_paths: Vec<String>,
    /// `--authorization-webhook-cache-authorized-ttl` (10s).
    pub authorized_ttl: Duration,
    /// `--authorization-webhook-cache-unauthorized-ttl` (10s).
    pub unauthorized_ttl: Duration,
}

impl Default for SecureServingSettings {
    fn default() -> Self {
        Self {
            port: DEFAULT_SECURE_PORT,
            cert: CertSource::default(),
            authentication_kubeconfig: None,
            token_cache_ttl: Duration::from_secs(10),
            authorization_kubeconfig: None,
            always_allow_paths: ["/healthz", "/readyz", "/livez"]
                .map(str::to_owned)
                .to_vec(),
            authorized_ttl: Duration::from_secs(10),
            unauthorized_ttl: Duration::from_secs(10),
        }
    }
}

impl SecureServingSettings {
    /// Whether HTTPS is served at all.
    pub fn enabled(&self) -> bool {
        self.port != 0
    }

    /// Binds `bind_address`:`--secure-port`.
    pub async fn bind(&self, bind_address: IpAddr) -> std::io::Result<TcpListener> {
        TcpListener::bind(SocketAddr::new(bind_address, self.port)).await
    }
}

/// Who may call what: the authenticator, the authorizer and the paths open to all.
pub struct Access {
    authn: TokenAuthenticator,
    authz: Authorizer,
    always_allow: AlwaysAllowPaths,
}

impl Access {
    /// Reviews tokens through `authentication` and access through `authorization` (often the
    /// same client), with the TTLs and paths of `settings`.
    pub fn new(
        authentication: Client,
        authorization: Client,
        settings: &SecureServingSettings,
    ) -> Self {
        Self {
            authn: TokenAuthenticator::new(authentication, settings.token_cache_ttl),
            authz: Authorizer::new(
                authorization,
                settings.authorized_ttl,
                settings.unauthorized_ttl,
            ),
            always_allow: AlwaysAllowPaths::new(&settings.always_allow_paths),
        }
    }
}

/// The clients TokenReviews and SubjectAccessReviews go through: from
/// `--authentication-kubeconfig` and `--authorization-kubeconfig`, or else the controllers'
/// own `connection`. Like upstream's, they get their own rate limit (200 per second, bursts
/// of 400) and a 10s timeout: they sit in the path of every uncached scrape, and must not
/// queue behind the controllers' writes.
pub async fn review_clients(
    settings: &SecureServingSettings,
    connection: &ClientSettings,
) -> Result<(Client, Client), ClientError> {
    let client_settings = |kubeconfig: &Option<PathBuf>| {
        let mut s = connection.clone();
        s.qps = 200.0;
        s.burst = 400;
        s.read_timeout = REVIEW_TIMEOUT;
        if let Some(path) = kubeconfig {
            // --master overrides the controllers' kubeconfig only, as upstream.
            s.kubeconfig = Some(path.clone());
            s.master = None;
        }
        s
    };
    let authn = client_settings(&settings.authentication_kubeconfig);
    let authz = client_settings(&settings.authorization_kubeconfig);
    let authn_client = build_client(&authn).await?;
    let authz_client = if authz == authn {
        authn_client.clone()
    } else {
        build_client(&authz).await?
    };
    Ok((authn_client, authz_client))
}

/// Upstream's timeout for review calls.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// Puts the guard in front of every route of `router`.
pub fn guarded(router: Router, access: Arc<Access>) -> Router {
    router.layer(middleware::from_fn_with_state(access, guard))
}

/// Serves `router` behind the guard over TLS (`tls`, from [`ServingCert::server_config`])
/// on `listener` until `shutdown` completes, then finishes the requests in flight and
/// returns.
pub async fn serve(
    listener: TcpListener,
    tls: ServerConfig,
    access: Access,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = TlsListener::new(listener, tls)?;
    crate::health::serve(listener, guarded(router, Arc::new(access)), shutdown).await
}

/// What an `Authorization` header holds.
enum Credentials<'a> {
    /// No bearer token (no header, or another scheme).
    None,
    /// A bearer token; possibly empty, which no API server accepts.
    Bearer(&'a str),
}

fn credentials(headers: &HeaderMap) -> Credentials<'_> {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Credentials::None;
    };
    match value.trim().split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
            Credentials::Bearer(token.trim())
        }
        _ => Credentials::None,
    }
}

/// The verb a non-resource request asks for, as kube-apiserver names it.
fn verb(method: &Method) -> String {
    match *method {
        Method::GET | Method::HEAD => "get".to_owned(),
        Method::POST => "create".to_owned(),
        Method::PUT => "update".to_owned(),
        Method::PATCH => "patch".to_owned(),
        Method::DELETE => "delete".to_owned(),
        ref other => other.as_str().to_ascii_lowercase(),
    }
}

async fn guard(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let user = match credentials(request.headers()) {
        Credentials::None => None,
        Credentials::Bearer("") => return unauthorized(),
        Credentials::Bearer(token) => match access.authn.authenticate(token).await {
            Ok(Some(user)) => Some(user),
            Ok(None) => {
                debug!(path, "bearer token not recognised");
                return unauthorized();
            }
            Err(error) => {
                warn!(%error, "cannot authenticate a request");
                return unauthorized();
            }
        },
    };
    if access.always_allow.contains(&path) {
        return next.run(request).await;
    }
    let Some(user) = user else {
        return unauthorized();
    };
    let verb = verb(request.method());
    match access.authz.authorize(&user, &verb, &path).await {
        Ok(decision) if decision.allowed => next.run(request).await,
        Ok(decision) => forbidden(&user, &verb, &path, &decision.reason),
        Err(error) => {
            warn!(%error, user = user.name, path, "cannot authorize a request");
            status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "Internal Server Error: authorization failed".to_owned(),
            )
        }
    }
}

fn unauthorized() -> Response {
    status(
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "Unauthorized".to_owned(),
    )
}

fn forbidden(user: &User, verb: &str, path: &str, reason: &str) -> Response {
    let mut message = format!(
        "forbidden: User {:?} cannot {verb} path {path:?}",
        user.name
    );
    if !reason.is_empty() {
        message.push_str(&format!(": {reason}"));
    }
    status(StatusCode::FORBIDDEN, "Forbidden", message)
}

/// A `Status` body, as the Kubernetes components answer refusals.
fn status(code: StatusCode, reason: &str, message: String) -> Response {
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_authorization(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        headers
    }

    #[test]
    fn only_bearer_credentials_are_read() {
        assert!(matches!(
            credentials(&with_authorization("Bearer abc")),
            Credentials::Bearer("abc")
        ));
        assert!(matches!(
            credentials(&with_authorization("bearer  abc ")),
            Credentials::Bearer("abc")
        ));
        assert!(matches!(
            credentials(&with_authorization("Bearer ")),
            Credentials::None | Credentials::Bearer("")
        ));
        assert!(matches!(
            credentials(&with_authorization("Basic dXNlcjpwYXNz")),
            Credentials::None
        ));
        assert!(matches!(credentials(&HeaderMap::new()), Credentials::None));
    }

    #[test]
    fn defaults_match_kube_controller_manager() {
        let settings = SecureServingSettings::default();
        assert_eq!(settings.port, 10257);
        assert_eq!(settings.cert, CertSource::SelfSigned { cert_dir: None });
        assert_eq!(
            settings.always_allow_paths,
            ["/healthz", "/readyz", "/livez"]
        );
        for ttl in [
            settings.token_cache_ttl,
            settings.authorized_ttl,
            settings.unauthorized_ttl,
        ] {
            assert_eq!(ttl, Duration::from_secs(10));
        }
        assert_eq!(crate::config::ServingSettings::default().port, None);
    }

    #[test]
    fn verbs_follow_kube_apiserver_for_non_resource_requests() {
        assert_eq!(verb(&Method::GET), "get");
        assert_eq!(verb(&Method::HEAD), "get");
        assert_eq!(verb(&Method::POST), "create");
        assert_eq!(verb(&Method::DELETE), "delete");
    }
}
