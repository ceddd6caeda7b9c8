//! Pod changes reach the slices: readiness, deletion, termination, labels, IPs, phases,
//! and the batch period and trigger time that go with them.

use super::NS;
use serde_json::json;
use std::time::Duration;
use testkit::scenario::{
    endpoint_conditions_are, endpoint_not_ready, endpoint_ready, pods_are, Scenario,
};
use testkit::{
    conditions, endpoint_of, finished_web_pods, pod, ready_transition, service, slices_only,
    trigger_time, web, web_pod,
};

/// Ready, serving and not terminating: a ready pod's endpoint.
const READY: (Option<bool>, Option<bool>, Option<bool>) = (Some(true), Some(true), Some(false));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_readiness_flip_updates_its_endpoint_in_the_same_slice() -> anyhow::Result<()> {
    let run = Scenario::web([pod("web-1").label("app", "web").ip("10.0.0.1")])
        .start(slices_only())
        .slices("web", "web-1 not ready", endpoint_not_ready("web-1"))
        .pod_ready("web-1")
        .slices(
            "web",
            "web-1 ready",
            endpoint_conditions_are("web-1", READY),
        )
        .pod_not_ready("web-1")
        .slices("web", "web-1 not ready again", endpoint_not_ready("web-1"))
        .run()
        .await?;
    let (before, after) = (run.slices("web-1 not ready"), run.slices("web-1 ready"));
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].metadata.name, before[0].metadata.name);
    assert_eq!(after[0].metadata.uid, before[0].metadata.uid);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pod_is_removed_from_the_slice() -> anyhow::Result<()> {
    Scenario::web([web_pod("web-1", "10.0.0.1"), web_pod("web-2", "10.0.0.2")])
        .start(slices_only())
        .slices("web", "both pods", pods_are(&["web-1", "web-2"]))
        .delete_pod("web-1")
        .slices("web", "only web-2", pods_are(&["web-2"]))
        .planned_slices("web")
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_pod_stays_serving_and_terminating_until_it_is_gone() -> anyhow::Result<()> {
    let serving_and_terminating = (Some(false), Some(true), Some(true));
    let run = Scenario::web([web_pod("web-1", "10.0.0.1").finalizer("example.com/hold")])
        .start(slices_only())
        .slices("web", "web-1 ready", endpoint_ready("web-1"))
        .delete_pod("web-1")
        .slices(
            "web",
            "web-1 serving and terminating",
            endpoint_conditions_are("web-1", serving_and_terminating),
        )
        .patch_pod("web-1", json!({"metadata": {"finalizers": null}}))
        .slices("web", "no endpoints", pods_are(&[]))
        .planned_slices("web")
        .run()
        .await?;
    assert_eq!(
        run.slices("no endpoints").len(),
        1,
        "the emptied slice is kept as the placeholder"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_label_change_moves_its_endpoint_between_services() -> anyhow::Result<()> {
    Scenario::new()
        .create_all(
            ["blue", "green"]
                .map(|name| service(name).selector("color", name).port("http", 80, 8080)),
        )
        .create(pod("p").label("color", "blue").ip("10.0.0.1").ready(true))
        .start(slices_only())
        .slices("blue", "p", pods_are(&["p"]))
        .patch_pod("p", json!({"metadata": {"labels": {"color": "green"}}}))
        .slices("green", "p", pods_are(&["p"]))
        .slices("blue", "no endpoints", pods_are(&[]))
        .planned_slices("blue")
        .planned_slices("green")
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_ip_change_replaces_the_endpoint_address() -> anyhow::Result<()> {
    let address_is = |ip: &'static str| {
        move |s: &[_]| endpoint_of(s, "web-1").is_some_and(|e| e.addresses == [ip])
    };
    let run = Scenario::web([web_pod("web-1", "10.0.0.1")])
        .start(slices_only())
        .slices("web", "10.0.0.1", address_is("10.0.0.1"))
        .pod_ips("web-1", &["10.0.0.9"])
        .slices("web", "10.0.0.9", address_is("10.0.0.9"))
        .run()
        .await?;
    let all: Vec<usize> = run
        .slices("10.0.0.9")
        .iter()
        .map(|s| s.endpoints.len())
        .collect();
    assert_eq!(all, [1], "the old address is gone");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_trigger_time_is_the_service_creation_then_the_pod_readiness_change(
) -> anyhow::Result<()> {
    // Transition times have second precision: use one surely later than the pod's creation.
    let since: k8s_openapi::jiff::Timestamp = "2100-01-01T00:00:00Z".parse()?;
    let ready = endpoint_ready("web-1");
    let run = Scenario::web([pod("web-1").label("app", "web").ip("10.0.0.1")])
        .start(slices_only())
        .slices("web", "web-1", pods_are(&["web-1"]))
        .pod_ready_since("web-1", since)
        .slices("web", "the readiness change as trigger time", move |s| {
            ready(s) && trigger_time(&s[0].metadata) == Some(since)
        })
        .run()
        .await?;
    let svc = run.cluster.services(NS).get("web").await?;
    let created = svc.metadata.creation_timestamp.map(|t| t.0);
    assert_eq!(trigger_time(&run.slices("web-1")[0].metadata), created);
    // The trigger time waited for is the pod's own transition time.
    let became_ready = ready_transition(&run.cluster.pods(NS).get("web-1").await?);
    assert_eq!(became_ready, Some(since));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_not_ready_addresses_marks_not_ready_pods_ready_in_slices() -> anyhow::Result<()> {
    let run = Scenario::new()
        .create(web().publish_not_ready_addresses())
        .create(web_pod("web-1", "10.0.0.1").ready(false))
        .start(slices_only())
        .slices("web", "web-1", pods_are(&["web-1"]))
        .planned_slices("web")
        .run()
        .await?;
    let endpoint = endpoint_of(run.slices("web-1"), "web-1").expect("web-1 has an endpoint");
    assert_eq!(
        conditions(&endpoint),
        (Some(true), Some(false), Some(false))
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_without_an_ip_or_in_a_terminal_phase_are_not_published() -> anyhow::Result<()> {
    Scenario::web([web_pod("running", "10.0.0.1")])
        .create(pod("pending").label("app", "web").phase("Pending"))
        .create_all(finished_web_pods().map(|p| p.ready(false)))
        .start(slices_only())
        .slices("web", "only the running pod", pods_are(&["running"]))
        .planned_slices("web")
        .pod_ips("pending", &["10.0.0.2"])
        .slices(
            "web",
            "the pod that got an IP",
            pods_are(&["pending", "running"]),
        )
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_changes_are_applied_after_the_batch_period() -> anyhow::Result<()> {
    let mut options = testkit::options();
    options.settings.endpointslice_updates_batch_period = Duration::from_millis(300);
    options.settings.endpoint_updates_batch_period = Duration::from_millis(300);
    let (web_1, web_2) = (endpoint_ready("web-1"), endpoint_ready("web-2"));
    Scenario::web([pod("web-1").label("app", "web").ip("10.0.0.1")])
        .start(options)
        .slices("web", "web-1 not ready", endpoint_not_ready("web-1"))
        .pod_ready("web-1")
        .create(web_pod("web-2", "10.0.0.2"))
        .slices("web", "both ready", move |s| web_1(s) && web_2(s))
        .planned_slices("web")
        .planned_endpoints("web")
        .run_to_end()
        .await
}
