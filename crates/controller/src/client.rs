//! The Kubernetes API client the controllers use: no hidden retries, bounded requests, and
//! kube-controller-manager's client-side rate limit.
//!
//! kube 5 retries 429, 503 and 504 responses by default (`Config::default_retry`, a tower
//! retry layer). We turn that off: a failed write must fail the sync so that the work queue
//! retries the whole service with its backoff, reading fresh state, as upstream does; a
//! retry below the queue would also repeat requests the rate limit already paid for. Requests
//! are limited like client-go's `--kube-api-qps`/`--kube-api-burst` token bucket, as a tower
//! layer in front of the whole stack, so that every request (watch starts included) takes a
//! token.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use tokio::time::{Instant, Sleep};

use crate::rest_metrics::{host_label, RateLimiterObserver, RestClientMetrics};
use crate::token_bucket::TokenBucket;

/// The `User-Agent` of every request: the program and its version.
pub const USER_AGENT: &str = concat!("kube-endpoints/", env!("CARGO_PKG_VERSION"));

/// How to reach the API server and how hard to use it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// `--kubeconfig`: a kubeconfig file; without it, `KUBECONFIG`, `~/.kube/config` and then
    /// the in-cluster service account are tried, in that order.
    pub kubeconfig: Option<PathBuf>,
    /// `--master`: the API server's address, taking precedence over the kubeconfig's.
    pub master: Option<String>,
    /// `--kube-api-qps`: sustained requests per second (20 by default). Zero or less means
    /// no limit.
    pub qps: f32,
    /// `--kube-api-burst`: requests allowed at once above the sustained rate (30 by default).
    pub burst: u32,
    /// Longest wait to open a connection.
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of a response. It must exceed the watch timeout
    /// (kube's watcher asks the server to end each watch after 290s), or quiet watches
    /// would be cut; 300s by default, and counted from each write so that a pooled
    /// connection's idle time does not count against a new request.
    pub read_timeout: Duration,
    /// Longest wait to send a request.
    pub write_timeout: Duration,
    /// `--kube-api-content-type`: protobuf (the default) or JSON.
    pub encoding: crate::wire::Encoding,
    /// `--use-service-account-credentials`: each controller acts as its own ServiceAccount
    /// in kube-system (see [`crate::service_accounts`]).
    pub use_service_account_credentials: bool,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            kubeconfig: None,
            master: None,
            qps: 20.0,
            burst: 30,
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(300),
            write_timeout: Duration::from_secs(30),
            encoding: crate::wire::Encoding::default(),
            use_service_account_credentials: false,
        }
    }
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig file named by `--kubeconfig` could not be read or parsed.
    #[error("cannot read kubeconfig {path}")]
    ReadKubeconfig {
        /// The file named by `--kubeconfig`.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig was read but does not describe a usable cluster and user.
    #[error("cannot use kubeconfig {path}")]
    UseKubeconfig {
        /// The file named by `--kubeconfig`.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Neither a kubeconfig nor an in-cluster service account was found.
    #[error("no kubeconfig found and not running in a cluster")]
    Infer(#[source] kube::config::InferConfigError),
    /// The client could not be set up from a valid config (TLS or auth setup).
    #[error("cannot build the API client")]
    Build(#[source] kube::Error),
    /// `--master` is not a URL.
    #[error("--master {0:?} is not a URL")]
    Master(String),
    /// A controller's ServiceAccount token could not be had.
    #[error(transparent)]
    Credentials(#[from] crate::service_accounts::CredentialsError),
}

/// Builds the client from `--kubeconfig` (or the inferred config) and the settings.
pub async fn build_client(settings: &ClientSettings) -> Result<Client, ClientError> {
    client_from_config(load_config(settings).await?, settings)
}

/// Loads `--kubeconfig` (or the inferred config) and applies `--master`.
pub async fn load_config(settings: &ClientSettings) -> Result<Config, ClientError> {
    let mut config = match &settings.kubeconfig {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
                    path: path.clone(),
                    source,
                })?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|source| ClientError::UseKubeconfig {
                    path: path.clone(),
                    source,
                })?
        }
        None => Config::infer().await.map_err(ClientError::Infer)?,
    };
    if let Some(master) = &settings.master {
        config.cluster_url = master
            .parse()
            .map_err(|_| ClientError::Master(master.clone()))?;
    }
    Ok(config)
}

