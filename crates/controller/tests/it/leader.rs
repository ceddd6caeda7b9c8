//! Two controller instances behind leader election against one embedded API server: only the
//! Lease holder runs the controllers, and when it stops, is killed, or cannot renew, the other
//! takes over and converges after a new change.
//!
//! Durations are short (lease 2s, renew deadline 1s, retry 200ms) so hand-overs are quick;
//! waits poll the API with a generous deadline and never assert on timing.

use std::time::Duration;

use controller::config::LeaderElectionSettings;
use controller::health::Readiness;
use controller::leader::{LeaderElector, LeadershipEnd};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use prometheus::Registry;
use testkit::{metric, options, pod_names, until, web_pod, within, TestCluster};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const LEASE: &str = "kube-endpoints";
const LEASE_NAMESPACE: &str = "kube-system";

fn election() -> LeaderElectionSettings {
    LeaderElectionSettings {
        enabled: true,
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(200),
        resource_name: LEASE.into(),
        resource_namespace: LEASE_NAMESPACE.into(),
    }
}

/// One `kube-endpoints run` with leader election, in a task.
struct Instance {
    shutdown: CancellationToken,
    registry: Registry,
    task: JoinHandle<LeadershipEnd>,
}

impl Instance {
    fn start(cluster: &TestCluster, identity: &str) -> Self {
        let shutdown = CancellationToken::new();
        let registry = Registry::new();
        let client = cluster.client.clone();
        let elector = LeaderElector::new(client.clone(), election(), identity.into());
        let task = tokio::spawn({
            let (registry, shutdown) = (registry.clone(), shutdown.clone());
            async move {
                elector
                    .run(
                        |token| async move {
                            controller::run(
                                client,
                                &options(),
                                &registry,
                                Readiness::new(),
                                controller::Activity::new(),
                                token,
                            )
                            .await
                            .expect("the controllers run");
                        },
                        async move { shutdown.cancelled().await },
                    )
                    .await
            }
        });
        Self {
            shutdown,
            registry,
            task,
        }
    }

    /// Successful EndpointSlice syncs this instance ran.
    fn slice_syncs(&self) -> f64 {
        metric(
            &self.registry,
            "endpoint_slice_controller_syncs",
            &[("result", "success")],
        )
    }

    /// Successful Endpoints syncs this instance ran.
    fn endpoints_syncs(&self) -> f64 {
        metric(
            &self.registry,
            "endpoint_controller_syncs",
            &[("result", "success")],
        )
    }

    /// Asks for shutdown and waits for the elector to return.
    async fn stop(self) -> LeadershipEnd {
        self.shutdown.cancel();
        within("the instance to stop", self.task)
            .await
            .expect("the instance task panicked")
    }
}

fn leases(cluster: &TestCluster) -> Api<Lease> {
    Api::namespaced(cluster.client.clone(), LEASE_NAMESPACE)
}

/// Adds a ready pod and waits until both controllers published it.
async fn add_pod_and_wait(cluster: &TestCluster, name: &str, ip: &str) -> anyhow::Result<()> {
    cluster.create_pod(&web_pod(name, ip)).await?;
    cluster
        .wait_for_slices(NS, "web", &format!("{name} published"), |s| {
            pod_names(s).iter().any(|p| p == name)
        })
        .await;
    cluster
        .wait_for_endpoints(NS, "web", &format!("{name} published"), |e| {
            testkit::addresses(e).0.iter().any(|a| a == ip)
        })
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_runs_the_controllers_and_a_stopped_holder_hands_over(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let alpha = Instance::start(&cluster, "alpha");
    let first = cluster.wait_for_lease_holder("alpha").await;
    let bravo = Instance::start(&cluster, "bravo");

    add_pod_and_wait(&cluster, "web-2", "10.0.0.2").await?;
    cluster.wait_for_planned_slices(NS, "web").await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    // A sync is counted once its writes returned, a moment after the watch shows them.
    until("alpha to count its syncs", || {
        alpha.slice_syncs() > 0.0 && alpha.endpoints_syncs() > 0.0
    })
    .await;
    assert_eq!(
        (bravo.slice_syncs(), bravo.endpoints_syncs()),
        (0.0, 0.0),
        "the standby runs no controller"
    );
    let lease = cluster.wait_for_lease_holder("alpha").await;
    assert_eq!(
        lease.spec.as_ref().and_then(|s| s.lease_duration_seconds),
        Some(2)
    );

    // Stopping the holder releases the Lease; the standby takes it and converges.
    assert_eq!(alpha.stop().await, LeadershipEnd::ShutDown);
    let handed_over = cluster.wait_for_lease_holder("bravo").await;
    let transitions = |l: &Lease| l.spec.as_ref().and_then(|s| s.lease_transitions);
    assert!(
        transitions(&handed_over) > transitions(&first),
        "a hand-over counts as a transition"
    );
    add_pod_and_wait(&cluster, "web-3", "10.0.0.3").await?;
    cluster.wait_for_planned_slices(NS, "web").await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    until("bravo to count its syncs", || {
        bravo.slice_syncs() > 0.0 && bravo.endpoints_syncs() > 0.0
    })
    .await;

    assert_eq!(bravo.stop().await, LeadershipEnd::ShutDown);
    let released = leases(&cluster).get(LEASE).await?;
    assert_eq!(
        released.spec.and_then(|s| s.holder_identity).as_deref(),
        Some(""),
        "a clean shutdown hands the Lease back"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_is_replaced_once_its_lease_expires() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let alpha = Instance::start(&cluster, "alpha");
    cluster.wait_for_lease_holder("alpha").await;
    let bravo = Instance::start(&cluster, "bravo");
    cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;

    // A crash: no release, the Lease still names alpha until it expires.
    alpha.task.abort();
    let _aborted = alpha.task.await;
    cluster.wait_for_lease_holder("bravo").await;
    add_pod_and_wait(&cluster, "web-2", "10.0.0.2").await?;
    until("bravo to count its slice sync", || {
        bravo.slice_syncs() > 0.0
    })
    .await;
    assert_eq!(bravo.stop().await, LeadershipEnd::ShutDown);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_cannot_renew_stops_its_controllers_and_the_standby_takes_over(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let alpha = Instance::start(&cluster, "alpha");
    cluster.wait_for_lease_holder("alpha").await;
    let bravo = Instance::start(&cluster, "bravo");
    cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;

    // Every Lease write fails: alpha gives up leading after its renew deadline.
    cluster.faults().fail("update", "leases", 1.0);
    let end = within("alpha to give up leading", alpha.task).await?;
    assert_eq!(end, LeadershipEnd::Lost);

    cluster.faults().clear();
    cluster.wait_for_lease_holder("bravo").await;
    add_pod_and_wait(&cluster, "web-2", "10.0.0.2").await?;
    until("bravo to count its slice sync", || {
        bravo.slice_syncs() > 0.0
    })
    .await;
    assert_eq!(bravo.stop().await, LeadershipEnd::ShutDown);
    Ok(())
}
