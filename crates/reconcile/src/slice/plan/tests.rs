use super::*;
use crate::kube_version::{KubeVersion, VersionRules, PREFER_SAME_TRAFFIC_DISTRIBUTION};
use crate::projection::{NodeInfo, PodInfo, ServiceInfo};
use crate::testing::{node, pod, service, service_port, three_port_service, ts, ServiceBuilder};

struct World {
    nodes: BTreeMap<String, NodeInfo>,
    topology: TopologyCache,
    rules: VersionRules,
}

impl World {
    fn new() -> Self {
        let nodes: BTreeMap<String, NodeInfo> = [
            node("node-a", "za", 4000),
            node("node-b", "zb", 4000),
            node("node-c", "zc", 4000),
        ]
        .into_iter()
        .map(|n| (n.name.clone(), n))
        .collect();
        let mut topology = TopologyCache::default();
        topology.set_nodes(nodes.values());
        Self {
            nodes,
            topology,
            rules: VersionRules::default(),
        }
    }

    /// The same world, following `version`'s rules.
    fn following(version: KubeVersion) -> Self {
        Self {
            rules: VersionRules::of(version),
            ..Self::new()
        }
    }

    fn plan(
        &mut self,
        svc: &ServiceInfo,
        pods: &[PodInfo],
        existing: &[Arc<EndpointSlice>],
    ) -> SlicePlan {
        let pods: Vec<&PodInfo> = pods.iter().collect();
        // Kept as the informer keeps them.
        let existing: Vec<Arc<StoredSlice>> = existing
            .iter()
            .map(|s| Arc::new(StoredSlice::new(EndpointSlice::clone(s))))
            .collect();
        let input = SliceInput {
            service: svc,
            pods: &pods,
            existing: &existing,
            nodes: &self.nodes,
            trigger_time: Some(ts("2026-01-01T00:00:00Z")),
            max_endpoints_per_slice: 100,
            rules: self.rules,
        };
        plan_slices(&input, &mut self.topology)
    }

    /// Syncs `svc` with `pods` from nothing, applies the writes, then plans `then_svc` with
    /// `then_pods` against the slices that left: a resync after a change.
    fn resync(
        &mut self,
        (svc, pods): (&ServiceInfo, &[PodInfo]),
        (then_svc, then_pods): (&ServiceInfo, &[PodInfo]),
    ) -> SlicePlan {
        let state = apply(&[], &self.plan(svc, pods, &[]));
        self.plan(then_svc, then_pods, &state)
    }
}

fn pods(n: usize) -> Vec<PodInfo> {
    (0..n)
        .map(|i| {
            pod(&format!("p{i:04}"))
                .ip(&format!("10.1.{}.{}", i / 200, i % 200))
                .ready(true)
                .build()
        })
        .collect()
}

/// A ready pod on each of the three nodes, one per zone.
fn pod_per_zone() -> Vec<PodInfo> {
    ["node-a", "node-b", "node-c"]
        .iter()
        .enumerate()
        .map(|(i, n)| {
            pod(&format!("p{i}"))
                .ip(&format!("10.0.0.{i}"))
                .node(n)
                .ready(true)
                .build()
        })
        .collect()
}

/// Service `s` with topology-aware hints asked for by annotation.
fn topology_auto() -> ServiceBuilder {
    service("s").annotation("service.kubernetes.io/topology-mode", "Auto")
}

/// A batch's numbers of creates, updates and deletes.
fn writes(batch: &SliceBatch) -> (usize, usize, usize) {
    (batch.create.len(), batch.update.len(), batch.delete.len())
}

/// Applies a plan's writes to a list of existing slices, naming creates `s-N`.
fn apply(existing: &[Arc<EndpointSlice>], plan: &SlicePlan) -> Vec<Arc<EndpointSlice>> {
    let mut by_name: BTreeMap<String, Arc<EndpointSlice>> = existing
        .iter()
        .map(|s| (s.metadata.name.clone().unwrap(), Arc::clone(s)))
        .collect();
    let mut n = by_name.len();
    for batch in &plan.batches {
        for s in &batch.create {
            let mut s = s.clone();
            n += 1;
            s.metadata.name = Some(format!("s-{n}"));
            s.metadata.uid = Some(format!("uid-{n}"));
            by_name.insert(s.metadata.name.clone().unwrap(), Arc::new(s));
        }
        for s in &batch.update {
            by_name.insert(s.metadata.name.clone().unwrap(), Arc::new(s.clone()));
        }
        for s in &batch.delete {
            by_name.remove(s.metadata.name.as_deref().unwrap());
        }
    }
    by_name.into_values().collect()
}

