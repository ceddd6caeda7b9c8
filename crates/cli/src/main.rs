//! The `kube-endpoints` binary.

mod cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Kubernetes' Endpoints and EndpointSlice controllers, rebuilt in Rust.
#[derive(Debug, Parser)]
#[command(name = "kube-endpoints", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Plan(cmd::plan::PlanArgs),
    Conformance(cmd::conformance::ConformanceArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(args) => cmd::plan::run(args).map(|()| true),
        Command::Conformance(args) => cmd::conformance::run(args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        // A closed pipe (`| head`) is not an error worth reporting.
        Err(err) if err.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
