//! The HTTP endpoints operators probe: `/metrics`, `/healthz`, `/livez` and `/readyz`.
//!
//! `/healthz` and `/livez` (the same checks; kube-controller-manager serves both) answer 200
//! unless the process is wedged, as [`Liveness`] tracks: this replica leads but has not
//! renewed its Lease for longer than the renew deadline plus a margin, it lost the Lease
//! and is stopping, or the controllers' task ended without being asked to. A failing
//! liveness probe restarts the pod, and the standby takes over.
//!
//! `/readyz` answers 200 once [`Readiness`] is set. With leader election, a standby that
//! waits for the Lease is ready (it runs no informers, like kube-controller-manager's
//! standby); the leader is ready once its informers synced. So a two-replica rollout
//! proceeds, and a leader that cannot sync is taken out of the metrics Service.
//!
//! `/metrics` renders the registry in Prometheus' text format. [`crate::secure_serving`]
//! serves these routes over HTTPS behind authentication; [`serve`] is the plain HTTP server
//! of `--port`, which is off unless asked for. Like mini-redis's server,
//! [`serve`] takes a bound listener and a shutdown future, so tests bind `127.0.0.1:0` and
//! stop it when they like.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus::Registry;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tracing::warn;

use crate::config::ServingSettings;
use crate::metrics::{render, TEXT_CONTENT_TYPE};

/// What `/readyz` answers: ready once the informers synced, and not while one of their
/// watches keeps failing. Clones share the state.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<ReadinessState>);

#[derive(Debug, Default)]
struct ReadinessState {
    synced: AtomicBool,
    /// Wakes [`Readiness::synced`] waiters.
    became_synced: tokio::sync::Notify,
    /// Kinds whose watch failed and has not delivered an event since: how many times in a
    /// row, and when it last failed.
    failing: Mutex<BTreeMap<String, (u32, Instant)>>,
}

/// How long after its last failure a quiet watch counts as working again. A watch that
/// keeps failing fails again within kube's longest retry backoff (30 s); one that stays
/// quiet for longer than that is open, even if nothing changed to deliver an event.
pub const WATCH_RECOVERY_QUIET: Duration = Duration::from_secs(35);

impl Readiness {
    /// A flag that starts not ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets or clears readiness.
    pub fn set(&self, ready: bool) {
        self.0.synced.store(ready, Ordering::Release);
        if ready {
            self.0.became_synced.notify_waiters();
        }
    }

    /// Waits until the informers have synced (at once if they have).
    pub async fn synced(&self) {
        loop {
            let notified = self.0.became_synced.notified();
            if self.is_synced() {
                return;
            }
            notified.await;
        }
    }

    /// A watch of `kind` failed: not ready until it delivers an event or stays quiet for
    /// [`WATCH_RECOVERY_QUIET`]. (Waiting for a second failure would miss the common case of
    /// a server that went away: the retry then often hangs on a dead connection instead of
    /// failing.)
    pub fn watch_failed(&self, kind: &str) {
        let now = Instant::now();
        self.failing()
            .entry(kind.to_owned())
            .and_modify(|(times, last)| {
                *times = times.saturating_add(1);
                *last = now;
            })
            .or_insert((1, now));
    }

    /// A watch of `kind` delivered an event: it works.
    pub fn watch_working(&self, kind: &str) {
        let mut failing = self.failing();
        if !failing.is_empty() {
            failing.remove(kind);
        }
    }

    /// Whether the informers synced, whatever their watches do since: what a caller waiting
    /// for the controllers to have caught up needs (the watch health is `/readyz`'s concern).
    pub fn is_synced(&self) -> bool {
        self.0.synced.load(Ordering::Acquire)
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        if !self.is_synced() {
            return false;
        }
        let now = Instant::now();
        self.failing()
            .values()
            .all(|(_, last)| now.saturating_duration_since(*last) >= WATCH_RECOVERY_QUIET)
    }

