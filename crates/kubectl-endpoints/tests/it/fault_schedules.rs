//! Fifty seeded fault schedules (API server restarts included), through the driver
//! `kubectl-endpoints faults` runs: each seed's controllers must end, once the faults stop, on
//! exactly the objects `plan` writes for the final cluster state. A failing seed is named so it
//! can be re-run alone with `kubectl-endpoints faults --first-seed SEED --seeds 1`.

use kubectl_endpoints::fault_schedule::{run_seeds, Restores, Settings};

const SEEDS: u64 = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_seeded_fault_schedules_end_on_the_objects_plan_writes() {
    // Six schedules at once already keep both cores busy at moments; their deadlines are
    // measured in wall-clock time.
    let _cpu = crate::alone().await;
    let settings = Settings::default();
    let summary = run_seeds(0, SEEDS, 6, &settings, |_| {}).await;
    let failures: Vec<String> = summary
        .failed
        .iter()
        .map(|r| {
            format!(
                "seed {}: {}\n    faults: {:?}\n    notes: {:?}",
                r.seed,
                r.failure.as_deref().unwrap_or_default(),
                r.faults,
                r.notes
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {SEEDS} seeds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(summary.passed as u64, SEEDS);
}

/// Seed 38 with restores that do not bump resourceVersions: the server comes back from a backup
/// on resourceVersions that let the Endpoints informer's watch resume, so its cache keeps an
/// object the server no longer has and every update of it is refused as a conflict. The
/// controller must notice (the same resourceVersion refused again and again) and list again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_the_watch_resumes_across_is_caught_by_the_conflicts_it_causes() {
    let settings = Settings {
        restarts: true,
        restores: Restores::Unbumped,
        ..Settings::default()
    };
    seed_passes(38, &settings).await;
}

/// Seed 15 with restarts: the server is restored, right at the start, from a backup without the
/// mirrored slice the controller had just written. The tracker must not wait for that slice
/// to show up in the cache once a fresh list says it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_without_a_slice_we_wrote_does_not_stall_its_service() {
    let settings = Settings {
        restarts: true,
        ..Settings::default()
    };
    seed_passes(15, &settings).await;
}

/// Seed 724: the EndpointSlice watch fails for a while, and pod events keep finding the slice
/// cache behind, so one Service's retries back off to many seconds. When the slices come back
/// it must be synced then, not after its backoff (it failed two runs in three without that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_waited_long_for_the_slice_cache_is_synced_once_it_catches_up() {
    seed_passes(724, &Settings::default()).await;
}

/// Runs the one schedule `seed` draws under `settings`; the test fails with its failure.
async fn seed_passes(seed: u64, settings: &Settings) {
    let summary = run_seeds(seed, 1, 1, settings, |_| {}).await;
    assert_eq!(
        summary.passed,
        1,
        "{:?}",
        summary.failed.first().and_then(|r| r.failure.clone())
    );
}
