//! Each controller as its own ServiceAccount (`--use-service-account-credentials`).
//!
//! With the flag, kube-controller-manager keeps its own identity (the one of `--kubeconfig`)
//! for leader election and for obtaining credentials, and every controller talks to the API
//! server as a ServiceAccount of its own in `kube-system`. The bootstrap ClusterRoles every
//! cluster carries (`system:controller:endpoint-controller` and the others) are bound to
//! those accounts, and the audit log tells which controller wrote what.
//!
//! A controller's token comes from the TokenRequest API (`serviceaccounts/{name}/token`),
//! asked for an hour as upstream asks, after making sure the ServiceAccount exists (it is
//! created when missing). It is renewed when four fifths of its life have passed, and at once
//! when the API server answers a request with 401 (the token expired early or its account
//! was re-created): that request fails and its sync is retried, the next one carries the new
//! token. A server granting less than ten minutes is taken to mean ten, as upstream takes it
//! (a short grant is more likely clock skew than policy); the 401 path covers the rest.
//!
//! Each controller writes, records its Events and watches with its own token, so the three
//! bootstrap roles are all it needs. The shared informers watch each kind as the first
//! running controller whose bootstrap role may watch it ([`Identity::watching`]): the
//! process's own identity then needs no read access at all.

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use http::{HeaderValue, StatusCode};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::Client;
use tokio::sync::mpsc;

/// The namespace of the controllers' ServiceAccounts, as upstream keeps them.
pub const NAMESPACE: &str = "kube-system";

/// How long a token is asked for: an hour, as kube-controller-manager asks.
const EXPIRATION_SECONDS: i64 = 3600;

/// The shortest life a granted token is taken to have.
const MIN_LIFETIME: Duration = Duration::from_secs(600);

/// The part of a token's life left when it is renewed.
const LEEWAY_PERCENT: u32 = 20;

/// Waits between failed attempts at a token: 0.5 s doubling, at most 30 s.
const FIRST_RETRY: Duration = Duration::from_millis(500);
const LAST_RETRY: Duration = Duration::from_secs(30);

/// How many attempts the first token of a controller gets before start-up fails:
/// 0.5 + 1 + 2 + 4 s of waiting, as upstream's backoff.
const FIRST_TOKEN_ATTEMPTS: u32 = 5;

/// A controller that acts as its own ServiceAccount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// The Endpoints controller: `endpoint-controller`.
    Endpoints,
    /// The EndpointSlice controller: `endpointslice-controller`.
    EndpointSlices,
    /// The mirroring controller: `endpointslicemirroring-controller`.
    Mirroring,
}

/// A kind the shared informers watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
    /// Pods.
    Pods,
    /// Services.
    Services,
    /// Nodes.
    Nodes,
    /// EndpointSlices.
    EndpointSlices,
    /// Endpoints.
    Endpoints,
}

impl Identity {
    /// All three, in the order the informers pick among them.
    pub const ALL: [Identity; 3] = [
        Identity::Endpoints,
        Identity::EndpointSlices,
        Identity::Mirroring,
    ];

    /// The controller's name in kube-controller-manager's `--controllers` list, as metrics
    /// label it (`controller`).
    pub fn controller_name(self) -> &'static str {
        match self {
            Identity::Endpoints => "endpoints-controller",
            Identity::EndpointSlices => "endpointslice-controller",
            Identity::Mirroring => "endpointslice-mirroring-controller",
        }
    }

    /// The ServiceAccount's name, as upstream names it.
    pub fn service_account(self) -> &'static str {
        match self {
            Identity::Endpoints => "endpoint-controller",
            Identity::EndpointSlices => "endpointslice-controller",
            Identity::Mirroring => "endpointslicemirroring-controller",
        }
    }

    /// The component its Events are recorded under, as upstream's controller names itself
    /// there (not quite its ServiceAccount's name).
    pub fn event_component(self) -> &'static str {
        match self {
            Identity::Endpoints => "endpoint-controller",
            Identity::EndpointSlices => "endpoint-slice-controller",
            Identity::Mirroring => reconcile::mirroring::EVENT_COMPONENT,
        }
    }

    /// The user the API server knows it as.
    pub fn username(self) -> String {
        format!(
            "system:serviceaccount:{NAMESPACE}:{}",
            self.service_account()
        )
    }

    /// Whether this controller's bootstrap ClusterRole lets it list and watch `kind`.
    pub fn may_watch(self, kind: Watched) -> bool {
        use Watched::*;
        match self {
            Identity::Endpoints => matches!(kind, Pods | Services | Endpoints),
            Identity::EndpointSlices => matches!(kind, Pods | Services | Nodes | EndpointSlices),
            Identity::Mirroring => matches!(kind, Services | Endpoints | EndpointSlices),
        }
    }

    /// The identity the informer of `kind` watches as: the first of `running` whose role may
    /// watch it, `None` if none may (the process's own identity then watches it).
    pub fn watching(kind: Watched, running: &[Identity]) -> Option<Identity> {
        running.iter().copied().find(|id| id.may_watch(kind))
    }
}

