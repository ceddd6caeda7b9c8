//! Topology-aware hints (`TopologyCache::add_hints`) for a Service of 10,000 ready
//! endpoints in 100 slices of 100, over three zones of equal CPU. Endpoints are spread
//! 50/30/20 over the zones (interleaved within every slice), so the zone with half of them
//! gives about 1,667 hints to the other two.
//!
//! * `skewed_creates`: all 100 slices are being created (a first sync);
//! * `unchanged_already_hinted`: the 100 slices exist unchanged and already carry the hints
//!   the first case gave them (a resync that keeps every slice as it is).
//!
//! Each call gets a fresh copy of the slices and of the cache (`iter_batched`), outside the
//! timing.

use crate::common::{ip, web_service};
use criterion::{BatchSize, Criterion};
use reconcile::address_family::AddressType;
use reconcile::keys::ServiceKey;
use reconcile::slice::endpoint::pod_to_endpoint;
use reconcile::slice::fill::new_slice;
use reconcile::slice::port_groups::endpoint_ports;
use reconcile::slice::SliceSets;
use reconcile::testing::{node, pod};
use reconcile::topology::TopologyCache;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

const SLICES: usize = 100;
const PER_SLICE: usize = 100;

/// Zone of endpoint `i`: 50% za, 30% zb, 20% zc.
fn zone(i: usize) -> &'static str {
    match i % 10 {
        0..=4 => "za",
        5..=7 => "zb",
        _ => "zc",
    }
}

fn hint_counts(sets: &SliceSets) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    let slices = sets
        .create
        .iter()
        .chain(sets.update.iter())
        .chain(sets.unchanged.iter().map(|s| &**s));
    for e in slices.flat_map(|s| s.endpoints.iter()) {
        if let Some(z) = e.hints.as_ref().and_then(|h| h.for_zones.as_ref()) {
            *counts.entry(z[0].name.clone()).or_default() += 1;
        }
    }
    counts
}

pub fn bench_add_hints(c: &mut Criterion) {
    let service = web_service();
    let key = ServiceKey::new(&service.namespace, &service.name);
    let mut cache = TopologyCache::default();
    cache.set_nodes(&[
        node("node-a", "za", 4000),
        node("node-b", "zb", 4000),
        node("node-c", "zc", 4000),
    ]);

    let mut creates = Vec::with_capacity(SLICES);
    for s in 0..SLICES {
        let any_pod = pod("p").build();
        let mut slice = new_slice(
            &service,
            &endpoint_ports(
                &service,
                &any_pod,
                reconcile::kube_version::OrderHash::Fnv128a,
            ),
            AddressType::IPv4,
        );
        for i in s * PER_SLICE..(s + 1) * PER_SLICE {
            let z = zone(i);
            let node = format!("node-{}", &z[1..]);
            let p = pod(&format!("p{i:05}"))
                .ip(&ip(i))
                .node(&node)
                .ready(true)
                .build();
            slice
                .endpoints
                .push(pod_to_endpoint(&p, Some(z), &service, AddressType::IPv4));
        }
        creates.push(slice);
    }
    let skewed = SliceSets {
        create: creates,
        ..Default::default()
    };

    // The first call's result, as existing slices for the second case.
    let mut hinted = skewed.clone();
    let mut warm = cache.clone();
    let events = warm.add_hints(&key, AddressType::IPv4, &mut hinted);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, "TopologyAwareHintsEnabled");
    let counts = hint_counts(&hinted);
    assert_eq!(counts.values().sum::<usize>(), SLICES * PER_SLICE);
    assert!(
        counts["za"] < 5000 && counts["zc"] > 2000,
        "hints were redistributed: {counts:?}"
    );
    let unchanged = SliceSets {
        unchanged: hinted.create.into_iter().map(Arc::new).collect(),
        ..Default::default()
    };
    let mut check = unchanged.clone();
    warm.add_hints(&key, AddressType::IPv4, &mut check);
    assert!(
        check.update.is_empty() && check.unchanged.len() == SLICES,
        "hinted slices stay unchanged"
    );

    let mut group = c.benchmark_group("topology_hints/10k_endpoints_3_zones");
    for (case, cache, sets) in [
        ("skewed_creates", &cache, &skewed),
        ("unchanged_already_hinted", &warm, &unchanged),
    ] {
        group.bench_function(case, |b| {
            b.iter_batched(
                || (cache.clone(), sets.clone()),
                |(mut cache, mut sets)| {
                    let events = cache.add_hints(&key, AddressType::IPv4, &mut sets);
                    black_box((events, sets, cache))
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}
