//! Counting the load generator's own requests, so that the controller's share of the API
//! server's counters is the total minus ours.
//!
//! The classification follows the embedded API server's (verb from the method, the name in the
//! path and `watch=`; resource `pods` or `pods/status`), so both sides of the subtraction
//! use the same keys.

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

/// The `(verb, resource)` of a request, or `None` for paths that are not resources
/// (discovery, /version), which the API server does not count either.
pub fn classify(method: &http::Method, uri: &http::Uri) -> Option<(String, String)> {
    let path = uri.path();
    let rest = if let Some(rest) = path.strip_prefix("/api/v1/") {
        rest
    } else {
        let rest = path.strip_prefix("/apis/")?;
        // Skip the group and the version.
        let mut it = rest.splitn(3, '/');
        it.next()?;
        it.next()?;
        it.next()?
    };
    let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let (plural, tail) = match parts.as_slice() {
        ["namespaces", _, plural, tail @ ..] => (*plural, tail),
        [plural, tail @ ..] => (*plural, tail),
        [] => return None,
    };
    let named = !tail.is_empty();
    let status = tail.get(1) == Some(&"status");
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match (method.as_str(), named) {
        ("GET", true) => "get",
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return None,
    };
    let resource = if status {
        format!("{plural}/status")
    } else {
        plural.to_owned()
    };
    Some((verb.to_owned(), resource))
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
        if let Some(key) = classify(request.method(), request.uri()) {
            self.counter.add(key);
        }
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(method: &str, uri: &str) -> Option<(String, String)> {
        classify(&method.parse().unwrap(), &uri.parse().unwrap())
            .map(|(v, r)| (v.clone(), r.clone()))
    }

    fn k(v: &str, r: &str) -> Option<(String, String)> {
        Some((v.to_owned(), r.to_owned()))
    }

    #[test]
    fn requests_are_classified_like_the_api_server_counts_them() {
        assert_eq!(c("GET", "/api/v1/namespaces/a/pods"), k("list", "pods"));
        assert_eq!(
            c(
                "GET",
                "/api/v1/namespaces/a/pods?watch=true&resourceVersion=1"
            ),
            k("watch", "pods")
        );
        assert_eq!(
            c("PATCH", "/api/v1/namespaces/a/pods/p/status"),
            k("patch", "pods/status")
        );
        assert_eq!(
            c(
                "PUT",
                "/apis/discovery.k8s.io/v1/namespaces/a/endpointslices/s"
            ),
            k("update", "endpointslices")
        );
        assert_eq!(c("POST", "/api/v1/namespaces"), k("create", "namespaces"));
        assert_eq!(
            c("DELETE", "/api/v1/namespaces/a"),
            k("delete", "namespaces")
        );
        assert_eq!(
            c("PATCH", "/api/v1/nodes/n/status"),
            k("patch", "nodes/status")
        );
        assert_eq!(c("GET", "/api"), None);
        assert_eq!(c("GET", "/version"), None);
    }
}
