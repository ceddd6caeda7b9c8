//! Two replicas of the Deployment against one embedded API server, probed as the kubelet
//! would: both pass `/readyz` (the standby too), only the Lease holder writes, a stopped
//! leader hands over, and a leader whose Lease renewals fail turns `/healthz` failing.
//!
//! Durations are short (lease 2s, renew deadline 1s, retry 100ms, health margin 500ms);
//! waits poll with a generous deadline and never assert on timing.

use controller::leader::LeadershipEnd;
use http::StatusCode;
use testkit::replica::leader_and_standby;
use testkit::{pod_names, until, web_pod, TestCluster};

const NS: &str = "default";

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
    let (cluster, alpha, bravo) = leader_and_standby().await?;

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
    let (cluster, alpha, bravo) = leader_and_standby().await?;
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
    assert_eq!(alpha.end().await, LeadershipEnd::Lost);

    cluster.faults().clear();
    cluster.wait_for_lease_holder("bravo").await;
    assert_eq!(bravo.probe("/healthz").await.0, StatusCode::OK);
    assert_eq!(bravo.stop().await, LeadershipEnd::ShutDown);
    Ok(())
}
