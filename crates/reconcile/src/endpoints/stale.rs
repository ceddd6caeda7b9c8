//! The stale-cache guard: after updating an Endpoints object we remember the resourceVersion
//! we replaced. If the cache later hands that version back, it has not caught up with our
//! write, and writing again from it could undo newer changes, so the sync fails and retries.

use crate::keys::ServiceKey;
use std::collections::HashMap;

/// Replaced resourceVersions per Endpoints object.
#[derive(Debug, Default, Clone)]
pub struct StaleEndpointsTracker {
    replaced: HashMap<ServiceKey, String>,
}

impl StaleEndpointsTracker {
    /// Remembers the resourceVersion an update replaced.
    pub fn replaced(&mut self, key: &ServiceKey, resource_version: &str) {
        self.replaced
            .insert(key.clone(), resource_version.to_owned());
    }

    /// True when the cached object is the version we already replaced.
    pub fn is_stale(&self, key: &ServiceKey, resource_version: &str) -> bool {
        self.replaced
            .get(key)
            .is_some_and(|rv| rv == resource_version)
    }

    /// Forgets a deleted Service's Endpoints.
    pub fn delete(&mut self, key: &ServiceKey) {
        self.replaced.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replaced_version_is_stale_until_forgotten() {
        let key = ServiceKey::new("ns", "s");
        let mut t = StaleEndpointsTracker::default();
        assert!(!t.is_stale(&key, "5"));
        t.replaced(&key, "5");
        assert!(t.is_stale(&key, "5"));
        assert!(!t.is_stale(&key, "6"));
        t.delete(&key);
        assert!(!t.is_stale(&key, "5"));
    }
}
