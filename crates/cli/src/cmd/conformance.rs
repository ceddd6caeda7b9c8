//! `kube-endpoints conformance`: check recorded upstream cases.

use anyhow::Result;
use clap::Args;
use kube_endpoints::conformance::{
    compare, find_cases, load_case, run_live, run_offline, upstream_written,
};
use std::io::Write;
use std::path::PathBuf;

/// Run recorded cluster states through our controllers and compare what they write with what
/// upstream kube-controller-manager wrote (`upstream.json`), by the rules of the conformance
/// corpus. Prints one line per case and a final `N passed, N failed` line.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// Directories of cases (each holding `input.yaml`, `upstream.json` and optionally
    /// `flags`), or single case directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Print every difference (by default the first 20 of a failing case).
    #[arg(long)]
    pub verbose: bool,
    /// Also run each case through the live controllers as `dev` runs them (embedded API
    /// server over TCP, default worker counts); a case passes only if both the `plan` run
    /// and the live run match upstream.
    #[arg(long)]
    pub live: bool,
}

/// Runs the command; true when every case passed.
pub fn run(args: ConformanceArgs) -> Result<bool> {
    let (mut passed, mut failed) = (0, 0);
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
            let expected = upstream_written(upstream);
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
            if diffs.is_empty() {
                passed += 1;
                writeln!(out, "{}: ok", case.name)?;
            } else {
                failed += 1;
                writeln!(out, "{}: FAILED ({} differences)", case.name, diffs.len())?;
                let shown = if args.verbose {
                    diffs.len()
                } else {
                    diffs.len().min(20)
                };
                for d in &diffs[..shown] {
                    writeln!(out, "    {d}")?;
                }
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
    Ok(failed == 0)
}
