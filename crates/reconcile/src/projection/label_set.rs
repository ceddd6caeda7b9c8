//! A pod's labels, kept compactly.
//!
//! The pod store holds one label set per pod, and a `BTreeMap<String, String>` costs a whole
//! B-tree leaf (about 540 bytes) even for the one or two labels a pod usually has. Pods'
//! labels are only looked up and compared, never edited in place, so a boxed slice of pairs
//! sorted by key does the same job in a tenth of the space. Keys and values of up to 24 bytes
//! (`app`, `pod-template-hash` and its value, most names) are kept inside the pair, so a pod's
//! labels are one allocation.

use compact_str::CompactString;
use std::collections::BTreeMap;

/// Label pairs sorted by key, each key once.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct LabelSet(Box<[(CompactString, CompactString)]>);

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

impl From<&BTreeMap<String, String>> for LabelSet {
    fn from(map: &BTreeMap<String, String>) -> Self {
        // A BTreeMap iterates in key order, so the pairs come out sorted.
        Self(
            map.iter()
                .map(|(k, v)| (CompactString::from(k), CompactString::from(v)))
                .collect(),
        )
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
    fn a_set_costs_far_less_than_a_map_leaf() {
        let set = LabelSet::from(&map(&[("app", "web"), ("pod-template-hash", "5d8f7c")]));
        assert!(set.heap_bytes() < 120, "{}", set.heap_bytes());
    }
}
