//! Seeded fault schedules: the controllers against a misbehaving API server, checked
//! against the fault-free result.
//!
//! A seed draws a [`Schedule`]: how the controllers run (one `controller::run`, or two
//! leader-elected replicas), a small workload (a few namespaces, Services, pods and
//! hand-written Endpoints), and about two seconds of timed steps: workload churn, rules that
//! hold for a while (5xx, 429 with Retry-After, injected 409s, latency, watches closed after a
//! few events) and instant faults (bursts of conflicts, dropped watches, forced 410s, a
//! compacted history, server restarts that lose state, controller crashes and restarts,
//! leader hand-overs and partitions). When the steps are done, the faults stop and the
//! controllers must settle on exactly what `plan` writes for the final cluster state
//! ([`verdict`]): nothing lost, nothing written twice, nothing left over.
//!
//! ```text
//!  seed -> Schedule::draw -> steps ──> churn (api) ─────┐
//!                               └────> cluster (faults, restarts) <── fleet (controllers)
//!  faults stop -> quiet -> verdict: live objects == plan(final sources)
//! ```
//!
//! `kubectl-endpoints faults` and the `fault_schedules` test both call [`run_seeds`].

mod api;
mod churn;
mod cluster;
mod fleet;
mod gc;
pub mod schedule;
pub mod verdict;

use crate::settle::WRITTEN;
use anyhow::{anyhow, bail, Context, Result};
use cluster::Cluster;
pub use cluster::Restores;
use fleet::Fleet;
use futures::StreamExt;
use schedule::{Action, Event};
pub use schedule::{Mix, Schedule};
use std::time::{Duration, Instant};

/// Keys due further out than this when the controllers go idle are not waited for: a long
/// backoff is not work in progress.
pub const HORIZON: Duration = Duration::from_millis(250);

/// How the seeds run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Draw API server restarts with lost state (on by default).
    pub restarts: bool,
    /// How a restarted server numbers its resourceVersions.
    pub restores: cluster::Restores,
    /// How long the churn and faults last.
    pub span: Duration,
    /// How long the controllers may take to settle on the plan once the faults stop.
    pub deadline: Duration,
    /// How long without writes, and with the controllers idle, counts as settled, for
    /// controllers that cannot be seen (leader-elected replicas); a single controller counts
    /// as settled once it is idle with nothing due within this plus [`HORIZON`] (see
    /// [`crate::settle`]).
    pub quiet: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            restarts: true,
            restores: cluster::Restores::default(),
            span: Duration::from_secs(2),
            deadline: Duration::from_secs(30),
            quiet: Duration::from_millis(400),
        }
    }
}

impl Settings {
    /// What the schedules may contain.
    pub fn mix(&self) -> Mix {
        Mix {
            restarts: self.restarts,
            span: self.span,
        }
    }
}

/// How one seed went.
#[derive(Debug)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Why it failed, with the differences from the plan; `None` when it passed.
    pub failure: Option<String>,
    /// What happened along the way that is not a failure (a skipped hand-over, a change the
    /// workload could not make).
    pub notes: Vec<String>,
    /// The kinds of fault the schedule held, in order ([`Schedule::faults`]).
    pub faults: Vec<&'static str>,
}

/// What a run of seeds gave.
#[derive(Debug, Default)]
pub struct Summary {
    /// Seeds that passed.
    pub passed: usize,
    /// The failed seeds' reports, by seed.
    pub failed: Vec<SeedReport>,
}

/// Runs `count` seeds from `first`, `concurrency` at a time, calling `progress` as each ends.
pub async fn run_seeds(
    first: u64,
    count: u64,
    concurrency: usize,
    settings: &Settings,
    mut progress: impl FnMut(&SeedReport),
) -> Summary {
    let mut summary = Summary::default();
    let mut reports = futures::stream::iter(first..first.saturating_add(count))
        .map(|seed| {
            let settings = settings.clone();
            async move {
                let started = Instant::now();
                // Its own task: a panic in one seed fails that seed, not the run.
                match tokio::spawn(run_seed(seed, settings)).await {
                    Ok(report) => report,
                    Err(e) => SeedReport {
                        seed,
                        elapsed: started.elapsed(),
                        failure: Some(format!("the seed's task failed: {e}")),
                        notes: Vec::new(),
                        faults: Vec::new(),
                    },
                }
            }
        })
        .buffer_unordered(concurrency.max(1));
    while let Some(report) = reports.next().await {
        progress(&report);
        if report.failure.is_some() {
            summary.failed.push(report);
        } else {
            summary.passed += 1;
        }
    }
    summary.failed.sort_by_key(|r| r.seed);
    summary
}

