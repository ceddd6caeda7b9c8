//! Two replicas of the Deployment against one embedded API server, probed as the kubelet
//! would: both pass `/readyz` (the standby too), only the Lease holder writes, a stopped
//! leader hands over, and a leader whose Lease renewals fail turns `/healthz` failing.
//!
//! Durations are short (lease 2s, renew deadline 1s, retry 100ms, health margin 500ms);
//! waits poll with a generous deadline and never assert on timing.

use std::time::Duration;

use axum::body::Body;
use controller::config::LeaderElectionSettings;
use controller::health::{self, Liveness, Readiness};
use controller::leader::LeadershipEnd;
use controller::replica::Replica;
use http::{Request, StatusCode};
use kube::Client;
use prometheus::Registry;
use testkit::{eventually, metric, options, pod_names, until, web_pod, within, TestCluster};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

const NS: &str = "default";
const LEASE: &str = "kube-endpoints";
const LEASE_NAMESPACE: &str = "kube-system";

fn election() -> LeaderElectionSettings {
    LeaderElectionSettings {
        enabled: true,
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(100),
        resource_name: LEASE.into(),
        resource_namespace: LEASE_NAMESPACE.into(),
    }
}

/// A client whose requests carry `agent` as `User-Agent`, so the request log tells the
/// replicas apart.
fn client_as(cluster: &TestCluster, agent: &'static str) -> Client {
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

/// One `kube-endpoints run` replica, and its health routes.
struct Instance {
    name: &'static str,
    shutdown: CancellationToken,
    registry: Registry,
    routes: axum::Router,
    task: JoinHandle<LeadershipEnd>,
}

impl Instance {
    fn start(cluster: &TestCluster, name: &'static str) -> Self {
        let mut options = options();
        options.settings.leader_election = election();
        let (registry, readiness, liveness) = (Registry::new(), Readiness::new(), Liveness::new());
        let routes = health::router(registry.clone(), readiness.clone(), liveness.clone());
        let replica = Replica {
            clients: client_as(cluster, name).into(),
            options,
            registry: registry.clone(),
            readiness,
            liveness,
            identity: name.into(),
            health_margin: Duration::from_millis(500),
        };
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(replica.run(shutdown.clone()));
        Self {
            name,
            shutdown,
            registry,
            routes,
            task,
        }
    }

    async fn probe(&self, path: &str) -> (StatusCode, String) {
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

    /// Waits until `path` answers `status`.
    async fn wait_for(&self, path: &str, status: StatusCode) -> String {
        eventually(
            &format!("{} {path} to answer {status}", self.name),
            || async move {
                let (got, body) = self.probe(path).await;
                if got == status {
                    Ok(body)
                } else {
                    Err(format!("{got}: {body}"))
                }
            },
        )
        .await
    }

    fn slice_syncs(&self) -> f64 {
        metric(
            &self.registry,
            "endpoint_slice_controller_syncs",
            &[("result", "success")],
        )
    }

    async fn stop(self) -> LeadershipEnd {
        self.shutdown.cancel();
        within("the replica to stop", self.task)
            .await
            .expect("the replica task panicked")
    }
}

/// The writes (anything but get, list and watch) `agent` sent, outside the Lease.
fn writes_by(cluster: &TestCluster, agent: &str) -> Vec<String> {
    cluster
        .server
        .request_log()
        .into_iter()
        .filter(|r| r.user_agent.as_deref() == Some(agent))
        .filter(|r| !matches!(r.verb.as_str(), "get" | "list" | "watch"))
        .filter(|r| r.resource != "leases")
        .map(|r| format!("{} {}", r.verb, r.resource))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_replicas_are_ready_only_the_leader_writes_and_a_stopped_leader_hands_over(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.server.record_requests(true);
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let alpha = Instance::start(&cluster, "alpha");
    cluster.wait_for_lease_holder("alpha").await;
    let bravo = Instance::start(&cluster, "bravo");

    alpha.wait_for("/readyz", StatusCode::OK).await;
    bravo.wait_for("/readyz", StatusCode::OK).await;
    cluster.wait_for_planned_slices(NS, "web").await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    for instance in [&alpha, &bravo] {
        assert_eq!(instance.probe("/healthz").await.0, StatusCode::OK);
        assert_eq!(instance.probe("/livez").await.0, StatusCode::OK);
    }
    assert!(
        !writes_by(&cluster, "alpha").is_empty(),
        "the leader writes"
    );
    assert_eq!(
        writes_by(&cluster, "bravo"),
        Vec::<String>::new(),
        "the standby does not"
    );
    assert_eq!(bravo.slice_syncs(), 0.0);

    assert_eq!(alpha.stop().await, LeadershipEnd::ShutDown);
    cluster.wait_for_lease_holder("bravo").await;
    cluster.create_pod(&web_pod("web-2", "10.0.0.2")).await?;
    cluster
        .wait_for_slices(NS, "web", "web-2 published", |s| {
            pod_names(s).iter().any(|p| p == "web-2")
        })
        .await;
    bravo.wait_for("/readyz", StatusCode::OK).await;
    // The sync is counted once its writes have returned, a moment after the watch shows them.
    until("the new leader to count its slice sync", || {
        bravo.slice_syncs() > 0.0
    })
    .await;
    // The server logs a write just after storing it, so a watcher may see it a moment first.
    until("the new leader's writes to be logged", || {
        !writes_by(&cluster, "bravo").is_empty()
    })
    .await;
    assert_eq!(bravo.probe("/healthz").await.0, StatusCode::OK);
    assert_eq!(bravo.stop().await, LeadershipEnd::ShutDown);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_lease_renewals_fail_turns_healthz_failing_and_the_standby_stays_healthy(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let alpha = Instance::start(&cluster, "alpha");
    cluster.wait_for_lease_holder("alpha").await;
    let bravo = Instance::start(&cluster, "bravo");
    alpha.wait_for("/readyz", StatusCode::OK).await;
    assert_eq!(alpha.probe("/healthz").await.0, StatusCode::OK);

    cluster.faults().fail("update", "leases", 1.0);
    let body = alpha
        .wait_for("/healthz", StatusCode::INTERNAL_SERVER_ERROR)
        .await;
    assert!(body.contains("[-]leader-election failed"), "{body}");
    assert_eq!(
        bravo.probe("/healthz").await.0,
        StatusCode::OK,
        "a standby whose writes fail has no Lease to keep"
    );
    let end = within("alpha to give up leading", alpha.task).await?;
    assert_eq!(end, LeadershipEnd::Lost);

    cluster.faults().clear();
    cluster.wait_for_lease_holder("bravo").await;
    assert_eq!(bravo.probe("/healthz").await.0, StatusCode::OK);
    assert_eq!(bravo.stop().await, LeadershipEnd::ShutDown);
    Ok(())
}
