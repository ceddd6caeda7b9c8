//! The figures behind the mirroring controller's gauges, kept per Endpoints object as data.
//!
//! `endpoint_slice_mirroring_controller_endpoints_desired`, `_num_endpoint_slices` and
//! `_desired_endpoint_slices` are totals over every mirrored Endpoints. Unlike the
//! EndpointSlice controller's cache there is no placeholder slice, so an Endpoints with no
//! endpoints counts no desired slice; the ideal number of slices divides by the per-subset cap.

use crate::keys::ServiceKey;
use crate::metrics_cache::Totals;
use crate::mirroring::MirroringFigures;
use crate::slice::PortGroupFigures;
use std::collections::HashMap;

/// Per-Endpoints figures and the gauges' totals, kept up to date as objects change (a sync
/// costs the same however many Endpoints objects are mirrored; see `metrics_cache`).
#[derive(Debug, Clone)]
pub struct MirroringMetricsCache {
    max_endpoints_per_subset: usize,
    endpoints: HashMap<ServiceKey, Vec<PortGroupFigures>>,
    totals: Totals,
}

impl MirroringMetricsCache {
    /// A cache for the given `--mirroring-max-endpoints-per-subset`.
    pub fn new(max_endpoints_per_subset: usize) -> Self {
        Self {
            max_endpoints_per_subset,
            endpoints: HashMap::new(),
            totals: Totals::default(),
        }
    }

    /// What one Endpoints object adds to the totals.
    fn share(&self, groups: &[PortGroupFigures]) -> Totals {
        let max = self.max_endpoints_per_subset.max(1);
        let mut share = Totals::default();
        for g in groups {
            share.endpoints += g.endpoints;
            share.slices += g.slices;
            share.desired_slices += g.endpoints.div_ceil(max);
        }
        share
    }

    /// Replaces the figures of one Endpoints object after a mirroring sync.
    pub fn update(&mut self, key: &ServiceKey, figures: &MirroringFigures) {
        let groups: Vec<PortGroupFigures> = figures.groups.values().copied().collect();
        let new = self.share(&groups);
        self.totals.add(new);
        if let Some(old) = self.endpoints.insert(key.clone(), groups) {
            let old = self.share(&old);
            self.totals.subtract(old);
        }
    }

    /// Forgets an Endpoints object whose slices were cleaned up.
    pub fn delete(&mut self, key: &ServiceKey) {
        if let Some(old) = self.endpoints.remove(key) {
            let old = self.share(&old);
            self.totals.subtract(old);
        }
    }

    /// Totals over every Endpoints object.
    pub fn totals(&self) -> Totals {
        self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address_family::AddressType::{self, IPv4, IPv6};
    use crate::mirroring::desired::GroupKey;
    use k8s_openapi::api::discovery::v1::EndpointPort;

    fn groups(figures: &[(AddressType, i32, usize, usize)]) -> MirroringFigures {
        let groups = figures
            .iter()
            .map(|&(address_type, port, endpoints, slices)| {
                let ports = [EndpointPort {
                    port: Some(port),
                    ..Default::default()
                }];
                (
                    GroupKey::new(address_type, &ports),
                    PortGroupFigures { endpoints, slices },
                )
            })
            .collect();
        MirroringFigures {
            groups,
            ..Default::default()
        }
    }

    #[test]
    fn mirroring_gauges_sum_every_endpoints_without_placeholders() {
        let mut cache = MirroringMetricsCache::new(2);
        cache.update(
            &ServiceKey::new("default", "a"),
            &groups(&[(IPv4, 80, 3, 1), (IPv6, 80, 0, 0)]),
        );
        cache.update(
            &ServiceKey::new("default", "b"),
            &groups(&[(IPv4, 53, 1, 1)]),
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
        // An object synced again replaces its share; one deleted twice is taken out once.
        cache.update(
            &ServiceKey::new("default", "b"),
            &groups(&[(IPv4, 53, 5, 3)]),
        );
        cache.delete(&ServiceKey::new("default", "gone"));
        assert_eq!(
            cache.totals(),
            Totals {
                endpoints: 5,
                slices: 3,
                desired_slices: 3,
            }
        );
        cache.delete(&ServiceKey::new("default", "b"));
        cache.delete(&ServiceKey::new("default", "b"));
        assert_eq!(cache.totals(), Totals::default());
    }
}
