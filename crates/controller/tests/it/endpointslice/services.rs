//! Service changes reach the slices: selectors, ports, labels, deletion, headless and
//! dual-stack Services, and Services that get no slices.

use super::{label, NS};
use kube::api::PostParams;
use serde_json::json;
use testkit::{
    conditions, endpoint_of, pod, pod_names, ports, service, slices_only, strings, web, web_pod,
    TestCluster,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_selector_change_follows_the_newly_selected_pods() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("tier", "v1").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(&pod("v1-a").label("tier", "v1").ip("10.0.0.1").ready(true))
        .await?;
    cluster
        .create_pod(&pod("v2-a").label("tier", "v2").ip("10.0.0.2").ready(true))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "v1-a", |s| pod_names(s) == ["v1-a"])
        .await;

    cluster
        .patch_service(NS, "web", json!({"spec": {"selector": {"tier": "v2"}}}))
        .await?;
    cluster
        .wait_for_slices(NS, "web", "v2-a only", |s| pod_names(s) == ["v2-a"])
        .await;
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_port_change_rewrites_ports_and_splits_pods_into_port_groups() -> anyhow::Result<()>
{
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    cluster
        .create_pod(&web_pod("web-1", "10.0.0.1").container_port("http", 8080))
        .await?;
    cluster
        .create_pod(&web_pod("web-2", "10.0.0.2").container_port("http", 9090))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "both pods on 8080", |s| {
            pod_names(s) == ["web-1", "web-2"]
        })
        .await;

    // A new numeric target port: one group, new port.
    cluster
        .patch_service(
            NS,
            "web",
            json!({"spec": {"ports": [{"name": "web", "port": 80, "targetPort": 7070}]}}),
        )
        .await?;
    let slices = cluster
        .wait_for_slices(NS, "web", "port web/7070", |s| {
            s.len() == 1 && ports(&s[0]) == [("web".to_owned(), 7070, "TCP".to_owned())]
        })
        .await;
    assert_eq!(pod_names(&slices), ["web-1", "web-2"]);

    // A named target port the two pods resolve differently: two port groups, two slices.
    cluster
        .patch_service(
            NS,
            "web",
            json!({"spec": {"ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}),
        )
        .await?;
    let slices = cluster
        .wait_for_slices(NS, "web", "one slice per port group", |s| {
            s.len() == 2 && s.iter().all(|slice| slice.endpoints.len() == 1)
        })
        .await;
    for slice in &slices {
        let want = match pod_names(std::slice::from_ref(slice)).as_slice() {
            [p] if p == "web-1" => 8080,
            [p] if p == "web-2" => 9090,
            other => panic!("unexpected endpoints {other:?}"),
        };
        assert_eq!(ports(slice), [("web".to_owned(), want, "TCP".to_owned())]);
    }
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_label_change_propagates_to_slice_labels() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .label("team", "blue")
                .port("http", 80, 8080),
        )
        .await?;
    cluster.create_pod(&web_pod("web-1", "10.0.0.1")).await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "team=blue", |s| {
            s.len() == 1 && label(&s[0], "team") == Some("blue")
        })
        .await;

    cluster
        .patch_service(
            NS,
            "web",
            json!({"metadata": {"labels": {"team": null, "tier": "front"}}}),
        )
        .await?;
    let slices = cluster
        .wait_for_slices(NS, "web", "tier=front and no team", |s| {
            s.len() == 1 && label(&s[0], "tier") == Some("front") && label(&s[0], "team").is_none()
        })
        .await;
    assert_eq!(pod_names(&slices), ["web-1"]);
    assert_eq!(
        label(&slices[0], "kubernetes.io/service-name"),
        Some("web"),
        "reserved labels stay"
    );
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_service_slices_are_left_to_the_garbage_collector() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    testkit::eventually("the slice gauge to count the slice", || {
        let n = controllers.metric("endpoint_slice_controller_num_endpoint_slices", &[]);
        async move { (n == 1.0).then_some(()).ok_or(format!("{n}")) }
    })
    .await;

    cluster.delete_service(NS, "web").await?;
    // The sync of the deleted Service forgets it: the gauge drops to zero.
    testkit::eventually("the controller to forget the Service", || {
        let n = controllers.metric("endpoint_slice_controller_num_endpoint_slices", &[]);
        async move { (n == 0.0).then_some(()).ok_or(format!("{n}")) }
    })
    .await;
    // A pod change that would have touched the slice, then a barrier: a new Service whose
    // slice shows the controller has worked through what came before it.
    cluster.set_pod_ready(NS, "web-1", false).await?;
    cluster
        .create_service(
            &service("barrier")
                .selector("app", "web")
                .port("http", 80, 8080),
        )
        .await?;
    cluster
        .wait_for_slices(NS, "barrier", "web-1 not ready", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(false))
        })
        .await;

    // The embedded server garbage-collects a deleted Service's slices, as kube-controller-manager
    // does; the controller itself never deletes them.
    assert!(cluster.managed_slices(NS, "web").await?.is_empty());
    assert_eq!(
        cluster.requests("delete", "endpointslices"),
        0,
        "the controller left the slices of the deleted Service to the garbage collector"
    );
    assert_eq!(controllers.slice_syncs("error"), 0.0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_without_pods_gets_a_placeholder_slice() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "a placeholder", |s| s.len() == 1)
        .await;
    assert!(slices[0].endpoints.is_empty());
    assert!(ports(&slices[0]).is_empty(), "a placeholder has no ports");
    assert_eq!(slices[0].address_type, "IPv4");
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_service_slices_carry_the_headless_label() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .headless()
                .port("http", 80, 8080),
        )
        .await?;
    cluster.create_pod(&web_pod("web-1", "10.0.0.1")).await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    assert_eq!(
        label(&slices[0], "service.kubernetes.io/headless"),
        Some("")
    );
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_without_selector_and_external_name_services_get_no_slices() -> anyhow::Result<()>
{
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("manual").port("http", 80, 8080))
        .await?;
    cluster
        .create_service(
            &service("external")
                .selector("app", "web")
                .external_name("example.com")
                .port("http", 80, 8080),
        )
        .await?;
    cluster.create_pod(&web_pod("web-1", "10.0.0.1")).await?;
    let controllers = cluster.run_controllers(slices_only()).await;
    // A barrier: once a later Service has its slice, the earlier ones were synced.
    cluster
        .create_service(
            &service("barrier")
                .selector("app", "web")
                .port("http", 80, 8080),
        )
        .await?;
    cluster
        .wait_for_slices(NS, "barrier", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    assert!(cluster.managed_slices(NS, "manual").await?.is_empty());
    assert!(cluster.managed_slices(NS, "external").await?.is_empty());
    assert_eq!(controllers.slice_syncs("error"), 0.0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_being_deleted_gets_no_new_slices() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .finalizer("example.com/hold")
                .port("http", 80, 8080),
        )
        .await?;
    cluster.delete_service(NS, "web").await?;
    cluster.create_pod(&web_pod("web-1", "10.0.0.1")).await?;
    let controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .create_service(
            &service("barrier")
                .selector("app", "web")
                .port("http", 80, 8080),
        )
        .await?;
    cluster
        .wait_for_slices(NS, "barrier", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    assert!(cluster.managed_slices(NS, "web").await?.is_empty());
    assert_eq!(controllers.slice_syncs("error"), 0.0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_endpoints_per_slice_spreads_endpoints_over_several_slices() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    for i in 0..5 {
        cluster
            .create_pod(&web_pod(&format!("web-{i}"), &format!("10.0.0.{}", i + 1)))
            .await?;
    }
    let mut options = slices_only();
    options.settings.max_endpoints_per_slice = 2;
    let _controllers = cluster.run_controllers(options).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "five endpoints", |s| pod_names(s).len() == 5)
        .await;
    let mut sizes: Vec<usize> = slices.iter().map(|s| s.endpoints.len()).collect();
    sizes.sort();
    assert_eq!(sizes, [1, 2, 2]);
    cluster.wait_for_planned_slices_with(NS, "web", 2).await;

    cluster.delete_pod(NS, "web-0").await?;
    cluster.delete_pod(NS, "web-1").await?;
    cluster
        .wait_for_slices(NS, "web", "three endpoints", |s| pod_names(s).len() == 3)
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserved_labels_on_the_service_do_not_override_slice_labels() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .label("kubernetes.io/service-name", "impostor")
                .label("endpointslice.kubernetes.io/managed-by", "someone-else")
                .label("team", "blue")
                .port("http", 80, 8080),
        )
        .await?;
    cluster.create_pod(&web_pod("web-1", "10.0.0.1")).await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    assert_eq!(label(&slices[0], "team"), Some("blue"));
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreated_service_replaces_the_slices_of_its_previous_incarnation() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let web = web();
    cluster.create_service(&web).await?;
    cluster.create_pod(&web_pod("web-1", "10.0.0.1")).await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let old = cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;

    // No garbage collector here: the old slices outlive their owner.
    cluster.delete_service(NS, "web").await?;
    let new = cluster.create_service(&web).await?;
    let new_uid = new.metadata.uid.clone().unwrap_or_default();
    let slices = cluster
        .wait_for_slices(NS, "web", "only slices owned by the new Service", |s| {
            !s.is_empty()
                && s.iter().all(|slice| {
                    slice
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|o| o.uid == new_uid)
                })
        })
        .await;
    assert_eq!(pod_names(&slices), ["web-1"]);
    assert!(slices.iter().all(|s| s.metadata.uid != old[0].metadata.uid));
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_of_an_address_type_the_service_does_not_use_are_deleted() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let svc = cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
    let fqdn: k8s_openapi::api::discovery::v1::EndpointSlice = serde_json::from_value(json!({
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
    cluster
        .slices(NS)
        .create(&PostParams::default(), &fqdn)
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "only the IPv4 slice", |s| {
            pod_names(s) == ["web-1"] && s.iter().all(|s| s.address_type == "IPv4")
        })
        .await;
    assert_eq!(slices.len(), 1);
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_stack_service_gets_one_slice_per_address_type() -> anyhow::Result<()> {
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
                .ip("10.0.0.1")
                .ip("fd00::1")
                .ready(true),
        )
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "an IPv4 and an IPv6 slice", |s| s.len() == 2)
        .await;
    let mut by_type: Vec<(String, Vec<String>)> = slices
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
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}
