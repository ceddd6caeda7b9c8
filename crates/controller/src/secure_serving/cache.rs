//! Answers of the API server's reviews, kept for a while.
//!
//! Upstream caches TokenReview and SubjectAccessReview answers (10s by default) so a scraper
//! costs the API server two calls per TTL, not two per scrape. Entries expire by
//! `tokio::time`, so tests can move a paused clock past the TTL; the cache is bounded, and
//! when full it first drops what expired, then everything (a storm of distinct tokens should
//! cost review calls, not memory).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use kube::api::PostParams;
use kube::{Api, Client};
use tokio::time::Instant;

/// Entries kept at most; upstream's authorization cache holds 1024 too.
const CAPACITY: usize = 1024;

/// A map whose entries expire.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// An empty cache.
    pub fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The value under `key`, if it has not expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(key)
            .filter(|(expires, _)| Instant::now() < *expires)
            .map(|(_, value)| value.clone())
    }

    /// The value under `key` if it has not expired; else what `fetch` gives, kept for the
    /// TTL `ttl_of` gives it. A failed fetch is not kept, so the next call asks again.
    pub async fn get_or_fetch<E>(
        &self,
        key: K,
        fetch: impl Future<Output = Result<V, E>>,
        ttl_of: impl FnOnce(&V) -> Duration,
    ) -> Result<V, E> {
        if let Some(value) = self.get(&key) {
            return Ok(value);
        }
        let value = fetch.await?;
        self.insert(key, value.clone(), ttl_of(&value));
        Ok(value)
    }

    /// Keeps `value` under `key` for `ttl` (a zero TTL keeps nothing).
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.retain(|_, (expires, _)| now < *expires);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (now + ttl, value));
    }
}

impl<K: Eq + Hash, V: Clone> Default for TtlCache<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

/// Sends `review` (a TokenReview or SubjectAccessReview) and returns the API server's answer.
pub async fn review<R>(client: &Client, review: &R) -> kube::Result<R>
where
    R: kube::Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    Api::<R>::all(client.clone())
        .create(&PostParams::default(), review)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_entry_is_kept_for_its_ttl_and_no_longer() {
        let cache = TtlCache::new();
        cache.insert("a", 1, Duration::from_secs(10));
        cache.insert("zero", 2, Duration::ZERO);
        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert_eq!(cache.get(&"a"), Some(1));
        assert_eq!(cache.get(&"zero"), None);
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(cache.get(&"a"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_makes_room_instead_of_growing() {
        let cache = TtlCache::new();
        for i in 0..CAPACITY {
            cache.insert(i, i, Duration::from_secs(10));
        }
        cache.insert(CAPACITY, CAPACITY, Duration::from_secs(10));
        assert_eq!(cache.get(&CAPACITY), Some(CAPACITY));
        assert_eq!(cache.get(&0), None);
    }
}
