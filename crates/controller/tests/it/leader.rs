//! Two controller instances behind leader election against one embedded API server: only the
//! Lease holder runs the controllers, and when it stops, is killed, or cannot renew, the other
//! takes over and converges after a new change.
//!
//! Durations are short (lease 2s, renew deadline 1s, retry 100ms) so hand-overs are quick;
//! waits poll the API with a generous deadline and never assert on timing.

use controller::leader::LeadershipEnd;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use testkit::replica::{leader_and_standby, quick_election, ReplicaTask};
use testkit::{pod_names, until, web_pod, TestCluster};

const NS: &str = "default";

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

/// Adds a ready pod and waits until the controllers of `leader`, the Lease holder, wrote
/// what a run from scratch writes and counted their syncs.
async fn leader_converges_on_a_new_pod(
    cluster: &TestCluster,
    leader: &ReplicaTask,
    name: &str,
    ip: &str,
) -> anyhow::Result<()> {
    add_pod_and_wait(cluster, name, ip).await?;
    cluster.wait_for_planned_slices(NS, "web").await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    // A sync is counted once its writes returned, a moment after the watch shows them.
    until(&format!("{} to count its syncs", leader.identity()), || {
        leader.slice_syncs() > 0.0 && leader.endpoints_syncs() > 0.0
    })
    .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_runs_the_controllers_and_a_stopped_holder_hands_over(
) -> anyhow::Result<()> {
    let (cluster, alpha, bravo) = leader_and_standby().await?;
    let first = cluster.wait_for_lease_holder("alpha").await;

    leader_converges_on_a_new_pod(&cluster, &alpha, "web-2", "10.0.0.2").await?;
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
    leader_converges_on_a_new_pod(&cluster, &bravo, "web-3", "10.0.0.3").await?;

    assert_eq!(bravo.stop().await, LeadershipEnd::ShutDown);
    let election = quick_election();
    let released = Api::<Lease>::namespaced(cluster.client.clone(), &election.resource_namespace)
        .get(&election.resource_name)
        .await?;
    assert_eq!(
        released.spec.and_then(|s| s.holder_identity).as_deref(),
        Some(""),
        "a clean shutdown hands the Lease back"
    );
    Ok(())
}

/// How the Lease holder goes away in [`the_standby_takes_over`].
enum Departure {
    /// Killed: it releases nothing, and the Lease names it until the Lease expires.
    Killed,
    /// Every Lease write fails: it gives up leading after its renew deadline.
    CannotRenew,
}

/// The holder goes away while the standby waits; the standby takes the Lease and runs the
/// controllers, which publish a new pod.
async fn the_standby_takes_over(departure: Departure) -> anyhow::Result<()> {
    let (cluster, alpha, bravo) = leader_and_standby().await?;
    cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;

    match departure {
        Departure::Killed => alpha.crash().await,
        Departure::CannotRenew => {
            cluster.faults().fail("update", "leases", 1.0);
            assert_eq!(alpha.end().await, LeadershipEnd::Lost);
            cluster.faults().clear();
        }
    }
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
async fn a_killed_holder_is_replaced_once_its_lease_expires() -> anyhow::Result<()> {
    the_standby_takes_over(Departure::Killed).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_cannot_renew_stops_its_controllers_and_the_standby_takes_over(
) -> anyhow::Result<()> {
    the_standby_takes_over(Departure::CannotRenew).await
}
