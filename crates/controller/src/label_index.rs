//! Label-pair indexes, so that neither a pod event nor a sync scans a whole namespace.
//!
//! Pods are indexed under each of their `(namespace, key, value)` label pairs and Services
//! under each pair of their selector. A Service's pods are then found from its selector's
//! rarest pair, and a pod's Services from the Services indexed under one of its own pairs;
//! both are checked against the full selector afterwards. The indexes are kept by informer
//! handlers that run before any handler that queues work, so a queued sync sees them.

use crate::informer::store::{FastMap, ObjectKey};
use crate::informer::Handler;
use compact_str::CompactString;
use reconcile::projection::{LabelSet, PodInfo, ServiceInfo};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

/// `(namespace, key, value)`. Short texts stay inline, so building a pair to look one up (on
/// every pod event) allocates nothing.
type Pair = (CompactString, CompactString, CompactString);

/// Objects by label pair. A pair carries its namespace, so an object is kept under it by
/// name alone (half the bytes of a namespace-and-name key, once per pod and label).
#[derive(Default)]
struct PairIndex {
    by_pair: FastMap<Pair, BTreeSet<CompactString>>,
}

impl PairIndex {
    fn insert(&mut self, name: &str, pairs: impl Iterator<Item = Pair>) {
        for pair in pairs {
            self.by_pair
                .entry(pair)
                .or_default()
                .insert(CompactString::new(name));
        }
    }

    fn remove(&mut self, name: &str, pairs: impl Iterator<Item = Pair>) {
        for pair in pairs {
            if let Some(names) = self.by_pair.get_mut(&pair) {
                names.remove(name);
                if names.is_empty() {
                    self.by_pair.remove(&pair);
                }
            }
        }
    }
}

fn pairs<'a>(
    namespace: &'a str,
    labels: impl Iterator<Item = (&'a str, &'a str)> + 'a,
) -> impl Iterator<Item = Pair> + 'a {
    labels.map(move |(k, v)| {
        (
            CompactString::new(namespace),
            CompactString::new(k),
            CompactString::new(v),
        )
    })
}

fn map_pairs<'a>(
    namespace: &'a str,
    map: &'a BTreeMap<String, String>,
) -> impl Iterator<Item = Pair> + 'a {
    pairs(namespace, map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

fn selector_pairs(service: &ServiceInfo) -> impl Iterator<Item = Pair> + '_ {
    service
        .selector
        .iter()
        .flat_map(move |s| map_pairs(&service.namespace, s))
}

/// Pods by label pair and Services by selector pair. Cheap to clone; clones share.
#[derive(Clone, Default)]
pub struct LabelIndex {
    pods: Arc<RwLock<PairIndex>>,
    services: Arc<RwLock<PairIndex>>,
}

fn read(lock: &RwLock<PairIndex>) -> std::sync::RwLockReadGuard<'_, PairIndex> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write(lock: &RwLock<PairIndex>) -> std::sync::RwLockWriteGuard<'_, PairIndex> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LabelIndex {
    /// Keys of the pods that may match a selector in a namespace: those carrying its rarest
    /// pair (the caller checks the whole selector). `None` for an empty selector.
    pub fn pod_candidates(
        &self,
        namespace: &str,
        selector: &BTreeMap<String, String>,
    ) -> Option<Vec<ObjectKey>> {
        let index = read(&self.pods);
        let rarest = map_pairs(namespace, selector)
            .min_by_key(|pair| index.by_pair.get(pair).map_or(0, BTreeSet::len))?;
        Some(
            index
                .by_pair
                .get(&rarest)
                .map(|names| {
                    names
                        .iter()
                        .map(|name| ObjectKey::new(namespace, name))
                        .collect()
                })
                .unwrap_or_default(),
        )
    }

    /// Keys of the Services whose selector shares a pair with these labels (the caller checks
    /// the whole selector).
    pub fn service_candidates(&self, namespace: &str, labels: &LabelSet) -> BTreeSet<ObjectKey> {
        let index = read(&self.services);
        pairs(namespace, labels.iter())
            .filter_map(|pair| index.by_pair.get(&pair))
            .flatten()
            .map(|name| ObjectKey::new(namespace, name))
            .collect()
    }
}

impl Handler<PodInfo> for LabelIndex {
    fn on_add(&self, pod: &Arc<PodInfo>) {
        write(&self.pods).insert(&pod.name, pairs(&pod.namespace, pod.labels.iter()));
    }
    fn on_update(&self, old: &Arc<PodInfo>, new: &Arc<PodInfo>) {
        if old.labels != new.labels {
            let mut index = write(&self.pods);
            index.remove(&old.name, pairs(&old.namespace, old.labels.iter()));
            index.insert(&new.name, pairs(&new.namespace, new.labels.iter()));
        }
    }
    fn on_delete(&self, pod: &Arc<PodInfo>) {
        write(&self.pods).remove(&pod.name, pairs(&pod.namespace, pod.labels.iter()));
    }
}

impl Handler<ServiceInfo> for LabelIndex {
    fn on_add(&self, service: &Arc<ServiceInfo>) {
        write(&self.services).insert(&service.name, selector_pairs(service));
    }
    fn on_update(&self, old: &Arc<ServiceInfo>, new: &Arc<ServiceInfo>) {
        if old.selector != new.selector {
            let mut index = write(&self.services);
            index.remove(&old.name, selector_pairs(old));
            index.insert(&new.name, selector_pairs(new));
        }
    }
    fn on_delete(&self, service: &Arc<ServiceInfo>) {
        write(&self.services).remove(&service.name, selector_pairs(service));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconcile::testing::{pod, service};

    #[test]
    fn pods_are_found_by_the_selectors_rarest_pair_and_follow_label_changes() {
        let index = LabelIndex::default();
        let a = Arc::new(pod("a").label("app", "web").label("tier", "fe").build());
        let b = Arc::new(pod("b").label("app", "web").build());
        let c = Arc::new(
            pod("c")
                .ns("other")
                .label("app", "web")
                .label("tier", "fe")
                .build(),
        );
        for p in [&a, &b, &c] {
            index.on_add(p);
        }
        let selector: BTreeMap<String, String> =
            [("app".into(), "web".into()), ("tier".into(), "fe".into())].into();
        assert_eq!(
            index.pod_candidates("default", &selector),
            Some(vec![ObjectKey::new("default", "a")])
        );
        let moved = Arc::new(pod("a").label("app", "db").build());
        index.on_update(&a, &moved);
        assert_eq!(index.pod_candidates("default", &selector), Some(vec![]));
        index.on_delete(&b);
        let web: BTreeMap<String, String> = [("app".into(), "web".into())].into();
        assert_eq!(index.pod_candidates("default", &web), Some(vec![]));
    }

    #[test]
    fn services_are_found_by_any_shared_pair() {
        let index = LabelIndex::default();
        let web = Arc::new(service("web").build());
        let db = Arc::new(service("db").build());
        index.on_add(&web);
        index.on_add(&db);
        let labels: BTreeMap<String, String> =
            [("app".into(), "web".into()), ("x".into(), "y".into())].into();
        assert_eq!(
            index.service_candidates("default", &LabelSet::from(&labels)),
            [ObjectKey::new("default", "web")].into()
        );
        index.on_delete(&web);
        assert!(index
            .service_candidates("default", &LabelSet::from(&labels))
            .is_empty());
    }
}
