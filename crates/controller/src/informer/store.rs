//! The informer's cache: compact projections by object key, plus secondary indexes.
//!
//! Each projection carries its own namespace and name ([`Keyed`]), so the table holds one
//! pointer per object and no copy of its key: for 10,000 pods, a table of 16,384 slots of 8
//! bytes rather than of 56 (the key's two inline strings and the pointer).
//!
//! Workers read it while the informer writes it, so it sits behind one `RwLock` whose
//! critical sections are a few map operations, never an await. Objects are shared as
//! `Arc<P>`: a reader holds its snapshot of an object for as long as it likes without
//! copying it and without blocking the writer. Secondary indexes (pods or services by
//! namespace, slices by service) are maintained under the same write, so an index lookup
//! always agrees with the objects it returns.

use compact_str::CompactString;
use hashbrown::hash_table::{Entry, HashTable};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::hash::{BuildHasher, Hash};
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

/// An object that knows where it lives: what a [`Store`] keeps, found by these two.
pub trait Keyed {
    /// Its namespace; empty for cluster-scoped objects.
    fn namespace(&self) -> &str;
    /// Its name.
    fn name(&self) -> &str;

    /// Whether it lives at `key`.
    fn is_at(&self, key: &ObjectKey) -> bool {
        self.name() == key.name && self.namespace() == key.namespace
    }

    /// Its key.
    fn key(&self) -> ObjectKey {
        ObjectKey::new(self.namespace(), self.name())
    }
}

impl<T: Keyed + ?Sized> Keyed for Arc<T> {
    fn namespace(&self) -> &str {
        (**self).namespace()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
}

/// Kubernetes' own kinds, by their metadata.
macro_rules! keyed_by_metadata {
    ($($kind:ty),* $(,)?) => {$(
        impl Keyed for $kind {
            fn namespace(&self) -> &str {
                self.metadata.namespace()
            }
            fn name(&self) -> &str {
                self.metadata.name()
            }
        }
    )*};
}

keyed_by_metadata!(
    k8s_openapi::api::core::v1::Pod,
    k8s_openapi::api::core::v1::Node,
    k8s_openapi::api::core::v1::Service,
    k8s_openapi::api::core::v1::Endpoints,
    k8s_openapi::api::discovery::v1::EndpointSlice,
    reconcile::projection::PartialPod,
);

impl Keyed for k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
    fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or_default()
    }
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }
}

