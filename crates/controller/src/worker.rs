//! The worker loop both controllers run: take a key, sync it, retry failures with backoff,
//! give up after the retry limit.

use crate::queue::{QueueKey, Retry, WorkQueue};
use std::future::Future;

/// Syncs of one key are retried at most this often before the key is dropped (upstream's
/// maxRetries); a later event queues it afresh.
pub const MAX_RETRIES: u32 = 15;

/// Why a sync failed.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The informer cache is behind our own writes; retry once it caught up.
    #[error("stale informer cache: {0}")]
    Stale(String),
    /// Anything else (a write failed, a pod's node is unknown, ...).
    #[error("{0}")]
    Failed(String),
}

/// Runs until the queue shuts down.
pub async fn run_worker<K, F, Fut>(queue: WorkQueue<K>, sync: F)
where
    K: QueueKey + std::fmt::Display,
    F: Fn(K) -> Fut,
    Fut: Future<Output = Result<(), SyncError>>,
{
    while let Some(key) = queue.get().await {
        match sync(key.clone()).await {
            Ok(()) => queue.forget(&key),
            Err(err) => match queue.retry_or_forget(key.clone(), MAX_RETRIES) {
                Retry::Scheduled => {
                    tracing::debug!(key = %key, %err, queue = queue.name(), "sync failed, retrying")
                }
                Retry::GaveUp => {
                    tracing::warn!(key = %key, %err, queue = queue.name(), "dropping key after repeated failures")
                }
            },
        }
        queue.done(&key);
    }
}
