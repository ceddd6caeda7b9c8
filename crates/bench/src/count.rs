//! Counting the load generator's own requests, so that the controller's share of the API
//! server's counters is the total minus ours.
//!
//! Requests are classified by the embedded API server's own classifier
//! ([`apiserver::classify`]), so both sides of the subtraction use the same keys.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Requests by `(verb, resource)`.
pub type Counts = BTreeMap<(String, String), u64>;

/// A shared request counter; clones count into the same map.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(Arc<Mutex<Counts>>);

impl RequestCounter {
    /// The counts so far.
    pub fn snapshot(&self) -> Counts {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A tower layer counting every request that passes through it into this counter.
    pub fn layer<B>(
        &self,
    ) -> tower::util::MapRequestLayer<impl FnMut(http::Request<B>) -> http::Request<B> + Clone>
    {
        let counter = self.clone();
        tower::util::MapRequestLayer::new(move |request: http::Request<B>| {
            if let Some(class) = apiserver::classify::classify(request.method(), request.uri()) {
                counter.add((class.verb.to_owned(), class.resource));
            }
            request
        })
    }

    fn add(&self, key: (String, String)) {
        *self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default() += 1;
    }
}

/// `after - before`, dropping zeros.
pub fn difference(after: &Counts, before: &Counts) -> Counts {
    after
        .iter()
        .filter_map(|(k, v)| {
            let d = v.saturating_sub(before.get(k).copied().unwrap_or(0));
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}
