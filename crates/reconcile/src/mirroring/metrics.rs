//! The figures behind the mirroring controller's gauges, kept per Endpoints object as data.
//!
//! `endpoint_slice_mirroring_controller_endpoints_desired`, `_num_endpoint_slices` and
//! `_desired_endpoint_slices` are totals over every mirrored Endpoints. Unlike the
//! EndpointSlice controller's cache there is no placeholder slice, so an Endpoints with no
//! endpoints counts no desired slice; the ideal number of slices divides by the per-subset cap.

use crate::keys::ServiceKey;
use crate::metrics_cache::Totals;
use crate::slice::PortGroupFigures;
use std::collections::{BTreeMap, HashMap};

/// Per-Endpoints figures and the gauges' totals.
#[derive(Debug, Clone)]
pub struct MirroringMetricsCache {
    max_endpoints_per_subset: usize,
    endpoints: HashMap<ServiceKey, BTreeMap<String, PortGroupFigures>>,
}

impl MirroringMetricsCache {
    /// A cache for the given `--mirroring-max-endpoints-per-subset`.
    pub fn new(max_endpoints_per_subset: usize) -> Self {
        Self {
            max_endpoints_per_subset,
            endpoints: HashMap::new(),
        }
    }

    /// Replaces the figures of one Endpoints object after a mirroring sync.
    pub fn update(&mut self, key: &ServiceKey, groups: &BTreeMap<String, PortGroupFigures>) {
        self.endpoints.insert(key.clone(), groups.clone());
    }

    /// Forgets an Endpoints object whose slices were cleaned up.
    pub fn delete(&mut self, key: &ServiceKey) {
        self.endpoints.remove(key);
    }

    /// Totals over every Endpoints object.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        let max = self.max_endpoints_per_subset.max(1);
        for groups in self.endpoints.values() {
            for g in groups.values() {
                totals.endpoints += g.endpoints;
                totals.slices += g.slices;
                totals.desired_slices += g.endpoints.div_ceil(max);
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(figures: &[(&str, usize, usize)]) -> BTreeMap<String, PortGroupFigures> {
        figures
            .iter()
            .map(|&(k, endpoints, slices)| (k.to_owned(), PortGroupFigures { endpoints, slices }))
            .collect()
    }

    #[test]
    fn mirroring_gauges_sum_every_endpoints_without_placeholders() {
        let mut cache = MirroringMetricsCache::new(2);
        cache.update(
            &ServiceKey::new("default", "a"),
            &groups(&[("IPv4-[http]", 3, 1), ("IPv6-[http]", 0, 0)]),
        );
        cache.update(
            &ServiceKey::new("default", "b"),
            &groups(&[("IPv4-[]", 1, 1)]),
        );
        assert_eq!(
            cache.totals(),
            Totals {
                endpoints: 4,
                slices: 2,
                desired_slices: 3,
            }
        );
        cache.delete(&ServiceKey::new("default", "a"));
        assert_eq!(
            cache.totals(),
            Totals {
                endpoints: 1,
                slices: 1,
                desired_slices: 1,
            }
        );
    }
}