    fn failing(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (u32, Instant)>> {
        self.0
            .failing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// What this replica knows of its own Lease, for the liveness check.
#[derive(Debug, Clone, Copy, Default)]
enum LeaseState {
    /// Not leading (a standby, or leader election off): nothing to check.
    #[default]
    NotLeading,
    /// Leading; the Lease was last written at `renewed` and must be again within `timeout`.
    Leading { renewed: Instant, timeout: Duration },
    /// Leadership was lost; the controllers are stopping and the process will exit.
    Lost,
}

#[derive(Debug, Default)]
struct LivenessState {
    lease: LeaseState,
    /// Why the controllers' task ended on its own, if it did.
    controllers_stopped: Option<String>,
}

/// The checks of `/healthz` and `/livez`. Clones share the state. The leader elector
/// reports its renewals (see [`crate::leader::LeaderElector::with_liveness`]); the wiring
/// reports controllers that stopped.
#[derive(Debug, Clone, Default)]
pub struct Liveness(Arc<Mutex<LivenessState>>);

/// One named check's result, as `/healthz` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    /// `leader-election` or `controllers`.
    pub name: &'static str,
    /// Why it fails; `None` when it passes.
    pub failure: Option<String>,
}

impl Liveness {
    /// Checks that pass: not leading, nothing stopped.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LivenessState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This replica wrote the Lease as its holder just now; it must again within `timeout`.
    pub fn renewed(&self, timeout: Duration) {
        self.lock().lease = LeaseState::Leading {
            renewed: Instant::now(),
            timeout,
        };
    }

    /// This replica handed the Lease back (or never held it).
    pub fn not_leading(&self) {
        self.lock().lease = LeaseState::NotLeading;
    }

    /// This replica could not renew within the renew deadline and gave up leading.
    pub fn lost(&self) {
        self.lock().lease = LeaseState::Lost;
    }

    /// The controllers' task ended, or died, without being asked to stop.
    pub fn controllers_stopped(&self, why: impl Into<String>) {
        self.lock().controllers_stopped = Some(why.into());
    }

    /// Every check, at `now`.
    pub fn check(&self, now: Instant) -> Vec<CheckResult> {
        let state = self.lock();
        let lease = match state.lease {
            LeaseState::NotLeading => None,
            LeaseState::Leading { renewed, timeout } => {
                let since = now.saturating_duration_since(renewed);
                (since > timeout).then(|| {
                    format!(
                        "leading, but the Lease was last renewed {:.1}s ago (allowed: {:.1}s)",
                        since.as_secs_f64(),
                        timeout.as_secs_f64()
                    )
                })
            }
            LeaseState::Lost => Some("the leader Lease was lost; stopping".to_owned()),
        };
        vec![
            CheckResult {
                name: "leader-election",
                failure: lease,
            },
            CheckResult {
                name: "controllers",
                failure: state.controllers_stopped.clone(),
            },
        ]
    }
}

#[derive(Clone)]
struct AppState {
    registry: Registry,
    readiness: Readiness,
    liveness: Liveness,
}

/// The routes, for serving or for calling in-process.
pub fn router(registry: Registry, readiness: Readiness, liveness: Liveness) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            registry,
            readiness,
            liveness,
        })
}

/// Lists the checks as the Kubernetes components do (`[+]name ok`, `[-]name failed: why`).
async fn healthz(State(state): State<AppState>) -> (StatusCode, String) {
    let checks = state.liveness.check(Instant::now());
    let mut body = String::new();
    for check in &checks {
        match &check.failure {
            None => body.push_str(&format!("[+]{} ok\n", check.name)),
            Some(why) => body.push_str(&format!("[-]{} failed: {why}\n", check.name)),
        }
    }
    if checks.iter().all(|c| c.failure.is_none()) {
        body.push_str("healthz check passed\n");
        (StatusCode::OK, body)
    } else {
        warn!(checks = %body.trim_end().replace('\n', "; "), "healthz check failed");
        body.push_str("healthz check failed\n");
        (StatusCode::INTERNAL_SERVER_ERROR, body)
    }
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
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: informers not synced",
        )
    }
}

/// Binds `--bind-address`:`--port` for plain HTTP; `None` when `--port` is off.
pub async fn bind(settings: &ServingSettings) -> std::io::Result<Option<TcpListener>> {
    match settings.port {
        Some(port) => Ok(Some(
            TcpListener::bind(SocketAddr::new(settings.bind_address, port)).await?,
        )),
        None => Ok(None),
    }
}

