//! `kubectl-endpoints faults`: run seeded fault schedules and count the seeds that pass.

use anyhow::Result;
use clap::Args;
use kubectl_endpoints::fault_schedule::{run_seeds, Restores, Schedule, Settings};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// Run the controllers against an embedded API server under random fault schedules, one per
/// seed: conflicts, 5xx, 429 with Retry-After, latency, dropped and short watches, forced
/// 410s, controller crashes and restarts, leader hand-overs and partitions, API server
/// restarts that lose state (unless --restarts=false), with pods and Services changing
/// meanwhile. Once the faults stop, each seed passes when the Endpoints and EndpointSlices
/// equal what `plan` writes for the final state. Prints each failing seed with its
/// differences, then `N passed, N failed`; progress goes to stderr. Exit code 1 when a
/// seed failed.
#[derive(Debug, Args)]
pub struct FaultsArgs {
    /// How many seeds to run.
    #[arg(long, default_value_t = 50)]
    pub seeds: u64,
    /// The first seed (seeds run from it upwards); `--first-seed S --seeds 1` re-runs one.
    #[arg(long, default_value_t = 0)]
    pub first_seed: u64,
    /// Seeds run at the same time.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Also restart the API server with lost state (fresh uids, the objects of now or of an
    /// earlier backup, resourceVersions bumped past the old ones as etcd's documented restore
    /// does). On by default; `--restarts=false` leaves them out.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = true, action = clap::ArgAction::Set)]
    pub restarts: bool,
    /// Restarted servers number resourceVersions from scratch instead of above every one
    /// handed out before (as etcd's restore with --bump-revision does), so a watch may resume
    /// across the restart and miss what the server holds from before.
    #[arg(long)]
    pub unbumped_restores: bool,
    /// Seconds each seed's controllers may take to settle once the faults stop.
    #[arg(long, default_value_t = 30)]
    pub deadline: u64,
    /// Print each seed's schedule (to stderr) before running it.
    #[arg(long)]
    pub print_schedule: bool,
}

/// Runs the command; true when every seed passed.
pub fn run(args: FaultsArgs) -> Result<bool> {
    let settings = Settings {
        restarts: args.restarts,
        restores: if args.unbumped_restores {
            Restores::Unbumped
        } else {
            Restores::Bumped
        },
        deadline: Duration::from_secs(args.deadline),
        ..Settings::default()
    };
    if args.print_schedule {
        for seed in args.first_seed..args.first_seed.saturating_add(args.seeds) {
            eprint!("{}", Schedule::draw(seed, &settings.mix()));
        }
    }
    // The controllers' own logs (every injected failure is a warning) stay off: the seeds'
    // verdicts are the output. FAULTS_LOG=info (or debug) turns them on, to stderr, for
    // looking into one seed.
    if let Ok(level) = std::env::var("FAULTS_LOG") {
        let level: tracing::Level = level.parse().unwrap_or(tracing::Level::INFO);
        tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let total = args.seeds;
    let mut done = 0u64;
    let mut failed = 0u64;
    let summary = runtime.block_on(run_seeds(
        args.first_seed,
        args.seeds,
        args.concurrency,
        &settings,
        |report| {
            done += 1;
            let verdict = if report.failure.is_some() {
                failed += 1;
                "FAILED"
            } else {
                "ok"
            };
            eprintln!(
                "[{done}/{total}] seed {}: {verdict} ({:.1}s; {failed} failed so far)",
                report.seed,
                report.elapsed.as_secs_f64()
            );
        },
    ));
    let mut out = std::io::stdout().lock();
    let mut drawn: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in args.first_seed..args.first_seed.saturating_add(args.seeds) {
        for kind in Schedule::draw(seed, &settings.mix()).faults() {
            *drawn.entry(kind).or_default() += 1;
        }
    }
    let drawn: Vec<String> = drawn.iter().map(|(k, n)| format!("{k} {n}")).collect();
    writeln!(out, "faults drawn: {}", drawn.join(", "))?;
    for report in &summary.failed {
        writeln!(
            out,
            "seed {}: FAILED: {}",
            report.seed,
            report.failure.as_deref().unwrap_or_default()
        )?;
        writeln!(out, "    faults: {}", report.faults.join(", "))?;
        for note in &report.notes {
            writeln!(out, "    note: {note}")?;
        }
    }
    writeln!(
        out,
        "{} passed, {} failed ({:.0}s)",
        summary.passed,
        summary.failed.len(),
        started.elapsed().as_secs_f64()
    )?;
    if !summary.failed.is_empty() {
        let seeds: Vec<String> = summary.failed.iter().map(|r| r.seed.to_string()).collect();
        writeln!(out, "failed seeds: {}", seeds.join(" "))?;
        writeln!(
            out,
            "re-run one with: kubectl-endpoints faults --first-seed SEED --seeds 1{}",
            match (args.restarts, args.unbumped_restores) {
                (false, _) => " --restarts=false",
                (true, true) => " --unbumped-restores",
                (true, false) => "",
            }
        )?;
    }
    Ok(summary.failed.is_empty())
}
