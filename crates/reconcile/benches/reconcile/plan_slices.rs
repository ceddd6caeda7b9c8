//! One EndpointSlice sync (`reconcile::plan_slices`) of a Service with 10,000 ready pods
//! spread over three zoned nodes:
//!
//! * `from_nothing`: no slices exist yet (100 creates);
//! * `one_percent_not_ready`: against the slices the first sync created, with every 100th
//!   pod (100 pods) flipped to not ready;
//! * `no_change_resync`: against the slices the first sync created, same pods (no writes).

use crate::common::{created_slices, pod_on_node, ready_pods, stored, web_service, Cluster};
use criterion::Criterion;
use reconcile::projection::PodInfo;
use reconcile::slice::DEFAULT_MAX_ENDPOINTS_PER_SLICE;
use std::hint::black_box;

const PODS: usize = 10_000;

pub fn bench_plan_slices(c: &mut Criterion) {
    let service = web_service();
    let mut cluster = Cluster::new();

    let pods = ready_pods(PODS);
    let pod_refs: Vec<&PodInfo> = pods.iter().collect();
    let first = cluster.plan_slices(&service, &pod_refs, &[]);
    assert_eq!(first.write_count(), PODS / DEFAULT_MAX_ENDPOINTS_PER_SLICE);
    let existing = stored(&created_slices(&first));

    let flipped: Vec<PodInfo> = (0..PODS).map(|i| pod_on_node(i, i % 100 != 0)).collect();
    let flipped_refs: Vec<&PodInfo> = flipped.iter().collect();
    let churn = cluster.plan_slices(&service, &flipped_refs, &existing);
    let batch = &churn.batches[0];
    assert!(batch.create.is_empty() && batch.delete.is_empty() && !batch.update.is_empty());
    assert_eq!(
        cluster
            .plan_slices(&service, &pod_refs, &existing)
            .write_count(),
        0
    );

    let mut group = c.benchmark_group("plan_slices/10k_pods_3_zones");
    for (case, pods, existing) in [
        ("from_nothing", &pod_refs, &[][..]),
        ("one_percent_not_ready", &flipped_refs, &existing[..]),
        ("no_change_resync", &pod_refs, &existing[..]),
    ] {
        group.bench_function(case, |b| {
            b.iter(|| black_box(cluster.plan_slices(&service, black_box(pods), existing)))
        });
    }
    group.finish();
}
