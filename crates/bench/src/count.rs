//! Counting the load generator's own requests, so that the controller's share of the API
//! server's counters is the total minus ours.
//!
//! Requests are classified by the embedded API server's own classifier
//! ([`apiserver::classify`]), so both sides of the subtraction use the same keys.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

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

/// A tower layer counting every request that passes through it.
#[derive(Debug, Clone)]
pub struct CountLayer(pub RequestCounter);

impl<S> tower::Layer<S> for CountLayer {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counter: self.0.clone(),
        }
    }
}

/// The service made by [`CountLayer`].
#[derive(Debug, Clone)]
pub struct Counted<S> {
    inner: S,
    counter: RequestCounter,
}

impl<S, B> tower::Service<http::Request<B>> for Counted<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if let Some(class) = apiserver::classify::classify(request.method(), request.uri()) {
            self.counter.add((class.verb.to_owned(), class.resource));
        }
        self.inner.call(request)
    }
}
