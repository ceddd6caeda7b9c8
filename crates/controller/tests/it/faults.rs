//! Both controllers against a flaky embedded API server: conflicts, 500s, a pod on a node the
//! cache does not know, dropped watches and a forced 410 are injected mid-run, and the state
//! still converges to exactly what `reconcile` plans for the final objects from scratch.
//!
//! Each test starts its own server and controllers; waits poll the API with a deadline.

use apiserver::FaultResponse;
use serde_json::json;
use testkit::{
    endpoint_of, eventually, node, options, pod, pod_names, slices_only, web_pod, TestCluster,
};

const NS: &str = "default";

/// A Service `web` selecting `app=web` on port 80 -> 8080, and `count` ready pods `web-<i>`.
async fn web_with_pods(cluster: &TestCluster, count: usize) -> anyhow::Result<()> {
    cluster.create_web(&[]).await?;
    for i in 0..count {
        cluster
            .create_pod(&web_pod(&format!("web-{i}"), &format!("10.0.0.{}", i + 1)))
            .await?;
    }
    Ok(())
}

/// Waits until both the slices and the Endpoints of `web` equal the plans from scratch.
async fn wait_for_plans(cluster: &TestCluster) {
    cluster.wait_for_planned_slices(NS, "web").await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_on_updates_are_retried_until_both_controllers_converge() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    web_with_pods(&cluster, 3).await?;
    let controllers = cluster.run_controllers(options()).await;
    wait_for_plans(&cluster).await;

    cluster
        .faults()
        .fail_next("update", "endpointslices", 2, FaultResponse::Conflict);
    cluster
        .faults()
        .fail_next("update", "endpoints", 2, FaultResponse::Conflict);
    cluster.set_pod_ready(NS, "web-0", false).await?;
    cluster.set_pod_ready(NS, "web-1", false).await?;

    wait_for_plans(&cluster).await;
    assert!(controllers.slice_syncs("error") >= 1.0);
    assert!(controllers.endpoints_syncs("error") >= 1.0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_slice_creates_are_recorded_as_events_and_retried_until_they_succeed(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .faults()
        .fail_next("create", "endpointslices", 2, FaultResponse::InternalError);
    web_with_pods(&cluster, 2).await?;
    let controllers = cluster.run_controllers(slices_only()).await;

    let event = cluster
        .wait_for_event(NS, "web", "FailedToUpdateEndpointSlices")
        .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("endpoint-slice-controller")
    );
    assert_eq!(event.involved_object.kind.as_deref(), Some("Service"));
    let message = event.message.unwrap_or_default();
    assert!(
        message.starts_with("Error updating Endpoint Slices for Service default/web: "),
        "{message}"
    );

    cluster.wait_for_planned_slices(NS, "web").await;
    assert_eq!(controllers.slice_syncs("error"), 2.0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_on_an_unknown_node_fails_the_sync_until_the_node_appears() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    web_with_pods(&cluster, 1).await?;
    cluster
        .create_pod(
            &pod("web-ghost")
                .label("app", "web")
                .node("ghost")
                .ip("10.0.0.99")
                .ready(true),
        )
        .await?;
    let controllers = cluster.run_controllers(slices_only()).await;

    // The other pods are still written; the sync fails and says so.
    cluster
        .wait_for_slices(NS, "web", "web-0 without the ghost", |s| {
            pod_names(s) == ["web-0"]
        })
        .await;
    // Each retry fails the same way: one Event whose count goes up, not one Event per failure.
    eventually("the failure event to be counted twice", || {
        let api = cluster.events(NS);
        async move {
            let events: Vec<_> = api
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?
                .items
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some("FailedToUpdateEndpointSlices"))
                .collect();
            let counts: Vec<_> = events.iter().map(|e| e.count).collect();
            match counts.as_slice() {
                [Some(n)] if *n >= 2 => Ok(()),
                _ => Err(format!("event counts {counts:?}")),
            }
        }
    })
    .await;
    assert!(controllers.slice_syncs("error") >= 2.0);

    cluster.create_node(&node("ghost")).await?;
    let slices = cluster
        .wait_for_slices(NS, "web", "the ghost pod included", |s| {
            pod_names(s) == ["web-0", "web-ghost"]
        })
        .await;
    assert_eq!(
        endpoint_of(&slices, "web-ghost").and_then(|e| e.node_name),
        Some("ghost".to_owned())
    );
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_are_reopened_and_both_controllers_converge() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    web_with_pods(&cluster, 3).await?;
    let _controllers = cluster.run_controllers(options()).await;
    wait_for_plans(&cluster).await;

    cluster.faults().drop_watches();
    cluster.set_pod_ready(NS, "web-0", false).await?;
    cluster.delete_pod(NS, "web-1").await?;
    cluster.create_pod(&web_pod("web-new", "10.0.0.50")).await?;
    cluster
        .patch_service(NS, "web", json!({"metadata": {"labels": {"team": "red"}}}))
        .await?;
    wait_for_plans(&cluster).await;

    cluster.faults().drop_watches();
    cluster.set_pod_ready(NS, "web-0", true).await?;
    wait_for_plans(&cluster).await;
    eventually("the pod watch to be re-opened after each drop", || {
        let watches = cluster.requests("watch", "pods");
        async move {
            (watches >= 3)
                .then_some(())
                .ok_or(format!("{watches} pod watches"))
        }
    })
    .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_pod_watch_forces_a_relist_and_both_controllers_converge() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    web_with_pods(&cluster, 3).await?;
    let _controllers = cluster.run_controllers(options()).await;
    wait_for_plans(&cluster).await;

    // The pod watch is closed; changes land while it is down, and resuming it answers 410,
    // so the informer re-lists and must notice the deleted pod by its absence.
    cluster.faults().expire_next_watch("pods");
    cluster.faults().drop_watches();
    cluster.delete_pod(NS, "web-2").await?;
    cluster.set_pod_ips(NS, "web-1", &["10.0.0.77"]).await?;
    cluster
        .create_pod(&pod("web-new").label("app", "web").ip("10.0.0.50"))
        .await?;

    wait_for_plans(&cluster).await;
    eventually("the informer to re-list pods after the 410", || {
        let lists = cluster.requests("list", "pods");
        async move {
            (lists >= 2)
                .then_some(())
                .ok_or(format!("{lists} pod lists"))
        }
    })
    .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_faults_mid_run_still_converge_to_the_plans() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    web_with_pods(&cluster, 4).await?;
    let controllers = cluster.run_controllers(options()).await;
    wait_for_plans(&cluster).await;

    let faults = cluster.faults();
    faults.fail_next("update", "endpointslices", 1, FaultResponse::Conflict);
    faults.fail_next("create", "endpointslices", 1, FaultResponse::InternalError);
    faults.fail_next("update", "endpoints", 1, FaultResponse::InternalError);
    faults.expire_next_watch("pods");
    cluster.set_pod_ready(NS, "web-0", false).await?;
    faults.drop_watches();
    cluster.delete_pod(NS, "web-3").await?;
    // A second port group: a create that meets the injected 500.
    cluster
        .patch_service(
            NS,
            "web",
            json!({"spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
        )
        .await?;
    cluster
        .create_pod(&web_pod("web-named", "10.0.0.60").container_port("http", 8080))
        .await?;

    wait_for_plans(&cluster).await;
    assert!(controllers.slice_syncs("error") >= 1.0);
    assert!(controllers.endpoints_syncs("error") >= 1.0);
    Ok(())
}