impl Keyed for reconcile::projection::PodInfo {
    fn namespace(&self) -> &str {
        &self.namespace
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl Keyed for reconcile::projection::ServiceInfo {
    fn namespace(&self) -> &str {
        &self.namespace
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl Keyed for reconcile::projection::NodeInfo {
    fn namespace(&self) -> &str {
        ""
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl Keyed for reconcile::projection::StoredSlice {
    fn namespace(&self) -> &str {
        self.without_endpoints().namespace()
    }
    fn name(&self) -> &str {
        self.without_endpoints().name()
    }
}

impl Keyed for reconcile::projection::StoredEndpoints {
    fn namespace(&self) -> &str {
        self.without_subsets().namespace()
    }
    fn name(&self) -> &str {
        self.without_subsets().name()
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
    P: Keyed,
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
            .filter_map(|key| objects.get(key).cloned())
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
    /// Each object once, at the hash of its own key.
    objects: HashTable<Arc<P>>,
    hasher: foldhash::fast::RandomState,
    indexes: Vec<Arc<dyn Maintain<P>>>,
}

impl<P: Keyed> StoreInner<P> {
    fn hash(hasher: &foldhash::fast::RandomState, namespace: &str, name: &str) -> u64 {
        hasher.hash_one((namespace, name))
    }

    /// The hash an object is held at.
    fn hash_of(hasher: &foldhash::fast::RandomState, object: &P) -> u64 {
        Self::hash(hasher, object.namespace(), object.name())
    }

    fn get(&self, key: &ObjectKey) -> Option<&Arc<P>> {
        let hash = Self::hash(&self.hasher, &key.namespace, &key.name);
        self.objects.find(hash, |object| object.is_at(key))
    }

    /// Puts `object` in place of the one at its key, and returns that one.
    fn put(&mut self, object: Arc<P>) -> Option<Arc<P>> {
        let hasher = &self.hasher;
        let entry = self.objects.entry(
            Self::hash_of(hasher, &object),
            |held| held.name() == object.name() && held.namespace() == object.namespace(),
            |held| Self::hash_of(hasher, held),
        );
        match entry {
            Entry::Occupied(mut held) => Some(std::mem::replace(held.get_mut(), object)),
            Entry::Vacant(free) => {
                free.insert(object);
                None
            }
        }
    }

    fn take(&mut self, key: &ObjectKey) -> Option<Arc<P>> {
        let hash = Self::hash(&self.hasher, &key.namespace, &key.name);
        let held = self.objects.find_entry(hash, |object| object.is_at(key));
        held.ok().map(|held| held.remove().0)
    }
}

impl<P> Default for Store<P> {
    fn default() -> Self {
        Self {
            inner: Arc::new(RwLock::new(StoreInner {
                objects: HashTable::new(),
                hasher: foldhash::fast::RandomState::default(),
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

impl<P: Keyed + Send + Sync + 'static> Store<P> {
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
        read(&self.inner).get(key).cloned()
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
            .filter_map(|key| inner.get(key))
            .filter(|object| keep(object))
            .cloned()
            .collect()
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Arc<P>> {
        read(&self.inner).objects.iter().cloned().collect()
    }

    /// Every stored key, ordered.
    pub fn keys(&self) -> Vec<ObjectKey> {
        let mut keys: Vec<ObjectKey> = read(&self.inner).objects.iter().map(|o| o.key()).collect();
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
        for object in &inner.objects {
            entries.insert(&object.key(), object);
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
            .map(|object| (object.key(), object))
            .filter(|(key, _)| !listed.contains_key(key))
            .map(|(key, object)| (key, Arc::clone(object)))
            .collect();
        for (key, _) in &removed {
            Self::remove_locked(&mut inner, key);
        }
        let mut added = Vec::new();
        let mut updated = Vec::new();
        for (key, new) in listed {
            match inner.get(&key) {
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

    /// Stores `object`, which lives at `key`.
    fn insert_locked(inner: &mut StoreInner<P>, key: ObjectKey, object: Arc<P>) -> Option<Arc<P>> {
        debug_assert!(
            object.is_at(&key),
            "an object stored at {key} names another key"
        );
        let old = inner.put(Arc::clone(&object));
        for index in &inner.indexes {
            if let Some(old) = &old {
                index.remove(&key, old);
            }
            index.insert(&key, &object);
        }
        old
    }

    fn remove_locked(inner: &mut StoreInner<P>, key: &ObjectKey) -> Option<Arc<P>> {
        let old = inner.take(key)?;
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
        key: ObjectKey,
        service: Option<&'static str>,
    }

    impl Keyed for Slice {
        fn namespace(&self) -> &str {
            &self.key.namespace
        }
        fn name(&self) -> &str {
            &self.key.name
        }
    }

    /// Stores a slice of `service` at `key`.
    fn put(store: &Store<Slice>, key: &ObjectKey, service: Option<&'static str>) {
        let slice = Slice {
            key: key.clone(),
            service,
        };
        store.insert(key.clone(), Arc::new(slice));
    }

    #[test]
    fn namespace_index_lists_the_objects_of_one_namespace_in_key_order() {
        let store = Store::new();
        let by_namespace = store.add_namespace_index();
        put(&store, &ObjectKey::new("a", "y"), Some("s"));
        put(&store, &ObjectKey::new("a", "x"), Some("s"));
        put(&store, &ObjectKey::new("b", "x"), Some("s"));
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
        put(&store, &key, Some("web"));
        assert_eq!(
            by_service.keys(&("ns".into(), "web")),
            std::slice::from_ref(&key)
        );

        put(&store, &key, Some("db"));
        assert!(by_service.keys(&("ns".into(), "web")).is_empty());
        assert_eq!(
            by_service.keys(&("ns".into(), "db")),
            std::slice::from_ref(&key)
        );

        put(&store, &key, None);
        assert!(by_service.keys(&("ns".into(), "db")).is_empty());

        put(&store, &key, Some("db"));
        store.remove(&key);
        assert!(by_service.keys(&("ns".into(), "db")).is_empty());
        assert!(store.is_empty());
    }

    #[test]
    fn an_update_that_keeps_the_index_value_keeps_the_entry() {
        let store = Store::new();
        let by_service = store.add_index(|_: &ObjectKey, slice: &Slice| slice.service);
        let key = ObjectKey::new("ns", "web-abc");
        put(&store, &key, Some("web"));
        put(&store, &key, Some("web"));
        assert_eq!(by_service.keys(&"web"), [key]);
    }

    #[test]
    fn an_index_added_late_is_filled_from_the_stored_objects() {
        let store = Store::new();
        put(&store, &ObjectKey::new("a", "x"), Some("s"));
        let by_namespace = store.add_namespace_index();
        assert_eq!(by_namespace.get(&"a".into()).len(), 1);
    }

    #[test]
    fn objects_are_found_by_the_key_they_carry() {
        let store = Store::new();
        for (namespace, name) in [("a", "x"), ("b", "x"), ("a", "y"), ("", "x")] {
            put(&store, &ObjectKey::new(namespace, name), Some("s"));
        }
        assert_eq!(store.len(), 4);
        put(&store, &ObjectKey::new("a", "x"), Some("t"));
        assert_eq!(store.len(), 4, "the same key replaces");
        let found = store.get(&ObjectKey::new("a", "x")).unwrap();
        assert_eq!(found.service, Some("t"));
        assert_eq!(found.key, ObjectKey::new("a", "x"));
        assert_eq!(
            store.get(&ObjectKey::cluster("x")).unwrap().key.namespace,
            ""
        );
        assert!(store.get(&ObjectKey::new("b", "y")).is_none());
        // "a"/"bc" and "ab"/"c" must not meet: the two parts are hashed and compared apart.
        put(&store, &ObjectKey::new("a", "bc"), Some("s"));
        assert!(store.get(&ObjectKey::new("ab", "c")).is_none());
        assert_eq!(
            store.keys(),
            [
                ObjectKey::cluster("x"),
                ObjectKey::new("a", "bc"),
                ObjectKey::new("a", "x"),
                ObjectKey::new("a", "y"),
                ObjectKey::new("b", "x"),
            ]
        );
        assert!(store.remove(&ObjectKey::new("a", "x")).is_some());
        assert!(store.remove(&ObjectKey::new("a", "x")).is_none());
        assert!(store.get(&ObjectKey::new("a", "x")).is_none());
        assert_eq!(store.len(), 4);
    }

    #[test]
    fn keys_display_like_kubectl() {
        assert_eq!(ObjectKey::new("ns", "web").to_string(), "ns/web");
        assert_eq!(ObjectKey::cluster("node-1").to_string(), "node-1");
    }
}
