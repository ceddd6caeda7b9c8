//! Topology-aware hints for Services annotated `service.kubernetes.io/topology-mode: Auto`.
//!
//! [`cache`] keeps the cluster's zones and their share of allocatable CPU, and what each
//! Service was last given; [`allocation`] turns the CPU shares into per-zone minimum and
//! maximum endpoint counts; [`hints`] assigns the hints, giving each endpoint its own zone
//! and then moving endpoints from zones with a surplus to zones with a deficit.

pub mod allocation;
pub mod cache;
pub mod hints;

pub use cache::TopologyCache;

use std::collections::BTreeMap;

/// Annotation enabling hints (current name).
pub const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
/// Annotation enabling hints (older name); wins over [`TOPOLOGY_MODE`] when both are set.
pub const TOPOLOGY_AWARE_HINTS: &str = "service.kubernetes.io/topology-aware-hints";

/// True when the Service's annotations ask for topology hints ("Auto" or "auto").
pub fn hints_enabled(annotations: &BTreeMap<String, String>) -> bool {
    let value = annotations
        .get(TOPOLOGY_AWARE_HINTS)
        .or_else(|| annotations.get(TOPOLOGY_MODE));
    matches!(value.map(String::as_str), Some("Auto") | Some("auto"))
}

/// Event messages, as upstream words them.
pub mod messages {
    /// An endpoint has no zone.
    pub const NO_ZONE_SPECIFIED: &str = "One or more endpoints do not have a zone specified";
    /// Redistribution left no zone with hints.
    pub const NO_ALLOCATED_HINTS_FOR_ZONES: &str = "No hints allocated for zones";
    /// Hints were turned on.
    pub const ENABLED: &str = "Topology Aware Hints has been enabled";
    /// Hints were turned off because the annotation went away.
    pub const DISABLED: &str = "Topology Aware Hints has been disabled";
    /// A node lacks zone or CPU.
    pub const INSUFFICIENT_NODE_INFO: &str =
        "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes";
    /// Fewer than two zones have ready nodes.
    pub const NODES_READY_IN_ONE_ZONE_ONLY: &str = "Nodes only ready in one zone";
    /// More zones than endpoints.
    pub const INSUFFICIENT_NUMBER_OF_ENDPOINTS: &str = "Insufficient number of endpoints";
    /// Minimums cannot all be met.
    pub const MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD: &str =
        "Unable to allocate minimum required endpoints to each zone without exceeding overload threshold";

    /// Appends the address type, as every topology event message does.
    pub fn with_address_type(
        message: &str,
        address_type: crate::address_family::AddressType,
    ) -> String {
        format!("{message}, addressType: {address_type}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_annotation_wins_over_topology_mode() {
        let both: BTreeMap<String, String> = [
            (TOPOLOGY_AWARE_HINTS.to_owned(), "Disabled".to_owned()),
            (TOPOLOGY_MODE.to_owned(), "Auto".to_owned()),
        ]
        .into();
        assert!(!hints_enabled(&both));
        let lower: BTreeMap<String, String> =
            [(TOPOLOGY_MODE.to_owned(), "auto".to_owned())].into();
        assert!(hints_enabled(&lower));
        assert!(!hints_enabled(&BTreeMap::new()));
    }
}