/// Builds the client from a loaded `config`, applying the settings' timeouts and rate limit
/// and turning kube's retries off.
pub fn client_from_config(
    config: Config,
    settings: &ClientSettings,
) -> Result<Client, ClientError> {
    let limit = QpsLimitLayer::new(f64::from(settings.qps), settings.burst);
    stack(config, settings, &limit, None, None)
}

/// [`client_from_config`], with its own token bucket, counting its requests in `metrics`.
pub fn metered_client_from_config(
    config: Config,
    settings: &ClientSettings,
    metrics: &RestClientMetrics,
) -> Result<Client, ClientError> {
    let limit = QpsLimitLayer::new(f64::from(settings.qps), settings.burst);
    metered_client(config, settings, metrics, &limit, None)
}

/// A client for `config` taking its tokens from `limit` (clones of one layer share a
/// bucket), counting its requests in `metrics` and, given a `bearer`, sending its token
/// in place of the config's credentials.
pub fn metered_client(
    config: Config,
    settings: &ClientSettings,
    metrics: &RestClientMetrics,
    limit: &QpsLimitLayer,
    bearer: Option<&crate::service_accounts::BearerLayer>,
) -> Result<Client, ClientError> {
    stack(config, settings, limit, Some(metrics), bearer)
}

/// kube's client stack for `config`, with the settings' timeouts and without kube's retries,
/// taking its tokens from `limit`; counting its requests in `metrics` and sending `bearer`'s
/// token when they are given.
fn stack(
    mut config: Config,
    settings: &ClientSettings,
    limit: &QpsLimitLayer,
    metrics: Option<&RestClientMetrics>,
    bearer: Option<&crate::service_accounts::BearerLayer>,
) -> Result<Client, ClientError> {
    config.default_retry = false;
    // Named in the API server's audit log and request metrics, as upstream's clients are.
    if !config
        .headers
        .iter()
        .any(|(name, _)| name == http::header::USER_AGENT)
    {
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_static(USER_AGENT),
        ));
    }
    config.connect_timeout = Some(settings.connect_timeout);
    config.read_timeout = Some(settings.read_timeout);
    config.reset_reader_on_write = true;
    config.write_timeout = Some(settings.write_timeout);
    // A plain-HTTP server needs no TLS, but kube builds its TLS settings anyway and, given no
    // CA, asks the platform for its trust store, which an image FROM scratch does not have.
    // An empty CA list is never consulted for http:// and needs no trust store.
    if config.cluster_url.scheme_str() == Some("http") && config.root_cert.is_none() {
        config.root_cert = Some(Vec::new());
    }
    let host = host_label(&config.cluster_url);
    let limit = match metrics {
        Some(metrics) => limit
            .clone()
            .observed_by(metrics.rate_limiter(host.clone())),
        None => limit.clone(),
    };
    Ok(ClientBuilder::try_from(config)
        .map_err(ClientError::Build)?
        .with_layer(&tower::util::option_layer(bearer.cloned()))
        .with_layer(&limit)
        .with_layer(&tower::util::option_layer(
            metrics.map(|metrics| metrics.layer(host)),
        ))
        .build())
}

/// A tower layer making every request wait for a token from a shared bucket, like
/// client-go's `flowcontrol.NewTokenBucketRateLimiter(qps, burst)`. Clones share the bucket.
#[derive(Debug, Clone)]
pub struct QpsLimitLayer {
    bucket: Arc<TokenBucket>,
    observer: Option<RateLimiterObserver>,
}

impl QpsLimitLayer {
    /// A limit of `qps` requests per second with bursts of `burst`; `qps <= 0` disables it.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            bucket: Arc::new(TokenBucket::new(qps, burst)),
            observer: None,
        }
    }

    /// Reports each request's wait for its token to `observer`
    /// (`rest_client_rate_limiter_duration_seconds`).
    pub fn observed_by(self, observer: RateLimiterObserver) -> Self {
        Self {
            observer: Some(observer),
            ..self
        }
    }
}

