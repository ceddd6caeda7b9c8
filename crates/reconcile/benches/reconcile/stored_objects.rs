//! What the informer's compact forms of slices and Endpoints cost (`projection::StoredSlice`,
//! `projection::StoredEndpoints`): taking in a decoded object as a watch event brings it, and
//! rebuilding the whole object for a sync. The objects are the ones a sync of a Service with
//! 100 ready pods on three zoned nodes writes (one slice of 100 endpoints, one Endpoints
//! object of 100 addresses); `clone` is a deep copy of the same object, for scale.

use crate::common::{created_slices, nodes, ready_pods, trigger, web_service};
use criterion::Criterion;
use reconcile::endpoints::EndpointsAction;
use reconcile::projection::{PodInfo, StoredEndpoints, StoredSlice};
use reconcile::slice::DEFAULT_MAX_ENDPOINTS_PER_SLICE;
use reconcile::topology::TopologyCache;
use reconcile::{plan_endpoints, plan_slices, EndpointsInput, SliceInput};
use std::hint::black_box;

pub fn bench_stored_objects(c: &mut Criterion) {
    let service = web_service();
    let nodes = nodes();
    let mut topology = TopologyCache::default();
    topology.set_nodes(nodes.values());
    let pods = ready_pods(DEFAULT_MAX_ENDPOINTS_PER_SLICE);
    let pod_refs: Vec<&PodInfo> = pods.iter().collect();

    let plan = plan_slices(
        &SliceInput {
            service: &service,
            pods: &pod_refs,
            existing: &[],
            nodes: &nodes,
            trigger_time: Some(trigger()),
            max_endpoints_per_slice: DEFAULT_MAX_ENDPOINTS_PER_SLICE,
        },
        &mut topology,
    );
    let slices = created_slices(&plan);
    assert_eq!(slices.len(), 1);
    let slice = (*slices[0]).clone();
    let EndpointsAction::Create(endpoints) = plan_endpoints(&EndpointsInput {
        service: &service,
        pods: &pod_refs,
        current: None,
        trigger_time: Some(trigger()),
    })
    .action
    else {
        panic!("no Endpoints object to create");
    };

    let stored_slice = StoredSlice::new(slice.clone());
    assert_eq!(stored_slice.to_slice(), slice);
    let stored_endpoints = StoredEndpoints::new(endpoints.clone());
    assert_eq!(stored_endpoints.to_endpoints(), endpoints);

    let mut group = c.benchmark_group("stored_objects/100_endpoints");
    group.bench_function("slice/clone", |b| b.iter(|| black_box(&slice).clone()));
    group.bench_function("slice/store", |b| {
        b.iter_batched(
            || slice.clone(),
            |s| StoredSlice::new(black_box(s)),
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("slice/rebuild", |b| {
        b.iter(|| black_box(&stored_slice).to_slice())
    });
    group.bench_function("endpoints/clone", |b| {
        b.iter(|| black_box(&endpoints).clone())
    });
    group.bench_function("endpoints/store", |b| {
        b.iter_batched(
            || endpoints.clone(),
            |e| StoredEndpoints::new(black_box(e)),
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("endpoints/rebuild", |b| {
        b.iter(|| black_box(&stored_endpoints).to_endpoints())
    });
    group.finish();
}
