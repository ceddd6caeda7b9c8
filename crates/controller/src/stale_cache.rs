//! Telling a cache that lags from a cache that is wrong.
//!
//! An update is sent with the resourceVersion the informer's cache holds; a 409 Conflict says
//! the server has another. Normally the watch brings the newer object within milliseconds and
//! the retry goes through, so upstream simply retries. But a server that came back with
//! other state (a restart onto restored storage) on resourceVersions that let the watch
//! resume never sends the objects it holds from before: the cache keeps the old object, and
//! every retry is refused for the same resourceVersion. After a few refusals of the same
//! resourceVersion over some time, the informer is asked to list again.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Refusals of one resourceVersion before the cache is taken as wrong.
const REFUSALS: u32 = 3;

/// And the time they must span: longer than any watch takes to deliver under load.
const SPAN: Duration = Duration::from_secs(2);

/// The conflicts seen per object (by `namespace/name`) for the resourceVersion it was sent with.
#[derive(Debug, Default)]
pub struct Conflicts {
    seen: HashMap<String, Seen>,
}

#[derive(Debug)]
struct Seen {
    resource_version: String,
    refusals: u32,
    first: Instant,
}

impl Conflicts {
    /// Notes that an update of `object` sent with `resource_version` was refused as a
    /// conflict at `now`. True when the cache should be listed again: the same
    /// resourceVersion has been refused often enough, for long enough (the count then
    /// starts over).
    pub fn refused(&mut self, object: &str, resource_version: &str, now: Instant) -> bool {
        let seen = self.seen.entry(object.to_owned()).or_insert_with(|| Seen {
            resource_version: resource_version.to_owned(),
            refusals: 0,
            first: now,
        });
        if seen.resource_version != resource_version {
            // The cache moved on: it lags, it is not wrong.
            *seen = Seen {
                resource_version: resource_version.to_owned(),
                refusals: 0,
                first: now,
            };
        }
        seen.refusals += 1;
        let wrong = seen.refusals >= REFUSALS && now.duration_since(seen.first) >= SPAN;
        if wrong {
            self.seen.remove(object);
        }
        wrong
    }

    /// Forgets `object` once a write of it went through.
    pub fn written(&mut self, object: &str) {
        self.seen.remove(object);
    }
}

/// Whether a write failed as a 409 Conflict.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_resource_version_refused_again_and_again_means_a_wrong_cache() {
        let mut c = Conflicts::default();
        let t0 = Instant::now();
        assert!(!c.refused("ns/a", "5", t0));
        assert!(!c.refused("ns/a", "5", t0 + Duration::from_millis(10)));
        // Three refusals, but within a watch's delivery time: still just lagging.
        assert!(!c.refused("ns/a", "5", t0 + Duration::from_millis(30)));
        assert!(c.refused("ns/a", "5", t0 + Duration::from_secs(3)));
        // Counting starts over after the re-list was asked for.
        assert!(!c.refused("ns/a", "5", t0 + Duration::from_secs(4)));
    }

    #[test]
    fn a_cache_that_moves_on_or_a_write_that_goes_through_starts_over() {
        let mut c = Conflicts::default();
        let t0 = Instant::now();
        c.refused("ns/a", "5", t0);
        c.refused("ns/a", "5", t0 + Duration::from_secs(1));
        assert!(!c.refused("ns/a", "6", t0 + Duration::from_secs(3)));
        c.refused("ns/b", "1", t0);
        c.refused("ns/b", "1", t0 + Duration::from_secs(1));
        c.written("ns/b");
        assert!(!c.refused("ns/b", "1", t0 + Duration::from_secs(3)));
    }
}