impl<S> tower::Layer<S> for QpsLimitLayer {
    type Service = QpsLimit<S>;

    fn layer(&self, inner: S) -> QpsLimit<S> {
        QpsLimit {
            inner,
            bucket: Arc::clone(&self.bucket),
            observer: self.observer.clone(),
            wait: None,
            permitted: None,
        }
    }
}

/// The service made by [`QpsLimitLayer`]: not ready until the bucket grants a token.
pub struct QpsLimit<S> {
    inner: S,
    bucket: Arc<TokenBucket>,
    observer: Option<RateLimiterObserver>,
    /// The wait for a reserved token, if one is reserved but not yet due, and when the
    /// reservation was made.
    wait: Option<(Pin<Box<Sleep>>, Instant)>,
    /// How long the token held for the next call took to come, if one is held.
    permitted: Option<Duration>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for QpsLimit<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QpsLimit")
            .field("inner", &self.inner)
            .field("permitted", &self.permitted)
            .finish_non_exhaustive()
    }
}

impl<S, B> tower::Service<http::Request<B>> for QpsLimit<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.permitted.is_none() {
            if self.wait.is_none() {
                let delay = self.bucket.reserve();
                if delay.is_zero() {
                    self.permitted = Some(Duration::ZERO);
                } else {
                    // sleep() saturates a delay past the clock's range; `now + delay` would panic.
                    self.wait = Some((Box::pin(tokio::time::sleep(delay)), Instant::now()));
                }
            }
            if let Some((wait, since)) = self.wait.as_mut() {
                ready!(wait.as_mut().poll(cx));
                self.permitted = Some(since.elapsed());
                self.wait = None;
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        // The token is spent by this request; the next one reserves its own.
        let waited = self.permitted.take().unwrap_or_default();
        if let Some(observer) = &self.observer {
            observer.observe(request.method(), waited);
        }
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tower::{Layer, Service, ServiceExt};

    use super::*;

    /// A service answering each request with its body.
    fn echo() -> impl Service<http::Request<u32>, Response = u32, Error = Infallible> {
        tower::service_fn(|r: http::Request<u32>| async move { Ok(*r.body()) })
    }

    /// Sends `body` through `service` once it is ready; its answer.
    async fn call(
        service: &mut impl Service<http::Request<u32>, Response = u32, Error = Infallible>,
        body: u32,
    ) -> u32 {
        let ready = service.ready().await.unwrap();
        ready.call(http::Request::new(body)).await.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn requests_past_the_burst_wait_for_the_rate() {
        let mut service = QpsLimitLayer::new(10.0, 2).layer(echo());
        let start = Instant::now();
        for n in 0..4 {
            assert_eq!(call(&mut service, n).await, n);
        }
        // Two from the burst, then one every 100ms.
        assert_eq!(start.elapsed(), Duration::from_millis(200));
    }

    #[tokio::test(start_paused = true)]
    async fn clones_of_the_layer_share_one_bucket() {
        let layer = QpsLimitLayer::new(1.0, 1);
        let mut a = layer.layer(echo());
        let mut b = layer.clone().layer(echo());
        let start = Instant::now();
        call(&mut a, 1).await;
        call(&mut b, 2).await;
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[test]
    fn defaults_match_kube_controller_manager() {
        let settings = ClientSettings::default();
        assert_eq!(settings.qps, 20.0);
        assert_eq!(settings.burst, 30);
    }

    #[tokio::test]
    async fn client_is_built_without_kube_retries() {
        let config = Config::new("http://127.0.0.1:1".parse().unwrap());
        assert!(client_from_config(config, &ClientSettings::default()).is_ok());
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_file_is_reported_with_its_path() {
        let settings = ClientSettings {
            kubeconfig: Some(PathBuf::from("/nonexistent/kubeconfig")),
            ..ClientSettings::default()
        };
        match build_client(&settings).await {
            Err(error) => assert!(error.to_string().contains("/nonexistent/kubeconfig")),
            Ok(_) => panic!("a missing kubeconfig must fail"),
        }
    }
}
