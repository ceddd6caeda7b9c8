//! Inputs shared by the benchmarks: a Service, its pods spread over three zoned nodes, the
//! nodes and topology a slice sync is given, and a way to turn a plan's creates into the
//! existing slices of the next sync.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use reconcile::projection::{NodeInfo, PodInfo, ServiceInfo, StoredSlice};
use reconcile::slice::{SlicePlan, DEFAULT_MAX_ENDPOINTS_PER_SLICE};
use reconcile::testing::{node, pod, service, service_port, ts};
use reconcile::topology::TopologyCache;
use reconcile::{plan_slices, SliceInput, Timestamp};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Zones of the three nodes, in node order.
pub const ZONES: [&str; 3] = ["za", "zb", "zc"];

/// Settings that keep one benchmark function to a few seconds on two cores. Command-line
/// flags (`--warm-up-time`, `--measurement-time`, `--sample-size`) still override them.
pub fn config() -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

/// The trigger time every sync is given.
pub fn trigger() -> Timestamp {
    ts("2026-01-01T00:00:00Z")
}

/// Three ready nodes `node-a`..`node-c` in zones `za`..`zc`, equal CPU.
pub fn nodes() -> BTreeMap<String, NodeInfo> {
    ["node-a", "node-b", "node-c"]
        .iter()
        .zip(ZONES)
        .map(|(name, zone)| (name.to_string(), node(name, zone, 4000)))
        .collect()
}

/// The three nodes of [`nodes`] and a topology cache that has seen them: what a slice sync
/// is given besides the Service, its pods and its slices.
pub struct Cluster {
    nodes: BTreeMap<String, NodeInfo>,
    topology: TopologyCache,
}

impl Cluster {
    /// The three nodes, their CPU shares known to the topology cache.
    pub fn new() -> Self {
        let nodes = nodes();
        let mut topology = TopologyCache::default();
        topology.set_nodes(nodes.values());
        Self { nodes, topology }
    }

    /// One slice sync of `service` at the [`trigger`] time, default slice size.
    pub fn plan_slices(
        &mut self,
        service: &ServiceInfo,
        pods: &[&PodInfo],
        existing: &[Arc<StoredSlice>],
    ) -> SlicePlan {
        let input = SliceInput {
            rules: reconcile::VersionRules::default(),
            service,
            pods,
            existing,
            nodes: &self.nodes,
            trigger_time: Some(trigger()),
            max_endpoints_per_slice: DEFAULT_MAX_ENDPOINTS_PER_SLICE,
        };
        plan_slices(&input, &mut self.topology)
    }
}

/// A ClusterIP Service `web` with one port, 80 → 8080.
pub fn web_service() -> ServiceInfo {
    service("web")
        .port(service_port("http", 80).target(8080))
        .build()
}

/// Pod `i`'s address: unique for i < 62,500.
pub fn ip(i: usize) -> String {
    format!("10.{}.{}.{}", 1 + i / 62_500, (i / 250) % 250, i % 250)
}

/// `n` ready pods `p00000`.., round-robin over the three nodes.
pub fn ready_pods(n: usize) -> Vec<PodInfo> {
    (0..n).map(|i| pod_on_node(i, true)).collect()
}

/// Pod `i`, on node `i % 3`.
pub fn pod_on_node(i: usize, ready: bool) -> PodInfo {
    let node = ["node-a", "node-b", "node-c"][i % 3];
    pod(&format!("p{i:05}"))
        .ip(&ip(i))
        .node(node)
        .label("app", "web")
        .ready(ready)
        .build()
}

/// Slices as the informer keeps them, which is how a sync is given them.
pub fn stored(slices: &[Arc<EndpointSlice>]) -> Vec<Arc<StoredSlice>> {
    slices
        .iter()
        .map(|s| Arc::new(StoredSlice::new(EndpointSlice::clone(s))))
        .collect()
}

/// The existing slices after a plan's writes are applied to none: every create gets the
/// name `web-N` and uid `slice-uid-N`. Panics if the plan does anything but create.
pub fn created_slices(plan: &SlicePlan) -> Vec<Arc<EndpointSlice>> {
    let mut out = Vec::new();
    for batch in &plan.batches {
        assert!(
            batch.update.is_empty() && batch.delete.is_empty(),
            "first plan only creates"
        );
        for slice in &batch.create {
            let mut slice = slice.clone();
            let n = out.len();
            slice.metadata.name = Some(format!("web-{n:05}"));
            slice.metadata.uid = Some(format!("slice-uid-{n}"));
            slice.metadata.resource_version = Some("1".into());
            out.push(Arc::new(slice));
        }
    }
    out
}
