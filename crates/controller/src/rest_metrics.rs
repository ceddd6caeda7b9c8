//! client-go's REST client metrics, counted by a tower layer in every client we build.
//!
//! kube-controller-manager exports `rest_client_requests_total{code,host,method}`,
//! `rest_client_request_duration_seconds{verb,host}` and
//! `rest_client_rate_limiter_duration_seconds{verb,host}` from client-go, and dashboards
//! watch them for a controller that hammers the API server or starves behind its
//! `--kube-api-qps`. We keep upstream's names, labels and buckets: `code` is the HTTP status
//! or `<error>` when no response came back, `method` and `verb` are the HTTP method, `host`
//! is the API server's `host:port`. The layer sits outside the rate limit, so a request's
//! duration includes its wait for a token, as upstream's does; it ends when the response
//! head arrives (upstream also counts reading the body), so a watch counts the time to
//! start its stream. The rate limiter's own wait is observed inside the limit layer
//! ([`crate::client::QpsLimit`]) through [`RateLimiterObserver`]. One set of instruments
//! serves every client of a process, each client adding its requests to the same series.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use prometheus::{HistogramVec, IntCounterVec, Registry};

use crate::instruments::Instruments;
use tokio::time::Instant;

/// client-go's latency buckets, in seconds, shared by both duration histograms.
const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

/// The `code` of a request that got no response (a connection or timeout error): upstream
/// keeps arbitrary error strings out of the label to bound its cardinality.
pub const ERROR_CODE: &str = "<error>";

/// The three instruments; clones share them.
#[derive(Debug, Clone)]
pub struct RestClientMetrics {
    requests: IntCounterVec,
    request_duration: HistogramVec,
    rate_limiter_duration: HistogramVec,
}

impl RestClientMetrics {
    /// Creates the instruments and registers them into `registry`; fails if they already are.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let instruments = Instruments::new(registry);
        let latency = |name: &str, help: &str| {
            instruments.histogram_vec(name, help, LATENCY_BUCKETS.to_vec(), &["verb", "host"])
        };
        Ok(Self {
            requests: instruments.metric_vec(
                "rest_client_requests_total",
                "Number of HTTP requests, partitioned by status code, method, and host.",
                &["code", "method", "host"],
            )?,
            request_duration: latency(
                "rest_client_request_duration_seconds",
                "Request latency in seconds. Broken down by verb, and host.",
            )?,
            rate_limiter_duration: latency(
                "rest_client_rate_limiter_duration_seconds",
                "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            )?,
        })
    }

    /// The layer counting requests to the API server at `host` (`host:port`).
    pub fn layer(&self, host: impl Into<String>) -> RestMetricsLayer {
        RestMetricsLayer {
            metrics: self.clone(),
            host: host.into(),
        }
    }

    /// What the rate limit layer of a client of `host` reports its waits to.
    pub fn rate_limiter(&self, host: impl Into<String>) -> RateLimiterObserver {
        RateLimiterObserver {
            histogram: self.rate_limiter_duration.clone(),
            host: host.into(),
        }
    }
}

/// Observes how long requests waited for a rate limiter token.
#[derive(Debug, Clone)]
pub struct RateLimiterObserver {
    histogram: HistogramVec,
    host: String,
}

impl RateLimiterObserver {
    /// Records that a `method` request waited `waited` (zero when a token was at hand).
    pub fn observe(&self, method: &http::Method, waited: Duration) {
        self.histogram
            .with_label_values(&[method.as_str(), &self.host])
            .observe(waited.as_secs_f64());
    }
}

/// The host label of a client of `url`: its `host:port`, or `none` without an authority, as
/// client-go labels a client without a base URL.
pub fn host_label(url: &http::Uri) -> String {
    url.authority()
        .map_or_else(|| "none".to_owned(), |authority| authority.to_string())
}

/// A tower layer counting each request and timing it, from the moment it first waited to be
/// sent (token wait included) until its response head arrived.
#[derive(Debug, Clone)]
pub struct RestMetricsLayer {
    metrics: RestClientMetrics,
    host: String,
}

impl<S> tower::Layer<S> for RestMetricsLayer {
    type Service = RestMetrics<S>;

    fn layer(&self, inner: S) -> RestMetrics<S> {
        RestMetrics {
            inner,
            metrics: self.metrics.clone(),
            host: self.host.clone(),
            waiting_since: None,
        }
    }
}

/// The service made by [`RestMetricsLayer`].
#[derive(Debug)]
pub struct RestMetrics<S> {
    inner: S,
    metrics: RestClientMetrics,
    host: String,
    /// When the next request started waiting for the inner service (the rate limit) to be
    /// ready; kube's client polls readiness only once a request is queued, so this is when
    /// the request began.
    waiting_since: Option<Instant>,
}

impl<S, B, R> tower::Service<http::Request<B>> for RestMetrics<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = MeteredResponse<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.waiting_since.get_or_insert_with(Instant::now);
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let started = self.waiting_since.take().unwrap_or_else(Instant::now);
        let method = request.method().clone();
        MeteredResponse {
            inner: self.inner.call(request),
            metrics: self.metrics.clone(),
            host: self.host.clone(),
            method,
            started,
        }
    }
}

pin_project_lite::pin_project! {
    /// A response on its way, recorded when it arrives or fails.
    pub struct MeteredResponse<F> {
        #[pin]
        inner: F,
        metrics: RestClientMetrics,
        host: String,
        method: http::Method,
        started: Instant,
    }
}

