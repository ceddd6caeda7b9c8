//! The controllers' command line and process: kube-controller-manager's flags, logging,
//! serving, leader election and the run loop, for the `kube-endpoints` binary. The
//! workstation tools (`kubectl-endpoints`) reuse the flags and the run session for `dev`, so
//! the two binaries take the same flags the same way; nothing here depends on them.

pub mod allocator;
pub mod args;
pub mod build_info;
pub mod flags;
pub mod ignored_flags;
pub mod logging;
pub mod run;
pub mod startup_pages;

use std::process::ExitCode;

/// The async runtime, with logging set up from the command's flags (klog text at V(0) for
/// commands without them), and `workers` worker threads (`None`: Tokio's default, one per
/// core, or `TOKIO_WORKER_THREADS`). One worker is the calling thread itself: every task
/// runs where `block_on` runs, and no wake-up has to cross to another thread.
pub fn runtime(
    logging: Option<&args::LoggingFlags>,
    workers: Option<usize>,
) -> anyhow::Result<tokio::runtime::Runtime> {
    let default = args::LoggingFlags {
        verbosity: 0,
        logging_format: args::LoggingFormat::Text,
    };
    logging::init(logging.unwrap_or(&default));
    let mut builder = match workers {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(workers) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    Ok(builder.enable_all().build()?)
}

/// The process's exit code for a command's result: success when it returned true, failure
/// when false or on an error, which is printed. A closed pipe (`| head`) is not an error
/// worth reporting.
pub fn exit_code(result: anyhow::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err)
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
