//! Packing one port group (`reconcile::slice::fill::fill_port_group`) of 10,000 desired
//! endpoints, 100 per slice:
//!
//! * `into_nothing`: no existing slices (100 new slices);
//! * `one_percent_churn`: into the 100 slices the first case produced, with 1% of the pods
//!   replaced (every 100th endpoint gone, 100 new pods with new addresses), so the slices
//!   that lost an endpoint are updated and topped up with the new ones.
//!
//! The desired map is consumed by the call, so each call gets a fresh copy
//! (`iter_batched`), outside the timing.

use crate::common::{pod_on_node, web_service, ZONES};
use criterion::{BatchSize, Criterion};
use reconcile::address_family::AddressType;
use reconcile::projection::{ServiceInfo, StoredSlice};
use reconcile::slice::endpoint::{pod_to_endpoint, EndpointKey};
use reconcile::slice::fill::{fill_port_group, DesiredEndpoints};
use reconcile::slice::port_groups::endpoint_ports;
use reconcile::slice::DEFAULT_MAX_ENDPOINTS_PER_SLICE as MAX;
use std::hint::black_box;
use std::sync::Arc;

const ENDPOINTS: usize = 10_000;

fn desired(service: &ServiceInfo, pods: impl Iterator<Item = usize>) -> DesiredEndpoints {
    pods.map(|i| {
        let ep = pod_to_endpoint(
            &pod_on_node(i, true),
            Some(ZONES[i % 3]),
            service,
            AddressType::IPv4,
        );
        (EndpointKey::of(&ep), ep)
    })
    .collect()
}

pub fn bench_fill(c: &mut Criterion) {
    let service = web_service();
    let ports = endpoint_ports(
        &service,
        &pod_on_node(0, true),
        reconcile::kube_version::OrderHash::Fnv128a,
    );

    let all = desired(&service, 0..ENDPOINTS);
    let first = fill_port_group(&service, &[], all.clone(), &ports, AddressType::IPv4, MAX);
    assert_eq!(first.create.len(), ENDPOINTS / MAX);
    let existing: Vec<Arc<StoredSlice>> = first
        .create
        .into_iter()
        .enumerate()
        .map(|(n, mut slice)| {
            slice.metadata.name = Some(format!("web-{n:05}"));
            slice.metadata.uid = Some(format!("slice-uid-{n}"));
            Arc::new(StoredSlice::new(slice))
        })
        .collect();

    let churned = desired(
        &service,
        (0..ENDPOINTS)
            .filter(|i| i % 100 != 0)
            .chain(ENDPOINTS..ENDPOINTS + ENDPOINTS / 100),
    );
    assert_eq!(churned.len(), ENDPOINTS);
    let out = fill_port_group(
        &service,
        &existing,
        churned.clone(),
        &ports,
        AddressType::IPv4,
        MAX,
    );
    assert_eq!((out.added, out.removed), (ENDPOINTS / 100, ENDPOINTS / 100));
    assert!(out.create.is_empty() && out.delete.is_empty() && !out.update.is_empty());

    let mut group = c.benchmark_group("slice_fill/10k_endpoints");
    for (case, existing, desired) in [
        ("into_nothing", &[][..], &all),
        ("one_percent_churn", &existing[..], &churned),
    ] {
        group.bench_function(case, |b| {
            b.iter_batched(
                || desired.clone(),
                |desired| {
                    black_box(fill_port_group(
                        &service,
                        existing,
                        desired,
                        &ports,
                        AddressType::IPv4,
                        MAX,
                    ))
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}
