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

impl SyncError {
    /// The `result` label of a sync counter: success, stale or error.
    pub fn result_label(result: &Result<(), SyncError>) -> &'static str {
        match result {
            Ok(()) => "success",
            Err(SyncError::Stale(_)) => "stale",
            Err(SyncError::Failed(_)) => "error",
        }
    }
}

/// Queues keys after the batch period (at once when it is zero), as pod events are.
pub fn queue_after<K: QueueKey>(
    queue: &WorkQueue<K>,
    keys: Vec<K>,
    batch_period: std::time::Duration,
) {
    for key in keys {
        if batch_period.is_zero() {
            queue.add(key);
        } else {
            queue.add_after(key, batch_period);
        }
    }
}

/// Spawns `workers` workers (at least one) on `tasks`, each syncing keys from `queue`.
pub fn spawn_workers<K, T, F, Fut>(
    tasks: &mut tokio::task::JoinSet<()>,
    queue: &WorkQueue<K>,
    workers: usize,
    target: &std::sync::Arc<T>,
    sync: F,
) where
    K: QueueKey + std::fmt::Display,
    T: Send + Sync + 'static,
    F: Fn(std::sync::Arc<T>, K) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<(), SyncError>> + Send + 'static,
{
    for _ in 0..workers.max(1) {
        let (queue, target, sync) = (queue.clone(), std::sync::Arc::clone(target), sync.clone());
        tasks.spawn(async move {
            run_worker(queue, |key| sync(std::sync::Arc::clone(&target), key)).await;
        });
    }
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
