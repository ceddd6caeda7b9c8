//! `kubectl-endpoints conformance`: check recorded upstream cases.

use anyhow::Result;
use clap::Args;
use kubectl_endpoints::conformance::{
    compare, compare_by, find_cases, load_case, run_dynamic, run_live, run_offline,
    upstream_written, Rules,
};
use kubectl_endpoints::dynamic::{compare_writes, describe_writes, Writes};
use std::io::Write;
use std::path::PathBuf;

/// Run recorded cluster states through our controllers and compare what they write with what
/// upstream kube-controller-manager wrote (`upstream.json`), by the rules of the conformance
/// corpus. Each case follows the rules of the Kubernetes version that recorded it (its
/// `upstream.json` names it; v1.36 otherwise). Prints one line per case and a final
/// `N passed, N failed` line.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// Directories of cases (each holding `input.yaml`, `upstream.json` and optionally
    /// `flags`), or single case directories. An older version's recordings
    /// (`versions/v1.34/`) take their input from the same case under `cases/`.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Print every difference (by default the first 20 of a failing case).
    #[arg(long)]
    pub verbose: bool,
    /// Also run each case through the live controllers as `dev` runs them (embedded API
    /// server over TCP, default worker counts); a case passes only if both the `plan` run
    /// and the live run match upstream. Dynamic cases (with `steps.yaml`) run only live, and
    /// also compare the number of writes made during the steps.
    #[arg(long)]
    pub live: bool,
}

/// Runs the command; true when every case passed.
pub fn run(args: ConformanceArgs) -> Result<bool> {
    let mut tally = Tally {
        verbose: args.verbose,
        passed: 0,
        failed: 0,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut out = std::io::stdout().lock();
    for dir in &args.dirs {
        for case_dir in find_cases(dir)? {
            let case = load_case(&case_dir)?;
            let Some(upstream) = case.upstream.as_ref() else {
                writeln!(out, "{}: skipped (no upstream.json)", case.name)?;
                continue;
            };
            let expected = upstream_written(upstream)?;
            if case.steps.is_some() {
                if !args.live {
                    writeln!(out, "{}: skipped (dynamic: runs with --live)", case.name)?;
                    continue;
                }
                let diffs = match runtime.block_on(run_dynamic(&case)) {
                    Ok((written, writes)) => {
                        let upstream_writes = Writes::from_upstream(upstream).unwrap_or_default();
                        writeln!(
                            out,
                            "{}: writes {}",
                            case.name,
                            describe_writes(&writes, &upstream_writes)
                        )?;
                        let mut diffs = compare_by(&written, &expected, Rules::Dynamic);
                        diffs.extend(compare_writes(&writes, &upstream_writes));
                        diffs
                    }
                    Err(err) => vec![format!("live: {err:#}")],
                };
                tally.report(&mut out, &case.name, &diffs)?;
                continue;
            }
            let mut diffs: Vec<String> = match runtime.block_on(run_offline(&case)) {
                Ok(written) => compare(&written, &expected)
                    .into_iter()
                    .map(|d| format!("offline: {d}"))
                    .collect(),
                Err(err) => vec![format!("offline: {err:#}")],
            };
            if args.live {
                match runtime.block_on(run_live(&case)) {
                    Ok(written) => diffs.extend(
                        compare(&written, &expected)
                            .into_iter()
                            .map(|d| format!("live: {d}")),
                    ),
                    Err(err) => diffs.push(format!("live: {err:#}")),
                }
            }
            tally.report(&mut out, &case.name, &diffs)?;
        }
    }
    writeln!(out, "{} passed, {} failed", tally.passed, tally.failed)?;
    Ok(tally.failed == 0)
}

/// The cases' verdicts so far, and how much of a failure to print.
struct Tally {
    /// Print every difference of a failing case, not the first 20.
    verbose: bool,
    passed: usize,
    failed: usize,
}

impl Tally {
    /// Prints one case's verdict and counts it.
    fn report(
        &mut self,
        out: &mut impl Write,
        name: &str,
        diffs: &[String],
    ) -> std::io::Result<()> {
        if diffs.is_empty() {
            self.passed += 1;
            return writeln!(out, "{name}: ok");
        }
        self.failed += 1;
        writeln!(out, "{name}: FAILED ({} differences)", diffs.len())?;
        let shown = if self.verbose {
            diffs.len()
        } else {
            diffs.len().min(20)
        };
        for d in &diffs[..shown] {
            writeln!(out, "    {d}")?;
        }
        Ok(())
    }
}
