//! Which services a pod event concerns.

use crate::projection::PodInfo;

/// What changed between two versions of a pod, as far as the controllers care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PodChange {
    /// deletionTimestamp, readiness or the IP list changed: the pod's endpoints change.
    pub pod_changed: bool,
    /// Labels, hostname or subdomain changed: the set of services may change.
    pub labels_changed: bool,
}

/// Compares two versions of a pod. `None` for a change neither controller cares about, a
/// resync (the same version again) included: its projection is the same.
pub fn pod_change(old: &PodInfo, new: &PodInfo) -> Option<PodChange> {
    let labels_changed = old.labels != new.labels || old.dns != new.dns;
    let pod_changed = old.deleting != new.deleting || old.ready != new.ready || old.ips != new.ips;
    (pod_changed || labels_changed).then_some(PodChange {
        pod_changed,
        labels_changed,
    })
}

/// Which services to queue after a pod update, given the services matching the old and the
/// new labels: the union when the pod itself changed, otherwise only the services it joined
/// or left (the symmetric difference).
pub fn services_to_queue<T: Ord + Clone>(change: PodChange, old: &[T], new: &[T]) -> Vec<T> {
    use std::collections::BTreeSet;
    let old: BTreeSet<&T> = old.iter().collect();
    let new: BTreeSet<&T> = new.iter().collect();
    let picked: Vec<&T> = if !change.labels_changed || change.pod_changed {
        old.union(&new).copied().collect()
    } else {
        old.symmetric_difference(&new).copied().collect()
    };
    picked.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;

    #[test]
    fn resync_and_changes_to_fields_not_read_are_ignored() {
        let p = pod("a").ip("10.0.0.1").ready(true).build();
        assert_eq!(pod_change(&p, &p.clone()), None);
        let later = pod("a")
            .ip("10.0.0.1")
            .ready(true)
            .ready_at(crate::testing::ts("2026-01-01T00:00:00Z"))
            .build();
        assert_eq!(pod_change(&p, &later), None);
    }

    #[test]
    fn label_only_change_queues_symmetric_difference() {
        let old = pod("a").label("app", "x").build();
        let new = pod("a").label("app", "y").build();
        let change = pod_change(&old, &new).unwrap();
        assert!(change.labels_changed && !change.pod_changed);
        let queued = services_to_queue(change, &["both", "old"], &["both", "new"]);
        assert_eq!(queued, vec!["new", "old"]);
    }

    #[test]
    fn pod_change_with_label_change_queues_union() {
        let old = pod("a").label("app", "x").build();
        let new = pod("a").label("app", "y").ready(true).build();
        let change = pod_change(&old, &new).unwrap();
        let queued = services_to_queue(change, &["both", "old"], &["both", "new"]);
        assert_eq!(queued, vec!["both", "new", "old"]);
    }

    #[test]
    fn readiness_ip_and_deletion_count_as_pod_changes() {
        let base = pod("a").ip("10.0.0.1").build();
        let ready = pod("a").ip("10.0.0.1").ready(true).build();
        assert!(pod_change(&base, &ready).unwrap().pod_changed);
        let moved = pod("a").ip("10.0.0.2").build();
        assert!(pod_change(&base, &moved).unwrap().pod_changed);
        let deleting = pod("a").ip("10.0.0.1").deleting().build();
        assert!(pod_change(&base, &deleting).unwrap().pod_changed);
        let annotated = pod("a").ip("10.0.0.1").build();
        assert_eq!(pod_change(&base, &annotated), None);
    }
}
