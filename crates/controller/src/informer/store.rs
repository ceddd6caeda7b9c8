//! The informer's cache: compact projections by object key, plus secondary indexes.
//!
//! Workers read it while the informer writes it, so it sits behind one `RwLock` whose
//! critical sections are a few map operations, never an await. Objects are shared as
//! `Arc<P>`: a reader holds its snapshot of an object for as long as it likes without
//! copying it and without blocking the writer. Secondary indexes (pods or services by
//! namespace, slices by service) are maintained under the same write, so an index lookup
//! always agrees with the objects it returns.

use compact_str::CompactString;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The hash map of the stores and their indexes: keyed by names the API server gave, hashed
/// on every event, so with a fast hasher rather than the default DoS-resistant one.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Where an object lives: its namespace (empty for cluster-scoped kinds such as Node) and
/// its name. Orders by namespace, then name. Both are kept inline when they fit in 24 bytes, as
/// nearly all do: the stores and indexes hold a key per object, several for pods.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The object's namespace; empty for cluster-scoped objects.
    pub namespace: CompactString,
    /// The object's name.
    pub name: CompactString,
}

impl ObjectKey {
    /// The key of `name` in `namespace`.
    pub fn new(namespace: impl AsRef<str>, name: impl AsRef<str>) -> Self {
        Self {
            namespace: CompactString::new(namespace),
            name: CompactString::new(name),
        }
    }

    /// The key of a cluster-scoped object.
    pub fn cluster(name: impl AsRef<str>) -> Self {
        Self::new("", name)
    }
}

impl fmt::Display for ObjectKey {
    /// `namespace/name`, or just `name` for cluster-scoped objects, as kubectl prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// Keeps one secondary index current as objects come and go.
trait Maintain<P>: Send + Sync {
    fn insert(&self, key: &ObjectKey, object: &P);
    fn remove(&self, key: &ObjectKey, object: &P);
}

/// A secondary index: from a value computed from each object to the keys of the objects
/// with that value. Lookups go through the store so that they see the objects under the
/// same lock that keeps the index current.
pub struct Index<P, I> {
    store: Store<P>,
    entries: Arc<IndexEntries<P, I>>,
}

impl<P, I> Clone for Index<P, I> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            entries: Arc::clone(&self.entries),
        }
    }
}

impl<P, I> fmt::Debug for Index<P, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index").finish_non_exhaustive()
    }
}

/// The function an index is built from: the index value of an object, or `None` to leave
/// the object out of the index.
pub type IndexFn<P, I> = dyn Fn(&ObjectKey, &P) -> Option<I> + Send + Sync;

struct IndexEntries<P, I> {
    index_fn: Box<IndexFn<P, I>>,
    // Only written while the store's write lock is held and read while its read lock is held;
    // its own lock exists because the store cannot name `I`.
    keys: RwLock<FastMap<I, BTreeSet<ObjectKey>>>,
}

impl<P, I> Maintain<P> for IndexEntries<P, I>
where
    P: Send + Sync,
    I: Eq + Hash + Send + Sync,
{
    fn insert(&self, key: &ObjectKey, object: &P) {
        if let Some(value) = (self.index_fn)(key, object) {
            write(&self.keys)
                .entry(value)
                .or_default()
                .insert(key.clone());
        }
    }

    fn remove(&self, key: &ObjectKey, object: &P) {
        if let Some(value) = (self.index_fn)(key, object) {
            let mut keys = write(&self.keys);
            if let Some(set) = keys.get_mut(&value) {
                set.remove(key);
                if set.is_empty() {
                    keys.remove(&value);
                }
            }
        }
    }
}

impl<P, I> Index<P, I>
where
    I: Eq + Hash,
{
    /// The objects whose index value is `value`, ordered by key.
    pub fn get(&self, value: &I) -> Vec<Arc<P>> {
        // Store lock first, then index lock: the same order as the writer takes them.
        let objects = read(&self.store.inner);
        let keys = read(&self.entries.keys);
        keys.get(value)
            .into_iter()
            .flatten()
            .filter_map(|key| objects.objects.get(key).cloned())
            .collect()
    }

    /// The keys of the objects whose index value is `value`, ordered.
    pub fn keys(&self, value: &I) -> Vec<ObjectKey> {
        let _objects = read(&self.store.inner);
        read(&self.entries.keys)
            .get(value)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// What a [`Store::replace`] changed, each list ordered by key.
pub(crate) struct Replaced<P> {
    /// Objects listed that were not stored.
    pub(crate) added: Vec<(ObjectKey, Arc<P>)>,
    /// Objects whose listed projection differs from the stored one: key, old, new.
    pub(crate) updated: Vec<(ObjectKey, Arc<P>, Arc<P>)>,
    /// Objects stored that were not listed.
    pub(crate) removed: Vec<(ObjectKey, Arc<P>)>,
}

/// The informer's store of projections `P`. Cloning gives another handle to the same store.
pub struct Store<P> {
    inner: Arc<RwLock<StoreInner<P>>>,
    /// Asks the informer filling this store to list again (see [`Store::request_relist`]).
    relist: Arc<tokio::sync::Notify>,
}

impl<P> Clone for Store<P> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            relist: Arc::clone(&self.relist),
        }
    }
}

