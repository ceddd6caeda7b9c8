//! The endpoints one port group wants, keyed by identity, as the fill takes them.
//!
//! The fill looks up the endpoints of every existing slice by key, then packs what is left
//! smallest key first, so that the same input always gives the same slices. A `BTreeMap`
//! does both, but an [`Endpoint`] is a few hundred bytes, and every insert and removal shifts
//! whole endpoints (and keys) inside the map's nodes: at 10,000 endpoints that copying was
//! the largest single cost of a sync. Here the endpoints stay where they were pushed, and
//! only a list of their positions is sorted, once.

use crate::slice::endpoint::EndpointKey;
use k8s_openapi::api::discovery::v1::Endpoint;
use std::cmp::Ordering;

/// The wanted endpoints of one port group, by [`EndpointKey`]. Of endpoints given with equal
/// keys the last is kept, and [`pop_first`](Self::pop_first) takes the smallest key left, as
/// a map's would.
#[derive(Debug, Clone, Default)]
pub struct DesiredEndpoints {
    /// The endpoints, as they were given; a taken one is `None`.
    entries: Vec<(EndpointKey, Option<Endpoint>)>,
    /// Positions in `entries` by key, one per key.
    by_key: Vec<usize>,
    /// `by_key[..popped]` have been taken.
    popped: usize,
    /// Endpoints not yet taken.
    left: usize,
}

impl DesiredEndpoints {
    /// How many endpoints are left.
    pub fn len(&self) -> usize {
        self.left
    }

    /// Whether every endpoint has been taken.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// Takes the endpoint with this key, if one is left.
    pub fn remove(&mut self, key: &EndpointKey) -> Option<Endpoint> {
        let entries = &self.entries;
        let at = self
            .by_key
            .binary_search_by(|&i| entries[i].0.cmp(key))
            .ok()?;
        let taken = self.entries[self.by_key[at]].1.take();
        if taken.is_some() {
            self.left -= 1;
        }
        taken
    }

    /// Takes the endpoint with the smallest key left.
    pub fn pop_first(&mut self) -> Option<Endpoint> {
        while let Some(&i) = self.by_key.get(self.popped) {
            self.popped += 1;
            if let Some(endpoint) = self.entries[i].1.take() {
                self.left -= 1;
                return Some(endpoint);
            }
        }
        None
    }

    /// The endpoints left, to change in place (in the order given).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Endpoint> {
        self.entries.iter_mut().filter_map(|(_, e)| e.as_mut())
    }

    /// The endpoints left, by key.
    pub fn into_values(mut self) -> impl Iterator<Item = Endpoint> {
        let by_key = std::mem::take(&mut self.by_key);
        by_key
            .into_iter()
            .skip(self.popped)
            .filter_map(move |i| self.entries[i].1.take())
    }
}