/// Why a controller's credentials could not be had.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot get a token for ServiceAccount {NAMESPACE}/{service_account} \
     (--use-service-account-credentials): {source}"
)]
pub struct CredentialsError {
    /// The ServiceAccount.
    pub service_account: &'static str,
    /// The last failure.
    #[source]
    pub source: kube::Error,
}

impl CredentialsError {
    /// Whether the API server refused the process's own identity (RBAC), rather than failed.
    pub fn is_forbidden(&self) -> bool {
        is_forbidden(&self.source)
    }
}

fn is_forbidden(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403)
}

/// A ServiceAccount's current token, renewed in the background for as long as a client
/// made with [`Token::layer`] exists.
#[derive(Clone)]
pub struct Token {
    header: Arc<RwLock<HeaderValue>>,
    renew: mpsc::Sender<()>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token").finish_non_exhaustive()
    }
}

impl Token {
    /// Makes sure `identity`'s ServiceAccount exists and gets its first token, through
    /// `own` (the process's own identity), then keeps renewing it.
    pub async fn start(own: Client, identity: Identity) -> Result<Self, CredentialsError> {
        let mut retry = TokenRetry::default();
        let mut attempt = 1;
        let issued = loop {
            match issue(&own, identity).await {
                Ok(issued) => break issued,
                // RBAC will not change its mind on a retry.
                Err(source) if attempt >= FIRST_TOKEN_ATTEMPTS || is_forbidden(&source) => {
                    return Err(CredentialsError {
                        service_account: identity.service_account(),
                        source,
                    })
                }
                Err(err) => {
                    retry.wait_after(identity, &err, "getting a token").await;
                    attempt += 1;
                }
            }
        };
        let header = Arc::new(RwLock::new(issued.header));
        // One renewal asked for at a time is enough: a burst of 401s asks once.
        let (renew, asked) = mpsc::channel(1);
        tokio::spawn(keep_renewed(
            own,
            identity,
            Arc::downgrade(&header),
            asked,
            issued.renew_after,
        ));
        Ok(Self { header, renew })
    }

    /// The `Authorization` header value to send now.
    fn current(&self) -> HeaderValue {
        self.header
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Sets the token on every request of a client, and asks for a new one when the API
    /// server no longer accepts it. Apply it with `ClientBuilder::with_layer`.
    pub fn layer(&self) -> BearerLayer {
        BearerLayer(self.clone())
    }
}

/// The tower layer of [`Token::layer`].
#[derive(Debug, Clone)]
pub struct BearerLayer(Token);

impl<S> tower::Layer<S> for BearerLayer {
    type Service = Bearer<S>;

    fn layer(&self, inner: S) -> Bearer<S> {
        Bearer {
            inner,
            token: self.0.clone(),
        }
    }
}

/// The service made by [`BearerLayer`].
#[derive(Debug, Clone)]
pub struct Bearer<S> {
    inner: S,
    token: Token,
}

impl<S, B, R> tower::Service<http::Request<B>> for Bearer<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, self.token.current());
        let answered = self.inner.call(request);
        let renew = self.token.renew.clone();
        Box::pin(async move {
            let response = answered.await?;
            if response.status() == StatusCode::UNAUTHORIZED {
                // Full means a renewal is already asked for.
                let _ = renew.try_send(());
            }
            Ok(response)
        })
    }
}

/// A token as granted.
struct Issued {
    header: HeaderValue,
    /// When to ask for the next one.
    renew_after: Duration,
}

