//! The live v1 Endpoints controller against the embedded API server, through the real kube
//! client: Endpoints follow pods and Services, leftovers are swept at start-up, leader-election
//! records are left alone, refusals in a terminating namespace are dropped quietly, and failed
//! writes are recorded as events and retried.
//!
//! Each test is a scenario on its own server and controllers; waits wake on the server's
//! writes, with a deadline.

use apiserver::FaultResponse;
use k8s_openapi::api::core::v1::Endpoints;
use kube::api::PostParams;
use kube::ResourceExt;
use reconcile::endpoints::LEADER_ANNOTATION;
use serde_json::json;
use testkit::scenario::{
    absent, addresses_are, create_refused_in_a_terminating_namespace, warning, EventLike,
    Message::StartsWith, Scenario,
};
use testkit::{
    addresses, endpoints_only, endpoints_ports, finished_web_pods, pod, service, trigger_time, web,
    web_pod, Controllers, TestCluster, DEFAULT_NODE,
};

const NS: &str = "default";

/// [`web`] and its pod `web-1`, until the Endpoints controller has published the pod; the
/// Endpoints are kept under "web-1".
fn web_1_published() -> Scenario {
    Scenario::web([web_pod("web-1", "10.0.0.1")])
        .start(endpoints_only())
        .endpoints("web", "web-1", addresses_are(&["10.0.0.1"], &[]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_put_ready_pods_in_addresses_and_others_in_not_ready_addresses(
) -> anyhow::Result<()> {
    let run = Scenario::web([
        web_pod("web-1", "10.0.0.1"),
        web_pod("web-2", "10.0.0.2").ready(false),
    ])
    .start(endpoints_only())
    .endpoints(
        "web",
        "web-1 ready, web-2 not",
        addresses_are(&["10.0.0.1"], &["10.0.0.2"]),
    )
    .pod_ready("web-2")
    .endpoints(
        "web",
        "both ready",
        addresses_are(&["10.0.0.1", "10.0.0.2"], &[]),
    )
    .pod_not_ready("web-1")
    .endpoints(
        "web",
        "web-1 not ready",
        addresses_are(&["10.0.0.2"], &["10.0.0.1"]),
    )
    .planned_endpoints("web")
    .run()
    .await?;

    let endpoints = run
        .endpoints("web-1 ready, web-2 not")
        .expect("the Endpoints object exists");
    assert_eq!(
        endpoints_ports(Some(endpoints)),
        [("http".to_owned(), 8080)]
    );
    assert_eq!(
        endpoints
            .labels()
            .get("endpoints.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("endpoint-controller")
    );
    let subset = &endpoints.subsets.as_ref().expect("one subset")[0];
    let address = &subset.addresses.as_ref().expect("ready addresses")[0];
    assert_eq!(address.node_name.as_deref(), Some(DEFAULT_NODE));
    let target = address.target_ref.as_ref().expect("a targetRef");
    assert_eq!(
        (
            target.kind.as_deref(),
            target.namespace.as_deref(),
            target.name.as_deref()
        ),
        (Some("Pod"), Some(NS), Some("web-1"))
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_drop_deleted_pods() -> anyhow::Result<()> {
    let run = Scenario::web([web_pod("web-1", "10.0.0.1"), web_pod("web-2", "10.0.0.2")])
        .start(endpoints_only())
        .endpoints(
            "web",
            "both pods",
            addresses_are(&["10.0.0.1", "10.0.0.2"], &[]),
        )
        .delete_pod("web-1")
        .endpoints("web", "only web-2", addresses_are(&["10.0.0.2"], &[]))
        .delete_pod("web-2")
        .endpoints("web", "no addresses", |e| {
            e.is_some() && addresses(e) == Default::default()
        })
        .run()
        .await?;
    assert!(
        run.endpoints("no addresses")
            .and_then(|e| e.subsets.as_ref())
            .is_none_or(Vec::is_empty),
        "no empty subsets are written"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_follow_pod_ip_and_label_changes() -> anyhow::Result<()> {
    let both = ["10.0.0.11", "10.0.0.2"];
    Scenario::web([web_pod("web-1", "10.0.0.1"), web_pod("web-2", "10.0.0.2")])
        .start(endpoints_only())
        .endpoints(
            "web",
            "both pods",
            addresses_are(&["10.0.0.1", "10.0.0.2"], &[]),
        )
        .pod_ips("web-1", &["10.0.0.11"])
        .endpoints("web", "web-1's new IP", addresses_are(&both, &[]))
        .patch_pod("web-2", json!({"metadata": {"labels": {"app": "other"}}}))
        .endpoints(
            "web",
            "web-2 deselected",
            addresses_are(&["10.0.0.11"], &[]),
        )
        .patch_pod("web-2", json!({"metadata": {"labels": {"app": "web"}}}))
        .endpoints("web", "web-2 selected again", addresses_are(&both, &[]))
        .planned_endpoints("web")
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_follow_service_port_and_selector_changes() -> anyhow::Result<()> {
    let run = Scenario::web([
        web_pod("web-1", "10.0.0.1"),
        pod("canary")
            .label("track", "canary")
            .ip("10.0.0.9")
            .ready(true),
    ])
    .start(endpoints_only())
    .endpoints("web", "port 8080", |e| {
        endpoints_ports(e) == [("http".to_owned(), 8080)]
    })
    .patch_service(
        "web",
        json!({"spec": {"ports": [
            {"name": "http", "port": 80, "targetPort": 8081},
            {"name": "admin", "port": 81, "targetPort": 9000},
        ]}}),
    )
    .endpoints("web", "ports 8081 and 9000", |e| {
        let mut ports = endpoints_ports(e);
        ports.sort();
        ports == [("admin".to_owned(), 9000), ("http".to_owned(), 8081)]
    })
    .patch_service(
        "web",
        json!({"spec": {"selector": {"app": null, "track": "canary"}}}),
    )
    .endpoints("web", "only the canary", addresses_are(&["10.0.0.9"], &[]))
    .planned_endpoints("web")
    .run()
    .await?;
    assert_eq!(
        run.endpoints("ports 8081 and 9000")
            .and_then(|e| e.subsets.as_ref())
            .map(Vec::len),
        Some(1),
        "ports sharing one address set are merged into one subset"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_are_deleted_with_their_service() -> anyhow::Result<()> {
    web_1_published()
        .delete_service("web")
        .endpoints("web", "deleted", absent)
        .run_to_end()
        .await
}

/// An Endpoints object no Service owns, with one address.
fn leftover(name: &str, annotations: serde_json::Value) -> Endpoints {
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        "subsets": [{"addresses": [{"ip": "10.9.9.9"}], "ports": [{"port": 80}]}],
    }))
    .expect("a valid Endpoints object")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_sweep_removes_leftover_endpoints_but_never_touches_leader_election_records(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let record = leftover(
        "old-controller-lock",
        json!({LEADER_ANNOTATION: r#"{"holderIdentity":"someone"}"#}),
    );
    let lock = cluster
        .endpoints(NS)
        .create(&PostParams::default(), &record)
        .await?;
    let run = Scenario::new()
        .create(leftover("orphan", json!({})))
        .start(endpoints_only())
        .endpoints("orphan", "swept", absent)
        // A barrier: once a new Service's Endpoints exist, the start-up sweep is long done.
        .create(web())
        .create(web_pod("web-1", "10.0.0.1"))
        .endpoints("web", "web-1", addresses_are(&["10.0.0.1"], &[]))
        .run_on(cluster)
        .await?;
    let after = run.cluster.endpoints(NS).get("old-controller-lock").await?;
    assert_eq!(
        after.metadata.resource_version,
        lock.metadata.resource_version
    );
    Ok(())
}

/// One of ours that appears after start without its Service (written by a replica that had
/// not seen the Service go) is deleted; a hand-written one is left alone, as upstream does
/// after start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoints_object_of_ours_appearing_without_its_service_is_deleted() -> anyhow::Result<()>
{
    let mut ours = leftover("late", json!({}));
    ours.labels_mut().insert(
        "endpoints.kubernetes.io/managed-by".to_owned(),
        "endpoint-controller".to_owned(),
    );
    let run = Scenario::new()
        .start(endpoints_only())
        // A barrier: the controller is running and past its start-up sweep.
        .create(web())
        .create(web_pod("web-1", "10.0.0.1"))
        .endpoints("web", "web-1", addresses_are(&["10.0.0.1"], &[]))
        .create(leftover("hand-written", json!({})))
        .create(ours)
        .endpoints("late", "deleted", absent)
        .run()
        .await?;
    assert!(run
        .cluster
        .get_endpoints(NS, "hand-written")
        .await?
        .is_some());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_refused_in_a_terminating_namespace_is_dropped_quietly() -> anyhow::Result<()> {
    create_refused_in_a_terminating_namespace(
        endpoints_only(),
        "endpoints",
        Controllers::endpoints_syncs,
    )
    .run_to_end()
    .await
}

/// A Warning Event the Endpoints controller reports about the Endpoints `web`.
fn endpoints_warning(reason: &str) -> EventLike {
    warning("web", reason)
        .by("endpoint-controller")
        .about("Endpoints")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_endpoints_create_is_recorded_as_an_event_and_retried() -> anyhow::Result<()> {
    Scenario::new()
        .fail_next("create", "endpoints", 2, FaultResponse::InternalError)
        .create(web())
        .create(web_pod("web-1", "10.0.0.1"))
        .start(endpoints_only())
        .event(
            endpoints_warning("FailedToCreateEndpoint").message(StartsWith(
                "Failed to create endpoint for service default/web",
            )),
        )
        .endpoints(
            "web",
            "created after the faults",
            addresses_are(&["10.0.0.1"], &[]),
        )
        .check(|run| assert!(run.controllers().endpoints_syncs("error") >= 2.0))
        .planned_endpoints("web")
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_converge_to_the_plan_from_scratch_after_a_sequence_of_edits(
) -> anyhow::Result<()> {
    let pods = (0..5).map(|i| {
        let p = pod(&format!("p-{i}"))
            .label("app", "web")
            .ip(&format!("10.0.1.{i}"))
            .ready(i % 2 == 0);
        if i < 3 {
            p.container_port("metrics", 9100)
        } else {
            p
        }
    });
    Scenario::new()
        .create(
            web()
                .label("team", "blue")
                .named_port("metrics", 9100, "metrics"),
        )
        .create_all(pods)
        .start(endpoints_only())
        .planned_endpoints("web")
        .pod_ready("p-1")
        .pod_not_ready("p-2")
        .delete_pod("p-0")
        .pod_ips("p-3", &["10.0.1.33"])
        .patch_pod("p-4", json!({"metadata": {"labels": {"app": "gone"}}}))
        .create(web_pod("p-5", "10.0.1.5").container_port("metrics", 9100))
        .patch_service("web", json!({"metadata": {"labels": {"team": "green"}}}))
        .planned_endpoints("web")
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_trigger_time_is_the_service_creation_then_the_pod_readiness_change(
) -> anyhow::Result<()> {
    // Transition times have second precision: use one surely later than the pod's creation.
    let since: k8s_openapi::jiff::Timestamp = "2100-01-01T00:00:00Z".parse()?;
    let new_ip_not_ready = addresses_are(&[], &["10.0.0.2"]);
    let new_ip_ready = addresses_are(&["10.0.0.2"], &[]);
    let run = Scenario::web([pod("web-1").label("app", "web").ip("10.0.0.1")])
        .start(endpoints_only())
        .endpoints("web", "web-1 not ready", addresses_are(&[], &["10.0.0.1"]))
        // A change no pod's readiness moved for: the annotation is removed. This also makes the
        // next write an update, which the stale-resourceVersion guard protects; a create racing
        // the Endpoints informer fails with AlreadyExists after the tracker already consumed
        // the trigger time, as upstream's does.
        .pod_ips("web-1", &["10.0.0.2"])
        .endpoints("web", "the new IP, without trigger time", move |e| {
            new_ip_not_ready(e) && e.is_some_and(|e| trigger_time(&e.metadata).is_none())
        })
        .pod_ready_since("web-1", since)
        .endpoints("web", "the readiness change as trigger time", move |e| {
            new_ip_ready(e) && e.and_then(|e| trigger_time(&e.metadata)) == Some(since)
        })
        .run()
        .await?;
    let svc = run.cluster.services(NS).get("web").await?;
    let first = run
        .endpoints("web-1 not ready")
        .expect("the Endpoints object exists");
    let created = svc.metadata.creation_timestamp.map(|t| t.0);
    assert_eq!(trigger_time(&first.metadata), created);
    Ok(())
}

/// `objects` under the Endpoints controller, until the Endpoints of `web` hold exactly the
/// `ready` IPs and no others, as the plan from scratch has them; they are kept under `what`.
fn publishing(objects: Scenario, what: &str, ready: &[&str]) -> Scenario {
    objects
        .start(endpoints_only())
        .endpoints("web", what, addresses_are(ready, &[]))
        .planned_endpoints("web")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_not_ready_addresses_puts_every_pod_in_addresses() -> anyhow::Result<()> {
    let objects = Scenario::new()
        .create(web().publish_not_ready_addresses())
        .create(web_pod("web-1", "10.0.0.1").ready(false));
    publishing(objects, "web-1 published as ready", &["10.0.0.1"])
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_service_without_ports_gets_port_less_endpoints_with_the_headless_label(
) -> anyhow::Result<()> {
    let objects = Scenario::new()
        .create(service("web").selector("app", "web").headless())
        .create(web_pod("web-1", "10.0.0.1"));
    let run = publishing(objects, "web-1", &["10.0.0.1"]).run().await?;
    let endpoints = run.endpoints("web-1").expect("the Endpoints object exists");
    assert!(endpoints_ports(Some(endpoints)).is_empty());
    assert_eq!(
        endpoints
            .labels()
            .get("service.kubernetes.io/headless")
            .map(String::as_str),
        Some("")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_endpoints_update_is_recorded_as_an_event_and_retried() -> anyhow::Result<()> {
    web_1_published()
        .fail_next("update", "endpoints", 1, FaultResponse::InternalError)
        .pod_not_ready("web-1")
        .event(
            endpoints_warning("FailedToUpdateEndpoint")
                .message(StartsWith("Failed to update endpoint default/web")),
        )
        .endpoints(
            "web",
            "web-1 not ready after the retry",
            addresses_are(&[], &["10.0.0.1"]),
        )
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_without_an_ip_or_in_a_terminal_phase_are_not_published() -> anyhow::Result<()> {
    let objects = Scenario::web([web_pod("running", "10.0.0.1")])
        .create(pod("pending").label("app", "web").phase("Pending"))
        .create_all(finished_web_pods());
    publishing(objects, "only the running pod", &["10.0.0.1"])
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manually_deleted_endpoints_are_recreated() -> anyhow::Result<()> {
    let run = web_1_published()
        .delete_endpoints("web")
        // The delete has returned: any Endpoints object seen from here on is a new one.
        .endpoints("web", "recreated", addresses_are(&["10.0.0.1"], &[]))
        .run()
        .await?;
    let uid = |what| run.endpoints(what).and_then(|e| e.uid());
    assert_ne!(uid("recreated"), uid("web-1"));
    Ok(())
}

/// Another writer's change to the Endpoints (a replica that still took itself for the leader)
/// brings no Service or pod event, so it stays until a re-list of the Services queues every
/// Service, as upstream's informers and handlers do; the sync then writes the object again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_changed_by_another_writer_are_written_again_after_a_relist() -> anyhow::Result<()>
{
    let foreign = json!({"subsets": [{
        "addresses": [{"ip": "10.9.9.9"}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }]});
    web_1_published()
        .patch_endpoints("web", foreign)
        .endpoints("web", "another writer's", addresses_are(&["10.9.9.9"], &[]))
        .faults(|f| {
            f.expire_next_watch("services");
            f.drop_watches();
        })
        .endpoints("web", "written again", addresses_are(&["10.0.0.1"], &[]))
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_service_endpoints_use_the_first_ip_family() -> anyhow::Result<()> {
    let objects = Scenario::new()
        .create(web().dual_stack())
        .create(web_pod("web-1", "fd00::1").ip("10.0.0.1"));
    publishing(objects, "the IPv4 address", &["10.0.0.1"])
        .run_to_end()
        .await
}
