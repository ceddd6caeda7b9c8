//! The live v1 Endpoints controller against the embedded API server, through the real kube
//! client: Endpoints follow pods and Services, leftovers are swept at start-up, leader-election
//! records are left alone, refusals in a terminating namespace are dropped quietly, and failed
//! writes are recorded as events and retried.
//!
//! Each test starts its own server and controllers; waits poll the API with a deadline.

use apiserver::FaultResponse;
use k8s_openapi::api::core::v1::Endpoints;
use kube::api::PostParams;
use reconcile::endpoints::LEADER_ANNOTATION;
use serde_json::json;
use testkit::{
    addresses, endpoints_only, endpoints_ports, eventually, pod, service, strings, trigger_time,
    web_pod, TestCluster, DEFAULT_NODE,
};

const NS: &str = "default";

/// (ready IPs, not-ready IPs) of an Endpoints object.
fn ips(ready: &[&str], not_ready: &[&str]) -> (Vec<String>, Vec<String>) {
    (strings(ready), strings(not_ready))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_put_ready_pods_in_addresses_and_others_in_not_ready_addresses(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_web(&[
            web_pod("web-1", "10.0.0.1"),
            web_pod("web-2", "10.0.0.2").ready(false),
        ])
        .await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;

    let endpoints = cluster
        .wait_for_endpoints(NS, "web", "web-1 ready, web-2 not", |e| {
            addresses(e) == ips(&["10.0.0.1"], &["10.0.0.2"])
        })
        .await
        .expect("the Endpoints object exists");
    assert_eq!(
        endpoints_ports(Some(&endpoints)),
        [("http".to_owned(), 8080)]
    );
    let labels = endpoints.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
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

    cluster.set_pod_ready(NS, "web-2", true).await?;
    cluster
        .wait_for_endpoints(NS, "web", "both ready", |e| {
            addresses(e) == ips(&["10.0.0.1", "10.0.0.2"], &[])
        })
        .await;
    cluster.set_pod_ready(NS, "web-1", false).await?;
    cluster
        .wait_for_endpoints(NS, "web", "web-1 not ready", |e| {
            addresses(e) == ips(&["10.0.0.2"], &["10.0.0.1"])
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_drop_deleted_pods() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_web(&[web_pod("web-1", "10.0.0.1"), web_pod("web-2", "10.0.0.2")])
        .await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .wait_for_endpoints(NS, "web", "both pods", |e| {
            addresses(e) == ips(&["10.0.0.1", "10.0.0.2"], &[])
        })
        .await;

    cluster.delete_pod(NS, "web-1").await?;
    cluster
        .wait_for_endpoints(NS, "web", "only web-2", |e| {
            addresses(e) == ips(&["10.0.0.2"], &[])
        })
        .await;
    cluster.delete_pod(NS, "web-2").await?;
    let endpoints = cluster
        .wait_for_endpoints(NS, "web", "no addresses", |e| {
            e.is_some() && addresses(e) == ips(&[], &[])
        })
        .await;
    assert!(
        endpoints
            .and_then(|e| e.subsets)
            .unwrap_or_default()
            .is_empty(),
        "no empty subsets are written"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_follow_pod_ip_and_label_changes() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_web(&[web_pod("web-1", "10.0.0.1"), web_pod("web-2", "10.0.0.2")])
        .await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .wait_for_endpoints(NS, "web", "both pods", |e| {
            addresses(e) == ips(&["10.0.0.1", "10.0.0.2"], &[])
        })
        .await;

    cluster.set_pod_ips(NS, "web-1", &["10.0.0.11"]).await?;
    cluster
        .wait_for_endpoints(NS, "web", "web-1's new IP", |e| {
            addresses(e) == ips(&["10.0.0.11", "10.0.0.2"], &[])
        })
        .await;

    cluster
        .patch_pod(
            NS,
            "web-2",
            json!({"metadata": {"labels": {"app": "other"}}}),
        )
        .await?;
    cluster
        .wait_for_endpoints(NS, "web", "web-2 deselected", |e| {
            addresses(e) == ips(&["10.0.0.11"], &[])
        })
        .await;
    cluster
        .patch_pod(NS, "web-2", json!({"metadata": {"labels": {"app": "web"}}}))
        .await?;
    cluster
        .wait_for_endpoints(NS, "web", "web-2 selected again", |e| {
            addresses(e) == ips(&["10.0.0.11", "10.0.0.2"], &[])
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_follow_service_port_and_selector_changes() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    cluster
        .create_pod(
            &pod("canary")
                .label("track", "canary")
                .ip("10.0.0.9")
                .ready(true),
        )
        .await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .wait_for_endpoints(NS, "web", "port 8080", |e| {
            endpoints_ports(e) == [("http".to_owned(), 8080)]
        })
        .await;

    cluster
        .patch_service(
            NS,
            "web",
            json!({"spec": {"ports": [
                {"name": "http", "port": 80, "targetPort": 8081},
                {"name": "admin", "port": 81, "targetPort": 9000},
            ]}}),
        )
        .await?;
    let endpoints = cluster
        .wait_for_endpoints(NS, "web", "ports 8081 and 9000", |e| {
            let mut ports = endpoints_ports(e);
            ports.sort();
            ports == [("admin".to_owned(), 9000), ("http".to_owned(), 8081)]
        })
        .await;
    assert_eq!(
        endpoints
            .as_ref()
            .and_then(|e| e.subsets.as_ref())
            .map(Vec::len),
        Some(1),
        "ports sharing one address set are merged into one subset"
    );

    cluster
        .patch_service(
            NS,
            "web",
            json!({"spec": {"selector": {"app": null, "track": "canary"}}}),
        )
        .await?;
    cluster
        .wait_for_endpoints(NS, "web", "only the canary", |e| {
            addresses(e) == ips(&["10.0.0.9"], &[])
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_are_deleted_with_their_service() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .wait_for_endpoints(NS, "web", "web-1", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;

    cluster.delete_service(NS, "web").await?;
    cluster
        .wait_for_endpoints(NS, "web", "deleted", |e| e.is_none())
        .await;
    Ok(())
}

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
    let api = cluster.endpoints(NS);
    api.create(&PostParams::default(), &leftover("orphan", json!({})))
        .await?;
    let lock = api
        .create(
            &PostParams::default(),
            &leftover(
                "old-controller-lock",
                json!({LEADER_ANNOTATION: r#"{"holderIdentity":"someone"}"#}),
            ),
        )
        .await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;

    cluster
        .wait_for_endpoints(NS, "orphan", "swept", |e| e.is_none())
        .await;
    // A barrier: once a new Service's Endpoints exist, the start-up sweep is long done.
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    cluster
        .wait_for_endpoints(NS, "web", "web-1", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;
    let after = api.get("old-controller-lock").await?;
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
    let cluster = TestCluster::start().await;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    // A barrier: the controller is running and past its start-up sweep.
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    cluster
        .wait_for_endpoints(NS, "web", "web-1", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;
    let api = cluster.endpoints(NS);
    let mut ours = leftover("late", json!({}));
    ours.metadata.labels = Some(
        [(
            "endpoints.kubernetes.io/managed-by".to_owned(),
            "endpoint-controller".to_owned(),
        )]
        .into(),
    );
    api.create(&PostParams::default(), &leftover("hand-written", json!({})))
        .await?;
    api.create(&PostParams::default(), &ours).await?;
    cluster
        .wait_for_endpoints(NS, "late", "deleted", |e| e.is_none())
        .await;
    assert!(api.get_opt("hand-written").await?.is_some());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_refused_in_a_terminating_namespace_is_dropped_quietly() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_namespace("doomed").await?;
    // A pod that cannot go away keeps the namespace Terminating rather than gone.
    cluster
        .create_pod(&pod("held").ns("doomed").finalizer("example.com/hold"))
        .await?;
    // Hold the controller's create in the server long enough to delete the namespace under it.
    cluster
        .faults()
        .add_latency("create", "endpoints", std::time::Duration::from_secs(1));
    let controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .create_service(
            &service("web")
                .ns("doomed")
                .selector("app", "web")
                .port("http", 80, 8080),
        )
        .await?;
    eventually("the controller to send its create", || {
        let n = cluster.requests("create", "endpoints");
        async move { (n >= 1).then_some(()).ok_or(format!("{n} creates")) }
    })
    .await;
    cluster
        .namespaces()
        .delete("doomed", &Default::default())
        .await?;

    eventually("the refused sync and the deletion sync to finish", || {
        let done = controllers.endpoints_syncs("success") + controllers.endpoints_syncs("error");
        async move { (done >= 2.0).then_some(()).ok_or(format!("{done} syncs")) }
    })
    .await;
    assert_eq!(
        controllers.endpoints_syncs("error"),
        0.0,
        "no error, no retry"
    );
    assert_eq!(cluster.requests("create", "endpoints"), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_endpoints_create_is_recorded_as_an_event_and_retried() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .faults()
        .fail_next("create", "endpoints", 2, FaultResponse::InternalError);
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let controllers = cluster.run_controllers(endpoints_only()).await;

    let event = cluster
        .wait_for_event(NS, "web", "FailedToCreateEndpoint")
        .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("endpoint-controller")
    );
    assert_eq!(event.involved_object.kind.as_deref(), Some("Endpoints"));
    let message = event.message.unwrap_or_default();
    assert!(
        message.starts_with("Failed to create endpoint for service default/web"),
        "{message}"
    );

    cluster
        .wait_for_endpoints(NS, "web", "created after the faults", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;
    assert!(controllers.endpoints_syncs("error") >= 2.0);
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_converge_to_the_plan_from_scratch_after_a_sequence_of_edits(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .label("team", "blue")
                .port("http", 80, 8080)
                .named_port("metrics", 9100, "metrics"),
        )
        .await?;
    for i in 0..5 {
        let mut p = pod(&format!("p-{i}"))
            .label("app", "web")
            .ip(&format!("10.0.1.{i}"))
            .ready(i % 2 == 0);
        if i < 3 {
            p = p.container_port("metrics", 9100);
        }
        cluster.create_pod(&p).await?;
    }
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster.wait_for_planned_endpoints(NS, "web").await;

    cluster.set_pod_ready(NS, "p-1", true).await?;
    cluster.set_pod_ready(NS, "p-2", false).await?;
    cluster.delete_pod(NS, "p-0").await?;
    cluster.set_pod_ips(NS, "p-3", &["10.0.1.33"]).await?;
    cluster
        .patch_pod(NS, "p-4", json!({"metadata": {"labels": {"app": "gone"}}}))
        .await?;
    cluster
        .create_pod(&web_pod("p-5", "10.0.1.5").container_port("metrics", 9100))
        .await?;
    cluster
        .patch_service(
            NS,
            "web",
            json!({"metadata": {"labels": {"team": "green"}}}),
        )
        .await?;

    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_trigger_time_is_the_service_creation_then_the_pod_readiness_change(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let svc = cluster.create_web(&[]).await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1"))
        .await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    let endpoints = cluster
        .wait_for_endpoints(NS, "web", "web-1 not ready", |e| {
            addresses(e) == ips(&[], &["10.0.0.1"])
        })
        .await
        .expect("the Endpoints object exists");
    let created = svc.metadata.creation_timestamp.map(|t| t.0);
    assert_eq!(trigger_time(&endpoints.metadata), created);

    // A change no pod's readiness moved for: the annotation is removed. This also makes the
    // next write an update, which the stale-resourceVersion guard protects; a create racing
    // the Endpoints informer fails with AlreadyExists after the tracker already consumed the
    // trigger time, as upstream's does.
    cluster.set_pod_ips(NS, "web-1", &["10.0.0.2"]).await?;
    cluster
        .wait_for_endpoints(NS, "web", "the new IP, without trigger time", |e| {
            addresses(e) == ips(&[], &["10.0.0.2"])
                && e.is_some_and(|e| trigger_time(&e.metadata).is_none())
        })
        .await;

    // Transition times have second precision: use one surely later than the pod's creation.
    let since: k8s_openapi::jiff::Timestamp = "2100-01-01T00:00:00Z".parse()?;
    cluster
        .set_pod_ready_since(NS, "web-1", true, since)
        .await?;
    cluster
        .wait_for_endpoints(NS, "web", "the readiness change as trigger time", |e| {
            addresses(e) == ips(&["10.0.0.2"], &[])
                && e.and_then(|e| trigger_time(&e.metadata)) == Some(since)
        })
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_not_ready_addresses_puts_every_pod_in_addresses() -> anyhow::Result<()> {
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
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .wait_for_endpoints(NS, "web", "web-1 published as ready", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_service_without_ports_gets_port_less_endpoints_with_the_headless_label(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("app", "web").headless())
        .await?;
    cluster.create_pod(&web_pod("web-1", "10.0.0.1")).await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    let endpoints = cluster
        .wait_for_endpoints(NS, "web", "web-1", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await
        .expect("the Endpoints object exists");
    assert!(endpoints_ports(Some(&endpoints)).is_empty());
    assert_eq!(
        endpoints
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("service.kubernetes.io/headless"))
            .map(String::as_str),
        Some("")
    );
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_endpoints_update_is_recorded_as_an_event_and_retried() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .wait_for_endpoints(NS, "web", "web-1", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;

    cluster
        .faults()
        .fail_next("update", "endpoints", 1, FaultResponse::InternalError);
    cluster.set_pod_ready(NS, "web-1", false).await?;
    let event = cluster
        .wait_for_event(NS, "web", "FailedToUpdateEndpoint")
        .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("endpoint-controller")
    );
    let message = event.message.unwrap_or_default();
    assert!(
        message.starts_with("Failed to update endpoint default/web"),
        "{message}"
    );
    cluster
        .wait_for_endpoints(NS, "web", "web-1 not ready after the retry", |e| {
            addresses(e) == ips(&[], &["10.0.0.1"])
        })
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_without_an_ip_or_in_a_terminal_phase_are_not_published() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_web(&[web_pod("running", "10.0.0.1")])
        .await?;
    cluster
        .create_pod(&pod("pending").label("app", "web").phase("Pending"))
        .await?;
    for phase in ["Succeeded", "Failed"] {
        cluster
            .create_pod(
                &pod(&phase.to_lowercase())
                    .label("app", "web")
                    .ip("10.0.0.9")
                    .ready(true)
                    .phase(phase),
            )
            .await?;
    }
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .wait_for_endpoints(NS, "web", "only the running pod", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manually_deleted_endpoints_are_recreated() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    let before = cluster
        .wait_for_endpoints(NS, "web", "web-1", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await
        .expect("the Endpoints object exists");

    cluster
        .endpoints(NS)
        .delete("web", &Default::default())
        .await?;
    cluster
        .wait_for_endpoints(NS, "web", "recreated", |e| {
            e.is_some_and(|e| e.metadata.uid != before.metadata.uid)
                && addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_service_endpoints_use_the_first_ip_family() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .dual_stack()
                .port("http", 80, 8080),
        )
        .await?;
    cluster
        .create_pod(
            &pod("web-1")
                .label("app", "web")
                .ip("fd00::1")
                .ip("10.0.0.1")
                .ready(true),
        )
        .await?;
    let _controllers = cluster.run_controllers(endpoints_only()).await;
    cluster
        .wait_for_endpoints(NS, "web", "the IPv4 address", |e| {
            addresses(e) == ips(&["10.0.0.1"], &[])
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;
    Ok(())
}
