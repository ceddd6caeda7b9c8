//! Fault injection: errors, latency, dropped watches and forced 410s, set at runtime.
//!
//! The controllers must survive a flaky API server: failed writes are retried by the queue,
//! conflicts send a sync back to the informer cache, a closed watch is re-opened and a 410
//! forces a re-list. These knobs make each of those paths happen on demand. Random decisions
//! come from the server's seed, so a test that sets a 30% error rate sees the same failures for
//! the same sequence of requests.
//!
//! Verbs are `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` and
//! `deletecollection`; resources are plurals with an optional subresource (`pods`,
//! `pods/status`, `endpointslices`). `"*"` matches any verb or resource.

use crate::random::SeededRng;
use crate::status::ApiError;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

/// The error an injected failure answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultResponse {
    /// 500 InternalError.
    InternalError,
    /// 429 TooManyRequests with `Retry-After: 1`.
    TooManyRequests,
    /// 409 Conflict, as if the object had changed under the writer.
    Conflict,
    /// 403 Forbidden, as if RBAC did not grant the request.
    Forbidden,
}

#[derive(Debug)]
struct ErrorRule {
    verb: String,
    resource: String,
    rate: f64,
    response: FaultResponse,
    remaining: Option<u64>,
}

#[derive(Debug)]
struct LatencyRule {
    verb: String,
    resource: String,
    delay: Duration,
}

#[derive(Debug)]
struct FaultState {
    rng: SeededRng,
    errors: Vec<ErrorRule>,
    latencies: Vec<LatencyRule>,
    watch_event_limit: Option<u64>,
    expire_next: Vec<String>,
}

/// What the server should do with one request before serving it.
#[derive(Debug, Default)]
pub(crate) struct Decision {
    /// Added latency.
    pub delay: Duration,
    /// The injected error, if the request fails.
    pub error: Option<ApiError>,
}

/// The fault settings of one server. Get it from `ApiServer::faults`.
#[derive(Debug)]
pub struct Faults {
    state: Mutex<FaultState>,
    drops: watch::Sender<u64>,
}

fn matches(pattern: &str, value: &str) -> bool {
    pattern == "*" || pattern == value
}

impl Faults {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            state: Mutex::new(FaultState {
                rng: SeededRng::new(seed ^ 0x5EED_FA17),
                errors: Vec::new(),
                latencies: Vec::new(),
                watch_event_limit: None,
                expire_next: Vec::new(),
            }),
            drops: watch::Sender::new(0),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, FaultState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails a share `rate` (0.0 to 1.0) of matching requests with a 500.
    pub fn fail(&self, verb: &str, resource: &str, rate: f64) {
        self.fail_with(verb, resource, rate, FaultResponse::InternalError);
    }

    /// Fails a share `rate` of matching requests with the given response.
    pub fn fail_with(&self, verb: &str, resource: &str, rate: f64, response: FaultResponse) {
        self.state().errors.push(ErrorRule {
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            rate: rate.clamp(0.0, 1.0),
            response,
            remaining: None,
        });
    }

    /// Fails exactly the next `count` matching requests with the given response.
    pub fn fail_next(&self, verb: &str, resource: &str, count: u64, response: FaultResponse) {
        self.state().errors.push(ErrorRule {
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            rate: 1.0,
            response,
            remaining: Some(count),
        });
    }

    /// Delays every matching request by `delay` before it is served (delays of several
    /// matching rules add up).
    pub fn add_latency(&self, verb: &str, resource: &str, delay: Duration) {
        self.state().latencies.push(LatencyRule {
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            delay,
        });
    }

    /// Closes every watch opened from now on after it has sent `limit` events (`None`: never).
    pub fn drop_watches_after_events(&self, limit: Option<u64>) {
        self.state().watch_event_limit = limit;
    }

    /// Closes every open watch connection now; clients see the stream end and re-watch.
    pub fn drop_watches(&self) {
        self.drops.send_modify(|generation| *generation += 1);
    }

