//! A pod's labels, kept compactly.
//!
//! The pod store holds one label set per pod, and a `BTreeMap<String, String>` costs a whole
//! B-tree leaf (about 540 bytes) even for the one or two labels a pod usually has. Pods'
//! labels are only looked up and compared, never edited in place, so a boxed slice of pairs
//! sorted by key does the same job in a tenth of the space. Keys and values of up to 24 bytes
//! (`app`, `pod-template-hash` and its value, most names) are kept inside the pair, so a pod's
//! labels are one allocation, and pods with the same labels (a ReplicaSet's) can share it
//! through an [`Interner`](super::Interner) (see [`LabelSet::interned`]).

use compact_str::CompactString;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The pairs of a [`LabelSet`], sorted by key.
pub type LabelPairs = [(CompactString, CompactString)];

/// Label pairs sorted by key, each key once.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct LabelSet(Arc<LabelPairs>);

impl LabelSet {
    /// The value of `key`, if the set has it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .and_then(|i| self.0.get(i))
            .map(|(_, v)| &**v)
    }

    /// The pairs, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// How many labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes on the heap (the pairs and their text), for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        self.0.len() * std::mem::size_of::<(CompactString, CompactString)>()
            + self
                .0
                .iter()
                .map(|(k, v)| super::heap_bytes(k) + super::heap_bytes(v))
                .sum::<usize>()
    }

    /// The set with `key` set to `value` (builders and tests; the store never edits labels).
    #[must_use]
    pub fn with(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let mut map = self.to_map();
        map.insert(key.into(), value.into());
        Self::from(&map)
    }

    /// The labels as a map.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

impl LabelSet {
    /// The set of `map`'s labels, sharing its pairs with every other set `interner` handed
    /// out with the same labels.
    pub fn interned(
        map: &BTreeMap<String, String>,
        interner: &mut super::Interner<LabelPairs>,
    ) -> Self {
        Self(interner.intern(pairs(map)))
    }
}

/// A map's pairs; a BTreeMap iterates in key order, so they come out sorted.
fn pairs(map: &BTreeMap<String, String>) -> Vec<(CompactString, CompactString)> {
    map.iter()
        .map(|(k, v)| (CompactString::from(k), CompactString::from(v)))
        .collect()
}

impl From<&BTreeMap<String, String>> for LabelSet {
    fn from(map: &BTreeMap<String, String>) -> Self {
        Self(pairs(map).into())
    }
}

impl std::fmt::Debug for LabelSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Labels a selector can be matched against: a pod's [`LabelSet`], or any object's map.
pub trait Labels {
    /// The value of `key`, if present.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for LabelSet {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::label_map as map;

    #[test]
    fn lookups_and_iteration_follow_the_map_it_was_made_from() {
        let m = map(&[("tier", "fe"), ("app", "web"), ("zone", "")]);
        let set = LabelSet::from(&m);
        assert_eq!(set.get("app"), Some("web"));
        assert_eq!(set.get("tier"), Some("fe"));
        assert_eq!(set.get("zone"), Some(""));
        assert_eq!(set.get("missing"), None);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [("app", "web"), ("tier", "fe"), ("zone", "")]
        );
        assert_eq!(set.to_map(), m);
        assert_eq!(set.len(), 3);
        assert!(LabelSet::default().is_empty());
    }

    #[test]
    fn sets_with_the_same_pairs_are_equal_and_with_replaces_a_value() {
        let a = LabelSet::from(&map(&[("app", "web")]));
        let b = LabelSet::default().with("app", "web");
        assert_eq!(a, b);
        assert_ne!(a, b.clone().with("app", "db"));
        assert_eq!(b.with("app", "db").get("app"), Some("db"));
    }

    #[test]
    fn interned_sets_with_the_same_labels_share_their_pairs() {
        let mut interner = crate::projection::Interner::default();
        let m = map(&[("app", "web"), ("pod-template-hash", "5d8f7c")]);
        let a = LabelSet::interned(&m, &mut interner);
        let b = LabelSet::interned(&m.clone(), &mut interner);
        let other = LabelSet::interned(&map(&[("app", "db")]), &mut interner);
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, LabelSet::from(&m));
        assert_ne!(a, other);
        assert!(LabelSet::interned(&BTreeMap::new(), &mut interner).is_empty());
    }

    #[test]
    fn a_set_costs_far_less_than_a_map_leaf() {
        let set = LabelSet::from(&map(&[("app", "web"), ("pod-template-hash", "5d8f7c")]));
        assert!(set.heap_bytes() < 120, "{}", set.heap_bytes());
    }
}