/// Serves `routes` ([`router`]'s, guarded or not) on `listener` (plain TCP, or TLS over it:
/// [`crate::secure_serving::serve`]) until `shutdown` completes, then finishes the requests
/// in flight and returns.
pub async fn serve<L>(
    listener: L,
    routes: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    axum::serve(listener, routes)
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

    #[tokio::test]
    async fn synced_waits_for_the_informers_and_returns_at_once_after() {
        let readiness = Readiness::new();
        let waiting = tokio::spawn({
            let readiness = readiness.clone();
            async move { readiness.synced().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        readiness.set(true);
        waiting.await.unwrap();
        readiness.synced().await;
    }

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
        let router = router(Registry::new(), readiness.clone(), Liveness::new());
        assert_eq!(
            call(router.clone(), "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(call(router.clone(), "/healthz").await.0, StatusCode::OK);
        readiness.set(true);
        assert_eq!(call(router, "/readyz").await.0, StatusCode::OK);
    }

    #[tokio::test(start_paused = true)]
    async fn readyz_fails_while_a_watch_keeps_failing() {
        let readiness = Readiness::new();
        let router = router(Registry::new(), readiness.clone(), Liveness::new());
        readiness.set(true);
        readiness.watch_failed("Pod");
        assert_eq!(
            call(router.clone(), "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        readiness.watch_working("Service");
        assert!(!readiness.is_ready(), "another kind's event proves nothing");
        readiness.watch_working("Pod");
        assert_eq!(call(router.clone(), "/readyz").await.0, StatusCode::OK);

        readiness.watch_failed("Node");
        tokio::time::advance(WATCH_RECOVERY_QUIET - Duration::from_secs(1)).await;
        readiness.watch_failed("Node");
        tokio::time::advance(WATCH_RECOVERY_QUIET - Duration::from_secs(1)).await;
        assert!(!readiness.is_ready(), "failing again within the quiet time");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(readiness.is_ready(), "a quiet watch is open again");
    }

    #[tokio::test(start_paused = true)]
    async fn healthz_fails_once_a_leader_has_not_renewed_for_longer_than_allowed() {
        let liveness = Liveness::new();
        let router = router(Registry::new(), Readiness::new(), liveness.clone());
        liveness.renewed(Duration::from_secs(30));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(call(router.clone(), "/healthz").await.0, StatusCode::OK);
        tokio::time::advance(Duration::from_millis(1)).await;
        let (status, body) = call(router.clone(), "/livez").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            body.contains("[-]leader-election failed: leading, but"),
            "{body}"
        );
        assert!(body.contains("[+]controllers ok"), "{body}");

        liveness.renewed(Duration::from_secs(30));
        assert_eq!(call(router.clone(), "/healthz").await.0, StatusCode::OK);
        liveness.not_leading();
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(
            call(router, "/healthz").await.0,
            StatusCode::OK,
            "a standby has nothing to renew"
        );
    }

    #[tokio::test]
    async fn healthz_fails_after_a_lost_lease_or_stopped_controllers() {
        let lost = Liveness::new();
        lost.lost();
        let (status, body) =
            call(router(Registry::new(), Readiness::new(), lost), "/healthz").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(body.contains("Lease was lost"), "{body}");

        let stopped = Liveness::new();
        stopped.controllers_stopped("the controllers panicked");
        let (status, body) =
            call(router(Registry::new(), Readiness::new(), stopped), "/livez").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            body.contains("[-]controllers failed: the controllers panicked"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn metrics_renders_the_registry() {
        let registry = Registry::new();
        let counter = prometheus::IntCounter::new("test_counter", "A test counter.").unwrap();
        registry.register(Box::new(counter.clone())).unwrap();
        counter.inc();
        let (status, body) = call(
            router(registry, Readiness::new(), Liveness::new()),
            "/metrics",
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("test_counter 1"), "{body}");
    }

    #[tokio::test]
    async fn serve_answers_over_tcp_and_stops_on_shutdown() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            router(Registry::new(), Readiness::new(), Liveness::new()),
            async {
                let _ = stopped.await;
            },
        ));

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
