//! `kubectl-endpoints`: the workstation tools. On a user's PATH it is also a kubectl plugin
//! (`kubectl endpoints plan -f examples/`).

mod cmd;

use clap::{Parser, Subcommand};
use kube_endpoints::{exit_code, runtime};
use std::process::ExitCode;

/// Workstation tools for kube-endpoints: what the controllers would write (`plan`), whether a
/// cluster holds it (`audit`), why a pod is or is not an endpoint (`explain`), an embedded API server with the controllers running (`dev`),
/// and the lab (`conformance`, `faults`, `bench`). The controllers that run in a cluster are
/// the `kube-endpoints` binary.
#[derive(Debug, Parser)]
#[command(name = "kubectl-endpoints", bin_name = "kubectl endpoints", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Plan(cmd::plan::PlanArgs),
    Audit(cmd::audit::AuditArgs),
    Explain(cmd::explain::ExplainArgs),
    Dev(Box<cmd::dev::DevArgs>),
    Apiserver(cmd::apiserver::ApiServerArgs),
    Conformance(cmd::conformance::ConformanceArgs),
    Bench(cmd::bench::BenchArgs),
    Faults(cmd::faults::FaultsArgs),
}

fn main() -> ExitCode {
    kube_endpoints::allocator::tune();
    let result = match Cli::parse().command {
        Command::Explain(args) => return explain(args),
        Command::Plan(args) => cmd::plan::run(args).map(|()| true),
        Command::Conformance(args) => cmd::conformance::run(args),
        Command::Dev(args) => runtime(Some(&args.controllers.logging), None)
            .and_then(|rt| rt.block_on(cmd::dev::run(*args)))
            .map(|()| true),
        Command::Audit(args) => {
            runtime(None, None).and_then(|rt| rt.block_on(cmd::audit::run(args)))
        }
        Command::Bench(args) => {
            runtime(None, None).and_then(|rt| rt.block_on(cmd::bench::run(args)))
        }
        Command::Faults(args) => cmd::faults::run(args),
        Command::Apiserver(args) => runtime(None, None)
            .and_then(|rt| rt.block_on(cmd::apiserver::run(args)))
            .map(|()| true),
    };
    exit_code(result)
}

/// `explain` ends with its own codes: 0 with a ready endpoint, 3 without, 2 on a usage
/// error (clap exits 2 on its own), 1 on any other error.
fn explain(args: cmd::explain::ExplainArgs) -> ExitCode {
    // A runtime without the controllers' logging: explain's output is its answer alone.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from);
    match runtime.and_then(|rt| rt.block_on(cmd::explain::run(args))) {
        Ok(explanation) => ExitCode::from(explanation.exit_code()),
        Err(e) if e.downcast_ref::<cmd::explain::UsageError>().is_some() => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
        Err(e) => exit_code(Err(e)),
    }
}

/// `docs/flags.md`: every command of both binaries with its flags, as clap renders their
/// `--help`, so the reference is generated from the flag definitions themselves.
#[cfg(test)]
fn flags_doc() -> String {
    use clap::{Args, CommandFactory};
    let run = kube_endpoints::run::RunArgs::augment_args(clap::Command::new("run"))
        .about("Run the controllers against a cluster.");
    let lean = clap::Command::new("kube-endpoints")
        .subcommand(run)
        .subcommand_required(true);
    let mut out = String::from(
        "# Flags\n\n\
         Generated from the flag definitions; do not edit. After changing a flag, run\n\
         `UPDATE_FLAGS_DOC=1 cargo test -p kubectl-endpoints --bin kubectl-endpoints flags_doc`.\n\n\
         `kube-endpoints` is the binary that runs in a cluster; `kubectl-endpoints` holds the\n\
         workstation tools (also `kubectl endpoints ...` when it is on your PATH).\n",
    );
    let ignored: Vec<String> = kube_endpoints::ignored_flags::all()
        .into_iter()
        .map(|(name, takes)| match takes {
            kube_endpoints::ignored_flags::Takes::Bool => format!("`--{name}`"),
            kube_endpoints::ignored_flags::Takes::Value => format!("`--{name}=...`"),
        })
        .collect();
    let ignored_section = format!(
        "\n## kube-controller-manager flags `run` accepts and ignores\n\n\
         So that kube-controller-manager's command line carries over unchanged, `kube-endpoints \
         run` accepts every other flag of kube-controller-manager v1.36. They concern its other \
         controllers or features, change nothing here, stay out of `--help`, and the ones given \
         are named in one warning at start:\n\n{}.\n",
        ignored.join(", ")
    );
    for mut binary in [lean, Cli::command()] {
        binary.build();
        let name = binary.get_name().to_owned();
        for sub in binary.get_subcommands_mut() {
            let title = format!("{name} {}", sub.get_name());
            let help = sub.clone().bin_name(&title).render_long_help().to_string();
            out.push_str(&format!(
                "\n## `{title}`\n\n```text\n{}\n```\n",
                help.trim_end()
            ));
        }
    }
    out.push_str(&ignored_section);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_doc_matches_the_flag_definitions() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/flags.md");
        let text = flags_doc();
        if std::env::var_os("UPDATE_FLAGS_DOC").is_some() {
            std::fs::write(&path, &text).unwrap();
            return;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == text,
            "docs/flags.md is stale: run `UPDATE_FLAGS_DOC=1 cargo test -p kubectl-endpoints \
             --bin kubectl-endpoints flags_doc`"
        );
    }

    #[test]
    fn every_command_of_both_binaries_is_in_the_flags_doc() {
        let text = flags_doc();
        for command in [
            "kube-endpoints run",
            "kubectl-endpoints plan",
            "kubectl-endpoints audit",
            "kubectl-endpoints explain",
            "kubectl-endpoints dev",
            "kubectl-endpoints apiserver",
            "kubectl-endpoints conformance",
            "kubectl-endpoints bench",
            "kubectl-endpoints faults",
        ] {
            assert!(text.contains(&format!("## `{command}`")), "{command}");
        }
        assert!(text.contains("--mirroring-max-endpoints-per-subset"));
    }
}
