//! Both controllers against a flaky embedded API server: conflicts, 500s, a pod on a node the
//! cache does not know, dropped watches and a forced 410 are injected mid-run, and the state
//! still converges to exactly what `reconcile` plans for the final objects from scratch.
//!
//! Each test is a scenario on its own server and controllers; waits wake on the server's
//! writes, with a deadline.

use apiserver::FaultResponse;
use serde_json::json;
use testkit::scenario::{pods_are, served, warning, Message, Run, Scenario};
use testkit::{endpoint_of, node, options, pod, slices_only, web_pod, web_pods};

/// Both controllers on [`testkit::web`] and `count` pods until the slices and the Endpoints
/// of `web` equal the plans from scratch; then `mid_run` (faults and changes), until they
/// equal the plans again.
fn converges_after(count: usize, mid_run: impl FnOnce(Scenario) -> Scenario) -> Scenario {
    let planned = plans(Scenario::web(web_pods(count)).start(options()));
    plans(mid_run(planned))
}

/// [`converges_after`] on three pods, then until the pod informer has sent at least `count`
/// requests of `verb` (`what` says why): it got over the watch faults of `mid_run`.
async fn pod_informer_recovers(
    mid_run: impl FnOnce(Scenario) -> Scenario,
    what: &str,
    (verb, count): (&'static str, u64),
) -> anyhow::Result<()> {
    converges_after(3, mid_run)
        .until(what, served(verb, "pods", count))
        .run_to_end()
        .await
}

/// Waits until both the slices and the Endpoints of `web` equal the plans from scratch.
fn plans(scenario: Scenario) -> Scenario {
    scenario.planned_slices("web").planned_endpoints("web")
}

/// Both controllers' syncs have failed at least once.
fn both_failed_once(run: &Run) {
    assert!(run.controllers().slice_syncs("error") >= 1.0);
    assert!(run.controllers().endpoints_syncs("error") >= 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_on_updates_are_retried_until_both_controllers_converge() -> anyhow::Result<()> {
    converges_after(3, |s| {
        s.fail_next("update", "endpointslices", 2, FaultResponse::Conflict)
            .fail_next("update", "endpoints", 2, FaultResponse::Conflict)
            .pod_not_ready("web-0")
            .pod_not_ready("web-1")
    })
    .check(both_failed_once)
    .run_to_end()
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_slice_creates_are_recorded_as_events_and_retried_until_they_succeed(
) -> anyhow::Result<()> {
    Scenario::new()
        .fail_next("create", "endpointslices", 2, FaultResponse::InternalError)
        .create(testkit::web())
        .create_all(web_pods(2))
        .start(slices_only())
        .event(
            warning("web", "FailedToUpdateEndpointSlices")
                .by("endpoint-slice-controller")
                .about("Service")
                .message(Message::StartsWith(
                    "Error updating Endpoint Slices for Service default/web: ",
                )),
        )
        .planned_slices("web")
        .check(|run| assert_eq!(run.controllers().slice_syncs("error"), 2.0))
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_on_an_unknown_node_fails_the_sync_until_the_node_appears() -> anyhow::Result<()> {
    let run = Scenario::web(web_pods(1))
        .create(web_pod("web-ghost", "10.0.0.99").node("ghost"))
        .start(slices_only())
        // The other pods are still written; the sync fails and says so.
        .slices("web", "web-0 without the ghost", pods_are(&["web-0"]))
        // Each retry fails the same way: one Event whose count goes up, not one Event per
        // failure.
        .events("the failure event counted twice", |events| {
            let counts: Vec<_> = events
                .iter()
                .filter(|e| e.reason.as_deref() == Some("FailedToUpdateEndpointSlices"))
                .map(|e| e.count)
                .collect();
            matches!(counts.as_slice(), [Some(n)] if *n >= 2)
        })
        .check(|run| assert!(run.controllers().slice_syncs("error") >= 2.0))
        .create(node("ghost"))
        .slices(
            "web",
            "the ghost pod included",
            pods_are(&["web-0", "web-ghost"]),
        )
        .planned_slices("web")
        .run()
        .await?;
    assert_eq!(
        endpoint_of(run.slices("the ghost pod included"), "web-ghost").and_then(|e| e.node_name),
        Some("ghost".to_owned())
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_are_reopened_and_both_controllers_converge() -> anyhow::Result<()> {
    let dropped_twice = |s: Scenario| {
        let dropped = s
            .faults(|f| f.drop_watches())
            .pod_not_ready("web-0")
            .delete_pod("web-1")
            .create(web_pod("web-new", "10.0.0.50"))
            .patch_service("web", json!({"metadata": {"labels": {"team": "red"}}}));
        plans(dropped)
            .faults(|f| f.drop_watches())
            .pod_ready("web-0")
    };
    let reopened = "the pod watch to be re-opened after each drop";
    pod_informer_recovers(dropped_twice, reopened, ("watch", 3)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_pod_watch_forces_a_relist_and_both_controllers_converge() -> anyhow::Result<()> {
    // The pod watch is closed; changes land while it is down, and resuming it answers 410,
    // so the informer re-lists and must notice the deleted pod by its absence.
    let expired = |s: Scenario| {
        s.faults(|f| {
            f.expire_next_watch("pods");
            f.drop_watches();
        })
        .delete_pod("web-2")
        .pod_ips("web-1", &["10.0.0.77"])
        .create(pod("web-new").label("app", "web").ip("10.0.0.50"))
    };
    let relisted = "the informer to re-list pods after the 410";
    pod_informer_recovers(expired, relisted, ("list", 2)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_faults_mid_run_still_converge_to_the_plans() -> anyhow::Result<()> {
    converges_after(4, |s| {
        s.fail_next("update", "endpointslices", 1, FaultResponse::Conflict)
            .fail_next("create", "endpointslices", 1, FaultResponse::InternalError)
            .fail_next("update", "endpoints", 1, FaultResponse::InternalError)
            .faults(|f| f.expire_next_watch("pods"))
            .pod_not_ready("web-0")
            .faults(|f| f.drop_watches())
            .delete_pod("web-3")
            // A second port group: a create that meets the injected 500.
            .patch_service(
                "web",
                json!({"spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
            )
            .create(web_pod("web-named", "10.0.0.60").container_port("http", 8080))
    })
    .check(both_failed_once)
    .run_to_end()
    .await
}