/// Runs one seed.
pub async fn run_seed(seed: u64, settings: Settings) -> SeedReport {
    let started = Instant::now();
    let schedule = Schedule::draw(seed, &settings.mix());
    let mut notes = Vec::new();
    let limit = settings.span + settings.deadline + Duration::from_secs(60);
    let failure = match tokio::time::timeout(limit, run(&schedule, &settings, &mut notes)).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("{e:#}")),
        Err(_) => Some(format!("timed out after {}s", limit.as_secs())),
    };
    SeedReport {
        seed,
        elapsed: started.elapsed(),
        failure,
        notes,
        faults: schedule.faults(),
    }
}

async fn run(schedule: &Schedule, settings: &Settings, notes: &mut Vec<String>) -> Result<()> {
    let mut cluster = Cluster::new(schedule.seed, settings.restores);
    let workload = cluster.connect().client;
    churn::base(&workload, schedule.namespaces)
        .await
        .context("creating nodes and namespaces")?;
    for change in &schedule.initial {
        churn::apply(&workload, change)
            .await
            .with_context(|| format!("initial workload: {change:?}"))?;
    }
    let mut backup = Cluster::backup(&workload).await?;
    let mut fleet = Fleet::start(schedule.topology, &cluster);

    let start = tokio::time::Instant::now();
    for step in &schedule.steps {
        // Replicas that lost the Lease are replaced while the schedule waits.
        while tokio::time::Instant::now() < start + step.at {
            fleet.tend(&cluster)?;
            let next =
                (tokio::time::Instant::now() + Duration::from_millis(50)).min(start + step.at);
            tokio::time::sleep_until(next).await;
        }
        fleet.tend(&cluster)?;
        let at = step.at.as_millis();
        match &step.action {
            Action::Churn(change) => match churn::apply(&workload, change).await {
                Ok(churn::Applied::Done) => {}
                Ok(churn::Applied::Skipped(why)) => notes.push(format!("{at}ms {change:?}: {why}")),
                Err(e) => notes.push(format!("{at}ms {change:?} failed: {e:#}")),
            },
            Action::Impose { id, rule } => cluster.impose(*id, *rule),
            Action::Lift { id } => cluster.lift(*id),
            Action::Fault(event) => {
                if let Some(note) = fault(event, &mut cluster, &mut fleet, &workload, &mut backup)
                    .await
                    .with_context(|| format!("{at}ms {event:?}"))?
                {
                    notes.push(format!("{at}ms {event:?}: {note}"));
                }
            }
        }
    }

    cluster.heal();
    fleet.reconnect();
    // A server restarted with lost state brings slices back as they were (with new uids),
    // not as a fault-free run would have split them.
    let restored = schedule
        .steps
        .iter()
        .any(|step| matches!(step.action, Action::Fault(Event::ServerRestart { .. })));
    let verdict = settle_on_plan(&cluster, &mut fleet, &workload, settings, restored, notes).await;
    let stopped = fleet.stop().await;
    verdict?;
    stopped
}