/// Renews the token held by `header` until every client holding it is gone.
async fn keep_renewed(
    own: Client,
    identity: Identity,
    header: Weak<RwLock<HeaderValue>>,
    mut asked: mpsc::Receiver<()>,
    mut renew_after: Duration,
) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(renew_after) => {}
            asked = asked.recv() => {
                if asked.is_none() {
                    return;
                }
                tracing::info!(
                    service_account = identity.service_account(),
                    "the API server refused the token; renewing it"
                );
            }
        }
        let mut retry = TokenRetry::default();
        let issued = loop {
            if header.strong_count() == 0 {
                return;
            }
            match issue(&own, identity).await {
                Ok(issued) => break issued,
                Err(err) => retry.wait_after(identity, &err, "renewing the token").await,
            }
        };
        let Some(header) = header.upgrade() else {
            return;
        };
        *header
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = issued.header;
        renew_after = issued.renew_after;
        // A 401 that came in while the token was being renewed asked for what was just done.
        while asked.try_recv().is_ok() {}
    }
}

/// Gets `identity`'s ServiceAccount, creating it if it is missing, then a token for it.
/// The wait before the next attempt at a token: [`FIRST_RETRY`] at first, doubling up to
/// [`LAST_RETRY`].
struct TokenRetry(Duration);

impl Default for TokenRetry {
    fn default() -> Self {
        Self(FIRST_RETRY)
    }
}

impl TokenRetry {
    /// Logs that `attempt` failed for `identity` with `err`, then waits before the next one.
    async fn wait_after(&mut self, identity: Identity, err: &kube::Error, attempt: &str) {
        tracing::warn!(
            service_account = identity.service_account(),
            err = %err,
            "{attempt} failed; retrying"
        );
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(LAST_RETRY);
    }
}

async fn issue(own: &Client, identity: Identity) -> Result<Issued, kube::Error> {
    let accounts: Api<ServiceAccount> = Api::namespaced(own.clone(), NAMESPACE);
    let name = identity.service_account();
    if accounts.get_opt(name).await?.is_none() {
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(NAMESPACE.to_owned()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        match accounts.create(&PostParams::default(), &account).await {
            Ok(_) => tracing::info!(service_account = name, "created the ServiceAccount"),
            // Another replica made it first.
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(err) => return Err(err),
        }
    }
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(EXPIRATION_SECONDS),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let granted = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    let Some(status) = granted.status else {
        return Err(kube::Error::Service(
            "the API server answered the TokenRequest without a token".into(),
        ));
    };
    let mut header = HeaderValue::try_from(format!("Bearer {}", status.token))
        .map_err(|err| kube::Error::Service(Box::new(err)))?;
    // Kept out of debug output and HTTP/2 header compression tables.
    header.set_sensitive(true);
    let now = k8s_openapi::jiff::Timestamp::now();
    let lifetime = now
        .duration_until(status.expiration_timestamp.0)
        .try_into()
        .unwrap_or(Duration::ZERO)
        .max(MIN_LIFETIME);
    Ok(Issued {
        header,
        renew_after: renew_after(lifetime),
    })
}

/// When a token living `lifetime` is renewed: once four fifths of it have passed.
fn renew_after(lifetime: Duration) -> Duration {
    lifetime * (100 - LEEWAY_PERCENT) / 100
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_renewed_with_a_fifth_of_its_life_left() {
        assert_eq!(
            renew_after(Duration::from_secs(3600)),
            Duration::from_secs(2880)
        );
    }

    #[test]
    fn each_kind_is_watched_by_the_first_running_controller_allowed_to() {
        use Identity::*;
        let all = Identity::ALL;
        assert_eq!(Identity::watching(Watched::Pods, &all), Some(Endpoints));
        assert_eq!(
            Identity::watching(Watched::Nodes, &all),
            Some(EndpointSlices)
        );
        assert_eq!(
            Identity::watching(Watched::EndpointSlices, &all),
            Some(EndpointSlices)
        );
        assert_eq!(
            Identity::watching(Watched::Endpoints, &all),
            Some(Endpoints)
        );
        assert_eq!(
            Identity::watching(Watched::Pods, &[Mirroring]),
            None,
            "the mirroring controller's role has no pods"
        );
        assert_eq!(
            Identity::watching(Watched::Endpoints, &[EndpointSlices, Mirroring]),
            Some(Mirroring)
        );
    }
}