#[test]
fn service_with_no_pods_gets_a_placeholder() {
    let mut w = World::new();
    let plan = w.plan(&service("s").build(), &[], &[]);
    assert_eq!(plan.batches.len(), 1);
    let create = &plan.batches[0].create;
    assert_eq!(create.len(), 1);
    assert!(create[0].endpoints.is_empty());
    assert_eq!(create[0].ports, None);
}

#[test]
fn existing_placeholder_is_kept_not_recreated() {
    let svc = service("s").build();
    let second = World::new().resync((&svc, &[]), (&svc, &[]));
    assert_eq!(second.write_count(), 0);
}

#[test]
fn a_second_sync_of_the_same_state_writes_nothing() {
    let mut w = World::new();
    let svc = service("s")
        .port(service_port("http", 80).target(8080))
        .build();
    let pods = pods(250);
    let first = w.plan(&svc, &pods, &[]);
    assert_eq!(first.write_count(), 3);
    let state = apply(&[], &first);
    assert_eq!(w.plan(&svc, &pods, &state).write_count(), 0);
}

/// Up to v1.35 upstream updates a port-less slice on every sync (a nil port list against an
/// empty one); the objects are the same, so no version of ours copies those writes.
#[test]
fn a_port_less_slice_is_not_rewritten_by_any_version() {
    let svc = service("s").cluster_ip("None").build();
    let pods = pods(3);
    for version in KubeVersion::supported() {
        let mut w = World::following(version);
        let plan = w.resync((&svc, &pods), (&svc, &pods));
        assert_eq!(plan.write_count(), 0, "{version}");
    }
}

#[test]
fn dual_stack_service_gets_a_slice_per_family() {
    let mut w = World::new();
    let svc = service("s").families(&["IPv4", "IPv6"]).build();
    let p = vec![pod("a").ip("10.0.0.1").ip("fd00::1").ready(true).build()];
    let plan = w.plan(&svc, &p, &[]);
    let types: Vec<_> = plan
        .batches
        .iter()
        .map(|b| b.create[0].address_type.clone())
        .collect();
    assert_eq!(types, vec!["IPv4", "IPv6"]);
    assert_eq!(
        plan.batches[1].create[0].endpoints[0].addresses,
        vec!["fd00::1"]
    );
}

#[test]
fn slices_of_unsupported_address_types_are_deleted_last() {
    let svc = service("s").families(&["IPv4", "IPv6"]).build();
    let v4_only = service("s").families(&["IPv4"]).build();
    let plan = World::new().resync((&svc, &[]), (&v4_only, &[]));
    let last = plan.batches.last().unwrap();
    assert_eq!(last.address_type, None);
    assert_eq!(last.delete.len(), 1);
    assert_eq!(last.delete[0].address_type, "IPv6");
}

#[test]
fn slices_not_owned_by_the_service_are_replaced() {
    let svc = service("s").build();
    let mut recreated = svc.clone();
    recreated.uid = "new-uid".into();
    let pods = pods(3);
    let plan = World::new().resync((&svc, &pods), (&recreated, &pods));
    // The old owner's slice is not recycled: a new slice is created and the old one deleted.
    assert_eq!(writes(&plan.batches[0]), (1, 0, 1));
}

#[test]
fn pods_on_unknown_nodes_are_skipped_and_fail_the_sync() {
    let mut w = World::new();
    let svc = service("s").build();
    let p = vec![
        pod("a").ip("10.0.0.1").node("ghost").build(),
        pod("b").ip("10.0.0.2").build(),
    ];
    let plan = w.plan(&svc, &p, &[]);
    assert_eq!(
        plan.missing_nodes,
        vec![MissingNode {
            pod: "a".into(),
            node: "ghost".into()
        }]
    );
    assert_eq!(plan.batches[0].create[0].endpoints.len(), 1);
    let published = w.plan(&service("s").publish_not_ready().build(), &p, &[]);
    assert!(published.missing_nodes.is_empty());
    assert_eq!(published.batches[0].create[0].endpoints.len(), 2);
}

