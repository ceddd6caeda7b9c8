//! Leader-elected replicas: `kube-endpoints run` as its Deployment runs it, one
//! [`Replica`] per task, with Lease timings short enough that a hand-over takes a few seconds.
//!
//! The leader-election, high-availability and RBAC tests start their replicas here, so that
//! what they look at (who holds the Lease, who writes, what `/healthz` answers) comes from the
//! same code path the binary takes.

use std::time::Duration;

use axum::body::Body;
use controller::config::LeaderElectionSettings;
use controller::health::{self, Liveness, Readiness};
use controller::leader::LeadershipEnd;
use controller::replica::Replica;
use controller::{Clients, Options};
use http::{Request, StatusCode};
use kube::Client;
use prometheus::Registry;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::cluster::{metric, options, TestCluster};
use crate::wait::{eventually, within};

/// How long past the renew deadline `/healthz` tolerates a leader that has not renewed.
const HEALTH_MARGIN: Duration = Duration::from_millis(500);

/// kube-endpoints' Lease (`kube-system/kube-endpoints`) with short timings: lease 2s, renew
/// deadline 1s, retry 100ms (client-go's rule holds: lease > renew deadline > 1.2 x retry).
pub fn quick_election() -> LeaderElectionSettings {
    LeaderElectionSettings {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(100),
        ..LeaderElectionSettings::default()
    }
}

/// An in-process client to `cluster` whose requests carry `agent` as their `User-Agent`, so
/// that the server's request log tells them from the test's own and from other replicas'.
pub fn client_as(cluster: &TestCluster, agent: &'static str) -> Client {
    let service = cluster.server.service().map_request(
        move |mut request: http::Request<kube::client::Body>| {
            request.headers_mut().insert(
                http::header::USER_AGENT,
                http::HeaderValue::from_static(agent),
            );
            request
        },
    );
    Client::new(service, "default")
}

/// One replica running in a task, and its health routes, served in process.
pub struct ReplicaTask {
    identity: String,
    shutdown: CancellationToken,
    registry: Registry,
    routes: axum::Router,
    task: JoinHandle<LeadershipEnd>,
}

impl ReplicaTask {
    /// A replica known in the Lease as `identity`, running the Endpoints and EndpointSlice
    /// controllers ([`options`]) through a client marked with its identity ([`client_as`]).
    pub fn start(cluster: &TestCluster, identity: &'static str) -> Self {
        Self::start_with(identity, client_as(cluster, identity).into(), options())
    }

    /// A replica known in the Lease as `identity`, running the controllers of `options`
    /// through `clients`; the Lease timings are [`quick_election`]'s, whatever `options` says.
    pub fn start_with(identity: &str, clients: Clients, mut options: Options) -> Self {
        options.settings.leader_election = quick_election();
        let replica = Replica {
            clients,
            options,
            registry: Registry::new(),
            readiness: Readiness::new(),
            liveness: Liveness::new(),
            identity: identity.to_owned(),
            health_margin: HEALTH_MARGIN,
        };
        let routes = health::router(
            replica.registry.clone(),
            replica.readiness.clone(),
            replica.liveness.clone(),
        );
        let registry = replica.registry.clone();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(replica.run(shutdown.clone()));
        Self {
            identity: identity.to_owned(),
            shutdown,
            registry,
            routes,
            task,
        }
    }

    /// Its identity in the Lease.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// GETs `path` (`/healthz`, `/readyz`, ...) from its health routes, as the kubelet
    /// probes it: the status and the body.
    pub async fn probe(&self, path: &str) -> (StatusCode, String) {
        let response = self
            .routes
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).expect("a request"))
            .await
            .expect("the router answers");
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("a body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// Waits until `path` answers `status`, and returns the body.
    pub async fn wait_for(&self, path: &str, status: StatusCode) -> String {
        let what = format!("{} {path} to answer {status}", self.identity);
        eventually(&what, || async move {
            let (got, body) = self.probe(path).await;
            if got == status {
                Ok(body)
            } else {
                Err(format!("{got}: {body}"))
            }
        })
        .await
    }

    /// Successful EndpointSlice syncs it ran.
    pub fn slice_syncs(&self) -> f64 {
        metric(
            &self.registry,
            "endpoint_slice_controller_syncs",
            &[("result", "success")],
        )
    }

    /// Successful Endpoints syncs it ran.
    pub fn endpoints_syncs(&self) -> f64 {
        metric(
            &self.registry,
            "endpoint_controller_syncs",
            &[("result", "success")],
        )
    }

    /// Asks it to shut down, and returns how its leadership ended.
    pub async fn stop(self) -> LeadershipEnd {
        self.shutdown.cancel();
        self.end().await
    }

    /// Waits until it returns without being asked to (when it loses the Lease), and returns
    /// how its leadership ended.
    pub async fn end(self) -> LeadershipEnd {
        let what = format!("{} to return", self.identity);
        within(&what, self.task)
            .await
            .expect("the replica task panicked")
    }

    /// Kills it, as a crash would: it releases nothing, so the Lease names it until the Lease
    /// expires.
    pub async fn crash(self) {
        self.task.abort();
        let _aborted = self.task.await;
    }
}

/// Two replicas on a fresh cluster, its request log on, holding the [`crate::web`] Service
/// and its ready pod `web-1`: the cluster, `alpha`, which holds the Lease when this returns,
/// and `bravo`, its standby, started once `alpha` held the Lease.
pub async fn leader_and_standby() -> anyhow::Result<(TestCluster, ReplicaTask, ReplicaTask)> {
    let cluster = TestCluster::start().await;
    cluster.server.record_requests(true);
    cluster
        .create_web(&[crate::web_pod("web-1", "10.0.0.1")])
        .await?;
    let alpha = ReplicaTask::start(&cluster, "alpha");
    cluster.wait_for_lease_holder("alpha").await;
    let bravo = ReplicaTask::start(&cluster, "bravo");
    Ok((cluster, alpha, bravo))
}
