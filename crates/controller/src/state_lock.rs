//! The lock around a controller's state between syncs (trackers, caches).
//!
//! The state is plain data changed by short, non-async critical sections, so a std mutex is
//! right. A panic while holding it cannot leave it half-written in a way that matters more
//! than stopping the controller, so a poisoned lock is taken over rather than propagated.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A mutex whose poisoning is ignored. Never hold its guard across an await.
#[derive(Debug, Default)]
pub struct StateLock<T>(Mutex<T>);

impl<T> StateLock<T> {
    /// Wraps `state`.
    pub fn new(state: T) -> Self {
        Self(Mutex::new(state))
    }

    /// Locks the state.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
