//! How long a failed key waits before its next try: client-go's controller rate limiter.
//!
//! Upstream combines, by taking the longer wait, a per-key exponential backoff (which doubles
//! with every failure of that key and resets when the key is forgotten) and one token bucket
//! shared by all keys (which caps the retry rate of the whole queue when many keys fail at
//! once). The slice controller starts its backoff at 1s, the Endpoints controller and the
//! topology queue at 5ms; all cap it at 1000s and share a 10 qps / burst 100 bucket.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use crate::token_bucket::TokenBucket;

/// The settings of a [`RateLimiter`].
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffConfig {
    /// The wait after a key's first failure; it doubles with each further failure.
    pub base_delay: Duration,
    /// The longest per-key wait.
    pub max_delay: Duration,
    /// Refill rate of the bucket shared by all keys, in retries per second.
    pub qps: f64,
    /// Retries the shared bucket lets through at once.
    pub burst: u32,
}

impl BackoffConfig {
    /// The EndpointSlice controller's limiter: 1s..1000s per key, 10 qps / burst 100 shared.
    pub fn endpoint_slice() -> Self {
        Self {
            base_delay: Duration::from_secs(1),
            ..Self::controller_default()
        }
    }

    /// client-go's `DefaultControllerRateLimiter`: 5ms..1000s per key, 10 qps / burst 100
    /// shared. The Endpoints controller and the slice controller's topology queue use it.
    pub fn controller_default() -> Self {
        Self {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            qps: 10.0,
            burst: 100,
        }
    }
}

/// Per-key exponential backoff combined by max with a shared token bucket.
#[derive(Debug)]
pub struct RateLimiter<K> {
    config: BackoffConfig,
    failures: HashMap<K, u32>,
    bucket: TokenBucket,
}

impl<K: Eq + Hash + Clone> RateLimiter<K> {
    /// A limiter with no failures recorded and a full bucket.
    pub fn new(config: BackoffConfig) -> Self {
        let bucket = TokenBucket::new(config.qps, config.burst);
        Self {
            config,
            failures: HashMap::new(),
            bucket,
        }
    }

    /// Records one more failure of `key` and returns how long it must wait before its retry.
    pub fn when(&mut self, key: &K) -> Duration {
        let failures = self.failures.entry(key.clone()).or_insert(0);
        let exponent = *failures;
        *failures = failures.saturating_add(1);
        let per_key = exponential(self.config.base_delay, self.config.max_delay, exponent);
        per_key.max(self.bucket.reserve())
    }

    /// How many failures of `key` have been recorded since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    /// Clears the failure count of `key`, so its next failure waits the base delay again.
    pub fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }
}

/// `base * 2^exponent`, capped at `max` (also when the product overflows).
fn exponential(base: Duration, max: Duration, exponent: u32) -> Duration {
    2u32.checked_pow(exponent)
        .and_then(|factor| base.checked_mul(factor))
        .map_or(max, |delay| delay.min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unlimited_bucket(base: Duration, max: Duration) -> BackoffConfig {
        BackoffConfig {
            base_delay: base,
            max_delay: max,
            qps: 0.0,
            burst: 1,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn per_key_backoff_doubles_from_the_base_and_stops_at_the_cap() {
        let mut limiter = RateLimiter::new(unlimited_bucket(
            Duration::from_secs(1),
            Duration::from_secs(10),
        ));
        let waits: Vec<u64> = (0..6).map(|_| limiter.when(&"a").as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 10, 10]);
        assert_eq!(limiter.num_requeues(&"a"), 6);
    }

    /// The EndpointSlice controller's limiter after `failures`, one key each.
    fn after_failures(failures: &[&'static str]) -> RateLimiter<&'static str> {
        let mut limiter = RateLimiter::new(BackoffConfig::endpoint_slice());
        for key in failures {
            limiter.when(key);
        }
        limiter
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_is_counted_per_key() {
        let mut limiter = after_failures(&["a", "a"]);
        assert_eq!(limiter.when(&"b"), Duration::from_secs(1));
        assert_eq!(limiter.num_requeues(&"a"), 2);
        assert_eq!(limiter.num_requeues(&"b"), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn forget_resets_the_backoff_of_a_key() {
        let mut limiter = after_failures(&["a", "a"]);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn endpoints_backoff_starts_at_five_milliseconds() {
        let mut limiter = RateLimiter::new(BackoffConfig::controller_default());
        assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
        assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
    }

    #[tokio::test(start_paused = true)]
    async fn shared_bucket_wins_when_many_keys_fail_at_once() {
        let mut limiter = RateLimiter::new(BackoffConfig::controller_default());
        for i in 0..100 {
            assert_eq!(limiter.when(&i), Duration::from_millis(5));
        }
        // The 101st failure in the same instant waits for the bucket, not its own 5ms.
        assert_eq!(limiter.when(&100), Duration::from_millis(100));
    }

    #[test]
    fn huge_exponents_saturate_at_the_cap() {
        let max = Duration::from_secs(1000);
        assert_eq!(exponential(Duration::from_secs(1), max, 40), max);
        assert_eq!(exponential(Duration::from_secs(1), max, u32::MAX), max);
    }
}