impl<P> fmt::Debug for Store<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("len", &read(&self.inner).objects.len())
            .finish()
    }
}

struct StoreInner<P> {
    objects: FastMap<ObjectKey, Arc<P>>,
    indexes: Vec<Arc<dyn Maintain<P>>>,
}

impl<P> Default for Store<P> {
    fn default() -> Self {
        Self {
            inner: Arc::new(RwLock::new(StoreInner {
                objects: FastMap::default(),
                indexes: Vec::new(),
            })),
            relist: Arc::new(tokio::sync::Notify::new()),
        }
    }
}

/// Locks for reading. No critical section in this module panics, so a poisoned lock still
/// guards consistent data.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Locks for writing; see [`read`] on poisoning.
fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<P: Send + Sync + 'static> Store<P> {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the informer filling this store to start over with a fresh list, as when its
    /// watch cannot resume. For a cache shown wrong by the server itself: a write refused
    /// again and again for a resourceVersion the server no longer has, while the watch
    /// brings nothing newer (a server that came back with other state on resourceVersions
    /// that happen to let the watch resume).
    pub fn request_relist(&self) {
        self.relist.notify_one();
    }

    /// Completes when a re-list was asked for.
    pub(crate) async fn relist_requested(&self) {
        self.relist.notified().await;
    }

    /// The object stored under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<P>> {
        read(&self.inner).objects.get(key).cloned()
    }

    /// The objects stored under `keys` that `keep` accepts, in the keys' order, read under one
    /// lock (a sync reads every pod of its Service).
    pub fn get_each<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k ObjectKey>,
        keep: impl Fn(&P) -> bool,
    ) -> Vec<Arc<P>> {
        let inner = read(&self.inner);
        keys.into_iter()
            .filter_map(|key| inner.objects.get(key))
            .filter(|object| keep(object))
            .cloned()
            .collect()
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Arc<P>> {
        read(&self.inner).objects.values().cloned().collect()
    }

    /// Every stored key, ordered.
    pub fn keys(&self) -> Vec<ObjectKey> {
        let mut keys: Vec<ObjectKey> = read(&self.inner).objects.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        read(&self.inner).objects.len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a secondary index computed by `index_fn`, filled at once from the objects already
    /// stored and kept current from then on.
    pub fn add_index<I>(
        &self,
        index_fn: impl Fn(&ObjectKey, &P) -> Option<I> + Send + Sync + 'static,
    ) -> Index<P, I>
    where
        I: Eq + Hash + Send + Sync + 'static,
    {
        let entries = Arc::new(IndexEntries {
            index_fn: Box::new(index_fn),
            keys: RwLock::new(FastMap::default()),
        });
        let mut inner = write(&self.inner);
        for (key, object) in &inner.objects {
            entries.insert(key, object);
        }
        inner
            .indexes
            .push(Arc::clone(&entries) as Arc<dyn Maintain<P>>);
        Index {
            store: self.clone(),
            entries,
        }
    }

    /// An index of the objects by namespace (for the tests: the controllers index by label).
    #[cfg(test)]
    pub fn add_namespace_index(&self) -> Index<P, CompactString> {
        self.add_index(|key, _| Some(key.namespace.clone()))
    }

    /// Stores `object` under `key` and returns the object it replaced.
    pub fn insert(&self, key: ObjectKey, object: Arc<P>) -> Option<Arc<P>> {
        let mut inner = write(&self.inner);
        Self::insert_locked(&mut inner, key, object)
    }

    /// Removes the object under `key` and returns it.
    pub fn remove(&self, key: &ObjectKey) -> Option<Arc<P>> {
        let mut inner = write(&self.inner);
        Self::remove_locked(&mut inner, key)
    }

    /// Replaces the whole content with `listed` under one write lock, so that readers never
    /// see a re-list half applied, and reports what changed. Objects equal to the stored ones
    /// keep their stored `Arc`. Each list in the result is ordered by key.
    pub(crate) fn replace(&self, listed: FastMap<ObjectKey, Arc<P>>) -> Replaced<P>
    where
        P: PartialEq,
    {
        let mut inner = write(&self.inner);
        let mut removed: Vec<(ObjectKey, Arc<P>)> = inner
            .objects
            .iter()
            .filter(|(key, _)| !listed.contains_key(*key))
            .map(|(key, object)| (key.clone(), Arc::clone(object)))
            .collect();
        for (key, _) in &removed {
            Self::remove_locked(&mut inner, key);
        }
        let mut added = Vec::new();
        let mut updated = Vec::new();
        for (key, new) in listed {
            match inner.objects.get(&key) {
                None => {
                    Self::insert_locked(&mut inner, key.clone(), Arc::clone(&new));
                    added.push((key, new));
                }
                Some(old) if !Arc::ptr_eq(old, &new) && **old != *new => {
                    let old = Arc::clone(old);
                    Self::insert_locked(&mut inner, key.clone(), Arc::clone(&new));
                    updated.push((key, old, new));
                }
                Some(_) => {}
            }
        }
        drop(inner);
        removed.sort_by(|a, b| a.0.cmp(&b.0));
        added.sort_by(|a, b| a.0.cmp(&b.0));
        updated.sort_by(|a, b| a.0.cmp(&b.0));
        Replaced {
            added,
            updated,
            removed,
        }
    }

    fn insert_locked(inner: &mut StoreInner<P>, key: ObjectKey, object: Arc<P>) -> Option<Arc<P>> {
        let old = inner.objects.insert(key.clone(), Arc::clone(&object));
        for index in &inner.indexes {
            if let Some(old) = &old {
                index.remove(&key, old);
            }
            index.insert(&key, &object);
        }
        old
    }

    fn remove_locked(inner: &mut StoreInner<P>, key: &ObjectKey) -> Option<Arc<P>> {
        let old = inner.objects.remove(key)?;
        for index in &inner.indexes {
            index.remove(key, &old);
        }
        Some(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Slice {
        service: Option<&'static str>,
    }

    fn slice(service: &'static str) -> Arc<Slice> {
        Arc::new(Slice {
            service: Some(service),
        })
    }

    #[test]
    fn namespace_index_lists_the_objects_of_one_namespace_in_key_order() {
        let store = Store::new();
        let by_namespace = store.add_namespace_index();
        store.insert(ObjectKey::new("a", "y"), slice("s"));
        store.insert(ObjectKey::new("a", "x"), slice("s"));
        store.insert(ObjectKey::new("b", "x"), slice("s"));
        assert_eq!(
            by_namespace.keys(&"a".into()),
            [ObjectKey::new("a", "x"), ObjectKey::new("a", "y")]
        );
        assert_eq!(by_namespace.get(&"b".into()).len(), 1);
        assert!(by_namespace.get(&"c".into()).is_empty());
    }

    #[test]
    fn custom_index_follows_updates_and_removals() {
        let store = Store::new();
        let by_service = store.add_index(|key: &ObjectKey, slice: &Slice| {
            slice.service.map(|s| (key.namespace.clone(), s))
        });
        let key = ObjectKey::new("ns", "web-abc");
        store.insert(key.clone(), slice("web"));
        assert_eq!(
            by_service.keys(&("ns".into(), "web")),
            std::slice::from_ref(&key)
        );

        store.insert(key.clone(), slice("db"));
        assert!(by_service.keys(&("ns".into(), "web")).is_empty());
        assert_eq!(
            by_service.keys(&("ns".into(), "db")),
            std::slice::from_ref(&key)
        );

        store.insert(key.clone(), Arc::new(Slice { service: None }));
        assert!(by_service.keys(&("ns".into(), "db")).is_empty());

        store.insert(key.clone(), slice("db"));
        store.remove(&key);
        assert!(by_service.keys(&("ns".into(), "db")).is_empty());
        assert!(store.is_empty());
    }

    #[test]
    fn an_update_that_keeps_the_index_value_keeps_the_entry() {
        let store = Store::new();
        let by_service = store.add_index(|_: &ObjectKey, slice: &Slice| slice.service);
        let key = ObjectKey::new("ns", "web-abc");
        store.insert(key.clone(), slice("web"));
        store.insert(key.clone(), slice("web"));
        assert_eq!(by_service.keys(&"web"), [key]);
    }

    #[test]
    fn an_index_added_late_is_filled_from_the_stored_objects() {
        let store = Store::new();
        store.insert(ObjectKey::new("a", "x"), slice("s"));
        let by_namespace = store.add_namespace_index();
        assert_eq!(by_namespace.get(&"a".into()).len(), 1);
    }

    #[test]
    fn keys_display_like_kubectl() {
        assert_eq!(ObjectKey::new("ns", "web").to_string(), "ns/web");
        assert_eq!(ObjectKey::cluster("node-1").to_string(), "node-1");
    }
}
