//! Per-zone endpoint allocations from CPU shares.

use std::collections::BTreeMap;

/// The most load any endpoint should take above its fair share (20%).
pub const OVERLOAD_THRESHOLD: f64 = 0.2;

/// How many endpoints a zone should get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Allocation {
    /// At least this many, so no endpoint is overloaded.
    pub minimum: usize,
    /// At most this many (what is left after every other zone's minimum).
    pub maximum: usize,
    /// The zone's CPU share of the endpoints (never below `minimum`).
    pub desired: f64,
}

/// Why hints cannot be allocated.
#[derive(Debug, Clone, PartialEq)]
pub enum AllocationError {
    /// More zones than ready endpoints.
    TooFewEndpoints,
    /// The minimums add up to more than the endpoints there are.
    MinimumsExceedEndpoints,
}

/// Allocations for `endpoints` ready endpoints over zones with the given CPU ratios.
/// desired = ratio × endpoints; minimum = ⌈desired / 1.2⌉; maximum = minimum + endpoints −
/// Σ minimum.
pub fn allocate(
    ratios: &BTreeMap<String, f64>,
    endpoints: usize,
) -> Result<BTreeMap<String, Allocation>, AllocationError> {
    if ratios.len() > endpoints {
        return Err(AllocationError::TooFewEndpoints);
    }
    let mut allocations = BTreeMap::new();
    let mut min_total = 0usize;
    for (zone, ratio) in ratios {
        let desired = ratio * endpoints as f64;
        // Same expression as upstream, so float rounding lands on the same integers.
        let minimum = (desired * (1.0 / (1.0 + OVERLOAD_THRESHOLD))).ceil() as usize;
        min_total += minimum;
        if min_total > endpoints {
            return Err(AllocationError::MinimumsExceedEndpoints);
        }
        allocations.insert(
            zone.clone(),
            Allocation {
                minimum,
                maximum: 0,
                desired: desired.max(minimum as f64),
            },
        );
    }
    for allocation in allocations.values_mut() {
        allocation.maximum = allocation.minimum + endpoints - min_total;
    }
    Ok(allocations)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratios(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(z, r)| (z.to_string(), *r)).collect()
    }

    #[test]
    fn equal_zones_split_evenly_with_slack() {
        let third = 1.0 / 3.0;
        let a = allocate(&ratios(&[("a", third), ("b", third), ("c", third)]), 9).unwrap();
        assert_eq!(a["a"].minimum, 3);
        assert_eq!(a["a"].maximum, 3);
        let a = allocate(&ratios(&[("a", third), ("b", third), ("c", third)]), 12).unwrap();
        assert_eq!((a["a"].minimum, a["a"].maximum), (4, 4));
    }

    #[test]
    fn more_zones_than_endpoints_is_refused() {
        let third = 1.0 / 3.0;
        assert_eq!(
            allocate(&ratios(&[("a", third), ("b", third), ("c", third)]), 2),
            Err(AllocationError::TooFewEndpoints)
        );
    }

    #[test]
    fn uneven_ratios_can_exceed_the_threshold() {
        // 3 endpoints, zones 0.5/0.25/0.25: minimums 2,1,1 > 3.
        assert_eq!(
            allocate(&ratios(&[("a", 0.5), ("b", 0.25), ("c", 0.25)]), 3),
            Err(AllocationError::MinimumsExceedEndpoints)
        );
    }

    #[test]
    fn uneven_ratios_give_uneven_allocations() {
        let a = allocate(&ratios(&[("a", 0.5), ("b", 0.25), ("c", 0.25)]), 20).unwrap();
        assert_eq!((a["a"].minimum, a["b"].minimum, a["c"].minimum), (9, 5, 5));
        assert_eq!(a["a"].maximum, 10);
        assert_eq!(a["a"].desired, 10.0);
    }
}
