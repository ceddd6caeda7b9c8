//! A rate-limited work queue with client-go's semantics, generic over its key.
//!
//! Handlers only say "this key needs a sync"; workers take keys one at a time. The queue is
//! what makes that safe and cheap: a key waiting in the queue is held once however often it is
//! added, a key is never handed to two workers at once (adding it while it is processed marks
//! it dirty, and it comes back when the worker calls [`WorkQueue::done`]), delayed adds wait on
//! the tokio clock, and failed keys come back after a per-key exponential backoff combined
//! with a bucket shared by the whole queue (see [`backoff`]). The queue owns all retries, which
//! is why the API client has none of its own.
//!
//! A worker's loop looks like this:
//!
//! ```no_run
//! # use controller::queue::{QueueConfig, WorkQueue};
//! # async fn sync(_: &String) -> Result<(), ()> { Ok(()) }
//! # async fn worker(queue: WorkQueue<String>) {
//! const MAX_RETRIES: u32 = 15;
//! while let Some(key) = queue.get().await {
//!     match sync(&key).await {
//!         Ok(()) => queue.forget(&key),
//!         Err(()) => {
//!             queue.retry_or_forget(key.clone(), MAX_RETRIES);
//!         }
//!     }
//!     queue.done(&key);
//! }
//! # }
//! ```

pub mod backoff;
pub mod metrics;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The queue's sets are hashed on every add and every get: with a fast hasher (the keys are
/// names the API server gave).
type Fast = foldhash::fast::RandomState;

pub use backoff::{BackoffConfig, RateLimiter};
pub use metrics::{Progress, QueueMetrics};

/// What every queue key must be: cheap to clone, hashable, shareable across workers.
pub trait QueueKey: Clone + Eq + Hash + Send + Sync + Debug + 'static {}

impl<T: Clone + Eq + Hash + Send + Sync + Debug + 'static> QueueKey for T {}

/// A queue's name (its `name` metric label) and retry settings.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueConfig {
    /// The `name` label of the queue's metrics.
    pub name: String,
    /// How failed keys back off.
    pub backoff: BackoffConfig,
}

impl QueueConfig {
    /// The EndpointSlice controller's service queue (`endpoint_slice`, backoff 1s..1000s).
    pub fn endpoint_slice() -> Self {
        Self {
            name: "endpoint_slice".to_string(),
            backoff: BackoffConfig::endpoint_slice(),
        }
    }

    /// The EndpointSlice controller's node topology queue (`endpoint_slice_topology`,
    /// backoff 5ms..1000s).
    pub fn endpoint_slice_topology() -> Self {
        Self {
            name: "endpoint_slice_topology".to_string(),
            backoff: BackoffConfig::controller_default(),
        }
    }

    /// The mirroring controller's Endpoints queue (`endpoint_slice_mirroring`, backoff
    /// 1s..100s: upstream caps this one lower than the slice controller's).
    pub fn endpoint_slice_mirroring() -> Self {
        Self {
            name: "endpoint_slice_mirroring".to_string(),
            backoff: BackoffConfig {
                max_delay: Duration::from_secs(100),
                ..BackoffConfig::endpoint_slice()
            },
        }
    }

    /// The Endpoints controller's service queue (`endpoint`, backoff 5ms..1000s).
    pub fn endpoints() -> Self {
        Self {
            name: "endpoint".to_string(),
            backoff: BackoffConfig::controller_default(),
        }
    }
}

/// What [`WorkQueue::retry_or_forget`] did with a failed key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The key was re-added after its backoff.
    Scheduled,
    /// The key had failed too often; its backoff was forgotten and it was not re-added.
    GaveUp,
}

/// A client-go style rate-limited work queue. Cloning gives another handle to the same queue.
pub struct WorkQueue<K: QueueKey> {
    inner: Arc<Inner<K>>,
}

impl<K: QueueKey> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: QueueKey> Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

struct Inner<K> {
    name: String,
    state: Mutex<State<K>>,
    limiter: Mutex<RateLimiter<K>>,
    /// Woken on every change a waiting worker or drainer may care about. Waiters are few (the
    /// workers of one controller), so waking them all is cheaper than being clever.
    changed: Notify,
    metrics: Option<QueueMetrics>,
}

