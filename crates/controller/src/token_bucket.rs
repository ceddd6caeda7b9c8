//! A token bucket that hands out reservations, the way client-go's rate limiters use one.
//!
//! client-go builds both its work-queue bucket (10 qps, burst 100) and its client-side request
//! limiter (`--kube-api-qps`/`--kube-api-burst`) on `golang.org/x/time/rate`, whose `Reserve`
//! takes a token now and says how long the caller must wait for it, letting the balance go
//! negative. A queue needs exactly that answer ("when may this key go?") for many keys at once:
//! governor's `check` only says when the next token frees up without taking it, so a hundred
//! failures in one instant would all get the same delay. The bucket reads `tokio::time`, so
//! tests drive it with a paused clock.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A shared token bucket: `rate` tokens per second, at most `burst` saved up.
///
/// The bucket starts full. Every [`reserve`](TokenBucket::reserve) takes one token whether or
/// not one is available, and returns how long the caller must wait before using it.
#[derive(Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket refilling at `rate` tokens per second and holding at most `burst`.
    ///
    /// A non-positive or non-finite `rate` disables the limit (every reservation is due at
    /// once); a `burst` of 0 is read as 1 so that the bucket can hand out tokens at all.
    pub fn new(rate: f64, burst: u32) -> Self {
        Self::new_at(rate, burst, Instant::now())
    }

    /// [`new`](Self::new), full at `now`.
    pub fn new_at(rate: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate,
            burst,
            state: Mutex::new(BucketState {
                tokens: burst,
                last: now,
            }),
        }
    }

    /// Whether this bucket limits anything at all.
    fn unlimited(&self) -> bool {
        !(self.rate.is_finite() && self.rate > 0.0)
    }

    /// Takes one token and returns how long to wait before it may be used (zero if now).
    pub fn reserve(&self) -> Duration {
        self.reserve_at(Instant::now())
    }

    /// [`reserve`](Self::reserve) at a given instant; `now` earlier than a previous call counts
    /// as that previous instant.
    pub fn reserve_at(&self, now: Instant) -> Duration {
        if self.unlimited() {
            return Duration::ZERO;
        }
        // The lock guards two numbers and is never held across an await; a poisoned lock can
        // only come from a panic in this very function, so its data is still consistent.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = now.saturating_duration_since(state.last).as_secs_f64();
        if now > state.last {
            state.last = now;
        }
        state.tokens = (state.tokens + elapsed * self.rate).min(self.burst);
        state.tokens -= 1.0;
        if state.tokens >= 0.0 {
            Duration::ZERO
        } else {
            // A tiny rate makes the wait longer than a Duration holds: saturate, not panic.
            Duration::try_from_secs_f64(-state.tokens / self.rate).unwrap_or(Duration::MAX)
        }
    }

    /// Takes a token if one is available at `now`, like client-go's `TryAccept`; a refused
    /// call takes nothing.
    pub fn try_take_at(&self, now: Instant) -> bool {
        if self.unlimited() {
            return true;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = now.saturating_duration_since(state.last).as_secs_f64();
        if now > state.last {
            state.last = now;
        }
        state.tokens = (state.tokens + elapsed * self.rate).min(self.burst);
        if state.tokens >= 1.0 {
            state.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn full_bucket_lets_the_burst_through_then_spaces_reservations_by_the_rate() {
        let bucket = TokenBucket::new(10.0, 100);
        for _ in 0..100 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(), Duration::from_millis(100));
        assert_eq!(bucket.reserve(), Duration::from_millis(200));
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_refills_with_time_up_to_the_burst() {
        let bucket = TokenBucket::new(2.0, 2);
        assert_eq!(bucket.reserve(), Duration::ZERO);
        assert_eq!(bucket.reserve(), Duration::ZERO);
        assert_eq!(bucket.reserve(), Duration::from_millis(500));
        tokio::time::advance(Duration::from_secs(10)).await;
        // Ten seconds refill at most two tokens, not twenty.
        assert_eq!(bucket.reserve(), Duration::ZERO);
        assert_eq!(bucket.reserve(), Duration::ZERO);
        assert_eq!(bucket.reserve(), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_too_small_for_a_duration_saturates_the_wait() {
        let bucket = TokenBucket::new(1e-300, 1);
        assert_eq!(bucket.reserve(), Duration::ZERO);
        assert_eq!(bucket.reserve(), Duration::MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_try_takes_nothing_so_the_next_token_comes_at_the_rate() {
        let bucket = TokenBucket::new(1.0, 1);
        let start = Instant::now();
        assert!(bucket.try_take_at(start));
        assert!(!bucket.try_take_at(start));
        assert!(!bucket.try_take_at(start + Duration::from_millis(999)));
        assert!(bucket.try_take_at(start + Duration::from_secs(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_rate_means_no_limit() {
        let bucket = TokenBucket::new(0.0, 1);
        for _ in 0..1000 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
    }
}