#[test]
fn service_being_deleted_gets_no_creates() {
    let mut w = World::new();
    let plan = w.plan(&service("s").deleting().build(), &pods(3), &[]);
    assert!(plan.batches[0].create.is_empty());
}

#[test]
fn removing_pods_reuses_slices_by_update_not_delete_and_create() {
    let svc = service("s").build();
    let all = pods(150);
    let plan = World::new().resync((&svc, &all), (&svc, &all[..140]));
    assert_eq!(writes(&plan.batches[0]), (0, 1, 0));
}

#[test]
fn topology_annotation_adds_zone_hints_and_an_event() {
    let mut w = World::new();
    let plan = w.plan(&topology_auto().build(), &pod_per_zone(), &[]);
    assert_eq!(plan.events[0].reason, "TopologyAwareHintsEnabled");
    assert!(plan.batches[0].create[0]
        .endpoints
        .iter()
        .all(|e| e.hints.is_some()));
    assert_eq!(plan.topology_label, "Auto");
}

#[test]
fn hints_are_removed_when_the_annotation_goes_away() {
    let pods = pod_per_zone();
    let plain = service("s").build();
    let plan = World::new().resync((&topology_auto().build(), &pods), (&plain, &pods));
    assert_eq!(plan.events[0].reason, "TopologyAwareHintsDisabled");
    assert_eq!(plan.batches[0].update.len(), 1);
    assert!(plan.batches[0].update[0]
        .endpoints
        .iter()
        .all(|e| e.hints.is_none()));
}

#[test]
fn annotation_wins_over_traffic_distribution() {
    let mut w = World::new();
    let svc = topology_auto()
        .traffic_distribution("PreferSameNode")
        .build();
    let p = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    let plan = w.plan(&svc, &p, &[]);
    // One endpoint for three zones: topology refuses, and no node hints appear either.
    assert_eq!(plan.events[0].reason, "TopologyAwareHintsDisabled");
    assert_eq!(plan.batches[0].create[0].endpoints[0].hints, None);
    assert_eq!(plan.traffic_distribution_label, "");
}

#[test]
fn traffic_distribution_prefer_same_node_sets_node_and_zone_hints() {
    let mut w = World::new();
    let svc = service("s").traffic_distribution("PreferSameNode").build();
    let p = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    let plan = w.plan(&svc, &p, &[]);
    let hints = plan.batches[0].create[0].endpoints[0]
        .hints
        .clone()
        .unwrap();
    assert_eq!(hints.for_zones.unwrap()[0].name, "za");
    assert_eq!(hints.for_nodes.unwrap()[0].name, "node-a");
}

#[test]
fn prefer_same_values_count_as_unset_where_their_gate_is_off() {
    let p = vec![pod("a").ip("10.0.0.1").node("node-a").ready(true).build()];
    for value in ["PreferSameZone", "PreferSameNode"] {
        let svc = service("s").traffic_distribution(value).build();
        // v1.33: the gate is off by default, so no hints and an empty metric label.
        let plan = World::following(KubeVersion::new(1, 33)).plan(&svc, &p, &[]);
        assert_eq!(
            plan.batches[0].create[0].endpoints[0].hints, None,
            "{value}"
        );
        assert_eq!(plan.traffic_distribution_label, "", "{value}");
        // v1.34 turns it on; on v1.33 --feature-gates does.
        let mut gated = World::following(KubeVersion::new(1, 33));
        gated.rules = gated
            .rules
            .with_feature_gates(&[(PREFER_SAME_TRAFFIC_DISTRIBUTION, true)])
            .unwrap();
        for mut world in [World::following(KubeVersion::new(1, 34)), gated] {
            let plan = world.plan(&svc, &p, &[]);
            assert!(
                plan.batches[0].create[0].endpoints[0].hints.is_some(),
                "{value}"
            );
            assert_eq!(plan.traffic_distribution_label, value);
        }
    }
    // PreferClose is acted on in every version.
    let svc = service("s").traffic_distribution("PreferClose").build();
    let plan = World::following(KubeVersion::new(1, 33)).plan(&svc, &p, &[]);
    assert!(plan.batches[0].create[0].endpoints[0].hints.is_some());
    assert_eq!(plan.traffic_distribution_label, "PreferClose");
}