struct State<K> {
    /// Keys ready to be handed out, in order.
    ready: VecDeque<K>,
    /// Keys that need processing: those in `ready` and those re-added while processing.
    dirty: HashSet<K, Fast>,
    /// Keys handed to a worker and not yet done, with the instant they were handed out and
    /// their `changed_since`, until the worker takes it.
    processing: HashMap<K, (Instant, Option<Instant>), Fast>,
    /// When each dirty key was first added, for the queue-duration histogram.
    added_at: HashMap<K, Instant, Fast>,
    /// For each key, when the earliest change not yet handed to a worker asked for it (the
    /// first `add` or `add_after` call since it was last handed out, not when a delay ran
    /// out): where the latency SLI starts.
    changed_since: HashMap<K, Instant, Fast>,
    /// Delayed keys: the earliest instant each is due, and its entry in `timers`.
    waiting: HashMap<K, (Instant, u64), Fast>,
    /// Delayed keys ordered by due instant; the sequence number keeps equal instants in
    /// insertion order.
    timers: BTreeMap<(Instant, u64), K>,
    next_seq: u64,
    shutting_down: bool,
}

/// Locks a mutex whose data no panic can leave half-changed: every critical section in this
/// module is a handful of collection operations that do not panic on any input.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<K: QueueKey> WorkQueue<K> {
    /// An empty queue without metrics.
    pub fn new(config: QueueConfig) -> Self {
        Self::build(config, None)
    }

    /// An empty queue whose metrics are registered into `registry` under `config.name`.
    pub fn with_metrics(
        config: QueueConfig,
        registry: &prometheus::Registry,
    ) -> Result<Self, prometheus::Error> {
        let metrics = QueueMetrics::register(registry, &config.name)?;
        let name = config.name.clone();
        let queue = Self::build(config, Some(metrics));
        let weak = Arc::downgrade(&queue.inner);
        metrics::ProgressCollector::register(registry, &name, Arc::new(move || progress(&weak)))?;
        Ok(queue)
    }

    fn build(config: QueueConfig, metrics: Option<QueueMetrics>) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: config.name,
                state: Mutex::new(State {
                    ready: VecDeque::new(),
                    dirty: HashSet::default(),
                    processing: HashMap::default(),
                    added_at: HashMap::default(),
                    changed_since: HashMap::default(),
                    waiting: HashMap::default(),
                    timers: BTreeMap::new(),
                    next_seq: 0,
                    shutting_down: false,
                }),
                limiter: Mutex::new(RateLimiter::new(config.backoff)),
                changed: Notify::new(),
                metrics,
            }),
        }
    }

    /// The queue's name, as in its metrics.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Marks `key` as needing processing because something it depends on changed now (the
    /// latency SLI's clock starts, see [`take_changed_since`](Self::take_changed_since)).
    ///
    /// A key already waiting is not added twice; a key being processed is handed out again
    /// after its worker calls [`done`](Self::done). Ignored once the queue is shutting down.
    pub fn add(&self, key: K) {
        self.add_with(key, Clock::Start);
    }

    /// [`add`](Self::add) for a key queued again with no new change: a resumed wait or a
    /// recheck. The SLI's clock does not start.
    pub fn requeue(&self, key: K) {
        self.add_with(key, Clock::Keep);
    }

    /// [`add`](Self::add) or [`requeue`](Self::requeue), as `clock` says.
    pub fn add_with(&self, key: K, clock: Clock) {
        self.add_key_with(&key, clock);
    }

    /// [`add_with`](Self::add_with) of a borrowed key: copied only where it is not held yet
    /// (under churn, most adds find their key still waiting and copy nothing).
    pub fn add_key_with(&self, key: &K, clock: Clock) {
        let woke = {
            let mut state = lock(&self.inner.state);
            let now = Instant::now();
            if clock == Clock::Start
                && !state.shutting_down
                && !state.changed_since.contains_key(key)
            {
                state.changed_since.insert(key.clone(), now);
            }
            self.add_locked(&mut state, key, now)
        };
        if woke {
            self.inner.changed.notify_waiters();
        }
    }

    /// Adds `key` once `delay` has passed on the tokio clock (at once for a zero delay),
    /// because something changed now: the SLI's clock starts now, not when the delay ends.
    ///
    /// A key already waiting keeps the earlier of its two due instants. Counted in
    /// `workqueue_retries_total`, as client-go counts every delayed add.
    pub fn add_after(&self, key: K, delay: Duration) {
        self.add_after_with(key, delay, Clock::Start);
    }

    /// [`add_after`](Self::add_after) for a recheck with no new change (an echo of our own
    /// write, a shadow check waiting for the other writer): the SLI's clock does not start.
    pub fn requeue_after(&self, key: K, delay: Duration) {
        self.add_after_with(key, delay, Clock::Keep);
    }

    /// [`add_after`](Self::add_after) or [`requeue_after`](Self::requeue_after), as `clock`
    /// says.
    pub fn add_after_with(&self, key: K, delay: Duration, clock: Clock) {
        {
            let mut state = lock(&self.inner.state);
            if state.shutting_down {
                return;
            }
            if let Some(metrics) = &self.inner.metrics {
                metrics.retries.inc();
            }
            let now = Instant::now();
            if clock == Clock::Start {
                state.changed_since.entry(key.clone()).or_insert(now);
            }
            if delay.is_zero() {
                let woke = self.add_locked(&mut state, &key, now);
                drop(state);
                if woke {
                    self.inner.changed.notify_waiters();
                }
                return;
            }
            let due = now + delay;
            if let Some(&(current, seq)) = state.waiting.get(&key) {
                if current <= due {
                    return;
                }
                state.timers.remove(&(current, seq));
            }
            let seq = state.next_seq;
            state.next_seq += 1;
            state.timers.insert((due, seq), key.clone());
            state.waiting.insert(key, (due, seq));
        }
        // A worker asleep until a later timer must learn about this earlier one.
        self.inner.changed.notify_waiters();
    }

    /// Adds `key` after its backoff: its own exponential delay or the shared bucket's,
    /// whichever is longer. Each call counts as one more failure of `key`. A retry starts no
    /// SLI clock: the worker hands on the failed attempt's with
    /// [`keep_changed_since`](Self::keep_changed_since).
    pub fn add_rate_limited(&self, key: K) {
        let delay = lock(&self.inner.limiter).when(&key);
        self.requeue_after(key, delay);
    }

    /// Re-adds a failed `key` with [`add_rate_limited`](Self::add_rate_limited) unless it has
    /// already been retried `max_retries` times; then forgets it instead, as upstream drops a
    /// service after 15 failed syncs (the next event for it starts afresh).
    pub fn retry_or_forget(&self, key: K, max_retries: u32) -> Retry {
        if self.num_requeues(&key) < max_retries {
            self.add_rate_limited(key);
            Retry::Scheduled
        } else {
            self.forget(&key);
            Retry::GaveUp
        }
    }

    /// How many times `key` has been rate-limited since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        lock(&self.inner.limiter).num_requeues(key)
    }

    /// Clears the backoff of `key`; call it after a successful sync. It does not remove the
    /// key from the queue.
    pub fn forget(&self, key: &K) {
        lock(&self.inner.limiter).forget(key);
    }

    /// Waits for the next key to process and marks it as being processed.
    ///
    /// Returns `None` once the queue is shut down and no key is ready. Every key returned
    /// must be given back with [`done`](Self::done).
    pub async fn get(&self) -> Option<K> {
        loop {
            // Register for wake-ups before looking, so a change between the look and the wait
            // is not missed.
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let next_due = match self.poll_key() {
                Polled::Key(key) => return Some(key),
                Polled::Closed => return None,
                Polled::Empty { next_due } => next_due,
            };
            match next_due {
                Some(due) => {
                    tokio::select! {
                        () = &mut changed => {}
                        () = tokio::time::sleep_until(due) => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// The next ready key without waiting, marked as being processed; `None` if none is ready.
    /// (For the tests; workers wait with `get`.)
    #[cfg(test)]
    pub fn try_get(&self) -> Option<K> {
        match self.poll_key() {
            Polled::Key(key) => Some(key),
            Polled::Closed | Polled::Empty { .. } => None,
        }
    }

    fn poll_key(&self) -> Polled<K> {
        let mut state = lock(&self.inner.state);
        let now = Instant::now();
        self.promote_due(&mut state, now);
        if let Some(key) = state.ready.pop_front() {
            state.dirty.remove(&key);
            let since = state.changed_since.remove(&key);
            state.processing.insert(key.clone(), (now, since));
            let added = state.added_at.remove(&key);
            if let Some(metrics) = &self.inner.metrics {
                metrics.depth.dec();
                if let Some(added) = added {
                    metrics
                        .queue_duration
                        .observe(now.saturating_duration_since(added).as_secs_f64());
                }
            }
            return Polled::Key(key);
        }
        if state.shutting_down {
            return Polled::Closed;
        }
        Polled::Empty {
            next_due: state.timers.first_key_value().map(|(&(due, _), _)| due),
        }
    }

    /// When the earliest change `key` was handed out for asked for it: the first add since
    /// the key was last handed out, carried over from failed attempts by
    /// [`keep_changed_since`](Self::keep_changed_since). Taken once, by the worker, just after
    /// [`get`](Self::get); `None` when the key was handed out without an add (never, today)
    /// or the start was already taken.
    pub fn take_changed_since(&self, key: &K) -> Option<Instant> {
        lock(&self.inner.state)
            .processing
            .get_mut(key)
            .and_then(|(_, since)| since.take())
    }

    /// Hands `since` on to the key's next attempt, after a failed sync: the retry's latency
    /// then runs from the change that first asked for it. Call it before re-adding the key.
    pub fn keep_changed_since(&self, key: &K, since: Instant) {
        let mut state = lock(&self.inner.state);
        let kept = state.changed_since.entry(key.clone()).or_insert(since);
        *kept = (*kept).min(since);
    }

    /// Marks `key` as processed. If it was added while being processed, it is queued again.
    pub fn done(&self, key: &K) {
        {
            let mut state = lock(&self.inner.state);
            if let Some((started, _)) = state.processing.remove(key) {
                if let Some(metrics) = &self.inner.metrics {
                    metrics.work_duration.observe(
                        Instant::now()
                            .saturating_duration_since(started)
                            .as_secs_f64(),
                    );
                }
            }
            if state.dirty.contains(key) {
                state.ready.push_back(key.clone());
            }
        }
        // Wakes a worker for the re-queued key, or a drain waiting for the last worker.
        self.inner.changed.notify_waiters();
    }

    /// Number of keys ready to be handed out (not counting delayed or in-process keys).
    pub fn len(&self) -> usize {
        lock(&self.inner.state).ready.len()
    }

    /// Whether no key is ready to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the queue has nothing to do now and nothing due within `horizon`: no key ready,
    /// none being processed, and no delayed key due sooner. Keys further out (a long backoff)
    /// do not count, so a sync that keeps failing the same way does not keep the queue busy.
    pub fn is_idle_within(&self, horizon: Duration) -> bool {
        let state = lock(&self.inner.state);
        let soonest_due = state.timers.keys().next().map(|(due, _)| *due);
        state.ready.is_empty()
            && state.processing.is_empty()
            && soonest_due.is_none_or(|due| due > Instant::now() + horizon)
    }

    /// Stops accepting keys. Workers still get the keys already ready, then `None`; delayed
    /// keys not yet due are dropped.
    pub fn shut_down(&self) {
        lock(&self.inner.state).shutting_down = true;
        self.inner.changed.notify_waiters();
    }

    /// [`shut_down`](Self::shut_down), then waits until no key is being processed, so that
    /// in-flight syncs finish before the caller moves on (client-go's `ShutDownWithDrain`).
    pub async fn shut_down_with_drain(&self) {
        self.shut_down();
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if lock(&self.inner.state).processing.is_empty() {
                return;
            }
            changed.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) has been called. (For the tests.)
    #[cfg(test)]
    pub fn is_shutting_down(&self) -> bool {
        lock(&self.inner.state).shutting_down
    }

    /// Adds `key` under the state lock; returns whether a worker should be woken.
    fn add_locked(&self, state: &mut State<K>, key: &K, now: Instant) -> bool {
        if state.shutting_down || state.dirty.contains(key) {
            return false;
        }
        if let Some(metrics) = &self.inner.metrics {
            metrics.adds.inc();
            metrics.depth.inc();
        }
        if !state.added_at.contains_key(key) {
            state.added_at.insert(key.clone(), now);
        }
        state.dirty.insert(key.clone());
        if state.processing.contains_key(key) {
            return false;
        }
        state.ready.push_back(key.clone());
        true
    }

    /// Moves delayed keys that are due into the ready queue, unless shutting down.
    fn promote_due(&self, state: &mut State<K>, now: Instant) {
        if state.shutting_down {
            return;
        }
        while let Some(entry) = state.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            state.waiting.remove(&key);
            self.add_locked(state, &key, now);
        }
    }
}

/// Whether an add starts the latency SLI's clock for its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Something the key depends on changed now.
    Start,
    /// No new change: the key's clock stays as it is.
    Keep,
}

enum Polled<K> {
    Key(K),
    Closed,
    Empty { next_due: Option<Instant> },
}

/// Reads the in-progress figures of a queue for the scrape-time gauges.
fn progress<K: QueueKey>(inner: &Weak<Inner<K>>) -> Progress {
    let Some(inner) = inner.upgrade() else {
        return Progress::default();
    };
    let state = lock(&inner.state);
    let now = Instant::now();
    state
        .processing
        .values()
        .map(|(started, _)| now.saturating_duration_since(*started).as_secs_f64())
        .fold(Progress::default(), |acc, secs| Progress {
            unfinished_seconds: acc.unfinished_seconds + secs,
            longest_running_seconds: acc.longest_running_seconds.max(secs),
        })
}

#[cfg(test)]
mod tests;
