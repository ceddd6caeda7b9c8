//! Seeded fault schedules, through the driver `kube-endpoints faults` runs: each seed's
//! controllers must end, once the faults stop, on exactly the objects `plan` writes for the
//! final cluster state. A failing seed is named so it can be re-run alone with
//! `kube-endpoints faults --first-seed SEED --seeds 1` (with `--restarts` for the second test).

use kube_endpoints::fault_schedule::{run_seeds, Settings};

/// Runs `seeds` seeds from `first` and fails naming every seed that did not end on the plan.
async fn assert_seeds_pass(first: u64, seeds: u64, settings: &Settings) {
    let summary = run_seeds(first, seeds, 6, settings, |_| {}).await;
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
        "{} of {seeds} seeds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(summary.passed as u64, seeds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_seeded_fault_schedules_end_on_the_objects_plan_writes() {
    assert_seeds_pass(0, 50, &Settings::default()).await;
}

/// API server restarts with lost state: every object comes back under its name with a new
/// uid and resourceVersion. Seed 18 restarts the server and then changes a mirrored
/// Endpoints object; the slice trackers went on waiting for the slices of the old uids,
/// which a re-list only showed as changed, and the mirrored slice was never written again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_with_api_server_restarts_end_on_the_objects_plan_writes() {
    let settings = Settings {
        restarts: true,
        ..Settings::default()
    };
    assert_seeds_pass(10, 16, &settings).await;
}
