//! Service selector matching: the one implementation every caller uses.

use crate::projection::Labels;
use std::collections::BTreeMap;

/// True when every key of the selector is a label of the pod with the same value. An empty
/// selector matches everything; callers treat a Service without a selector separately (it
/// matches nothing).
pub fn selector_matches(selector: &BTreeMap<String, String>, labels: &impl Labels) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.label(k) == Some(v.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::label_map as map;

    #[test]
    fn selector_needs_every_pair() {
        let labels = map(&[("app", "web"), ("tier", "fe")]);
        assert!(selector_matches(&map(&[("app", "web")]), &labels));
        assert!(!selector_matches(
            &map(&[("app", "web"), ("tier", "be")]),
            &labels
        ));
        assert!(!selector_matches(&map(&[("zone", "a")]), &labels));
    }
}
