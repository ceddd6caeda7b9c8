//! Noticing that the server's resourceVersions went backwards.
//!
//! resourceVersions are opaque to clients, but every API server in practice hands out one
//! increasing integer (etcd's revision), and a watch delivers changes in that order. A watch
//! event older than something this informer already saw means the server now holds older
//! state than the cache: it was restored from a backup, or restarted without its data. The
//! cache then describes objects that may no longer exist, so the informer starts over with
//! a fresh list. Versions that are not integers are never compared.

use kube::runtime::watcher;
use kube::Resource;

/// The newest resourceVersion seen since the last list started.
#[derive(Debug, Default)]
pub struct NewestSeen(Option<u64>);

/// What one event says about the order of resourceVersions.
#[derive(Debug, PartialEq, Eq)]
pub enum Order {
    /// In order, or nothing to compare.
    Fine,
    /// A watch event older than the newest version seen before it.
    Backwards {
        /// The newest version seen before.
        newest: u64,
        /// The event's version.
        event: u64,
    },
}

impl NewestSeen {
    /// Takes in one event. A new list starts the count again: a listed object may be older
    /// than the last watch event (nothing changed it since), and only watch events, which
    /// come in the server's order, are compared.
    pub fn observe<K: Resource>(&mut self, event: &watcher::Event<K>) -> Order {
        let (object, ordered) = match event {
            watcher::Event::Init => {
                self.0 = None;
                return Order::Fine;
            }
            watcher::Event::InitDone => return Order::Fine,
            watcher::Event::InitApply(object) => (object, false),
            watcher::Event::Apply(object) | watcher::Event::Delete(object) => (object, true),
        };
        self.observe_version(object.meta().resource_version.as_deref(), ordered)
    }

    /// Takes in the resourceVersion of a watch event known without its object (the echo of
    /// our own write).
    pub fn observe_echo(&mut self, version: &str) -> Order {
        self.observe_version(Some(version), true)
    }

    fn observe_version(&mut self, version: Option<&str>, ordered: bool) -> Order {
        let Some(version) = version.and_then(|v| v.parse::<u64>().ok()) else {
            return Order::Fine;
        };
        match self.0 {
            Some(newest) if ordered && version < newest => {
                self.0 = None;
                Order::Backwards {
                    newest,
                    event: version,
                }
            }
            newest => {
                self.0 = Some(newest.map_or(version, |n| n.max(version)));
                Order::Fine
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    fn pod(version: &str) -> Pod {
        let mut pod = testkit::pod("p").object();
        pod.metadata.resource_version = Some(version.into());
        pod
    }

    #[test]
    fn a_watch_event_older_than_what_was_seen_is_backwards() {
        let mut seen = NewestSeen::default();
        assert_eq!(seen.observe(&watcher::Event::<Pod>::Init), Order::Fine);
        assert_eq!(
            seen.observe(&watcher::Event::InitApply(pod("50"))),
            Order::Fine
        );
        assert_eq!(
            seen.observe(&watcher::Event::InitApply(pod("7"))),
            Order::Fine
        );
        assert_eq!(seen.observe(&watcher::Event::<Pod>::InitDone), Order::Fine);
        assert_eq!(seen.observe(&watcher::Event::Apply(pod("51"))), Order::Fine);
        assert_eq!(
            seen.observe(&watcher::Event::Delete(pod("12"))),
            Order::Backwards {
                newest: 51,
                event: 12
            }
        );
        // Counting starts again after a reset.
        assert_eq!(seen.observe(&watcher::Event::Apply(pod("13"))), Order::Fine);
    }

    #[test]
    fn a_new_list_may_hold_older_objects_and_opaque_versions_are_not_compared() {
        let mut seen = NewestSeen::default();
        assert_eq!(seen.observe(&watcher::Event::Apply(pod("90"))), Order::Fine);
        assert_eq!(seen.observe(&watcher::Event::<Pod>::Init), Order::Fine);
        assert_eq!(
            seen.observe(&watcher::Event::InitApply(pod("3"))),
            Order::Fine
        );
        assert_eq!(seen.observe(&watcher::Event::Apply(pod("4"))), Order::Fine);
        assert_eq!(
            seen.observe(&watcher::Event::Apply(pod("opaque"))),
            Order::Fine
        );
        assert_eq!(seen.observe(&watcher::Event::Apply(pod("5"))), Order::Fine);
    }
}
