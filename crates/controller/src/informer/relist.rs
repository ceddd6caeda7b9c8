//! Turning watcher events into store changes and handler calls, re-lists included.
//!
//! kube's watcher restarts with a fresh list (`Init`, `InitApply`..., `InitDone`) whenever
//! its watch cannot resume, and says that anything not re-listed must be taken as deleted.
//! kube's reflector only swaps its buffer into the store at `InitDone` and tells nobody what
//! went away, which would leave a deleted pod in a service's endpoints until the next sync.
//! So the re-list is diffed against the store here: what vanished gets `on_delete`, what
//! changed gets `on_update`, what is new gets `on_add`, and what is equal stays silent. This
//! code is plain and synchronous so that it is tested without any server.

use std::sync::Arc;

use super::store::{FastMap, ObjectKey, Store};
use super::Handler;

/// One watcher event after projection. A `None` projection is an object the caller's
/// projection rejected.
#[derive(Debug)]
pub enum Change<P> {
    /// An object was added or modified.
    Apply(ObjectKey, Option<Arc<P>>),
    /// An object was deleted.
    Delete(ObjectKey),
    /// A re-list starts.
    Init,
    /// An object of the re-list.
    InitApply(ObjectKey, Option<Arc<P>>),
    /// The re-list is complete.
    InitDone,
}

/// Applies [`Change`]s to a store and calls the handler for each difference.
pub struct Applier<P> {
    store: Store<P>,
    /// The objects of a re-list in progress.
    relist: Option<FastMap<ObjectKey, Arc<P>>>,
}

