//! Service changes reach the slices: selectors, ports, labels, deletion, headless and
//! dual-stack Services, and Services that get no slices.

use super::{label, web_1_in_a_slice, web_1_in_a_slice_of, NS};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use serde_json::json;
use testkit::scenario::{endpoint_not_ready, metric_holds, pods_are, Run, Scenario};
use testkit::{
    pod, pod_names, ports, service, slices_only, strings, web, web_pod, web_pods, TestCluster,
};

/// The gauge of the slices the controller knows of.
const SLICES_GAUGE: &str = "endpoint_slice_controller_num_endpoint_slices";

/// A barrier: a Service `barrier` created after the steps of `scenario`, selecting the
/// [`web_pod`]s, whose slice satisfying `holds` shows that the controller has worked through
/// what came before it.
fn after_a_barrier(
    scenario: Scenario,
    holds: impl Fn(&[EndpointSlice]) -> bool + Send + Sync + 'static,
) -> Scenario {
    scenario
        .create(
            service("barrier")
                .selector("app", "web")
                .port("http", 80, 8080),
        )
        .slices("barrier", "synced", holds)
}

/// No slice error, and none of `services` has a managed slice.
async fn no_slices_and_no_errors(run: &Run, services: &[&str]) -> anyhow::Result<()> {
    for service in services {
        let slices = run.cluster.managed_slices(NS, service).await?;
        assert!(slices.is_empty(), "{service}: {slices:?}");
    }
    assert_eq!(run.controllers().slice_syncs("error"), 0.0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_selector_change_follows_the_newly_selected_pods() -> anyhow::Result<()> {
    let tier = |name: &str, tier: &str| pod(name).label("tier", tier);
    Scenario::new()
        .create(service("web").selector("tier", "v1").port("http", 80, 8080))
        .create(tier("v1-a", "v1").ip("10.0.0.1").ready(true))
        .create(tier("v2-a", "v2").ip("10.0.0.2").ready(true))
        .start(slices_only())
        .slices("web", "v1-a", pods_are(&["v1-a"]))
        .patch_service("web", json!({"spec": {"selector": {"tier": "v2"}}}))
        .slices("web", "v2-a only", pods_are(&["v2-a"]))
        .planned_slices("web")
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_port_change_rewrites_ports_and_splits_pods_into_port_groups() -> anyhow::Result<()>
{
    let web_port =
        |target| json!({"spec": {"ports": [{"name": "web", "port": 80, "targetPort": target}]}});
    let run = Scenario::web([
        web_pod("web-1", "10.0.0.1").container_port("http", 8080),
        web_pod("web-2", "10.0.0.2").container_port("http", 9090),
    ])
    .start(slices_only())
    .slices("web", "both pods on 8080", pods_are(&["web-1", "web-2"]))
    // A new numeric target port: one group, new port.
    .patch_service("web", web_port(json!(7070)))
    .slices("web", "port web/7070", |s| {
        s.len() == 1 && ports(&s[0]) == [("web".to_owned(), 7070, "TCP".to_owned())]
    })
    // A named target port the two pods resolve differently: two port groups, two slices.
    .patch_service("web", web_port(json!("http")))
    .slices("web", "one slice per port group", |s| {
        s.len() == 2 && s.iter().all(|slice| slice.endpoints.len() == 1)
    })
    .planned_slices("web")
    .run()
    .await?;
    assert_eq!(pod_names(run.slices("port web/7070")), ["web-1", "web-2"]);
    for slice in run.slices("one slice per port group") {
        let want = match pod_names(std::slice::from_ref(slice)).as_slice() {
            [p] if p == "web-1" => 8080,
            [p] if p == "web-2" => 9090,
            other => panic!("unexpected endpoints {other:?}"),
        };
        assert_eq!(ports(slice), [("web".to_owned(), want, "TCP".to_owned())]);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_label_change_propagates_to_slice_labels() -> anyhow::Result<()> {
    let run = Scenario::new()
        .create(web().label("team", "blue"))
        .create(web_pod("web-1", "10.0.0.1"))
        .start(slices_only())
        .slices("web", "team=blue", |s| {
            s.len() == 1 && label(&s[0], "team") == Some("blue")
        })
        .patch_service(
            "web",
            json!({"metadata": {"labels": {"team": null, "tier": "front"}}}),
        )
        .slices("web", "tier=front and no team", |s| {
            s.len() == 1 && label(&s[0], "tier") == Some("front") && label(&s[0], "team").is_none()
        })
        .planned_slices("web")
        .run()
        .await?;
    let slices = run.slices("tier=front and no team");
    assert_eq!(pod_names(slices), ["web-1"]);
    assert_eq!(
        label(&slices[0], "kubernetes.io/service-name"),
        Some("web"),
        "reserved labels stay"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_service_slices_are_left_to_the_garbage_collector() -> anyhow::Result<()> {
    let scenario = web_1_in_a_slice()
        .until(
            "the slice gauge to count the slice",
            metric_holds(SLICES_GAUGE, &[], |n| n == 1.0),
        )
        .delete_service("web")
        // The sync of the deleted Service forgets it: the gauge drops to zero.
        .until(
            "the controller to forget the Service",
            metric_holds(SLICES_GAUGE, &[], |n| n == 0.0),
        )
        // A pod change that would have touched the slice, then the barrier.
        .pod_not_ready("web-1");
    let run = after_a_barrier(scenario, endpoint_not_ready("web-1"))
        .run()
        .await?;

    // The embedded server garbage-collects a deleted Service's slices, as kube-controller-manager
    // does; the controller itself never deletes them.
    no_slices_and_no_errors(&run, &["web"]).await?;
    assert_eq!(
        run.cluster.requests("delete", "endpointslices"),
        0,
        "the controller left the slices of the deleted Service to the garbage collector"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_without_pods_gets_a_placeholder_slice() -> anyhow::Result<()> {
    let run = Scenario::web([])
        .start(slices_only())
        .slices("web", "a placeholder", |s| s.len() == 1)
        .planned_slices("web")
        .run()
        .await?;
    let placeholder = &run.slices("a placeholder")[0];
    assert!(placeholder.endpoints.is_empty());
    assert!(ports(placeholder).is_empty(), "a placeholder has no ports");
    assert_eq!(placeholder.address_type, "IPv4");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_service_slices_carry_the_headless_label() -> anyhow::Result<()> {
    let run = web_1_in_a_slice_of(web().headless())
        .planned_slices("web")
        .run()
        .await?;
    assert_eq!(
        label(&run.slices("web-1")[0], "service.kubernetes.io/headless"),
        Some("")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_without_selector_and_external_name_services_get_no_slices() -> anyhow::Result<()>
{
    let scenario = Scenario::new()
        .create(service("manual").port("http", 80, 8080))
        .create(
            service("external")
                .selector("app", "web")
                .external_name("example.com")
                .port("http", 80, 8080),
        )
        .create(web_pod("web-1", "10.0.0.1"))
        .start(slices_only());
    // Once a later Service has its slice, the earlier ones were synced.
    let run = after_a_barrier(scenario, pods_are(&["web-1"]))
        .run()
        .await?;
    no_slices_and_no_errors(&run, &["manual", "external"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_being_deleted_gets_no_new_slices() -> anyhow::Result<()> {
    let scenario = Scenario::new()
        .create(web().finalizer("example.com/hold"))
        .delete_service("web")
        .create(web_pod("web-1", "10.0.0.1"))
        .start(slices_only());
    let run = after_a_barrier(scenario, pods_are(&["web-1"]))
        .run()
        .await?;
    no_slices_and_no_errors(&run, &["web"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_endpoints_per_slice_spreads_endpoints_over_several_slices() -> anyhow::Result<()> {
    let mut options = slices_only();
    options.settings.max_endpoints_per_slice = 2;
    let run = Scenario::web(web_pods(5))
        .start(options)
        .slices("web", "five endpoints", |s| pod_names(s).len() == 5)
        .planned_slices("web")
        .delete_pod("web-0")
        .delete_pod("web-1")
        .slices("web", "three endpoints", |s| pod_names(s).len() == 3)
        .run()
        .await?;
    let mut sizes: Vec<usize> = run
        .slices("five endpoints")
        .iter()
        .map(|s| s.endpoints.len())
        .collect();
    sizes.sort();
    assert_eq!(sizes, [1, 2, 2]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserved_labels_on_the_service_do_not_override_slice_labels() -> anyhow::Result<()> {
    let impostor = web()
        .label("kubernetes.io/service-name", "impostor")
        .label("endpointslice.kubernetes.io/managed-by", "someone-else")
        .label("team", "blue");
    let run = web_1_in_a_slice_of(impostor)
        .planned_slices("web")
        .run()
        .await?;
    assert_eq!(label(&run.slices("web-1")[0], "team"), Some("blue"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreated_service_replaces_the_slices_of_its_previous_incarnation() -> anyhow::Result<()> {
    let run = web_1_in_a_slice()
        // No garbage collector here: the old slices outlive their owner.
        .delete_service("web")
        .create(web())
        // Only once every slice is owned by the new Service does the plan step hold.
        .planned_slices("web")
        .slices("web", "the new Service's", pods_are(&["web-1"]))
        .run()
        .await?;
    let old = run.slices("web-1")[0].uid();
    assert!(run
        .slices("the new Service's")
        .iter()
        .all(|s| s.uid() != old));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_of_an_address_type_the_service_does_not_use_are_deleted() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let svc = cluster.create_service(&web()).await?;
    let fqdn: EndpointSlice = serde_json::from_value(json!({
        "metadata": {
            "name": "web-fqdn",
            "labels": {
                "kubernetes.io/service-name": "web",
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Service", "name": "web",
                "uid": svc.metadata.uid, "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "addressType": "FQDN",
        "endpoints": [{"addresses": ["web.example.com"]}],
    }))?;
    let run = Scenario::new()
        .create(web_pod("web-1", "10.0.0.1"))
        .create(fqdn)
        .start(slices_only())
        .slices("web", "only the IPv4 slice", |s| {
            pod_names(s) == ["web-1"] && s.iter().all(|s| s.address_type == "IPv4")
        })
        .planned_slices("web")
        .run_on(cluster)
        .await?;
    assert_eq!(run.slices("only the IPv4 slice").len(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_service_gets_one_slice_per_address_type() -> anyhow::Result<()> {
    let run = Scenario::new()
        .create(web().dual_stack())
        .create(web_pod("web-1", "10.0.0.1").ip("fd00::1"))
        .start(slices_only())
        .slices("web", "an IPv4 and an IPv6 slice", |s| s.len() == 2)
        .planned_slices("web")
        .run()
        .await?;
    let mut by_type: Vec<(String, Vec<String>)> = run
        .slices("an IPv4 and an IPv6 slice")
        .iter()
        .map(|s| {
            (
                s.address_type.clone(),
                s.endpoints
                    .iter()
                    .flat_map(|e| e.addresses.clone())
                    .collect(),
            )
        })
        .collect();
    by_type.sort();
    assert_eq!(
        by_type,
        [
            ("IPv4".to_owned(), strings(&["10.0.0.1"])),
            ("IPv6".to_owned(), strings(&["fd00::1"])),
        ]
    );
    Ok(())
}
