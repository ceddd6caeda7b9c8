//! Topology hints follow the nodes' zones, and turning them on or off is an Event.

use super::NS;
use reconcile::topology::messages;
use serde_json::json;
use testkit::{
    endpoint_of, node, pod, pod_names, service, slices_only, strings, TestCluster, ZONE_LABEL,
};

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
