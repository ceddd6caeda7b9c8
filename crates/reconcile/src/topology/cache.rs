//! The topology cache: zones and CPU shares of the cluster's nodes, and the hints each
//! Service was last given.

use crate::address_family::AddressType;
use crate::keys::ServiceKey;
use crate::projection::NodeInfo;
use crate::topology::allocation::OVERLOAD_THRESHOLD;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Hinted endpoints per zone.
pub type ZoneCounts = BTreeMap<String, usize>;

/// State kept between syncs. One per EndpointSlice controller.
#[derive(Debug, Clone)]
pub struct TopologyCache {
    /// CPU share per zone; `None` when node information is insufficient.
    pub(crate) cpu_ratios: Option<BTreeMap<String, f64>>,
    endpoints_by_service: HashMap<ServiceKey, BTreeMap<AddressType, ZoneCounts>>,
    hints_populated: HashSet<ServiceKey>,
}

impl Default for TopologyCache {
    fn default() -> Self {
        // Before any node is seen upstream's cache holds an empty (not missing) ratio map,
        // which reads as "nodes only ready in one zone".
        Self {
            cpu_ratios: Some(BTreeMap::new()),
            endpoints_by_service: HashMap::new(),
            hints_populated: HashSet::new(),
        }
    }
}

impl TopologyCache {
    /// Recomputes zone CPU shares from all nodes. Control-plane and not-ready nodes are
    /// ignored; any other node without a zone or allocatable CPU makes the information
    /// insufficient cluster-wide, and so do fewer than two zones.
    pub fn set_nodes<'a>(&mut self, nodes: impl IntoIterator<Item = &'a NodeInfo>) {
        let mut cpu_by_zone: BTreeMap<String, i64> = BTreeMap::new();
        let mut sufficient = true;
        for node in nodes {
            if node.control_plane || !node.ready {
                continue;
            }
            match &node.zone {
                Some(zone) if node.cpu_millis > 0 => {
                    *cpu_by_zone.entry(zone.clone()).or_default() += node.cpu_millis;
                }
                _ => {
                    sufficient = false;
                    cpu_by_zone.clear();
                    break;
                }
            }
        }
        let total: i64 = cpu_by_zone.values().sum();
        self.cpu_ratios = if total == 0 || !sufficient || cpu_by_zone.len() < 2 {
            None
        } else {
            Some(
                cpu_by_zone
                    .into_iter()
                    .map(|(zone, cpu)| (zone, cpu as f64 / total as f64))
                    .collect(),
            )
        };
    }

    /// The current CPU shares, if sufficient.
    pub fn cpu_ratios(&self) -> Option<&BTreeMap<String, f64>> {
        self.cpu_ratios.as_ref()
    }

    /// True when the Service currently has hints recorded for any address type.
    pub fn has_populated_hints(&self, key: &ServiceKey) -> bool {
        self.hints_populated.contains(key)
    }

    /// Records the hints given to a Service for an address type.
    pub fn set_hints(&mut self, key: &ServiceKey, address_type: AddressType, counts: ZoneCounts) {
        self.endpoints_by_service
            .entry(key.clone())
            .or_default()
            .insert(address_type, counts);
        self.hints_populated.insert(key.clone());
    }

    /// Forgets a Service's hints for an address type (and marks it as not hinted).
    pub fn remove_hints(&mut self, key: &ServiceKey, address_type: AddressType) {
        if let Some(by_type) = self.endpoints_by_service.get_mut(key) {
            by_type.remove(&address_type);
            if by_type.is_empty() {
                self.endpoints_by_service.remove(key);
            }
        }
        self.hints_populated.remove(key);
    }

    /// Forgets a deleted Service.
    pub fn delete_service(&mut self, key: &ServiceKey) {
        self.endpoints_by_service.remove(key);
        self.hints_populated.remove(key);
    }

    /// Services whose hinted endpoints leave some zone below its minimum (or without any),
    /// sorted. After a node change these are synced again.
    pub fn overloaded_services(&self) -> Vec<ServiceKey> {
        let empty = BTreeMap::new();
        let ratios = self.cpu_ratios.as_ref().unwrap_or(&empty);
        let mut keys: Vec<ServiceKey> = self
            .endpoints_by_service
            .iter()
            .filter(|(_, by_type)| by_type.values().any(|counts| overloaded(counts, ratios)))
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        keys
    }
}

fn overloaded(counts: &ZoneCounts, ratios: &BTreeMap<String, f64>) -> bool {
    if counts.is_empty() {
        return false;
    }
    if ratios.is_empty() {
        return true;
    }
    let total: f64 = counts.values().map(|&n| n as f64).sum();
    ratios.iter().any(|(zone, ratio)| match counts.get(zone) {
        None => true,
        Some(&n) => {
            let minimum = (total * ratio * (1.0 / (1.0 + OVERLOAD_THRESHOLD))).ceil();
            (n as f64) < minimum
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::node;

    #[test]
    fn control_plane_and_not_ready_nodes_are_ignored() {
        let mut cp = node("cp", "", 0);
        cp.control_plane = true;
        let mut down = node("down", "", 0);
        down.ready = false;
        let mut cache = TopologyCache::default();
        cache.set_nodes(&[node("a", "za", 2000), node("b", "zb", 2000), cp, down]);
        let ratios = cache.cpu_ratios().unwrap();
        assert_eq!(ratios.len(), 2);
        assert_eq!(ratios["za"], 0.5);
    }

    #[test]
    fn a_node_without_zone_disables_hints_cluster_wide() {
        let mut cache = TopologyCache::default();
        cache.set_nodes(&[
            node("a", "za", 2000),
            node("b", "zb", 2000),
            node("c", "", 2000),
        ]);
        assert_eq!(cache.cpu_ratios(), None);
    }

    #[test]
    fn one_zone_is_not_enough() {
        let mut cache = TopologyCache::default();
        cache.set_nodes(&[node("a", "za", 2000), node("b", "za", 2000)]);
        assert_eq!(cache.cpu_ratios(), None);
    }

    #[test]
    fn services_missing_a_zone_are_overloaded() {
        let mut cache = TopologyCache::default();
        cache.set_nodes(&[node("a", "za", 1000), node("b", "zb", 1000)]);
        let key = ServiceKey::new("ns", "s");
        cache.set_hints(&key, AddressType::IPv4, [("za".to_owned(), 4)].into());
        assert_eq!(cache.overloaded_services(), vec![key.clone()]);
        cache.set_hints(
            &key,
            AddressType::IPv4,
            [("za".to_owned(), 2), ("zb".to_owned(), 2)].into(),
        );
        assert!(cache.overloaded_services().is_empty());
        cache.remove_hints(&key, AddressType::IPv4);
        assert!(!cache.has_populated_hints(&key));
    }
}
