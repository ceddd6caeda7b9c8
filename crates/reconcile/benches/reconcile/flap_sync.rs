//! The sync one readiness flip costs, in the shape of the end-to-end bench's `flap` scenario:
//! a Service of 50 ready pods (UUID uids, three zoned nodes) whose objects exist, with one pod
//! flipped to not ready. Each case starts from the stored forms the informers hold, as the
//! controllers do:
//!
//! * `slices`: `plan_slices` against the stored slice (one slice updated);
//! * `endpoints`: `plan_endpoints` against the stored object (the object updated).

use crate::common::{created_slices, pod_on_node, stored, trigger, web_service, Cluster};
use criterion::Criterion;
use reconcile::endpoints::EndpointsAction;
use reconcile::projection::{PodInfo, StoredEndpoints};
use reconcile::{plan_endpoints, EndpointsInput};
use std::hint::black_box;

const PODS: usize = 50;

/// Pod `i` with a uid as the API server writes them (lowercase UUID text).
fn uuid_pod(i: usize, ready: bool) -> PodInfo {
    let mut pod = pod_on_node(i, ready);
    pod.uid = format!("0b0c8e2c-4a43-4b6c-9d5e-{i:012x}").as_str().into();
    pod
}

pub fn bench_flap_sync(c: &mut Criterion) {
    let service = web_service();
    let mut cluster = Cluster::new();
    let pods: Vec<PodInfo> = (0..PODS).map(|i| uuid_pod(i, true)).collect();
    let flipped: Vec<PodInfo> = (0..PODS).map(|i| uuid_pod(i, i != 7)).collect();
    let pod_refs: Vec<&PodInfo> = pods.iter().collect();
    let flipped_refs: Vec<&PodInfo> = flipped.iter().collect();

    let stored_slices = stored(&created_slices(&cluster.plan_slices(
        &service,
        &pod_refs,
        &[],
    )));
    let plan_endpoints_of = |pods: &[&PodInfo], current: Option<&StoredEndpoints>| {
        plan_endpoints(&EndpointsInput {
            rules: reconcile::VersionRules::default(),
            service: &service,
            pods,
            current,
            trigger_time: Some(trigger()),
        })
    };
    let EndpointsAction::Create(mut endpoints) = plan_endpoints_of(&pod_refs, None).action else {
        panic!("no Endpoints object to create");
    };
    endpoints.metadata.resource_version = Some("1".into());
    let stored_endpoints = StoredEndpoints::new(endpoints);

    let plan = cluster.plan_slices(&service, &flipped_refs, &stored_slices);
    assert_eq!(
        (plan.write_count(), plan.batches[0].update.len()),
        (1, 1),
        "one slice updated"
    );
    assert!(matches!(
        plan_endpoints_of(&flipped_refs, Some(&stored_endpoints)).action,
        EndpointsAction::Update(_)
    ));

    let mut group = c.benchmark_group("flap_sync/50_pods_one_flipped");
    group.bench_function("slices", |b| {
        b.iter(|| {
            black_box(cluster.plan_slices(
                &service,
                black_box(&flipped_refs),
                black_box(&stored_slices),
            ))
        })
    });
    group.bench_function("endpoints", |b| {
        b.iter(|| {
            black_box(plan_endpoints_of(
                black_box(&flipped_refs),
                Some(black_box(&stored_endpoints)),
            ))
        })
    });
    group.finish();
}
