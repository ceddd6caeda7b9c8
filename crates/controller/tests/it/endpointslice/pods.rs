//! Pod changes reach the slices: readiness, deletion, termination, labels, IPs, phases,
//! and the batch period and trigger time that go with them.

use super::{ip, NS};
use serde_json::json;
use testkit::{
    conditions, endpoint_of, pod, pod_names, ready_transition, service, slices_only, trigger_time,
    web_pod, TestCluster,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_readiness_flip_updates_its_endpoint_in_the_same_slice() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1"))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;

    let before = cluster
        .wait_for_slices(NS, "web", "web-1 not ready", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(false))
        })
        .await;
    cluster.set_pod_ready(NS, "web-1", true).await?;
    let after = cluster
        .wait_for_slices(NS, "web", "web-1 ready", |s| {
            endpoint_of(s, "web-1")
                .is_some_and(|e| conditions(&e) == (Some(true), Some(true), Some(false)))
        })
        .await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].metadata.name, before[0].metadata.name);
    assert_eq!(after[0].metadata.uid, before[0].metadata.uid);

    cluster.set_pod_ready(NS, "web-1", false).await?;
    cluster
        .wait_for_slices(NS, "web", "web-1 not ready again", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(false))
        })
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pod_is_removed_from_the_slice() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    for (name, ip) in [("web-1", "10.0.0.1"), ("web-2", "10.0.0.2")] {
        cluster.create_pod(&web_pod(name, ip)).await?;
    }
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "both pods", |s| {
            pod_names(s) == ["web-1", "web-2"]
        })
        .await;

    cluster.delete_pod(NS, "web-1").await?;
    cluster
        .wait_for_slices(NS, "web", "only web-2", |s| pod_names(s) == ["web-2"])
        .await;
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_pod_stays_serving_and_terminating_until_it_is_gone() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    cluster
        .create_pod(&web_pod("web-1", "10.0.0.1").finalizer("example.com/hold"))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "web-1 ready", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(true))
        })
        .await;

    cluster.delete_pod(NS, "web-1").await?;
    cluster
        .wait_for_slices(NS, "web", "web-1 serving and terminating", |s| {
            endpoint_of(s, "web-1")
                .is_some_and(|e| conditions(&e) == (Some(false), Some(true), Some(true)))
        })
        .await;

    cluster
        .patch_pod(NS, "web-1", json!({"metadata": {"finalizers": null}}))
        .await?;
    let slices = cluster
        .wait_for_slices(NS, "web", "no endpoints", |s| pod_names(s).is_empty())
        .await;
    assert_eq!(
        slices.len(),
        1,
        "the emptied slice is kept as the placeholder"
    );
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_label_change_moves_its_endpoint_between_services() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    for name in ["blue", "green"] {
        cluster
            .create_service(&service(name).selector("color", name).port("http", 80, 8080))
            .await?;
    }
    cluster
        .create_pod(&pod("p").label("color", "blue").ip("10.0.0.1").ready(true))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "blue", "p", |s| pod_names(s) == ["p"])
        .await;

    cluster
        .patch_pod(NS, "p", json!({"metadata": {"labels": {"color": "green"}}}))
        .await?;
    cluster
        .wait_for_slices(NS, "green", "p", |s| pod_names(s) == ["p"])
        .await;
    cluster
        .wait_for_slices(NS, "blue", "no endpoints", |s| pod_names(s).is_empty())
        .await;
    cluster.wait_for_planned_slices(NS, "blue").await;
    cluster.wait_for_planned_slices(NS, "green").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_ip_change_replaces_the_endpoint_address() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "10.0.0.1", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| ip(&e) == ["10.0.0.1"])
        })
        .await;

    cluster.set_pod_ips(NS, "web-1", &["10.0.0.9"]).await?;
    let slices = cluster
        .wait_for_slices(NS, "web", "10.0.0.9", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| ip(&e) == ["10.0.0.9"])
        })
        .await;
    let all: Vec<usize> = slices.iter().map(|s| s.endpoints.len()).collect();
    assert_eq!(all, [1], "the old address is gone");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_trigger_time_is_the_service_creation_then_the_pod_readiness_change(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let svc = cluster.create_web(&[]).await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1"))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    let created = svc.metadata.creation_timestamp.map(|t| t.0);
    assert_eq!(trigger_time(&slices[0].metadata), created);

    // Transition times have second precision: use one surely later than the pod's creation.
    let since: k8s_openapi::jiff::Timestamp = "2100-01-01T00:00:00Z".parse()?;
    cluster
        .set_pod_ready_since(NS, "web-1", true, since)
        .await?;
    let became_ready = ready_transition(&cluster.pods(NS).get("web-1").await?);
    assert_eq!(became_ready, Some(since));
    cluster
        .wait_for_slices(NS, "web", "the readiness change as trigger time", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(true))
                && trigger_time(&s[0].metadata) == became_ready
        })
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_not_ready_addresses_marks_not_ready_pods_ready_in_slices() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .publish_not_ready_addresses()
                .port("http", 80, 8080),
        )
        .await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(false))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    let endpoint = endpoint_of(&slices, "web-1").expect("web-1 has an endpoint");
    assert_eq!(
        conditions(&endpoint),
        (Some(true), Some(false), Some(false))
    );
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_without_an_ip_or_in_a_terminal_phase_are_not_published() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    cluster.create_pod(&web_pod("running", "10.0.0.1")).await?;
    cluster
        .create_pod(&pod("pending").label("app", "web").phase("Pending"))
        .await?;
    for phase in ["Succeeded", "Failed"] {
        cluster
            .create_pod(
                &pod(&phase.to_lowercase())
                    .label("app", "web")
                    .ip("10.0.0.9")
                    .phase(phase),
            )
            .await?;
    }
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "only the running pod", |s| {
            pod_names(s) == ["running"]
        })
        .await;
    cluster.wait_for_planned_slices(NS, "web").await;

    cluster.set_pod_ips(NS, "pending", &["10.0.0.2"]).await?;
    cluster
        .wait_for_slices(NS, "web", "the pod that got an IP", |s| {
            pod_names(s) == ["pending", "running"]
        })
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_changes_are_applied_after_the_batch_period() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1"))
        .await?;
    let mut options = testkit::options();
    options.settings.endpointslice_updates_batch_period = std::time::Duration::from_millis(300);
    options.settings.endpoint_updates_batch_period = std::time::Duration::from_millis(300);
    let _controllers = cluster.run_controllers(options).await;
    cluster
        .wait_for_slices(NS, "web", "web-1 not ready", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(false))
        })
        .await;

    cluster.set_pod_ready(NS, "web-1", true).await?;
    cluster.create_pod(&web_pod("web-2", "10.0.0.2")).await?;
    cluster
        .wait_for_slices(NS, "web", "both ready", |s| {
            ["web-1", "web-2"]
                .iter()
                .all(|p| endpoint_of(s, p).is_some_and(|e| conditions(&e).0 == Some(true)))
        })
        .await;
    cluster.wait_for_planned_slices(NS, "web").await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}