    /// Closes every watch that is open at `deadline`. Must be called inside a Tokio runtime.
    pub fn drop_watches_at(&self, deadline: tokio::time::Instant) {
        let drops = self.drops.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            drops.send_modify(|generation| *generation += 1);
        });
    }

    /// Answers the next watch of `resource` (or of any resource, with `"*"`) with an ERROR
    /// event carrying a 410 Expired Status, as a server whose history has moved on would.
    pub fn expire_next_watch(&self, resource: &str) {
        self.state().expire_next.push(resource.to_owned());
    }

    /// Removes every error, latency and watch rule (open watches are left alone).
    pub fn clear(&self) {
        let mut state = self.state();
        state.errors.clear();
        state.latencies.clear();
        state.watch_event_limit = None;
        state.expire_next.clear();
    }

    /// Decides the fate of one request.
    pub(crate) fn decide(&self, verb: &str, resource: &str, name: &str) -> Decision {
        let mut state = self.state();
        let delay = state
            .latencies
            .iter()
            .filter(|l| matches(&l.verb, verb) && matches(&l.resource, resource))
            .map(|l| l.delay)
            .sum();
        let mut error = None;
        let FaultState { rng, errors, .. } = &mut *state;
        for rule in errors.iter_mut() {
            if !(matches(&rule.verb, verb) && matches(&rule.resource, resource)) {
                continue;
            }
            if rule.remaining == Some(0) {
                continue;
            }
            // Only draw when the outcome is uncertain, so certain rules do not shift the
            // sequence other rules see.
            let hit = rule.rate >= 1.0 || (rule.rate > 0.0 && rng.next_f64() < rule.rate);
            if hit {
                if let Some(left) = rule.remaining.as_mut() {
                    *left -= 1;
                }
                error = Some(match rule.response {
                    FaultResponse::InternalError => {
                        ApiError::internal(format!("injected fault for {verb} {resource}"))
                    }
                    FaultResponse::TooManyRequests => ApiError::too_many_requests(),
                    FaultResponse::Conflict => ApiError::injected_conflict(resource, name),
                    FaultResponse::Forbidden => ApiError::injected_forbidden(verb, resource, name),
                });
                break;
            }
        }
        errors.retain(|rule| rule.remaining != Some(0));
        Decision { delay, error }
    }

    /// Whether this watch of `resource` must be answered with a 410 (consumes the setting).
    pub(crate) fn take_forced_expiry(&self, resource: &str) -> bool {
        let mut state = self.state();
        match state.expire_next.iter().position(|r| matches(r, resource)) {
            Some(i) => {
                state.expire_next.remove(i);
                true
            }
            None => false,
        }
    }

    /// The event limit for a watch opened now.
    pub(crate) fn watch_event_limit(&self) -> Option<u64> {
        self.state().watch_event_limit
    }

    /// A receiver that changes whenever watches must be dropped.
    pub(crate) fn drop_signal(&self) -> watch::Receiver<u64> {
        self.drops.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_next_fails_exactly_that_many_requests() {
        let faults = Faults::new(1);
        faults.fail_next("update", "endpointslices", 2, FaultResponse::Conflict);
        let codes: Vec<Option<u16>> = (0..3)
            .map(|_| {
                faults
                    .decide("update", "endpointslices", "s")
                    .error
                    .map(|e| e.code())
            })
            .collect();
        assert_eq!(codes, vec![Some(409), Some(409), None]);
        assert!(faults.decide("update", "pods", "p").error.is_none());
    }

    #[test]
    fn error_rates_are_reproducible_for_a_seed() {
        let run = |seed| {
            let faults = Faults::new(seed);
            faults.fail_with("*", "pods", 0.5, FaultResponse::TooManyRequests);
            (0..64)
                .map(|_| faults.decide("get", "pods", "p").error.is_some())
                .collect::<Vec<_>>()
        };
        let first = run(9);
        assert_eq!(first, run(9));
        let failures = first.iter().filter(|f| **f).count();
        assert!(
            (10..54).contains(&failures),
            "{failures} of 64 failed at rate 0.5"
        );
    }

    #[test]
    fn latency_rules_add_up_for_matching_requests() {
        let faults = Faults::new(1);
        faults.add_latency("*", "*", Duration::from_millis(5));
        faults.add_latency("list", "pods", Duration::from_millis(10));
        assert_eq!(
            faults.decide("list", "pods", "").delay,
            Duration::from_millis(15)
        );
        assert_eq!(
            faults.decide("get", "nodes", "n").delay,
            Duration::from_millis(5)
        );
    }

    #[test]
    fn forced_expiry_applies_to_one_watch() {
        let faults = Faults::new(1);
        faults.expire_next_watch("pods");
        assert!(!faults.take_forced_expiry("services"));
        assert!(faults.take_forced_expiry("pods"));
        assert!(!faults.take_forced_expiry("pods"));
    }
}
