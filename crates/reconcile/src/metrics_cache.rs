//! The figures behind the EndpointSlice controller's gauges, kept per service as data.
//!
//! Every sync updates one service's figures and then sets the gauges from the totals over
//! all services. The totals are kept up to date as services change (their old figures taken
//! out, the new ones added), so that a sync costs the same at 10 Services as at 10,000:
//! summing every service on each sync made a cold start of 10,000 Services quadratic
//! (kube-controller-manager's cache sums them all each time).

use crate::keys::ServiceKey;
use crate::slice::{PortGroupFigures, SliceFigures};
use std::collections::{BTreeMap, HashMap};

/// Totals for the gauges.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// `endpoints_desired`.
    pub endpoints: usize,
    /// `num_endpoint_slices`.
    pub slices: usize,
    /// `desired_endpoint_slices`.
    pub desired_slices: usize,
}

impl Totals {
    pub(crate) fn add(&mut self, other: Totals) {
        self.endpoints += other.endpoints;
        self.slices += other.slices;
        self.desired_slices += other.desired_slices;
    }

    pub(crate) fn subtract(&mut self, other: Totals) {
        self.endpoints -= other.endpoints;
        self.slices -= other.slices;
        self.desired_slices -= other.desired_slices;
    }
}

/// Per-service figures and the gauges' totals.
#[derive(Debug, Clone)]
pub struct MetricsCache {
    max_endpoints_per_slice: usize,
    services: HashMap<ServiceKey, BTreeMap<String, PortGroupFigures>>,
    traffic_distribution: HashMap<ServiceKey, String>,
    /// The sum of every service's share (see [`MetricsCache::share`]).
    totals: Totals,
    /// Services per trafficDistribution value; values no service has are left out.
    by_traffic_distribution: BTreeMap<String, usize>,
}

impl MetricsCache {
    /// A cache for the given `--max-endpoints-per-slice`.
    pub fn new(max_endpoints_per_slice: usize) -> Self {
        Self {
            max_endpoints_per_slice,
            services: HashMap::new(),
            traffic_distribution: HashMap::new(),
            totals: Totals::default(),
            by_traffic_distribution: BTreeMap::new(),
        }
    }

    /// What one service adds to the totals. Every service counts at least one desired slice
    /// (its placeholder).
    fn share(&self, groups: &BTreeMap<String, PortGroupFigures>) -> Totals {
        let mut share = Totals::default();
        for g in groups.values() {
            share.endpoints += g.endpoints;
            share.slices += g.slices;
            share.desired_slices += desired_slices(g.endpoints, self.max_endpoints_per_slice);
        }
        share.desired_slices = share.desired_slices.max(1);
        share
    }

    /// Replaces a service's figures. Like upstream, a dual-stack service's second address
    /// type replaces the first's.
    pub fn update_service(&mut self, key: &ServiceKey, figures: &SliceFigures) {
        let new = self.share(&figures.groups);
        self.totals.add(new);
        if let Some(old) = self.services.insert(key.clone(), figures.groups.clone()) {
            let old = self.share(&old);
            self.totals.subtract(old);
        }
    }

    /// Records the trafficDistribution in effect for a service (`None` when none is).
    pub fn update_traffic_distribution(&mut self, key: &ServiceKey, value: Option<&str>) {
        if self.traffic_distribution.get(key).map(String::as_str) == value {
            return;
        }
        let old = match value {
            Some(v) => {
                *self
                    .by_traffic_distribution
                    .entry(v.to_owned())
                    .or_default() += 1;
                self.traffic_distribution.insert(key.clone(), v.to_owned())
            }
            None => self.traffic_distribution.remove(key),
        };
        if let Some(old) = old {
            self.uncount_traffic_distribution(&old);
        }
    }

    fn uncount_traffic_distribution(&mut self, value: &str) {
        if let Some(count) = self.by_traffic_distribution.get_mut(value) {
            *count -= 1;
            if *count == 0 {
                self.by_traffic_distribution.remove(value);
            }
        }
    }

