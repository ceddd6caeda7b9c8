//! Edits made behind the controller's back are repaired, and slices converge to the plan
//! from scratch after any sequence of them.

use super::{label, NS};
use kube::api::PostParams;
use serde_json::json;
use testkit::{node, pod, pod_names, ports, service, slices_only, web_pod, within, TestCluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manually_deleted_managed_slice_is_recreated() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let controllers = cluster.run_controllers(slices_only()).await;
    let before = cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    let old_uid = before[0].metadata.uid.clone();
    // The writer counts a create only after recording it in its tracker; deleting earlier
    // races that bookkeeping (the next test covers that race).
    wait_for_recorded_creates(&controllers, 1.0).await;

    cluster
        .slices(NS)
        .delete(
            before[0].metadata.name.as_deref().unwrap_or_default(),
            &Default::default(),
        )
        .await?;
    let after = cluster
        .wait_for_slices(NS, "web", "a new slice with web-1", |s| {
            s.len() == 1 && s[0].metadata.uid != old_uid && pod_names(s) == ["web-1"]
        })
        .await;
    assert_ne!(after[0].metadata.name, before[0].metadata.name);
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

/// Waits until the writer has counted `n` slice creates (and so recorded them in its tracker).
async fn wait_for_recorded_creates(controllers: &testkit::Controllers, n: f64) {
    testkit::eventually("the writer to record its creates", || {
        let created = controllers.metric(
            "endpoint_slice_controller_changes",
            &[("operation", "create")],
        );
        async move {
            (created >= n)
                .then_some(())
                .ok_or(format!("{created} creates"))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_deleted_right_after_its_create_is_still_recreated() -> anyhow::Result<()> {
    // Each round deletes a new slice as soon as the API shows it, which now and then lands
    // before the writer's tracker update; the race needs many tries to show.
    let cluster = TestCluster::start().await;
    cluster.create_pod(&web_pod("web-1", "10.0.0.1")).await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let rounds: Vec<String> = (0..40).map(|i| format!("web-{i}")).collect();
    for name in &rounds {
        cluster
            .create_service(&service(name).selector("app", "web").port("http", 80, 8080))
            .await?;
        let first = cluster
            .wait_for_slices(NS, name, "a slice", |s| s.len() == 1)
            .await;
        cluster
            .slices(NS)
            .delete(
                first[0].metadata.name.as_deref().unwrap_or_default(),
                &Default::default(),
            )
            .await?;
    }
    for name in &rounds {
        cluster
            .wait_for_slices(NS, name, "recreated with web-1", |s| {
                pod_names(s) == ["web-1"]
            })
            .await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manually_edited_managed_slice_is_repaired() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    for (name, ip) in [("web-1", "10.0.0.1"), ("web-2", "10.0.0.2")] {
        cluster.create_pod(&web_pod(name, ip)).await?;
    }
    let _controllers = cluster.run_controllers(slices_only()).await;
    let mut slices = cluster
        .wait_for_slices(NS, "web", "both pods", |s| {
            pod_names(s) == ["web-1", "web-2"]
        })
        .await;

    let mut edited = slices.remove(0);
    let name = edited.metadata.name.clone().unwrap_or_default();
    edited.endpoints.clear();
    edited.ports = None;
    cluster
        .slices(NS)
        .replace(&name, &PostParams::default(), &edited)
        .await?;
    let repaired = cluster
        .wait_for_slices(NS, "web", "endpoints and ports restored", |s| {
            pod_names(s) == ["web-1", "web-2"] && s.iter().all(|s| !ports(s).is_empty())
        })
        .await;
    assert_eq!(repaired.len(), 1);
    assert_eq!(repaired[0].metadata.name.as_deref(), Some(name.as_str()));
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_labelled_for_the_service_but_owned_by_another_uid_is_replaced() -> anyhow::Result<()>
{
    let cluster = TestCluster::start().await;
    let svc = cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;

    // A slice a previous incarnation of the Service left behind.
    let foreign: k8s_openapi::api::discovery::v1::EndpointSlice = serde_json::from_value(json!({
        "metadata": {
            "name": "web-foreign",
            "labels": {
                "kubernetes.io/service-name": "web",
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Service", "name": "web",
                "uid": "00000000-0000-0000-0000-000000000000", "controller": true,
            }],
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.9.9.9"]}],
    }))?;
    cluster
        .slices(NS)
        .create(&PostParams::default(), &foreign)
        .await?;
    let slices = cluster
        .wait_for_slices(NS, "web", "the foreign slice deleted", |s| {
            s.iter()
                .all(|s| s.metadata.name.as_deref() != Some("web-foreign"))
        })
        .await;
    assert_eq!(pod_names(&slices), ["web-1"]);
    for slice in &slices {
        let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(Some(owner.uid.as_str()), svc.metadata.uid.as_deref());
    }
    cluster.wait_for_planned_slices(NS, "web").await;
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
    cluster.faults().add_latency(
        "create",
        "endpointslices",
        std::time::Duration::from_secs(1),
    );
    let controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .create_service(
            &service("web")
                .ns("doomed")
                .selector("app", "web")
                .port("http", 80, 8080),
        )
        .await?;
    testkit::eventually("the controller to send its create", || {
        let n = cluster.requests("create", "endpointslices");
        async move { (n >= 1).then_some(()).ok_or(format!("{n} creates")) }
    })
    .await;
    cluster
        .namespaces()
        .delete("doomed", &Default::default())
        .await?;

    testkit::eventually("the refused sync and the deletion sync to finish", || {
        let done = controllers.slice_syncs("success") + controllers.slice_syncs("error");
        async move { (done >= 2.0).then_some(()).ok_or(format!("{done} syncs")) }
    })
    .await;
    assert_eq!(controllers.slice_syncs("error"), 0.0, "no error, no retry");
    assert_eq!(cluster.requests("create", "endpointslices"), 1);
    let left = cluster
        .managed_slices("doomed", "web")
        .await
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_converge_to_the_plan_from_scratch_after_a_sequence_of_edits() -> anyhow::Result<()>
{
    let cluster = TestCluster::start().await;
    for (n, zone) in [("node-a", "zone-a"), ("node-b", "zone-b")] {
        cluster.create_node(&node(n).zone(zone)).await?;
    }
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .label("team", "blue")
                .port("http", 80, 8080)
                .named_port("metrics", 9100, "metrics"),
        )
        .await?;
    cluster
        .create_service(&service("api").selector("app", "api").port("grpc", 90, 9090))
        .await?;
    for i in 0..6 {
        let n = if i % 2 == 0 { "node-a" } else { "node-b" };
        let app = if i < 4 { "web" } else { "api" };
        let mut p = pod(&format!("p-{i}"))
            .label("app", app)
            .node(n)
            .ip(&format!("10.0.1.{i}"))
            .ready(i % 3 != 0);
        if i % 2 == 0 {
            p = p.container_port("metrics", 9100);
        }
        cluster.create_pod(&p).await?;
    }
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster.wait_for_planned_slices(NS, "web").await;

    cluster.set_pod_ready(NS, "p-0", true).await?;
    cluster.set_pod_ready(NS, "p-1", false).await?;
    cluster
        .patch_pod(NS, "p-2", json!({"metadata": {"labels": {"app": "api"}}}))
        .await?;
    cluster.delete_pod(NS, "p-3").await?;
    cluster
        .create_pod(
            &pod("p-6")
                .label("app", "web")
                .node("node-b")
                .ip("10.0.1.6")
                .ready(true)
                .container_port("metrics", 9100),
        )
        .await?;
    cluster.set_pod_ips(NS, "p-4", &["10.0.1.44"]).await?;
    cluster
        .patch_service(
            NS,
            "web",
            json!({"metadata": {"labels": {"team": "green"}}}),
        )
        .await?;
    cluster
        .patch_service(
            NS,
            "api",
            json!({"spec": {"ports": [{"name": "grpc", "port": 90, "targetPort": 9191}]}}),
        )
        .await?;

    cluster.wait_for_planned_slices(NS, "web").await;
    cluster.wait_for_planned_slices(NS, "api").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_label_drift_is_repaired_on_the_next_sync() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .label("team", "blue")
                .port("http", 80, 8080),
        )
        .await?;
    for (name, ip) in [("web-1", "10.0.0.1"), ("web-2", "10.0.0.2")] {
        cluster.create_pod(&web_pod(name, ip)).await?;
    }
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "both pods", |s| {
            pod_names(s) == ["web-1", "web-2"]
        })
        .await;
    let name = slices[0].metadata.name.clone().unwrap_or_default();

    // A label edit does not bump the generation, so it waits for the Service's next sync.
    cluster
        .slices(NS)
        .patch(
            &name,
            &Default::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"team": "red"}}})),
        )
        .await?;
    // A Service change that leaves every endpoint as it is: only the drift makes a write. The
    // sync it queues may run before the slice cache has the edit, and then finds nothing to
    // do (as upstream's would), so the Service is touched again until a sync sees the drift.
    let repaired = within("the label drift to be repaired", async {
        let mut round = 0u32;
        loop {
            round += 1;
            let touched =
                json!({"metadata": {"annotations": {"example.com/touched": round.to_string()}}});
            cluster.patch_service(NS, "web", touched).await?;
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let slices = cluster.managed_slices(NS, "web").await?;
            if slices.len() == 1 && label(&slices[0], "team") == Some("blue") {
                return anyhow::Ok(slices);
            }
        }
    })
    .await?;
    assert_eq!(repaired[0].metadata.name.as_deref(), Some(name.as_str()));
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}
