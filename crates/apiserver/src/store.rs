//! Objects by resource, namespace and name, and the one resourceVersion counter.
//!
//! Like etcd behind kube-apiserver, the store hands out a single increasing resourceVersion
//! across all kinds: every write takes the next number, stamps it on the object and records
//! the change in the history that watches read. It knows nothing of HTTP or admission rules;
//! callers decide what to write.

use crate::history::{Change, EventType, History};
use crate::resources::Resource;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
type ObjectKey = (String, String);

/// Identifies a resource in the store: `(group, plural)`.
type ResourceKey = (&'static str, &'static str);

/// Reads a string field of `metadata`.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// Sets a field of `metadata`, creating `metadata` when needed. Objects reaching the store
/// are JSON objects (admission rejects anything else), so other values are left alone.
pub fn set_meta(object: &mut Value, field: &str, value: Value) {
    if let Some(map) = object.as_object_mut() {
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(field.to_owned(), value);
        }
    }
}

/// Removes a field of `metadata`.
pub fn remove_meta(object: &mut Value, field: &str) -> Option<Value> {
    object.get_mut("metadata")?.as_object_mut()?.remove(field)
}

/// A list field of `metadata` (`finalizers`, `ownerReferences`); empty when it is absent.
pub fn meta_list<'a>(object: &'a Value, field: &str) -> &'a [Value] {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn key_of(object: &Value) -> ObjectKey {
    (
        meta_str(object, "namespace").unwrap_or_default().to_owned(),
        meta_str(object, "name").unwrap_or_default().to_owned(),
    )
}

/// The uids an object names in its `ownerReferences`.
fn owner_uids(object: &Value) -> impl Iterator<Item = &str> {
    meta_list(object, "ownerReferences")
        .iter()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
}

/// The stored objects and their history.
#[derive(Debug, Clone)]
pub struct Store {
    objects: BTreeMap<ResourceKey, BTreeMap<ObjectKey, Arc<Value>>>,
    /// Owner uid to the objects whose `ownerReferences` name it, so the garbage collector finds
    /// an owner's dependents without scanning the store on every delete.
    dependents: BTreeMap<String, BTreeSet<(ResourceKey, ObjectKey)>>,
    resource_version: u64,
    /// The resourceVersion of the latest change of each resource that has had one.
    latest: BTreeMap<ResourceKey, u64>,
    history: History,
}

impl Store {
    /// An empty store whose history keeps `window` changes.
    pub fn new(window: usize) -> Self {
        Self {
            objects: BTreeMap::new(),
            dependents: BTreeMap::new(),
            resource_version: 0,
            latest: BTreeMap::new(),
            history: History::new(window),
        }
    }

    /// The resourceVersion of the latest write.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// The resourceVersion of the latest change (create, update or delete) of any object of
    /// the resource `plural` in API group `group`; 0 if there was none. A watch of the whole
    /// resource that has delivered this version has delivered every change there is.
    pub fn latest_change(&self, group: &str, plural: &str) -> u64 {
        self.latest
            .iter()
            .find(|((g, p), _)| *g == group && *p == plural)
            .map_or(0, |(_, rv)| *rv)
    }

    /// Records `change` in the history, and as the latest change of its resource.
    fn record(&mut self, change: Change) {
        self.latest.insert(
            (change.resource.group, change.resource.plural),
            change.resource_version,
        );
        self.history.push(change);
    }

    /// The kept changes.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Moves the resourceVersion counter forward to at least `to`, as
    /// `etcdutl snapshot restore --bump-revision` does: writes from now on get versions above
    /// every version handed out before the restore.
    pub fn bump_resource_version(&mut self, to: u64) {
        self.resource_version = self.resource_version.max(to);
    }

    /// Forgets the history, so every watch from before now expires.
    pub fn compact_history(&mut self) {
        self.history.compact(self.resource_version);
    }

