//! The live EndpointSlice controller against the embedded API server, through the real kube
//! client: slices follow Services, Pods and Nodes, repair edits made behind the controller's
//! back, and converge to what `reconcile::plan_slices` computes from scratch.
//!
//! Each test starts its own server and controllers; waits poll the API with a deadline.

mod support;

use kube::api::PostParams;
use reconcile::topology::messages;
use serde_json::json;
use support::{
    conditions, endpoint_of, node, pod, pod_names, ports, ready_transition, service, slices_only,
    strings, trigger_time, TestCluster, ZONE_LABEL,
};

const NS: &str = "default";

fn ip(slice_endpoint: &k8s_openapi::api::discovery::v1::Endpoint) -> Vec<String> {
    slice_endpoint.addresses.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_and_pods_become_a_slice_with_endpoints_ports_labels_and_owner(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_node(&node("node-a").zone("zone-a")).await?;
    let svc = cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .label("team", "blue")
                .port("http", 80, 8080),
        )
        .await?;
    let web_1 = cluster
        .create_pod(
            &pod("web-1")
                .label("app", "web")
                .node("node-a")
                .ip("10.0.0.1")
                .ready(true),
        )
        .await?;
    cluster
        .create_pod(
            &pod("web-2")
                .label("app", "web")
                .node("node-a")
                .ip("10.0.0.2")
                .ready(false),
        )
        .await?;
    cluster
        .create_pod(&pod("db-1").label("app", "db").node("node-a").ip("10.0.0.3"))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;

    let slices = cluster
        .wait_for_slices(NS, "web", "two endpoints", |s| {
            pod_names(s) == ["web-1", "web-2"]
        })
        .await;
    assert_eq!(slices.len(), 1);
    let slice = &slices[0];
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(ports(slice), [("http".to_owned(), 8080, "TCP".to_owned())]);
    assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));
    let labels = slice.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels,
        [
            (
                "endpointslice.kubernetes.io/managed-by",
                "endpointslice-controller.k8s.io"
            ),
            ("kubernetes.io/service-name", "web"),
            ("team", "blue"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    );
    let owners = slice.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(
        (
            owners[0].api_version.as_str(),
            owners[0].kind.as_str(),
            owners[0].name.as_str(),
            Some(owners[0].uid.as_str()),
            owners[0].controller,
            owners[0].block_owner_deletion,
        ),
        (
            "v1",
            "Service",
            "web",
            svc.metadata.uid.as_deref(),
            Some(true),
            Some(true)
        )
    );

    let ready = endpoint_of(&slices, "web-1").expect("web-1 has an endpoint");
    assert_eq!(ip(&ready), ["10.0.0.1"]);
    assert_eq!(conditions(&ready), (Some(true), Some(true), Some(false)));
    assert_eq!(ready.node_name.as_deref(), Some("node-a"));
    assert_eq!(ready.zone.as_deref(), Some("zone-a"));
    let target = ready.target_ref.clone().expect("a targetRef");
    assert_eq!(
        (
            target.kind.as_deref(),
            target.namespace.as_deref(),
            target.uid.as_deref()
        ),
        (Some("Pod"), Some(NS), web_1.metadata.uid.as_deref())
    );
    let not_ready = endpoint_of(&slices, "web-2").expect("web-2 has an endpoint");
    assert_eq!(
        conditions(&not_ready),
        (Some(false), Some(false), Some(false))
    );
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_readiness_flip_updates_its_endpoint_in_the_same_slice() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
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
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    for (name, ip) in [("web-1", "10.0.0.1"), ("web-2", "10.0.0.2")] {
        cluster
            .create_pod(&pod(name).label("app", "web").ip(ip).ready(true))
            .await?;
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
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(
            &pod("web-1")
                .label("app", "web")
                .ip("10.0.0.1")
                .ready(true)
                .finalizer("example.com/hold"),
        )
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
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(
            &pod("web-1")
                .label("app", "web")
                .ip("10.0.0.1")
                .ready(true)
                .container_port("http", 8080),
        )
        .await?;
    cluster
        .create_pod(
            &pod("web-2")
                .label("app", "web")
                .ip("10.0.0.2")
                .ready(true)
                .container_port("http", 9090),
        )
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
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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

fn label<'a>(
    slice: &'a k8s_openapi::api::discovery::v1::EndpointSlice,
    key: &str,
) -> Option<&'a str> {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_service_slices_are_left_to_the_garbage_collector() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
    let controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    support::eventually("the slice gauge to count the slice", || {
        let n = controllers.metric("endpoint_slice_controller_num_endpoint_slices", &[]);
        async move { (n == 1.0).then_some(()).ok_or(format!("{n}")) }
    })
    .await;

    cluster.delete_service(NS, "web").await?;
    // The sync of the deleted Service forgets it: the gauge drops to zero.
    support::eventually("the controller to forget the Service", || {
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
async fn manually_deleted_managed_slice_is_recreated() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
async fn wait_for_recorded_creates(controllers: &support::Controllers, n: f64) {
    support::eventually("the writer to record its creates", || {
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
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    for (name, ip) in [("web-1", "10.0.0.1"), ("web-2", "10.0.0.2")] {
        cluster
            .create_pod(&pod(name).label("app", "web").ip(ip).ready(true))
            .await?;
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
    let svc = cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
async fn service_without_pods_gets_a_placeholder_slice() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
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

/// Three zones of equal CPU, a pod in each, and a Service with `topology-mode: Auto`.
async fn zoned_cluster() -> anyhow::Result<TestCluster> {
    let cluster = TestCluster::start_without_nodes();
    for (n, zone) in [
        ("node-a", "zone-a"),
        ("node-b", "zone-b"),
        ("node-c", "zone-c"),
    ] {
        cluster.create_node(&node(n).zone(zone)).await?;
    }
    cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .annotation("service.kubernetes.io/topology-mode", "Auto")
                .port("http", 80, 8080),
        )
        .await?;
    for (name, ip, n) in [
        ("web-a", "10.0.0.1", "node-a"),
        ("web-b", "10.0.0.2", "node-b"),
        ("web-c", "10.0.0.3", "node-c"),
    ] {
        cluster
            .create_pod(&pod(name).label("app", "web").node(n).ip(ip).ready(true))
            .await?;
    }
    Ok(cluster)
}

fn hint_zones(endpoint: &k8s_openapi::api::discovery::v1::Endpoint) -> Vec<String> {
    endpoint
        .hints
        .iter()
        .flat_map(|h| h.for_zones.iter().flatten())
        .map(|z| z.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_zone_change_recomputes_topology_hints() -> anyhow::Result<()> {
    let cluster = zoned_cluster().await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    cluster
        .wait_for_slices(NS, "web", "each endpoint hinted to its own zone", |s| {
            [
                ("web-a", "zone-a"),
                ("web-b", "zone-b"),
                ("web-c", "zone-c"),
            ]
            .iter()
            .all(|(p, z)| endpoint_of(s, p).is_some_and(|e| hint_zones(&e) == [*z]))
        })
        .await;

    // node-c joins zone-a: its endpoint moves zone, and zone-c's hints go away.
    cluster
        .patch_node(
            "node-c",
            json!({"metadata": {"labels": {ZONE_LABEL: "zone-a"}}}),
        )
        .await?;
    let slices = cluster
        .wait_for_slices(NS, "web", "web-c in zone-a, hinted zone-a", |s| {
            endpoint_of(s, "web-c").is_some_and(|e| {
                e.zone.as_deref() == Some("zone-a") && hint_zones(&e) == ["zone-a"]
            })
        })
        .await;
    assert_eq!(
        endpoint_of(&slices, "web-a").map(|e| hint_zones(&e)),
        Some(strings(&["zone-a"]))
    );
    assert_eq!(
        endpoint_of(&slices, "web-b").map(|e| hint_zones(&e)),
        Some(strings(&["zone-b"]))
    );

    // node-b joins zone-a too: one zone left, hints are removed.
    cluster
        .patch_node(
            "node-b",
            json!({"metadata": {"labels": {ZONE_LABEL: "zone-a"}}}),
        )
        .await?;
    cluster
        .wait_for_slices(NS, "web", "no hints", |s| {
            pod_names(s).len() == 3
                && s.iter()
                    .flat_map(|s| &s.endpoints)
                    .all(|e| e.hints.is_none())
        })
        .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topology_hints_enabled_and_disabled_are_recorded_as_service_events() -> anyhow::Result<()>
{
    let cluster = zoned_cluster().await?;
    let _controllers = cluster.run_controllers(slices_only()).await;

    let enabled = cluster
        .wait_for_event(NS, "web", "TopologyAwareHintsEnabled")
        .await;
    assert_eq!(enabled.type_.as_deref(), Some("Normal"));
    assert_eq!(
        enabled.message.as_deref(),
        Some(format!("{}, addressType: IPv4", messages::ENABLED).as_str())
    );
    assert_eq!(
        enabled.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("endpoint-slice-controller")
    );
    assert_eq!(enabled.involved_object.kind.as_deref(), Some("Service"));

    for n in ["node-b", "node-c"] {
        cluster
            .patch_node(n, json!({"metadata": {"labels": {ZONE_LABEL: "zone-a"}}}))
            .await?;
    }
    let disabled = cluster
        .wait_for_event(NS, "web", "TopologyAwareHintsDisabled")
        .await;
    assert_eq!(disabled.type_.as_deref(), Some("Warning"));
    // Upstream's SetNodes drops the zone shares when fewer than two zones are left, and
    // missing shares read as insufficient node information.
    let message = disabled.message.unwrap_or_default();
    assert!(
        message.starts_with(messages::INSUFFICIENT_NODE_INFO)
            && message.ends_with(", addressType: IPv4"),
        "{message}"
    );
    assert_eq!(
        disabled
            .source
            .as_ref()
            .and_then(|s| s.component.as_deref()),
        Some("endpoint-slice-controller")
    );
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
    support::eventually("the controller to send its create", || {
        let n = cluster.requests("create", "endpointslices");
        async move { (n >= 1).then_some(()).ok_or(format!("{n} creates")) }
    })
    .await;
    cluster
        .namespaces()
        .delete("doomed", &Default::default())
        .await?;

    support::eventually("the refused sync and the deletion sync to finish", || {
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
async fn slice_trigger_time_is_the_service_creation_then_the_pod_readiness_change(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let svc = cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
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
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    for i in 0..5 {
        cluster
            .create_pod(
                &pod(&format!("web-{i}"))
                    .label("app", "web")
                    .ip(&format!("10.0.0.{}", i + 1))
                    .ready(true),
            )
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
async fn controllers_stop_cleanly_when_shut_down() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    let controllers = cluster.run_controllers(support::options()).await;
    assert!(controllers.readiness.is_ready());
    cluster
        .wait_for_slices(NS, "web", "a placeholder", |s| s.len() == 1)
        .await;
    let readiness = controllers.readiness.clone();
    controllers.stop().await;
    assert!(!readiness.is_ready(), "not ready once stopped");
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
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;
    let slices = cluster
        .wait_for_slices(NS, "web", "web-1", |s| pod_names(s) == ["web-1"])
        .await;
    assert_eq!(label(&slices[0], "team"), Some("blue"));
    cluster.wait_for_planned_slices(NS, "web").await;
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
        cluster
            .create_pod(&pod(name).label("app", "web").ip(ip).ready(true))
            .await?;
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
    // A Service change that leaves every endpoint as it is: only the drift makes a write.
    cluster
        .patch_service(
            NS,
            "web",
            json!({"metadata": {"annotations": {"example.com/touched": "yes"}}}),
        )
        .await?;
    let repaired = cluster
        .wait_for_slices(NS, "web", "team=blue again", |s| {
            s.len() == 1 && label(&s[0], "team") == Some("blue")
        })
        .await;
    assert_eq!(repaired[0].metadata.name.as_deref(), Some(name.as_str()));
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreated_service_replaces_the_slices_of_its_previous_incarnation() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let web = service("web").selector("app", "web").port("http", 80, 8080);
    cluster.create_service(&web).await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
    let svc = cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1").ready(true))
        .await?;
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
async fn pods_without_an_ip_or_in_a_terminal_phase_are_not_published() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(
            &pod("running")
                .label("app", "web")
                .ip("10.0.0.1")
                .ready(true),
        )
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_changes_are_applied_after_the_batch_period() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("web").selector("app", "web").port("http", 80, 8080))
        .await?;
    cluster
        .create_pod(&pod("web-1").label("app", "web").ip("10.0.0.1"))
        .await?;
    let mut options = support::options();
    options.settings.endpointslice_updates_batch_period = std::time::Duration::from_millis(300);
    options.settings.endpoint_updates_batch_period = std::time::Duration::from_millis(300);
    let _controllers = cluster.run_controllers(options).await;
    cluster
        .wait_for_slices(NS, "web", "web-1 not ready", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(false))
        })
        .await;

    cluster.set_pod_ready(NS, "web-1", true).await?;
    cluster
        .create_pod(&pod("web-2").label("app", "web").ip("10.0.0.2").ready(true))
        .await?;
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
