//! Waiting without sleeping for a fixed time: [`eventually`] retries a probe until it holds,
//! [`within`] bounds a future. Both fail a hung test after [`DEADLINE`]; neither asserts on how
//! long anything took.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;

/// How long a wait may take before the test fails as hung.
pub const DEADLINE: Duration = Duration::from_secs(30);
/// How often [`eventually`] retries a probe no change signal wakes.
const POLL: Duration = Duration::from_millis(50);
/// How long [`eventually_on`] waits for a write before it retries anyway: a probe may also
/// read what changes without a write (the clock, a controller's metrics).
const STALE: Duration = Duration::from_millis(250);

/// Retries `probe` until it returns `Ok`, and returns its value. `probe` returns `Err` with a
/// description of what it saw; after [`DEADLINE`] the test fails showing the last one.
///
/// For what the API server does not show (metrics, probes, a task's state) this retries every
/// `POLL`; waits on stored objects use [`eventually_on`] with the server's change signal.
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    retry(what, None, probe).await
}

/// Waits until `holds` returns true, for a condition read in memory (a metric, a flag).
pub async fn until(what: &str, mut holds: impl FnMut() -> bool) {
    eventually(what, || {
        let held = holds();
        async move { held.then_some(()).ok_or_else(|| "not yet".to_owned()) }
    })
    .await;
}

/// [`eventually`] for a probe of stored objects: it runs again as soon as the server stored a
/// write (`changes`, from `ApiServer::changes`), and at the latest after `STALE`.
pub async fn eventually_on<T, F, Fut>(changes: watch::Receiver<u64>, what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    retry(what, Some(changes), probe).await
}

async fn retry<T, F, Fut>(what: &str, mut changes: Option<watch::Receiver<u64>>, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        // Whatever is written from here on wakes the next round.
        if let Some(changes) = &mut changes {
            changes.borrow_and_update();
        }
        let last = match probe().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        let now = tokio::time::Instant::now();
        if now >= deadline {
            panic!("timed out waiting for {what}; last seen:\n{last}");
        }
        match &mut changes {
            Some(changes) => {
                // A closed channel (the server is gone) leaves only the timer.
                let _ = tokio::time::timeout(STALE, changes.changed()).await;
            }
            None => tokio::time::sleep(POLL).await,
        }
    }
}

/// Sends the controllers' logs to the test output when `RUST_LOG` is set.
pub(crate) fn init_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("RUST_LOG").is_some() {
            let _already_set = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
                .with_test_writer()
                .try_init();
        }
    });
}

/// Fails a test whose future hangs (after [`DEADLINE`]); never a timing assertion.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    within_for(DEADLINE, what, fut).await
}

/// [`within`] with another limit, for work that is slow by nature (a `kubectl` process).
pub async fn within_for<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}