impl<F, R, E> Future for MeteredResponse<F>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx));
        let code = match &result {
            Ok(response) => response.status().as_u16().to_string(),
            Err(_) => ERROR_CODE.to_owned(),
        };
        let method = this.method.as_str();
        this.metrics
            .requests
            .with_label_values(&[&code, method, this.host])
            .inc();
        this.metrics
            .request_duration
            .with_label_values(&[method, this.host])
            .observe(this.started.elapsed().as_secs_f64());
        Poll::Ready(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::QpsLimitLayer;
    use prometheus::proto::MetricFamily;
    use tower::{Layer, Service, ServiceExt};

    fn family<'a>(families: &'a [MetricFamily], name: &str) -> &'a MetricFamily {
        families
            .iter()
            .find(|f| f.name() == name)
            .unwrap_or_else(|| panic!("{name} is not registered"))
    }

    fn labels(family: &MetricFamily, index: usize) -> Vec<(String, String)> {
        family.get_metric()[index]
            .get_label()
            .iter()
            .map(|l| (l.name().to_owned(), l.value().to_owned()))
            .collect()
    }

    fn request(method: http::Method) -> http::Request<()> {
        http::Request::builder()
            .method(method)
            .uri("/api/v1/pods")
            .body(())
            .unwrap()
    }

    #[tokio::test]
    async fn requests_are_counted_by_code_method_and_host() {
        let registry = Registry::new();
        let metrics = RestClientMetrics::register(&registry).unwrap();
        let mut service = metrics.layer("10.0.0.1:6443").layer(tower::service_fn(
            |r: http::Request<()>| async move {
                let status = if r.method() == http::Method::POST {
                    409
                } else {
                    200
                };
                Ok::<_, std::convert::Infallible>(
                    http::Response::builder().status(status).body(()).unwrap(),
                )
            },
        ));
        for method in [http::Method::GET, http::Method::GET, http::Method::POST] {
            service
                .ready()
                .await
                .unwrap()
                .call(request(method))
                .await
                .unwrap();
        }
        let text = crate::metrics::render(&registry).unwrap();
        assert!(text.contains(
            r#"rest_client_requests_total{code="200",host="10.0.0.1:6443",method="GET"} 2"#
        ));
        assert!(text.contains(
            r#"rest_client_requests_total{code="409",host="10.0.0.1:6443",method="POST"} 1"#
        ));
        assert!(text.contains(
            r#"rest_client_request_duration_seconds_count{host="10.0.0.1:6443",verb="GET"} 2"#
        ));
    }

    #[tokio::test]
    async fn a_request_without_a_response_is_counted_as_an_error() {
        let registry = Registry::new();
        let metrics = RestClientMetrics::register(&registry).unwrap();
        let mut service =
            metrics
                .layer("h:1")
                .layer(tower::service_fn(|_: http::Request<()>| async move {
                    Err::<http::Response<()>, _>("connection refused")
                }));
        let result = service
            .ready()
            .await
            .unwrap()
            .call(request(http::Method::PUT))
            .await;
        assert!(result.is_err());
        let families = registry.gather();
        let requests = family(&families, "rest_client_requests_total");
        assert_eq!(
            labels(requests, 0),
            [
                ("code".to_owned(), ERROR_CODE.to_owned()),
                ("host".to_owned(), "h:1".to_owned()),
                ("method".to_owned(), "PUT".to_owned()),
            ]
        );
    }

    #[test]
    fn histograms_use_client_go_buckets_and_labels() {
        let registry = Registry::new();
        let metrics = RestClientMetrics::register(&registry).unwrap();
        metrics
            .rate_limiter("h:1")
            .observe(&http::Method::GET, Duration::ZERO);
        metrics
            .request_duration
            .with_label_values(&["GET", "h:1"])
            .observe(0.0);
        let families = registry.gather();
        for name in [
            "rest_client_request_duration_seconds",
            "rest_client_rate_limiter_duration_seconds",
        ] {
            let histogram = family(&families, name);
            let bounds: Vec<f64> = histogram.get_metric()[0]
                .get_histogram()
                .get_bucket()
                .iter()
                .map(|b| b.upper_bound())
                .collect();
            assert_eq!(bounds, LATENCY_BUCKETS, "{name}");
            assert_eq!(
                labels(histogram, 0),
                [
                    ("host".to_owned(), "h:1".to_owned()),
                    ("verb".to_owned(), "GET".to_owned()),
                ],
                "{name}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_for_a_token_is_observed_and_counted_in_the_request_duration() {
        let registry = Registry::new();
        let metrics = RestClientMetrics::register(&registry).unwrap();
        let limit = QpsLimitLayer::new(1.0, 1).observed_by(metrics.rate_limiter("h:1"));
        let echo = tower::service_fn(|_: http::Request<()>| async move {
            Ok::<_, std::convert::Infallible>(http::Response::new(()))
        });
        let mut service = metrics.layer("h:1").layer(limit.layer(echo));
        for _ in 0..2 {
            service
                .ready()
                .await
                .unwrap()
                .call(request(http::Method::GET))
                .await
                .unwrap();
        }
        let families = registry.gather();
        let waits = family(&families, "rest_client_rate_limiter_duration_seconds").get_metric()[0]
            .get_histogram();
        // The first request took the burst token, the second waited the one second refill.
        assert_eq!(waits.get_sample_count(), 2);
        assert_eq!(waits.get_sample_sum(), 1.0);
        let durations = family(&families, "rest_client_request_duration_seconds").get_metric()[0]
            .get_histogram();
        assert_eq!(durations.get_sample_sum(), 1.0);
    }

    #[test]
    fn the_host_label_is_the_api_servers_authority() {
        assert_eq!(
            host_label(&"https://10.0.0.1:6443".parse().unwrap()),
            "10.0.0.1:6443"
        );
        assert_eq!(host_label(&"/api".parse().unwrap()), "none");
    }
}
