//! The worker loop both controllers run: take a key, sync it, retry failures with backoff,
//! give up after the retry limit. [`SyncError`] is what a sync hands back, and the loop
//! decides from its variant alone.

use crate::queue::{Clock, QueueKey, Retry, WorkQueue};
use crate::write_latency::{ControllerLatency, Wrote};
use reconcile::keys::ServiceKey;
use reconcile::slice::MissingNode;
use std::future::Future;

/// Syncs of one key are retried at most this often before the key is dropped (upstream's
/// maxRetries); a later event queues it afresh.
pub const MAX_RETRIES: u32 = 15;

/// Why one sync of a Service failed. Every variant is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The informer cache is behind our own writes; retry once it caught up. Counted as
    /// `stale`, not `error`, and logged quietly: it is expected after every burst of writes.
    #[error("{cache} informer cache is out of date for Service {service}")]
    StaleCache {
        /// Which cache (`EndpointSlice`, `Endpoints`).
        cache: &'static str,
        /// The Service synced.
        service: ServiceKey,
    },
    /// Pods were left out because their nodes are not in the node cache yet; everything
    /// else was written.
    #[error("{} pod(s) of Service {service} are on nodes not in the node cache yet", nodes.len())]
    NodeNotFound {
        /// The Service synced.
        service: ServiceKey,
        /// The pods left out and their nodes.
        nodes: Vec<MissingNode>,
    },
    /// A write was refused or failed.
    #[error("failed to {verb} {kind} {name} of Service {service}")]
    Write {
        /// create, update or delete.
        verb: &'static str,
        /// Endpoints or EndpointSlice.
        kind: &'static str,
        /// The object's name (empty for a create with a generated name).
        name: String,
        /// The Service synced.
        service: ServiceKey,
        /// The API's answer.
        #[source]
        source: kube::Error,
    },
    /// Several of the above, from one sync (the slice controller writes each address type
    /// separately and carries on after a failure in one).
    #[error("{} failures syncing Service {service}", errors.len())]
    Several {
        /// The Service synced.
        service: ServiceKey,
        /// Each failure.
        errors: Vec<SyncError>,
    },
}

impl SyncError {
    /// The `result` label of a sync counter: success, stale or error.
    pub fn result_label<T>(result: &Result<T, SyncError>) -> &'static str {
        match result {
            Ok(_) => "success",
            Err(SyncError::StaleCache { .. }) => "stale",
            Err(_) => "error",
        }
    }

    /// A failed write of `slice`, for either controller that writes EndpointSlices.
    pub fn slice_write(
        service: &ServiceKey,
        verb: &'static str,
        slice: &k8s_openapi::api::discovery::v1::EndpointSlice,
        source: kube::Error,
    ) -> Self {
        SyncError::Write {
            verb,
            kind: "EndpointSlice",
            name: slice.metadata.name.clone().unwrap_or_default(),
            service: service.clone(),
            source,
        }
    }

    /// One error from several; `None` when there are none.
    pub fn combine(service: &ServiceKey, mut errors: Vec<SyncError>) -> Option<SyncError> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(SyncError::Several {
                service: service.clone(),
                errors,
            }),
        }
    }

    /// Each failure as one line with its cause, in upstream's wording where an event shows
    /// it (the slice controller's FailedToUpdateEndpointSlices message lists these).
    pub fn messages(&self) -> Vec<String> {
        match self {
            SyncError::StaleCache { .. } => vec![self.to_string()],
            SyncError::NodeNotFound { service, nodes } => {
                nodes.iter().map(|n| n.message(service)).collect()
            }
            SyncError::Write { source, .. } => vec![format!("{self}: {source}")],
            SyncError::Several { errors, .. } => errors.iter().flat_map(Self::messages).collect(),
        }
    }
}

/// Queues keys after the batch period (at once when it is zero), as pod events are;
/// `clock` says whether they carry a change the latency SLI times.
pub fn queue_after<K: QueueKey>(
    queue: &WorkQueue<K>,
    keys: &[K],
    batch_period: std::time::Duration,
    clock: Clock,
) {
    for key in keys {
        if batch_period.is_zero() {
            queue.add_key_with(key, clock);
        } else {
            queue.add_after_with(key.clone(), batch_period, clock);
        }
    }
}

/// Runs until the queue shuts down. What a successful sync wrote is timed in `latency`, from
/// the change that asked for it; a retried key keeps that start.
pub async fn run_worker<K, F, Fut>(queue: WorkQueue<K>, latency: ControllerLatency, sync: F)
where
    K: QueueKey + std::fmt::Display,
    F: Fn(K) -> Fut,
    Fut: Future<Output = Result<Wrote, SyncError>>,
{
    while let Some(key) = queue.get().await {
        let since = queue.take_changed_since(&key);
        match sync(key.clone()).await {
            Ok(wrote) => {
                queue.forget(&key);
                latency.observe(since, &wrote);
            }
            Err(err) => {
                let cause = err.messages().join("; ");
                let retry = queue.retry_or_forget(key.clone(), MAX_RETRIES);
                if let (Retry::Scheduled, Some(since)) = (retry, since) {
                    queue.keep_changed_since(&key, since);
                }
                match retry {
                    Retry::Scheduled if matches!(err, SyncError::StaleCache { .. }) => {
                        tracing::debug!(key = %key, error = %cause, queue = queue.name(), "sync found a stale cache, retrying")
                    }
                    Retry::Scheduled => {
                        tracing::error!(key = %key, error = %cause, queue = queue.name(), "sync failed, retrying")
                    }
                    Retry::GaveUp => {
                        tracing::error!(key = %key, error = %cause, queue = queue.name(), "dropping key after repeated failures")
                    }
                }
            }
        }
        queue.done(&key);
    }
}
