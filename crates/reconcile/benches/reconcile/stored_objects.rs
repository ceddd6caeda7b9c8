//! What the informer's compact forms of slices and Endpoints cost (`projection::StoredSlice`,
//! `projection::StoredEndpoints`): taking in a decoded object as a watch event brings it, and
//! rebuilding the whole object for a sync. The objects are the ones a sync of a Service with
//! 100 ready pods on three zoned nodes writes (one slice of 100 endpoints, one Endpoints
//! object of 100 addresses); `clone` is a deep copy of the same object, for scale.

use crate::common::{created_slices, ready_pods, trigger, web_service, Cluster};
use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion};
use reconcile::endpoints::EndpointsAction;
use reconcile::projection::{PodInfo, StoredEndpoints, StoredSlice};
use reconcile::slice::DEFAULT_MAX_ENDPOINTS_PER_SLICE;
use reconcile::{plan_endpoints, EndpointsInput};
use std::fmt::Debug;
use std::hint::black_box;

/// An object's three costs, as `<kind>/clone`, `<kind>/store` and `<kind>/rebuild`, after
/// checking that its stored form rebuilds it unchanged.
fn bench_stored_form<T: Clone + PartialEq + Debug, S>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    kind: &str,
    object: &T,
    store: impl Fn(T) -> S,
    rebuild: impl Fn(&S) -> T,
) {
    let stored = store(object.clone());
    assert_eq!(&rebuild(&stored), object);
    group.bench_function(format!("{kind}/clone"), |b| {
        b.iter(|| black_box(object).clone())
    });
    group.bench_function(format!("{kind}/store"), |b| {
        b.iter_batched(
            || object.clone(),
            |o| store(black_box(o)),
            BatchSize::SmallInput,
        )
    });
    group.bench_function(format!("{kind}/rebuild"), |b| {
        b.iter(|| rebuild(black_box(&stored)))
    });
}

pub fn bench_stored_objects(c: &mut Criterion) {
    let service = web_service();
    let pods = ready_pods(DEFAULT_MAX_ENDPOINTS_PER_SLICE);
    let pod_refs: Vec<&PodInfo> = pods.iter().collect();

    let plan = Cluster::new().plan_slices(&service, &pod_refs, &[]);
    let slices = created_slices(&plan);
    assert_eq!(slices.len(), 1);
    let slice = (*slices[0]).clone();
    let EndpointsAction::Create(endpoints) = plan_endpoints(&EndpointsInput {
        rules: reconcile::VersionRules::default(),
        service: &service,
        pods: &pod_refs,
        current: None,
        trigger_time: Some(trigger()),
    })
    .action
    else {
        panic!("no Endpoints object to create");
    };

    let mut group = c.benchmark_group("stored_objects/100_endpoints");
    bench_stored_form(
        &mut group,
        "slice",
        &slice,
        StoredSlice::new,
        StoredSlice::to_slice,
    );
    bench_stored_form(
        &mut group,
        "endpoints",
        &endpoints,
        StoredEndpoints::new,
        StoredEndpoints::to_endpoints,
    );
    group.finish();
}