    /// Forgets a deleted service.
    pub fn delete_service(&mut self, key: &ServiceKey) {
        if let Some(old) = self.services.remove(key) {
            let old = self.share(&old);
            self.totals.subtract(old);
        }
        if let Some(old) = self.traffic_distribution.remove(key) {
            self.uncount_traffic_distribution(&old);
        }
    }

    /// Totals over all services. Every service counts at least one desired slice (its
    /// placeholder).
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Services per trafficDistribution value, for `services_count_by_traffic_distribution`.
    pub fn services_by_traffic_distribution(&self) -> &BTreeMap<String, usize> {
        &self.by_traffic_distribution
    }
}

fn desired_slices(endpoints: usize, max: usize) -> usize {
    if endpoints == 0 {
        0
    } else {
        endpoints.div_ceil(max.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_count_a_placeholder_for_empty_services() {
        let mut cache = MetricsCache::new(100);
        let mut figures = SliceFigures::default();
        figures.groups.insert(
            "[]".into(),
            PortGroupFigures {
                endpoints: 0,
                slices: 1,
            },
        );
        cache.update_service(&ServiceKey::new("a", "empty"), &figures);
        let mut big = SliceFigures::default();
        big.groups.insert(
            "[http]".into(),
            PortGroupFigures {
                endpoints: 250,
                slices: 3,
            },
        );
        cache.update_service(&ServiceKey::new("a", "big"), &big);
        assert_eq!(
            cache.totals(),
            Totals {
                endpoints: 250,
                slices: 4,
                desired_slices: 4
            }
        );
        cache.delete_service(&ServiceKey::new("a", "big"));
        assert_eq!(cache.totals().desired_slices, 1);
    }

    #[test]
    fn traffic_distribution_counts() {
        let mut cache = MetricsCache::new(100);
        cache.update_traffic_distribution(&ServiceKey::new("a", "x"), Some("PreferClose"));
        cache.update_traffic_distribution(&ServiceKey::new("a", "y"), Some("PreferClose"));
        cache.update_traffic_distribution(&ServiceKey::new("a", "y"), None);
        assert_eq!(
            *cache.services_by_traffic_distribution(),
            [("PreferClose".to_owned(), 1)].into()
        );
    }

    /// The totals and counts summed from scratch, as they were before being kept up to date.
    fn recounted(cache: &MetricsCache) -> (Totals, BTreeMap<String, usize>) {
        let mut totals = Totals::default();
        for groups in cache.services.values() {
            totals.add(cache.share(groups));
        }
        let mut counts = BTreeMap::new();
        for v in cache.traffic_distribution.values() {
            *counts.entry(v.clone()).or_default() += 1;
        }
        (totals, counts)
    }

    #[test]
    fn totals_kept_up_to_date_equal_totals_summed_from_scratch() {
        let mut cache = MetricsCache::new(100);
        let values = [None, Some("PreferClose"), Some("PreferSameNode")];
        // A fixed pseudo-random walk of updates, re-updates and deletes over 20 services.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) % n
        };
        for step in 0..2_000 {
            let key = ServiceKey::new("ns", format!("s{}", next(20)));
            match next(4) {
                0 => cache.delete_service(&key),
                1 => cache.update_traffic_distribution(&key, values[next(3) as usize]),
                _ => {
                    let mut figures = SliceFigures::default();
                    for g in 0..next(3) {
                        figures.groups.insert(
                            format!("[p{g}]"),
                            PortGroupFigures {
                                endpoints: next(450) as usize,
                                slices: next(6) as usize,
                            },
                        );
                    }
                    cache.update_service(&key, &figures);
                }
            }
            let (totals, counts) = recounted(&cache);
            assert_eq!(cache.totals(), totals, "step {step}");
            assert_eq!(
                *cache.services_by_traffic_distribution(),
                counts,
                "step {step}"
            );
        }
    }
}
