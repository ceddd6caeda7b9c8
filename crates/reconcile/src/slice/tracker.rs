//! What the controller last wrote, per Service: slice UID -> generation, or "deletion
//! expected". Used to ignore the echoes of our own writes and to notice a stale cache.

use crate::keys::ServiceKey;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tracked {
    Generation(i64),
    DeletionExpected,
}

/// The slice tracker.
#[derive(Debug, Default, Clone)]
pub struct SliceTracker {
    by_service: HashMap<ServiceKey, HashMap<String, Tracked>>,
    /// UIDs of our slices whose deletion the cache showed before we had recorded them (the
    /// create's answer can arrive after the informer saw the slice come and go). Recording
    /// such a slice later would make the cache look stale forever.
    gone_before_recorded: std::collections::HashSet<String>,
}

fn key_of(slice: &EndpointSlice) -> Option<ServiceKey> {
    let ns = slice.metadata.namespace.clone()?;
    let name = crate::slice::service_name_of(slice)?;
    Some(ServiceKey::new(ns, name))
}

fn uid(slice: &EndpointSlice) -> String {
    slice.metadata.uid.clone().unwrap_or_default()
}

impl SliceTracker {
    /// True when the slice is tracked.
    pub fn has(&self, slice: &EndpointSlice) -> bool {
        key_of(slice)
            .and_then(|k| self.by_service.get(&k))
            .is_some_and(|g| g.contains_key(&uid(slice)))
    }

    /// True when an event about this slice should sync its Service: the slice is unknown, or
    /// newer than what we wrote.
    pub fn should_sync(&self, slice: &EndpointSlice) -> bool {
        let Some(gens) = key_of(slice).and_then(|k| self.by_service.get(&k)) else {
            return true;
        };
        match gens.get(&uid(slice)) {
            None => true,
            Some(Tracked::Generation(g)) => slice.metadata.generation.unwrap_or(0) > *g,
            Some(Tracked::DeletionExpected) => false,
        }
    }

    /// True when the cache is behind our writes: it holds an older generation than we wrote,
    /// a slice we deleted, or misses a slice we wrote.
    pub fn stale_slices(&self, service: &ServiceKey, slices: &[&EndpointSlice]) -> bool {
        let Some(gens) = self.by_service.get(service) else {
            return false;
        };
        let mut provided = std::collections::HashSet::with_capacity(slices.len());
        for slice in slices {
            let id = uid(slice);
            match gens.get(&id) {
                Some(Tracked::DeletionExpected) => return true,
                Some(Tracked::Generation(g)) if *g > slice.metadata.generation.unwrap_or(0) => {
                    return true
                }
                _ => {}
            }
            provided.insert(id);
        }
        gens.iter()
            .any(|(id, t)| matches!(t, Tracked::Generation(_)) && !provided.contains(id))
    }

    /// Records a slice we created or updated (as the API returned it).
    pub fn update(&mut self, slice: &EndpointSlice) {
        if self.gone_before_recorded.remove(&uid(slice)) {
            return;
        }
        if let Some(key) = key_of(slice) {
            let g = slice.metadata.generation.unwrap_or(0);
            self.by_service
                .entry(key)
                .or_default()
                .insert(uid(slice), Tracked::Generation(g));
        }
    }

    /// Records a slice we deleted.
    pub fn expect_deletion(&mut self, slice: &EndpointSlice) {
        if let Some(key) = key_of(slice) {
            self.by_service
                .entry(key)
                .or_default()
                .insert(uid(slice), Tracked::DeletionExpected);
        }
    }

    /// Handles a deletion seen in the cache. Returns true when it was not one we expected
    /// (so the Service must be synced). A slice we never recorded may be one whose create
    /// we have not recorded yet: it is remembered so the late record is skipped.
    pub fn handle_deleted(&mut self, slice: &EndpointSlice) -> bool {
        if let Some(gens) = key_of(slice).and_then(|k| self.by_service.get_mut(&k)) {
            if let Some(t) = gens.remove(&uid(slice)) {
                return t != Tracked::DeletionExpected;
            }
        }
        self.gone_before_recorded.insert(uid(slice));
        true
    }

