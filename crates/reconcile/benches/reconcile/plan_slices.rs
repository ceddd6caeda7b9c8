//! One EndpointSlice sync (`reconcile::plan_slices`) of a Service with 10,000 ready pods
//! spread over three zoned nodes:
//!
//! * `from_nothing`: no slices exist yet (100 creates);
//! * `one_percent_not_ready`: against the slices the first sync created, with every 100th
//!   pod (100 pods) flipped to not ready;
//! * `no_change_resync`: against the slices the first sync created, same pods (no writes).

use crate::common::{created_slices, nodes, pod_on_node, ready_pods, trigger, web_service};
use criterion::Criterion;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use reconcile::projection::{NodeInfo, PodInfo, ServiceInfo};
use reconcile::slice::DEFAULT_MAX_ENDPOINTS_PER_SLICE;
use reconcile::topology::TopologyCache;
use reconcile::{plan_slices, SliceInput, SlicePlan};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

const PODS: usize = 10_000;

fn plan(
    service: &ServiceInfo,
    pods: &[&PodInfo],
    existing: &[Arc<EndpointSlice>],
    nodes: &BTreeMap<String, NodeInfo>,
    topology: &mut TopologyCache,
) -> SlicePlan {
    let input = SliceInput {
        service,
        pods,
        existing,
        nodes,
        trigger_time: Some(trigger()),
        max_endpoints_per_slice: DEFAULT_MAX_ENDPOINTS_PER_SLICE,
    };
    plan_slices(&input, topology)
}

pub fn bench_plan_slices(c: &mut Criterion) {
    let service = web_service();
    let nodes = nodes();
    let mut topology = TopologyCache::default();
    topology.set_nodes(nodes.values());

    let pods = ready_pods(PODS);
    let pod_refs: Vec<&PodInfo> = pods.iter().collect();
    let first = plan(&service, &pod_refs, &[], &nodes, &mut topology);
    assert_eq!(first.write_count(), PODS / DEFAULT_MAX_ENDPOINTS_PER_SLICE);
    let existing = created_slices(&first);

    let flipped: Vec<PodInfo> = (0..PODS).map(|i| pod_on_node(i, i % 100 != 0)).collect();
    let flipped_refs: Vec<&PodInfo> = flipped.iter().collect();
    let churn = plan(&service, &flipped_refs, &existing, &nodes, &mut topology);
    let batch = &churn.batches[0];
    assert!(batch.create.is_empty() && batch.delete.is_empty() && !batch.update.is_empty());
    assert_eq!(
        plan(&service, &pod_refs, &existing, &nodes, &mut topology).write_count(),
        0
    );

    let mut group = c.benchmark_group("plan_slices/10k_pods_3_zones");
    group.bench_function("from_nothing", |b| {
        b.iter(|| {
            black_box(plan(
                &service,
                black_box(&pod_refs),
                &[],
                &nodes,
                &mut topology,
            ))
        })
    });
    group.bench_function("one_percent_not_ready", |b| {
        b.iter(|| {
            black_box(plan(
                &service,
                black_box(&flipped_refs),
                &existing,
                &nodes,
                &mut topology,
            ))
        })
    });
    group.bench_function("no_change_resync", |b| {
        b.iter(|| {
            black_box(plan(
                &service,
                black_box(&pod_refs),
                &existing,
                &nodes,
                &mut topology,
            ))
        })
    });
    group.finish();
}
