//! The server's shared state: the store and the generators behind one lock, plus the signals
//! watches wait on.
//!
//! One `std::sync::Mutex` guards every object. Requests hold it only to read or write the
//! store, never across an await, so a plain mutex is both simpler and faster than an async one;
//! serialising responses happens after it is released, on `Arc`-shared objects.

use crate::defaults::ClusterIpAllocator;
use crate::faults::Faults;
use crate::random::Stamps;
use crate::request_log::RequestLog;
use crate::reviews::Reviews;
use crate::store::Store;
use crate::tokens::Tokens;
use crate::version::ServerVersion;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;
use tokio::sync::watch;

/// Everything a write may change.
#[derive(Debug, Clone)]
pub(crate) struct Cluster {
    pub store: Store,
    pub stamps: Stamps,
    pub ips: ClusterIpAllocator,
    /// The version imitated, which decides what validation refuses.
    pub version: ServerVersion,
}

/// State shared by every request of one server.
#[derive(Debug)]
pub(crate) struct Shared {
    cluster: Mutex<Cluster>,
    /// The latest resourceVersion; watches wake when it changes.
    changes: watch::Sender<u64>,
    /// Set to true when the server shuts down, so open watches end.
    stopping: watch::Sender<bool>,
    pub faults: Faults,
    pub counts: Mutex<BTreeMap<(String, String), u64>>,
    pub requests: RequestLog,
    pub bookmark_interval: Duration,
    /// Whether watches may ask for `sendInitialEvents`.
    pub watch_list: std::sync::atomic::AtomicBool,
    /// The version imitated, reported through `/version`.
    pub version: ServerVersion,
    reviews: RwLock<Arc<Reviews>>,
    /// The ServiceAccount tokens issued through TokenRequests.
    pub tokens: Tokens,
}

impl Shared {
    pub fn new(config: &crate::Config) -> Self {
        Self {
            cluster: Mutex::new(Cluster {
                store: Store::new(config.history_window),
                stamps: Stamps::new(config.seed, config.fixed_time),
                ips: ClusterIpAllocator::default(),
                version: config.version,
            }),
            changes: watch::Sender::new(0),
            stopping: watch::Sender::new(false),
            faults: Faults::new(config.seed),
            counts: Mutex::new(BTreeMap::new()),
            requests: RequestLog::new(config.record_requests),
            bookmark_interval: config.bookmark_interval,
            watch_list: std::sync::atomic::AtomicBool::new(config.version.watch_list),
            version: config.version,
            reviews: RwLock::new(Arc::new(config.reviews.clone())),
            tokens: Tokens::new(config.token_lifetime_cap),
        }
    }

    /// How TokenReviews and SubjectAccessReviews are answered now.
    pub fn reviews(&self) -> Arc<Reviews> {
        self.reviews
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the review answers.
    pub fn set_reviews(&self, reviews: Reviews) {
        *self.reviews.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(reviews);
    }

    fn lock(&self) -> MutexGuard<'_, Cluster> {
        self.cluster.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs a read under the lock.
    pub fn read<T>(&self, f: impl FnOnce(&Cluster) -> T) -> T {
        f(&self.lock())
    }

    /// Runs a write under the lock, then wakes the watches.
    pub fn write<T>(&self, f: impl FnOnce(&mut Cluster) -> T) -> T {
        let (result, rv) = {
            let mut cluster = self.lock();
            let result = f(&mut cluster);
            (result, cluster.store.resource_version())
        };
        self.changes.send_if_modified(|latest| {
            let changed = *latest != rv;
            *latest = rv;
            changed
        });
        result
    }

    /// Runs a write, or with `dry_run` runs it on a scratch copy that is then thrown away, so
    /// a dry run answers exactly as the write would without changing anything.
    pub fn mutate<T>(&self, dry_run: bool, f: impl FnOnce(&mut Cluster) -> T) -> T {
        if dry_run {
            let mut scratch = self.lock().clone();
            f(&mut scratch)
        } else {
            self.write(f)
        }
    }

    /// A receiver that changes after every write.
    pub fn subscribe_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// A receiver that turns true when the server stops.
    pub fn subscribe_stopping(&self) -> watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// Ends every open watch; called when the TCP server shuts down.
    pub fn stop_watches(&self) {
        self.stopping.send_replace(true);
    }

    /// Counts one request.
    pub fn count(&self, verb: &str, resource: &str) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        *counts
            .entry((verb.to_owned(), resource.to_owned()))
            .or_default() += 1;
    }
}
