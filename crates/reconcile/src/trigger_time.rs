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
    // Pod names of up to 24 bytes live inside the key: no allocation per pod.
    pods: HashMap<CompactString, Timestamp>,
    service: Option<Timestamp>,
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
        let mut seen = HashMap::with_capacity(pods.len());
        for pod in pods {
            if let Some(t) = pod.ready_transition {
                if state.pods.get(&pod.name).is_none_or(|last| t > *last) {
                    earliest = Some(earliest.map_or(t, |e| e.min(t)));
                }
                seen.insert(pod.name.clone(), t);
            }
        }
        if let Some(t) = service.creation_timestamp {
            if state.service.is_none_or(|last| t > last) {
                earliest = Some(earliest.map_or(t, |e| e.min(t)));
            }
        }
        state.pods = seen;
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
