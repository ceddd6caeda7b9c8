//! Topology hints follow the nodes' zones, and turning them on or off is an Event.

use reconcile::topology::messages;
use serde_json::json;
use testkit::scenario::{normal, warning, Message, Scenario};
use testkit::{endpoint_of, node, pod_names, slices_only, strings, web, web_pod, ZONE_LABEL};

/// Three zones of equal CPU, a pod in each, and a Service with `topology-mode: Auto`, under
/// the EndpointSlice controller.
fn zoned() -> Scenario {
    Scenario::without_nodes()
        .create_all(["a", "b", "c"].map(|z| node(&format!("node-{z}")).zone(&format!("zone-{z}"))))
        .create(web().annotation("service.kubernetes.io/topology-mode", "Auto"))
        .create_all(
            [
                ("web-a", "10.0.0.1", "node-a"),
                ("web-b", "10.0.0.2", "node-b"),
                ("web-c", "10.0.0.3", "node-c"),
            ]
            .map(|(name, ip, n)| web_pod(name, ip).node(n)),
        )
        .start(slices_only())
}

/// A node's labels patched to put it in zone-a.
fn into_zone_a() -> serde_json::Value {
    json!({"metadata": {"labels": {ZONE_LABEL: "zone-a"}}})
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
    let run = zoned()
        .slices("web", "each endpoint hinted to its own zone", |s| {
            [
                ("web-a", "zone-a"),
                ("web-b", "zone-b"),
                ("web-c", "zone-c"),
            ]
            .iter()
            .all(|(p, z)| endpoint_of(s, p).is_some_and(|e| hint_zones(&e) == [*z]))
        })
        // node-c joins zone-a: its endpoint moves zone, and zone-c's hints go away.
        .patch_node("node-c", into_zone_a())
        .slices("web", "web-c in zone-a, hinted zone-a", |s| {
            endpoint_of(s, "web-c").is_some_and(|e| {
                e.zone.as_deref() == Some("zone-a") && hint_zones(&e) == ["zone-a"]
            })
        })
        // node-b joins zone-a too: one zone left, hints are removed.
        .patch_node("node-b", into_zone_a())
        .slices("web", "no hints", |s| {
            pod_names(s).len() == 3
                && s.iter()
                    .flat_map(|s| &s.endpoints)
                    .all(|e| e.hints.is_none())
        })
        .run()
        .await?;
    let slices = run.slices("web-c in zone-a, hinted zone-a");
    for (pod, zone) in [("web-a", "zone-a"), ("web-b", "zone-b")] {
        assert_eq!(
            endpoint_of(slices, pod).map(|e| hint_zones(&e)),
            Some(strings(&[zone]))
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topology_hints_enabled_and_disabled_are_recorded_as_service_events() -> anyhow::Result<()>
{
    let enabled = format!("{}, addressType: IPv4", messages::ENABLED);
    zoned()
        .event(
            normal("web", "TopologyAwareHintsEnabled")
                .by("endpoint-slice-controller")
                .about("Service")
                .message(Message::Is(enabled)),
        )
        .patch_node("node-b", into_zone_a())
        .patch_node("node-c", into_zone_a())
        // Upstream's SetNodes drops the zone shares when fewer than two zones are left, and
        // missing shares read as insufficient node information.
        .event(
            warning("web", "TopologyAwareHintsDisabled")
                .by("endpoint-slice-controller")
                .message(Message::StartsWith(messages::INSUFFICIENT_NODE_INFO))
                .message(Message::EndsWith(", addressType: IPv4")),
        )
        .run_to_end()
        .await
}
