//! Whether the controllers have work to do: every queue empty, nothing in flight, nothing
//! due soon.
//!
//! `plan`, `conformance` and `dev --exit-when-synced` run the live controllers until they have
//! nothing left to do; this is how they ask. A key waiting out a long backoff (a sync that
//! keeps failing the same way) does not count as work, so a permanently failing Service does
//! not keep them waiting for ever.

use crate::queue::{QueueKey, WorkQueue};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

type Probe = Box<dyn Fn(Duration) -> bool + Send + Sync>;

/// A handle the caller keeps; [`crate::run`] registers its queues in it. Cheap to clone.
#[derive(Clone, Default)]
pub struct Activity(Arc<Mutex<Vec<Probe>>>);

impl std::fmt::Debug for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Activity").finish_non_exhaustive()
    }
}

impl Activity {
    /// A handle with no queues yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a queue to watch.
    pub fn watch<K: QueueKey>(&self, queue: &WorkQueue<K>) {
        let queue = queue.clone();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(move |horizon| queue.is_idle_within(horizon)));
    }

    /// True when at least one queue is registered and none has a key ready, in flight, or
    /// due within `horizon`.
    pub fn is_idle_within(&self, horizon: Duration) -> bool {
        let probes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        !probes.is_empty() && probes.iter().all(|idle| idle(horizon))
    }
}
