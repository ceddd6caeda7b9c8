//! The figures behind the EndpointSlice controller's gauges, kept per service as data.

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

/// Per-service figures and the gauges' totals.
#[derive(Debug, Clone)]
pub struct MetricsCache {
    max_endpoints_per_slice: usize,
    services: HashMap<ServiceKey, BTreeMap<String, PortGroupFigures>>,
    traffic_distribution: HashMap<ServiceKey, String>,
}

impl MetricsCache {
    /// A cache for the given `--max-endpoints-per-slice`.
    pub fn new(max_endpoints_per_slice: usize) -> Self {
        Self {
            max_endpoints_per_slice,
            services: HashMap::new(),
            traffic_distribution: HashMap::new(),
        }
    }

    /// Replaces a service's figures. Like upstream, a dual-stack service's second address
    /// type replaces the first's.
    pub fn update_service(&mut self, key: &ServiceKey, figures: &SliceFigures) {
        self.services.insert(key.clone(), figures.groups.clone());
    }

    /// Records the trafficDistribution in effect for a service (`None` when none is).
    pub fn update_traffic_distribution(&mut self, key: &ServiceKey, value: Option<&str>) {
        match value {
            Some(v) => self.traffic_distribution.insert(key.clone(), v.to_owned()),
            None => self.traffic_distribution.remove(key),
        };
    }

    /// Forgets a deleted service.
    pub fn delete_service(&mut self, key: &ServiceKey) {
        self.services.remove(key);
        self.traffic_distribution.remove(key);
    }

    /// Totals over all services. Every service counts at least one desired slice (its
    /// placeholder).
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        for groups in self.services.values() {
            let mut desired = 0;
            for g in groups.values() {
                totals.endpoints += g.endpoints;
                totals.slices += g.slices;
                desired += desired_slices(g.endpoints, self.max_endpoints_per_slice);
            }
            totals.desired_slices += desired.max(1);
        }
        totals
    }

    /// Services per trafficDistribution value, for `services_count_by_traffic_distribution`.
    pub fn services_by_traffic_distribution(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for v in self.traffic_distribution.values() {
            *counts.entry(v.clone()).or_default() += 1;
        }
        counts
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
            cache.services_by_traffic_distribution(),
            [("PreferClose".to_owned(), 1)].into()
        );
    }
}