/// Applies an instant fault. Returns a note when the fault did not apply (no leader to hand
/// over); an error is a failure of the seed (a controller that would not stop).
async fn fault(
    event: &Event,
    cluster: &mut Cluster,
    fleet: &mut Fleet,
    client: &kube::Client,
    backup: &mut Vec<serde_json::Value>,
) -> Result<Option<&'static str>> {
    let server = cluster.server();
    match *event {
        Event::Conflicts { resource, count } => {
            server.faults().fail_next(
                "update",
                resource,
                count,
                apiserver::FaultResponse::Conflict,
            );
        }
        Event::DropWatches => server.faults().drop_watches(),
        Event::ExpireWatch { resource } => {
            server.faults().expire_next_watch(resource);
            server.faults().drop_watches();
        }
        Event::Compact => {
            server.compact_history();
            server.faults().drop_watches();
        }
        Event::Backup => *backup = Cluster::backup(client).await?,
        Event::ServerRestart { from_backup } => {
            let objects = if from_backup {
                backup.clone()
            } else {
                Cluster::backup(client).await?
            };
            cluster.restart(objects)?;
        }
        Event::ControllerRestart { abrupt, down } => fleet.restart(cluster, abrupt, down).await?,
        Event::HandOver => {
            if !fleet.hand_over(cluster).await? {
                return Ok(Some("no replica led at the time"));
            }
        }
        Event::Partition { down } => {
            if fleet.partition(cluster, down).is_none() {
                return Ok(Some("no replica led at the time"));
            }
        }
    }
    Ok(None)
}

/// Waits for the controllers to settle on the plan of the final state: at two quiet
/// moments in a row, what the server holds equals what `plan` writes. Fails with the last
/// differences when `settings.deadline` passes first.
async fn settle_on_plan(
    cluster: &Cluster,
    fleet: &mut Fleet,
    client: &kube::Client,
    settings: &Settings,
    restored: bool,
    notes: &mut Vec<String>,
) -> Result<()> {
    let started = tokio::time::Instant::now();
    let server = cluster.server();
    let options = fleet::options();
    let mut expected: Option<(Vec<serde_json::Value>, crate::conformance::Written)> = None;
    let mut agreed = false;
    loop {
        fleet.tend(cluster)?;
        let collected = gc::sweep(client)
            .await
            .context("collecting orphaned slices")?;
        if collected > 0 {
            notes.push(format!(
                "the garbage collector sweep deleted {collected} orphaned slice(s)"
            ));
        }
        // Even past the deadline, one last chance to go quiet.
        let left = settings
            .deadline
            .saturating_sub(started.elapsed())
            .max(settings.quiet * 3);
        let quiet = crate::settle::Quiet {
            resources: WRITTEN,
            window: settings.quiet,
            horizon: HORIZON,
            deadline: left,
        };
        let quiet = crate::settle::settle(&server, &fleet.controllers(), &quiet).await;
        let sources = verdict::sources(client).await?;
        let stale = expected.as_ref().is_none_or(|(s, _)| *s != sources);
        if stale {
            let planned = verdict::planned(sources.clone(), &options)
                .await
                .context("planning the final state")?;
            expected = Some((sources, planned));
        }
        let planned = &expected.as_ref().ok_or_else(|| anyhow!("no plan"))?.1;
        let diffs = verdict::differences(&verdict::live(client).await?, planned, restored);
        if diffs.is_empty() && quiet && !stale {
            if agreed {
                return Ok(());
            }
            agreed = true;
            continue;
        }
        agreed = false;
        if started.elapsed() >= settings.deadline {
            let what = if quiet {
                "the controllers settled on other objects than plan writes"
            } else {
                "the controllers kept writing"
            };
            bail!(
                "{what} ({:?}, {} controller starts, after {}s):\n    {}\n    last writes: {}",
                fleet.topology(),
                fleet.starts(),
                settings.deadline.as_secs(),
                if diffs.is_empty() {
                    "(no difference at the last look)".to_owned()
                } else {
                    diffs.join("\n    ")
                },
                last_writes(&server, 8).join("; "),
            );
        }
    }
}

/// The last `n` writes to Endpoints and EndpointSlices, as `verb resource ns/name code`.
fn last_writes(server: &apiserver::ApiServer, n: usize) -> Vec<String> {
    let log = server.request_log();
    let mut writes: Vec<String> = log
        .iter()
        .rev()
        .filter(|r| r.is_write() && WRITTEN.contains(&r.resource.as_str()))
        .take(n)
        .map(|r| {
            format!(
                "{} {} {}/{} {}",
                r.verb,
                r.resource,
                r.namespace.as_deref().unwrap_or_default(),
                r.name.as_deref().unwrap_or_default(),
                r.code
            )
        })
        .collect();
    writes.reverse();
    writes
}