    /// One object; `namespace` is empty for cluster-scoped resources.
    pub fn get(&self, resource: &Resource, namespace: &str, name: &str) -> Option<&Arc<Value>> {
        self.objects
            .get(&(resource.group, resource.plural))?
            .get(&(namespace.to_owned(), name.to_owned()))
    }

    /// Objects of a resource, in one namespace or all, sorted by namespace and name.
    pub fn list<'a>(
        &'a self,
        resource: &Resource,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        self.objects
            .get(&(resource.group, resource.plural))
            .into_iter()
            .flat_map(|objects| objects.iter())
            .filter(move |((ns, _), _)| namespace.is_none_or(|want| want == ns))
            .map(|(_, object)| object)
    }

    /// Every namespaced object in `namespace`, as `(resource, name)`.
    pub fn contents_of(&self, namespace: &str) -> Vec<(&'static Resource, String)> {
        let mut found = Vec::new();
        for resource in crate::resources::RESOURCES.iter().filter(|r| r.namespaced) {
            for object in self.list(resource, Some(namespace)) {
                if let Some(name) = meta_str(object, "name") {
                    found.push((resource, name.to_owned()));
                }
            }
        }
        found
    }

    /// The objects whose `ownerReferences` name `uid`, as `(resource, object)`, in store order.
    pub fn dependents_of(&self, uid: &str) -> Vec<(&'static Resource, &Arc<Value>)> {
        let Some(keys) = self.dependents.get(uid) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|((group, plural), (namespace, name))| {
                let resource = crate::resources::RESOURCES
                    .iter()
                    .find(|r| r.group == *group && r.plural == *plural)?;
                Some((resource, self.get(resource, namespace, name)?))
            })
            .collect()
    }

    /// Keeps the dependents index in step with one object replacing another.
    fn index_owners(&mut self, resource: &Resource, old: Option<&Value>, new: Option<&Value>) {
        let Some(key) = new.or(old).map(key_of) else {
            return;
        };
        let entry = ((resource.group, resource.plural), key);
        for uid in old.into_iter().flat_map(owner_uids) {
            if let Some(set) = self.dependents.get_mut(uid) {
                set.remove(&entry);
                if set.is_empty() {
                    self.dependents.remove(uid);
                }
            }
        }
        for uid in new.into_iter().flat_map(owner_uids) {
            self.dependents
                .entry(uid.to_owned())
                .or_default()
                .insert(entry.clone());
        }
    }

    fn next_version(&mut self, object: &mut Value) -> u64 {
        self.resource_version += 1;
        set_meta(
            object,
            "resourceVersion",
            json!(self.resource_version.to_string()),
        );
        self.resource_version
    }

    /// Stores a new object (replacing nothing) and records ADDED.
    pub fn create(&mut self, resource: &'static Resource, object: Value) -> Arc<Value> {
        self.put(resource, object, EventType::Added)
    }

    /// Replaces an existing object and records MODIFIED.
    pub fn update(&mut self, resource: &'static Resource, object: Value) -> Arc<Value> {
        self.put(resource, object, EventType::Modified)
    }

    /// Stores `object` at the next resourceVersion and records the change as `kind`; a
    /// MODIFIED change keeps the object it replaced.
    fn put(
        &mut self,
        resource: &'static Resource,
        mut object: Value,
        kind: EventType,
    ) -> Arc<Value> {
        let rv = self.next_version(&mut object);
        let object = Arc::new(object);
        let replaced = self
            .objects
            .entry((resource.group, resource.plural))
            .or_default()
            .insert(key_of(&object), object.clone());
        self.index_owners(resource, replaced.as_deref(), Some(&object));
        let previous = replaced.filter(|_| kind == EventType::Modified);
        self.record(Change {
            resource_version: rv,
            resource,
            kind,
            object: object.clone(),
            previous,
            protobuf: Default::default(),
        });
        object
    }

    /// Removes an object and records DELETED; the removed object carries the deletion's
    /// resourceVersion, as on a real server.
    pub fn remove(
        &mut self,
        resource: &'static Resource,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        let removed = self
            .objects
            .get_mut(&(resource.group, resource.plural))?
            .remove(&(namespace.to_owned(), name.to_owned()))?;
        self.index_owners(resource, Some(&removed), None);
        let mut object = Arc::unwrap_or_clone(removed);
        let rv = self.next_version(&mut object);
        let object = Arc::new(object);
        self.record(Change {
            resource_version: rv,
            resource,
            kind: EventType::Deleted,
            object: object.clone(),
            previous: None,
            protobuf: Default::default(),
        });
        Some(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    #[test]
    fn every_write_takes_the_next_resource_version_across_kinds() {
        let mut store = Store::new(100);
        let pods = find("", "v1", "pods").unwrap();
        let nodes = find("", "v1", "nodes").unwrap();
        let p = store.create(pods, json!({"metadata": {"name": "a", "namespace": "d"}}));
        let n = store.create(nodes, json!({"metadata": {"name": "n"}}));
        assert_eq!(meta_str(&p, "resourceVersion"), Some("1"));
        assert_eq!(meta_str(&n, "resourceVersion"), Some("2"));
        let gone = store.remove(pods, "d", "a").unwrap();
        assert_eq!(meta_str(&gone, "resourceVersion"), Some("3"));
        assert!(store.get(pods, "d", "a").is_none());
        assert_eq!(store.history().since(0).unwrap().len(), 3);
    }

    #[test]
    fn each_resource_knows_the_version_of_its_latest_change() {
        let mut store = Store::new(100);
        let pods = find("", "v1", "pods").unwrap();
        let slices = find("discovery.k8s.io", "v1", "endpointslices").unwrap();
        assert_eq!(store.latest_change("", "pods"), 0);
        let pod = json!({"metadata": {"name": "a", "namespace": "d"}});
        store.create(pods, pod.clone());
        store.create(slices, json!({"metadata": {"name": "s", "namespace": "d"}}));
        assert_eq!(store.latest_change("", "pods"), 1);
        assert_eq!(store.latest_change("discovery.k8s.io", "endpointslices"), 2);
        assert_eq!(
            store.latest_change("", "endpointslices"),
            0,
            "another group"
        );
        store.update(pods, pod);
        assert_eq!(store.latest_change("", "pods"), 3);
        // A delete is a change too: the watch's DELETED event carries its version.
        store.remove(slices, "d", "s");
        assert_eq!(store.latest_change("discovery.k8s.io", "endpointslices"), 4);
        // Moving the counter on changes no resource.
        store.bump_resource_version(100);
        assert_eq!(store.latest_change("", "pods"), 3);
    }

    #[test]
    fn list_filters_by_namespace_in_name_order() {
        let mut store = Store::new(100);
        let pods = find("", "v1", "pods").unwrap();
        for (ns, name) in [("b", "z"), ("a", "y"), ("b", "x")] {
            store.create(pods, json!({"metadata": {"name": name, "namespace": ns}}));
        }
        let names: Vec<&str> = store
            .list(pods, Some("b"))
            .filter_map(|o| meta_str(o, "name"))
            .collect();
        assert_eq!(names, vec!["x", "z"]);
        assert_eq!(store.list(pods, None).count(), 3);
        assert_eq!(store.contents_of("a").len(), 1);
    }

    #[test]
    fn dependents_index_follows_owner_references_through_updates_and_removal() {
        let mut store = Store::new(100);
        let pods = find("", "v1", "pods").unwrap();
        let owned = |uid: &str| json!({"metadata": {"name": "p", "namespace": "d", "ownerReferences": [{"uid": uid}]}});
        store.create(pods, owned("a"));
        assert_eq!(store.dependents_of("a").len(), 1);
        store.update(pods, owned("b"));
        assert!(store.dependents_of("a").is_empty());
        assert_eq!(store.dependents_of("b").len(), 1);
        store.remove(pods, "d", "p");
        assert!(store.dependents_of("b").is_empty());
    }
}
