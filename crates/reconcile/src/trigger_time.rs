//! The `endpoints.kubernetes.io/last-change-trigger-time` tracker.
//!
//! For each service it remembers the Ready transition times of its pods and its own creation
//! time as last seen. A sync reports the earliest of those that moved forward since the
//! previous sync, so latency SLIs can measure from the change that caused a write.

use crate::keys::ServiceKey;
use crate::projection::{PodInfo, ServiceInfo};
use crate::Timestamp;
use compact_str::CompactString;
use std::collections::HashMap;

/// The annotation key.
pub const ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";

#[derive(Debug, Default, Clone)]
struct ServiceState {
    // The Ready transition time of each pod as of the last sync, ordered by pod name: 40
    // bytes a pod, with names of up to 24 bytes inline. A sorted slice rather than a hash
    // map: the map's spare buckets cost more than the entries, and pods arrive sorted.
    pods: Box<[(CompactString, Timestamp)]>,
    service: Option<Timestamp>,
}

impl ServiceState {
    fn last_seen(&self, pod: &str) -> Option<Timestamp> {
        self.pods
            .binary_search_by(|(name, _)| name.as_str().cmp(pod))
            .ok()
            .map(|at| self.pods[at].1)
    }
}

/// Per-service trigger-time state. One per controller.
#[derive(Debug, Default, Clone)]
pub struct TriggerTimeTracker {
    services: HashMap<ServiceKey, ServiceState>,
}

impl TriggerTimeTracker {
    /// Computes the trigger time for this sync and records the current times. The first sync
    /// of a service returns its creation time; later ones the earliest time that moved
    /// forward, or `None` (the annotation is then removed).
    pub fn compute(&mut self, service: &ServiceInfo, pods: &[&PodInfo]) -> Option<Timestamp> {
        let key = service.key();
        let known = self.services.contains_key(&key);
        let state = self.services.entry(key).or_default();
        let mut earliest: Option<Timestamp> = None;
        let mut seen = Vec::with_capacity(pods.len());
        for pod in pods {
            if let Some(t) = pod.ready_transition() {
                if state.last_seen(&pod.name).is_none_or(|last| t > last) {
                    earliest = Some(earliest.map_or(t, |e| e.min(t)));
                }
                seen.push((pod.name.clone(), t));
            }
        }
        // Already in order when the pods come from the store's index (a linear check then).
        seen.sort_by(|(a, _), (b, _)| a.cmp(b));
        // A name listed twice (not from a store, whose keys are unique) keeps its last time,
        // as the map did.
        seen.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 = later.1;
            }
            same
        });
        if let Some(t) = service.creation_timestamp {
            if state.service.is_none_or(|last| t > last) {
                earliest = Some(earliest.map_or(t, |e| e.min(t)));
            }
        }
        state.pods = seen.into_boxed_slice();
        state.service = service.creation_timestamp;
        if known {
            earliest
        } else {
            service.creation_timestamp
        }
    }

    /// Forgets a deleted service.
    pub fn delete_service(&mut self, key: &ServiceKey) {
        self.services.remove(key);
    }
}

/// Formats a trigger time as upstream does (UTC, RFC 3339 with nanoseconds trimmed).
pub fn format(t: Timestamp) -> String {
    // jiff prints the shortest fraction that round-trips, as Go's RFC3339Nano does.
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{pod, service, ts};

    #[test]
    fn first_sync_returns_the_service_creation_time() {
        let mut tracker = TriggerTimeTracker::default();
        let svc = service("s").created(ts("2026-01-01T00:00:00Z")).build();
        let p = pod("a").ready_at(ts("2026-02-01T00:00:00Z")).build();
        assert_eq!(
            tracker.compute(&svc, &[&p]),
            Some(ts("2026-01-01T00:00:00Z"))
        );
    }

    #[test]
    fn later_syncs_return_the_earliest_time_that_moved() {
        let mut tracker = TriggerTimeTracker::default();
        let svc = service("s").created(ts("2026-01-01T00:00:00Z")).build();
        let a = pod("a").ready_at(ts("2026-02-01T00:00:00Z")).build();
        let b = pod("b").ready_at(ts("2026-02-01T00:00:00Z")).build();
        tracker.compute(&svc, &[&a, &b]);
        assert_eq!(tracker.compute(&svc, &[&a, &b]), None, "nothing moved");
        let a2 = pod("a").ready_at(ts("2026-03-02T00:00:00Z")).build();
        let b2 = pod("b").ready_at(ts("2026-03-01T00:00:00Z")).build();
        assert_eq!(
            tracker.compute(&svc, &[&a2, &b2]),
            Some(ts("2026-03-01T00:00:00Z"))
        );
    }

    #[test]
    fn pods_in_any_order_are_looked_up_by_name() {
        let mut tracker = TriggerTimeTracker::default();
        let svc = service("s").created(ts("2026-01-01T00:00:00Z")).build();
        let names = ["m", "b", "z", "a"];
        let first: Vec<_> = names
            .iter()
            .map(|n| pod(n).ready_at(ts("2026-02-01T00:00:00Z")).build())
            .collect();
        tracker.compute(&svc, &first.iter().collect::<Vec<_>>());
        assert_eq!(
            tracker.compute(&svc, &first.iter().rev().collect::<Vec<_>>()),
            None,
            "the same times in another order moved nothing"
        );
        let z = pod("z").ready_at(ts("2026-02-03T00:00:00Z")).build();
        let pods = [&first[0], &first[1], &z, &first[3]];
        assert_eq!(
            tracker.compute(&svc, &pods),
            Some(ts("2026-02-03T00:00:00Z"))
        );
        let repeated = pod("z").ready_at(ts("2026-02-04T00:00:00Z")).build();
        tracker.compute(&svc, &[&z, &repeated]);
        assert_eq!(
            tracker.compute(&svc, &[&repeated]),
            None,
            "a name given twice keeps its last time"
        );
    }

    #[test]
    fn a_forgotten_service_starts_over() {
        let mut tracker = TriggerTimeTracker::default();
        let svc = service("s").created(ts("2026-01-01T00:00:00Z")).build();
        tracker.compute(&svc, &[]);
        tracker.delete_service(&svc.key());
        assert_eq!(tracker.compute(&svc, &[]), Some(ts("2026-01-01T00:00:00Z")));
    }

    #[test]
    fn format_is_rfc3339_utc() {
        assert_eq!(format(ts("2026-01-01T00:00:00Z")), "2026-01-01T00:00:00Z");
        assert_eq!(
            format(ts("2026-01-01T00:00:00.5Z")),
            "2026-01-01T00:00:00.5Z"
        );
    }
}
