//! The HTTP endpoints operators probe: `/metrics`, `/healthz` and `/readyz`.
//!
//! `/healthz` answers 200 while the process serves at all (a liveness probe). `/readyz`
//! answers 200 only once [`Readiness`] is set, which the wiring does when the informers have
//! synced, so a rollout waits for a replica that could actually work. `/metrics` renders the
//! registry in Prometheus' text format. Like mini-redis's server, [`serve`] takes a bound
//! listener and a shutdown future, so tests bind `127.0.0.1:0` and stop it when they like.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus::Registry;
use tokio::net::TcpListener;
use tracing::warn;

use crate::config::ServingSettings;
use crate::metrics::{render, TEXT_CONTENT_TYPE};

/// A shared "ready" flag for `/readyz`. Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// A flag that starts not ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets or clears readiness.
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Release);
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

#[derive(Clone)]
struct AppState {
    registry: Registry,
    readiness: Readiness,
}

/// The routes, for serving or for calling in-process.
pub fn router(registry: Registry, readiness: Readiness) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            registry,
            readiness,
        })
}

async fn metrics(State(state): State<AppState>) -> Response {
    match render(&state.registry) {
        Ok(text) => ([(header::CONTENT_TYPE, TEXT_CONTENT_TYPE)], text).into_response(),
        Err(error) => {
            warn!(%error, "cannot render metrics");
            (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response()
        }
    }
}

async fn readyz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    if state.readiness.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "informers not synced")
    }
}

/// Binds `--bind-address`:`--port`.
pub async fn bind(settings: &ServingSettings) -> std::io::Result<TcpListener> {
    TcpListener::bind(SocketAddr::new(settings.bind_address, settings.port)).await
}

/// Serves the routes on `listener` until `shutdown` completes, then finishes the requests
/// in flight and returns.
pub async fn serve(
    listener: TcpListener,
    registry: Registry,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(registry, readiness))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use http::Request;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tower::ServiceExt;

    use super::*;

    async fn call(router: Router, path: &str) -> (StatusCode, String) {
        let response = router
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn readyz_answers_200_only_once_ready() {
        let readiness = Readiness::new();
        let router = router(Registry::new(), readiness.clone());
        assert_eq!(
            call(router.clone(), "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(call(router.clone(), "/healthz").await.0, StatusCode::OK);
        readiness.set(true);
        assert_eq!(call(router, "/readyz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn metrics_renders_the_registry() {
        let registry = Registry::new();
        let counter = prometheus::IntCounter::new("test_counter", "A test counter.").unwrap();
        registry.register(Box::new(counter.clone())).unwrap();
        counter.inc();
        let (status, body) = call(router(registry, Readiness::new()), "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("test_counter 1"), "{body}");
    }

    #[tokio::test]
    async fn serve_answers_over_tcp_and_stops_on_shutdown() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, Registry::new(), Readiness::new(), async {
            let _ = stopped.await;
        }));

        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");

        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }
}
