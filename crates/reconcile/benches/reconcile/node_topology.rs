//! A node event at Kubernetes' limits: `TopologyCache::set_nodes` over 5,000 nodes in three
//! zones, then `overloaded_services` over 10,000 Services with hints, what the EndpointSlice
//! controller's topology worker runs once per burst of node changes that alter readiness,
//! zone or CPU (heartbeats queue nothing).
//!
//! * `one_node_not_ready`: one of the 5,000 nodes turned NotReady; the zones' CPU shares move
//!   by a hair and no Service is overloaded;
//! * `zone_emptied`: every node of one zone turned NotReady; every hinted Service now gives
//!   hints to a zone with no CPU and is overloaded, so all 10,000 are queued.
//!
//! The cost is linear in nodes plus hinted Services; these two cases pin it at the limits.

use criterion::Criterion;
use reconcile::address_family::AddressType;
use reconcile::keys::ServiceKey;
use reconcile::projection::NodeInfo;
use reconcile::testing::node;
use reconcile::topology::TopologyCache;
use std::collections::BTreeMap;
use std::hint::black_box;

const NODES: usize = 5_000;
const SERVICES: usize = 10_000;
const ZONES: [&str; 3] = ["za", "zb", "zc"];

fn nodes() -> Vec<NodeInfo> {
    (0..NODES)
        .map(|i| node(&format!("node-{i:04}"), ZONES[i % 3], 4000))
        .collect()
}

/// A cache that knows `nodes` and 10,000 Services whose 15 endpoints each are hinted 5 to
/// a zone: balanced for equal zones.
fn cache(nodes: &[NodeInfo]) -> TopologyCache {
    let mut cache = TopologyCache::default();
    cache.set_nodes(nodes);
    let counts: BTreeMap<String, usize> = ZONES.iter().map(|z| (z.to_string(), 5)).collect();
    for s in 0..SERVICES {
        let key = ServiceKey::new("bench", format!("svc-{s:05}"));
        cache.set_hints(&key, AddressType::IPv4, counts.clone());
    }
    cache
}

pub fn bench_node_event(c: &mut Criterion) {
    let mut group = c.benchmark_group("node_topology/5000_nodes_10000_hinted_services");

    let mut one_down = nodes();
    one_down[0].ready = false;
    let mut check = cache(&one_down);
    check.set_nodes(&one_down);
    assert!(
        check.overloaded_services().is_empty(),
        "one node of 5,000 overloads no Service"
    );
    group.bench_function("one_node_not_ready", |b| {
        b.iter(|| {
            check.set_nodes(black_box(&one_down));
            black_box(check.overloaded_services())
        })
    });

    let mut zone_down = nodes();
    for n in zone_down
        .iter_mut()
        .filter(|n| n.zone.as_deref() == Some("zc"))
    {
        n.ready = false;
    }
    let mut check = cache(&zone_down);
    check.set_nodes(&zone_down);
    assert_eq!(
        check.overloaded_services().len(),
        SERVICES,
        "a zone without CPU overloads every hinted Service"
    );
    group.bench_function("zone_emptied", |b| {
        b.iter(|| {
            check.set_nodes(black_box(&zone_down));
            black_box(check.overloaded_services())
        })
    });
    group.finish();
}
