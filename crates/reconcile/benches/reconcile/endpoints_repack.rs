//! One v1 Endpoints sync (`reconcile::plan_endpoints`): pods to addresses, repacked into
//! subsets, truncated to 1,000 addresses, compared with the current object.
//!
//! The Service has two ports: `http` targets the named container port `http`, which is
//! 8080 on even pods and 8081 on odd ones, and `metrics` targets 9090. So the object has
//! three subsets (`metrics` on every pod, `http` 8080 on the even ones, `http` 8081 on the
//! odd ones) and every pod's address is listed twice: above 500 pods the object is over
//! the 1,000-address cap and truncated.
//!
//! * `create/1000_pods`, `create/5000_pods`: no object yet, every 10th pod not ready; the
//!   ready addresses alone are over the cap, so the ready lists are cut in proportion and
//!   the not-ready ones dropped;
//! * `create_not_ready_truncated/1500_pods`: 400 ready and 1,100 not ready pods, so the
//!   ready addresses (800) fit and the not-ready lists share the 200 left;
//! * `unchanged/500_pods`: 500 pods (1,000 addresses, at the cap), every 10th not ready,
//!   and the object the same sync would create already exists: no write.

use crate::common::{ip, trigger};
use criterion::{BenchmarkId, Criterion};
use k8s_openapi::api::core::v1::Endpoints;
use reconcile::endpoints::{EndpointsAction, OVER_CAPACITY};
use reconcile::projection::{PodInfo, ServiceInfo, StoredEndpoints};
use reconcile::testing::{pod, service, service_port};
use reconcile::{plan_endpoints, EndpointsInput, EndpointsPlan};
use std::hint::black_box;

fn two_port_service() -> ServiceInfo {
    service("web")
        .port(service_port("http", 80).named("http"))
        .port(service_port("metrics", 9090))
        .build()
}

/// Pod `i`, ready unless `not_ready(i)`, whose `http` port is 8080 or 8081.
fn pods(n: usize, not_ready: impl Fn(usize) -> bool) -> Vec<PodInfo> {
    (0..n)
        .map(|i| {
            let node = ["node-a", "node-b", "node-c"][i % 3];
            pod(&format!("p{i:05}"))
                .ip(&ip(i))
                .node(node)
                .ready(!not_ready(i))
                .port("http", "TCP", 8080 + (i % 2) as i32)
                .build()
        })
        .collect()
}

fn plan(
    service: &ServiceInfo,
    pods: &[&PodInfo],
    current: Option<&StoredEndpoints>,
) -> EndpointsPlan {
    plan_endpoints(&EndpointsInput {
        rules: reconcile::VersionRules::default(),
        service,
        pods,
        current,
        trigger_time: Some(trigger()),
    })
}

fn created(p: &EndpointsPlan) -> &Endpoints {
    match &p.action {
        EndpointsAction::Create(e) => e,
        other => panic!("expected a create, got {other:?}"),
    }
}

fn truncated(e: &Endpoints) -> bool {
    e.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(OVER_CAPACITY))
}

/// Ready and not-ready addresses in the object, over all subsets.
fn address_counts(e: &Endpoints) -> (usize, usize) {
    let len = |v: &Option<Vec<_>>| v.as_ref().map_or(0, Vec::len);
    e.subsets.iter().flatten().fold((0, 0), |(r, n), s| {
        (r + len(&s.addresses), n + len(&s.not_ready_addresses))
    })
}

pub fn bench_plan_endpoints(c: &mut Criterion) {
    let service = two_port_service();
    let mut group = c.benchmark_group("endpoints_repack");

    for n in [1_000, 5_000] {
        let pods = pods(n, |i| i % 10 == 0);
        let refs: Vec<&PodInfo> = pods.iter().collect();
        let first = plan(&service, &refs, None);
        let object = created(&first);
        assert_eq!(object.subsets.as_ref().map(Vec::len), Some(3));
        assert!(truncated(object));
        group.bench_with_input(
            BenchmarkId::new("create", format!("{n}_pods")),
            &refs,
            |b, refs| b.iter(|| black_box(plan(&service, black_box(refs), None))),
        );
    }

    let pods_1500 = pods(1_500, |i| i % 15 >= 4);
    let refs_1500: Vec<&PodInfo> = pods_1500.iter().collect();
    let first = plan(&service, &refs_1500, None);
    assert_eq!((first.ready, first.not_ready), (800, 2_200));
    assert!(truncated(created(&first)));
    assert_eq!(address_counts(created(&first)), (800, 200));
    group.bench_function(
        BenchmarkId::new("create_not_ready_truncated", "1500_pods"),
        |b| b.iter(|| black_box(plan(&service, black_box(&refs_1500), None))),
    );

    let pods_500 = pods(500, |i| i % 10 == 0);
    let refs_500: Vec<&PodInfo> = pods_500.iter().collect();
    let mut current = created(&plan(&service, &refs_500, None)).clone();
    current.metadata.resource_version = Some("1".into());
    let current = StoredEndpoints::new(current);
    assert_eq!(
        plan(&service, &refs_500, Some(&current)).action,
        EndpointsAction::Unchanged
    );
    group.bench_function(BenchmarkId::new("unchanged", "500_pods"), |b| {
        b.iter(|| black_box(plan(&service, black_box(&refs_500), Some(&current))))
    });
    group.finish();
}