    /// Forgets the slices recorded as written whose uids a fresh list does not hold (`listed`
    /// holds the listed uids): the server no longer has them (it came back without them), so
    /// no event will ever show them and waiting for the cache would never end. Returns the
    /// Services that expected a slice, to sync again.
    pub fn forget_unlisted(&mut self, listed: &std::collections::HashSet<&str>) -> Vec<ServiceKey> {
        let mut resync = Vec::new();
        for (key, gens) in &mut self.by_service {
            let mut expected_one = false;
            gens.retain(|uid, tracked| {
                let keep = listed.contains(uid.as_str());
                expected_one |= !keep && *tracked != Tracked::DeletionExpected;
                keep
            });
            if expected_one {
                resync.push(key.clone());
            }
        }
        self.by_service.retain(|_, gens| !gens.is_empty());
        resync.sort();
        resync
    }

    /// Forgets a deleted Service.
    pub fn delete_service(&mut self, key: &ServiceKey) {
        self.by_service.remove(key);
        // Markers only matter for a create in flight; a deleted Service has none left.
        if self.by_service.is_empty() {
            self.gone_before_recorded.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address_family::AddressType;
    use crate::slice::fill::new_slice;
    use crate::testing::service;

    fn slice(uid: &str, generation: i64) -> EndpointSlice {
        let mut s = new_slice(&service("s").build(), &[], AddressType::IPv4);
        s.metadata.uid = Some(uid.into());
        s.metadata.generation = Some(generation);
        s
    }

    #[test]
    fn unknown_or_newer_slices_should_sync() {
        let mut t = SliceTracker::default();
        assert!(t.should_sync(&slice("a", 1)));
        t.update(&slice("a", 1));
        assert!(!t.should_sync(&slice("a", 1)));
        assert!(t.should_sync(&slice("a", 2)));
    }

    #[test]
    fn stale_when_cache_is_older_misses_a_slice_or_holds_a_deleted_one() {
        let key = ServiceKey::new("default", "s");
        let mut t = SliceTracker::default();
        t.update(&slice("a", 2));
        assert!(t.stale_slices(&key, &[&slice("a", 1)]), "older generation");
        assert!(t.stale_slices(&key, &[]), "missing slice");
        assert!(!t.stale_slices(&key, &[&slice("a", 2)]));
        t.expect_deletion(&slice("a", 2));
        assert!(
            t.stale_slices(&key, &[&slice("a", 2)]),
            "deleted slice still cached"
        );
        assert!(!t.stale_slices(&key, &[]));
    }

    #[test]
    fn a_fresh_list_without_a_written_slice_ends_the_wait_for_it() {
        let key = ServiceKey::new("default", "s");
        let mut t = SliceTracker::default();
        // Written on a server that then came back without it: no event will ever show it.
        t.update(&slice("lost", 1));
        t.update(&slice("kept", 1));
        t.expect_deletion(&slice("going", 1));
        assert!(t.stale_slices(&key, &[&slice("kept", 1)]));
        let listed = ["kept"].into_iter().collect();
        assert_eq!(t.forget_unlisted(&listed), vec![key.clone()]);
        assert!(!t.stale_slices(&key, &[&slice("kept", 1)]));
        assert!(t.has(&slice("kept", 1)));
        // Nothing more to forget, and a deletion that came true needs no sync.
        assert!(t.forget_unlisted(&listed).is_empty());
        let mut only_deleted = SliceTracker::default();
        only_deleted.expect_deletion(&slice("going", 1));
        assert!(only_deleted.forget_unlisted(&listed).is_empty());
    }

    #[test]
    fn a_slice_deleted_before_its_create_was_recorded_is_not_tracked() {
        let key = ServiceKey::new("default", "s");
        let mut t = SliceTracker::default();
        // The informer shows the new slice come and go before the create call returns.
        assert!(t.handle_deleted(&slice("fast", 1)));
        t.update(&slice("fast", 1));
        assert!(!t.has(&slice("fast", 1)));
        assert!(
            !t.stale_slices(&key, &[]),
            "a slice that is gone must not look missing from the cache"
        );
        // A later slice with another uid is recorded as usual.
        t.update(&slice("next", 1));
        assert!(t.has(&slice("next", 1)));
    }

    #[test]
    fn expected_deletions_do_not_resync() {
        let mut t = SliceTracker::default();
        t.expect_deletion(&slice("a", 1));
        assert!(!t.handle_deleted(&slice("a", 1)));
        assert!(t.handle_deleted(&slice("b", 1)), "unexpected deletion");
    }
}