fn port_names(slice: &EndpointSlice) -> Vec<String> {
    slice
        .ports
        .iter()
        .flatten()
        .map(|p| p.name.clone().unwrap_or_default())
        .collect()
}

#[test]
fn slice_ports_are_written_in_each_versions_hash_order() {
    let svc = three_port_service();
    let p = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    for (version, order) in [
        (33, ["stream", "admin", "web"]),
        (34, ["stream", "admin", "web"]),
        (35, ["admin", "stream", "web"]),
        (36, ["admin", "stream", "web"]),
    ] {
        let plan = World::following(KubeVersion::new(1, version)).plan(&svc, &p, &[]);
        assert_eq!(
            port_names(&plan.batches[0].create[0]),
            order,
            "v1.{version}"
        );
    }
}

#[test]
fn a_slice_in_another_versions_port_order_is_left_alone_and_reordered_when_updated() {
    let svc = three_port_service();
    let one = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    let two = vec![
        pod("a").ip("10.0.0.1").ready(true).build(),
        pod("b").ip("10.0.0.2").ready(true).build(),
    ];
    // Written by v1.34, in MD5 order.
    let written = apply(
        &[],
        &World::following(KubeVersion::new(1, 34)).plan(&svc, &one, &[]),
    );
    assert_eq!(port_names(&written[0]), ["stream", "admin", "web"]);
    // v1.36 groups it by its port list whatever the order: nothing to write.
    let mut v136 = World::new();
    let plan = v136.plan(&svc, &one, &written);
    assert_eq!(writes(&plan.batches[0]), (0, 0, 0));
    // A real change updates it, with its ports in v1.36's order.
    let plan = v136.plan(&svc, &two, &written);
    assert_eq!(writes(&plan.batches[0]), (0, 1, 0));
    assert_eq!(
        port_names(&plan.batches[0].update[0]),
        ["admin", "stream", "web"]
    );
}

#[test]
fn trigger_time_annotation_is_written_on_changed_slices() {
    let mut w = World::new();
    let plan = w.plan(&service("s").build(), &pods(1), &[]);
    let annotations = plan.batches[0].create[0]
        .metadata
        .annotations
        .clone()
        .unwrap();
    assert_eq!(
        annotations["endpoints.kubernetes.io/last-change-trigger-time"],
        "2026-01-01T00:00:00Z"
    );
}

#[test]
fn headless_service_without_ports_publishes_port_less_endpoints() {
    let mut w = World::new();
    let svc = service("s").cluster_ip("None").build();
    let plan = w.plan(&svc, &pods(2), &[]);
    let slice = &plan.batches[0].create[0];
    assert_eq!(slice.ports, None);
    assert_eq!(slice.endpoints.len(), 2);
    assert_eq!(
        slice.metadata.labels.as_ref().unwrap()["service.kubernetes.io/headless"],
        ""
    );
}

#[test]
fn metrics_figures_count_endpoints_and_slices() {
    let mut w = World::new();
    let plan = w.plan(&service("s").build(), &pods(250), &[]);
    let (t, figures) = &plan.figures[0];
    assert_eq!(*t, AddressType::IPv4);
    assert_eq!(figures.added, 250);
    let group = figures.groups.values().next().unwrap();
    assert_eq!((group.endpoints, group.slices), (250, 3));
}

#[test]
fn failure_event_names_the_service() {
    let e = failure_event("ns", "s", &["boom".into()]);
    assert_eq!(e.reason, "FailedToUpdateEndpointSlices");
    assert_eq!(
        e.message,
        "Error updating Endpoint Slices for Service ns/s: boom"
    );
}