impl<P: super::store::Keyed + PartialEq + Send + Sync + 'static> Applier<P> {
    /// An applier writing into `store`.
    pub fn new(store: Store<P>) -> Self {
        Self {
            store,
            relist: None,
        }
    }

    /// Applies one change: the store is updated first, then the handler is called, so a
    /// handler (or a worker it wakes) reads the new state. Returns `true` when the change
    /// completed a re-list.
    pub fn apply(&mut self, change: Change<P>, handler: &impl Handler<P>) -> bool {
        match change {
            Change::Apply(key, Some(new)) => {
                match self.store.insert(key, Arc::clone(&new)) {
                    Some(old) => handler.on_update(&old, &new),
                    None => handler.on_add(&new),
                }
                false
            }
            // A rejected object must not linger with its previous, now outdated, projection.
            Change::Apply(key, None) | Change::Delete(key) => {
                if let Some(old) = self.store.remove(&key) {
                    handler.on_delete(&old);
                }
                false
            }
            Change::Init => {
                self.relist = Some(FastMap::default());
                false
            }
            Change::InitApply(key, object) => {
                let relist = self.relist.get_or_insert_with(FastMap::default);
                match object {
                    Some(object) => {
                        // An object listed as it is stored keeps the stored projection, so
                        // that a re-list of a mostly unchanged cluster holds one copy of each
                        // object at its peak rather than the store's and the list's.
                        let object = match self.store.get(&key) {
                            Some(stored) if *stored == *object => stored,
                            _ => object,
                        };
                        relist.insert(key, object);
                    }
                    // Left out of the re-list, so a stored projection of it is deleted below.
                    None => {
                        relist.remove(&key);
                    }
                }
                false
            }
            Change::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                let replaced = self.store.replace(listed);
                for (_, old) in &replaced.removed {
                    handler.on_delete(old);
                }
                for (_, old, new) in &replaced.updated {
                    handler.on_update(old, new);
                }
                for (_, new) in &replaced.added {
                    handler.on_add(new);
                }
                handler.on_listed();
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Debug, PartialEq)]
    struct Pod {
        name: &'static str,
        version: u32,
    }

    impl crate::informer::store::Keyed for Pod {
        fn namespace(&self) -> &str {
            "default"
        }
        fn name(&self) -> &str {
            self.name
        }
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    fn pod(name: &'static str, version: u32) -> Option<Arc<Pod>> {
        Some(Arc::new(Pod { name, version }))
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Recorder {
        fn take(&self) -> Vec<String> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }

    impl Handler<Pod> for Recorder {
        fn on_add(&self, new: &Arc<Pod>) {
            self.0
                .lock()
                .unwrap()
                .push(format!("add {} v{}", new.name, new.version));
        }
        fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
            self.0.lock().unwrap().push(format!(
                "update {} v{}->v{}",
                new.name, old.version, new.version
            ));
        }
        fn on_delete(&self, old: &Arc<Pod>) {
            self.0
                .lock()
                .unwrap()
                .push(format!("delete {} v{}", old.name, old.version));
        }
    }

    /// A store, the applier filling it, and what the applier reported.
    struct Fixture {
        store: Store<Pod>,
        applier: Applier<Pod>,
        handler: Recorder,
    }

    impl Fixture {
        fn new() -> Self {
            let store = Store::new();
            Self {
                applier: Applier::new(store.clone()),
                store,
                handler: Recorder::default(),
            }
        }

        /// A fixture that has applied a list of `pods` and forgotten the reports of it.
        fn listing(pods: &[(&'static str, u32)]) -> Self {
            let mut fixture = Self::new();
            fixture.listed(pods);
            fixture.handler.take();
            fixture
        }

        fn apply(&mut self, change: Change<Pod>) -> bool {
            self.applier.apply(change, &self.handler)
        }

        /// Applies a whole list of `pods`.
        fn listed(&mut self, pods: &[(&'static str, u32)]) {
            self.apply(Change::Init);
            for &(name, version) in pods {
                self.apply(Change::InitApply(key(name), pod(name, version)));
            }
            assert!(self.apply(Change::InitDone));
        }
    }

    #[test]
    fn first_list_adds_every_object_only_when_the_list_is_done() {
        let mut f = Fixture::new();
        f.apply(Change::Init);
        f.apply(Change::InitApply(key("b"), pod("b", 1)));
        f.apply(Change::InitApply(key("a"), pod("a", 1)));
        assert!(f.handler.take().is_empty());
        assert!(f.store.is_empty());
        assert!(f.apply(Change::InitDone));
        assert_eq!(f.handler.take(), ["add a v1", "add b v1"]);
        assert_eq!(f.store.len(), 2);
    }

    #[test]
    fn watch_events_add_update_and_delete_with_the_stored_old_object() {
        let mut f = Fixture::listing(&[]);
        f.apply(Change::Apply(key("a"), pod("a", 1)));
        f.apply(Change::Apply(key("a"), pod("a", 2)));
        f.apply(Change::Delete(key("a")));
        f.apply(Change::Delete(key("never-seen")));
        assert_eq!(
            f.handler.take(),
            ["add a v1", "update a v1->v2", "delete a v2"]
        );
        assert!(f.store.is_empty());
    }

    #[test]
    fn relist_synthesises_deletes_for_objects_that_vanished() {
        let mut f = Fixture::listing(&[("a", 1), ("b", 1), ("c", 1)]);
        f.listed(&[("b", 1)]);
        assert_eq!(f.handler.take(), ["delete a v1", "delete c v1"]);
        assert_eq!(f.store.keys(), [key("b")]);
    }

    #[test]
    fn relist_reports_changed_objects_as_updates_and_keeps_equal_ones_silent() {
        let mut f = Fixture::listing(&[("a", 1), ("b", 1)]);
        let unchanged = f.store.get(&key("b")).unwrap();
        f.listed(&[("a", 2), ("b", 1), ("d", 1)]);
        assert_eq!(f.handler.take(), ["update a v1->v2", "add d v1"]);
        assert!(Arc::ptr_eq(&unchanged, &f.store.get(&key("b")).unwrap()));
    }

    #[test]
    fn a_relist_holds_the_stored_copy_of_an_unchanged_object_not_a_second_one() {
        let mut f = Fixture::listing(&[("a", 1), ("b", 1)]);
        f.apply(Change::Init);
        let listed_a = pod("a", 1).unwrap();
        let listed_b = pod("b", 2).unwrap();
        let (weak_a, weak_b) = (Arc::downgrade(&listed_a), Arc::downgrade(&listed_b));
        f.apply(Change::InitApply(key("a"), Some(listed_a)));
        f.apply(Change::InitApply(key("b"), Some(listed_b)));
        assert!(
            weak_a.upgrade().is_none(),
            "the list's copy of an unchanged object was kept beside the stored one"
        );
        assert!(weak_b.upgrade().is_some(), "a changed object is kept");
        f.apply(Change::InitDone);
        assert_eq!(f.handler.take(), ["update b v1->v2"]);
    }

    #[test]
    fn an_object_the_projection_rejects_is_removed_from_the_store() {
        let mut f = Fixture::listing(&[("a", 1), ("b", 1)]);
        f.apply(Change::Apply(key("a"), None));
        assert_eq!(f.handler.take(), ["delete a v1"]);
        f.apply(Change::Init);
        f.apply(Change::InitApply(key("b"), None));
        f.apply(Change::InitDone);
        assert_eq!(f.handler.take(), ["delete b v1"]);
        assert!(f.store.is_empty());
    }

    #[test]
    fn store_is_unchanged_while_a_relist_is_in_progress() {
        let mut f = Fixture::listing(&[("a", 1)]);
        f.apply(Change::Init);
        f.apply(Change::InitApply(key("b"), pod("b", 1)));
        assert_eq!(f.store.keys(), [key("a")]);
    }
}
