//! The gauges' part of every EndpointSlice sync: `MetricsCache::update_service` for the
//! synced Service, then `totals` and `services_by_traffic_distribution`, which the controller
//! sets its gauges from.
//!
//! * `100_services` and `10000_services`: the same sync with 100 and with 10,000 Services
//!   known. Summed over every Service on each sync, the totals made a cold start of N
//!   Services cost N²; kept up to date as Services change, a sync costs the same at both
//!   sizes.

use criterion::Criterion;
use reconcile::keys::ServiceKey;
use reconcile::metrics_cache::MetricsCache;
use reconcile::slice::{PortGroupFigures, SliceFigures};
use std::hint::black_box;

fn figures(endpoints: usize) -> SliceFigures {
    let mut figures = SliceFigures::default();
    figures.groups.insert(
        "[http]".into(),
        PortGroupFigures {
            endpoints,
            slices: 1,
        },
    );
    figures
}

/// A cache that has seen `services` Services of 15 endpoints, a third with a
/// trafficDistribution.
fn cache(services: usize) -> (MetricsCache, Vec<ServiceKey>) {
    let mut cache = MetricsCache::new(100);
    let keys: Vec<ServiceKey> = (0..services)
        .map(|s| ServiceKey::new("bench", format!("svc-{s:05}")))
        .collect();
    for (s, key) in keys.iter().enumerate() {
        cache.update_service(key, &figures(15));
        cache.update_traffic_distribution(key, (s % 3 == 0).then_some("PreferClose"));
    }
    (cache, keys)
}

pub fn bench_gauges(c: &mut Criterion) {
    let mut group = c.benchmark_group("metrics_gauges/one_sync");
    for services in [100, 10_000] {
        let (mut cache, keys) = cache(services);
        assert_eq!(cache.totals().endpoints, 15 * services);
        let mut i = 0;
        group.bench_function(format!("{services}_services"), |b| {
            b.iter(|| {
                // One Service's figures move between 15 and 16 endpoints, as a flip would.
                i += 1;
                let key = &keys[i % keys.len()];
                cache.update_service(key, &figures(15 + i % 2));
                let totals = cache.totals();
                let by_value = cache.services_by_traffic_distribution().len();
                black_box((totals, by_value))
            })
        });
    }
    group.finish();
}
