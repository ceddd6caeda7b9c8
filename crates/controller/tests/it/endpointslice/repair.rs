//! Edits made behind the controller's back are repaired, and slices converge to the plan
//! from scratch after any sequence of them.

use super::{label, web_1_in_a_slice, NS};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use serde_json::json;
use testkit::scenario::{create_refused_in_a_terminating_namespace, pods_are, Scenario};
use testkit::{
    node, pod, pod_names, ports, service, slices_only, web, web_pod, within, Controllers,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manually_deleted_managed_slice_is_recreated() -> anyhow::Result<()> {
    // Deleted once the writer recorded its create (the next test covers the race before).
    web_1_in_a_slice()
        .slice_written_again("web", "a new slice with web-1")
        .planned_slices("web")
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_deleted_right_after_its_create_is_still_recreated() -> anyhow::Result<()> {
    // Each round deletes a new slice as soon as the API shows it, which now and then lands
    // before the writer's tracker update; the race needs many tries to show.
    let rounds: Vec<String> = (0..40).map(|i| format!("web-{i}")).collect();
    let started = Scenario::new()
        .create(web_pod("web-1", "10.0.0.1"))
        .start(slices_only());
    let deleted = rounds
        .iter()
        .map(String::as_str)
        .fold(started, |scenario, name| {
            scenario
                .create(service(name).selector("app", "web").port("http", 80, 8080))
                .slices(name, "a slice", |s| s.len() == 1)
                .delete_first_slice_of(name)
        });
    rounds
        .iter()
        .map(String::as_str)
        .fold(deleted, |scenario, name| {
            scenario.slices(name, "recreated with web-1", pods_are(&["web-1"]))
        })
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manually_edited_managed_slice_is_repaired() -> anyhow::Result<()> {
    let run = Scenario::web([web_pod("web-1", "10.0.0.1"), web_pod("web-2", "10.0.0.2")])
        .start(slices_only())
        .slices("web", "both pods", pods_are(&["web-1", "web-2"]))
        .patch_first_slice_of("web", json!({"endpoints": [], "ports": null}))
        .slices("web", "endpoints and ports restored", |s| {
            pod_names(s) == ["web-1", "web-2"] && s.iter().all(|s| !ports(s).is_empty())
        })
        .planned_slices("web")
        .run()
        .await?;
    let edited = run.slices("both pods")[0].name_any();
    let repaired = run.slices("endpoints and ports restored");
    assert_eq!(repaired.len(), 1);
    assert_eq!(repaired[0].name_any(), edited);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_labelled_for_the_service_but_owned_by_another_uid_is_replaced() -> anyhow::Result<()>
{
    // A slice a previous incarnation of the Service left behind.
    let foreign: EndpointSlice = serde_json::from_value(json!({
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
    let run = web_1_in_a_slice()
        .create(foreign)
        .slices("web", "the foreign slice deleted", |s| {
            s.iter().all(|s| s.name_any() != "web-foreign")
        })
        .planned_slices("web")
        .run()
        .await?;
    let slices = run.slices("the foreign slice deleted");
    assert_eq!(pod_names(slices), ["web-1"]);
    let uid = run.cluster.services(NS).get("web").await?.uid();
    for slice in slices {
        assert_eq!(Some(&slice.owner_references()[0].uid), uid.as_ref());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_refused_in_a_terminating_namespace_is_dropped_quietly() -> anyhow::Result<()> {
    let run = create_refused_in_a_terminating_namespace(
        slices_only(),
        "endpointslices",
        Controllers::slice_syncs,
    )
    .run()
    .await?;
    let left = run
        .cluster
        .managed_slices("doomed", "web")
        .await
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_converge_to_the_plan_from_scratch_after_a_sequence_of_edits() -> anyhow::Result<()>
{
    let pods = (0..6).map(|i| {
        let app = if i < 4 { "web" } else { "api" };
        let p = pod(&format!("p-{i}"))
            .label("app", app)
            .node(if i % 2 == 0 { "node-a" } else { "node-b" })
            .ip(&format!("10.0.1.{i}"))
            .ready(i % 3 != 0);
        if i % 2 == 0 {
            p.container_port("metrics", 9100)
        } else {
            p
        }
    });
    Scenario::new()
        .create_all([("node-a", "zone-a"), ("node-b", "zone-b")].map(|(n, z)| node(n).zone(z)))
        .create(
            web()
                .label("team", "blue")
                .named_port("metrics", 9100, "metrics"),
        )
        .create(service("api").selector("app", "api").port("grpc", 90, 9090))
        .create_all(pods)
        .start(slices_only())
        .planned_slices("web")
        .pod_ready("p-0")
        .pod_not_ready("p-1")
        .patch_pod("p-2", json!({"metadata": {"labels": {"app": "api"}}}))
        .delete_pod("p-3")
        .create(
            web_pod("p-6", "10.0.1.6")
                .node("node-b")
                .container_port("metrics", 9100),
        )
        .pod_ips("p-4", &["10.0.1.44"])
        .patch_service("web", json!({"metadata": {"labels": {"team": "green"}}}))
        .patch_service(
            "api",
            json!({"spec": {"ports": [{"name": "grpc", "port": 90, "targetPort": 9191}]}}),
        )
        .planned_slices("web")
        .planned_slices("api")
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_label_drift_is_repaired_on_the_next_sync() -> anyhow::Result<()> {
    let run = Scenario::new()
        .create(web().label("team", "blue"))
        .create_all([web_pod("web-1", "10.0.0.1"), web_pod("web-2", "10.0.0.2")])
        .start(slices_only())
        .slices("web", "both pods", pods_are(&["web-1", "web-2"]))
        // A label edit does not bump the generation, so it waits for the Service's next sync.
        .patch_first_slice_of("web", json!({"metadata": {"labels": {"team": "red"}}}))
        .run()
        .await?;
    let name = run.slices("both pods")[0].name_any();
    let cluster = &run.cluster;
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
    assert_eq!(repaired[0].name_any(), name);
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}