impl FromIterator<(EndpointKey, Endpoint)> for DesiredEndpoints {
    /// Sorts the positions of the endpoints by key, once.
    fn from_iter<I: IntoIterator<Item = (EndpointKey, Endpoint)>>(iter: I) -> Self {
        let mut entries: Vec<(EndpointKey, Option<Endpoint>)> =
            iter.into_iter().map(|(k, e)| (k, Some(e))).collect();
        let mut by_key: Vec<usize> = (0..entries.len()).collect();
        // Equal keys sort latest first, so that the dedup keeps the last given.
        by_key.sort_unstable_by(|&a, &b| match entries[a].0.cmp(&entries[b].0) {
            Ordering::Equal => b.cmp(&a),
            unequal => unequal,
        });
        by_key.dedup_by(|later, kept| entries[*later].0 == entries[*kept].0);
        if by_key.len() != entries.len() {
            // Drop the replaced endpoints, so that only those kept are ever read.
            let mut kept = vec![false; entries.len()];
            for &i in &by_key {
                kept[i] = true;
            }
            for (entry, kept) in entries.iter_mut().zip(kept) {
                if !kept {
                    entry.1 = None;
                }
            }
        }
        Self {
            left: by_key.len(),
            entries,
            by_key,
            popped: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;

    fn endpoint(address: &str, pod: &str, node: &str) -> (EndpointKey, Endpoint) {
        let endpoint = Endpoint {
            addresses: vec![address.into()],
            node_name: Some(node.into()),
            target_ref: Some(ObjectReference {
                name: Some(pod.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        (EndpointKey::of(&endpoint), endpoint)
    }

    fn nodes(endpoints: impl Iterator<Item = Endpoint>) -> Vec<String> {
        endpoints.map(|e| e.node_name.unwrap_or_default()).collect()
    }

    #[test]
    fn pops_smallest_key_first_whatever_the_insert_order() {
        let mut desired: DesiredEndpoints = [
            endpoint("10.0.0.3", "c", "n3"),
            endpoint("10.0.0.1", "a", "n1"),
            endpoint("10.0.0.2", "b", "n2"),
        ]
        .into_iter()
        .collect();
        assert_eq!(desired.len(), 3);
        let popped = std::iter::from_fn(|| desired.pop_first());
        assert_eq!(nodes(popped), ["n1", "n2", "n3"]);
        assert!(desired.is_empty());
    }

    #[test]
    fn a_key_inserted_again_keeps_its_last_endpoint_once() {
        let (key, first) = endpoint("10.0.0.1", "a", "old");
        let (_, second) = endpoint("10.0.0.1", "a", "new");
        let mut desired: DesiredEndpoints = [
            (key.clone(), first),
            endpoint("10.0.0.2", "b", "n2"),
            (key.clone(), second),
        ]
        .into_iter()
        .collect();
        assert_eq!(desired.len(), 2);
        assert_eq!(
            desired.remove(&key).unwrap().node_name.as_deref(),
            Some("new")
        );
        assert_eq!(desired.remove(&key), None);
        assert_eq!(nodes(desired.clone().into_values()), ["n2"]);
        assert_eq!(nodes(desired.pop_first().into_iter()), ["n2"]);
        assert!(desired.is_empty());
        assert_eq!(desired.pop_first(), None);
    }

    #[test]
    fn removal_and_popping_take_each_endpoint_once() {
        let mut desired: DesiredEndpoints = (0..20)
            .map(|i| {
                endpoint(
                    &format!("10.0.0.{i}"),
                    &format!("p{i:02}"),
                    &format!("n{i}"),
                )
            })
            .collect();
        let (key_5, _) = endpoint("10.0.0.5", "p05", "");
        let (key_10, _) = endpoint("10.0.0.10", "p10", "");
        assert_eq!(
            desired.remove(&key_5).unwrap().node_name.as_deref(),
            Some("n5")
        );
        // "10.0.0.0" < "10.0.0.1" < "10.0.0.10": keys sort as text.
        assert_eq!(nodes(desired.pop_first().into_iter()), ["n0"]);
        assert_eq!(nodes(desired.pop_first().into_iter()), ["n1"]);
        assert_eq!(
            desired.remove(&key_10).unwrap().node_name.as_deref(),
            Some("n10")
        );
        assert_eq!(desired.len(), 16);
        for endpoint in desired.values_mut() {
            endpoint.hostname = Some("seen".into());
        }
        let rest: Vec<Endpoint> = desired.clone().into_values().collect();
        assert_eq!(rest.len(), 16);
        assert!(rest.iter().all(|e| e.hostname.as_deref() == Some("seen")));
        assert_eq!(
            nodes(rest.into_iter()),
            [
                "n11", "n12", "n13", "n14", "n15", "n16", "n17", "n18", "n19", "n2", "n3", "n4",
                "n6", "n7", "n8", "n9"
            ]
        );
        assert_eq!(desired.remove(&key_5), None);
    }
}
