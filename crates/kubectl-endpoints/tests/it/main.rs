//! kubectl-endpoints' integration tests, in one binary: each module drives one command
//! (`plan`, `audit`, `conformance`, `bench`, `faults`, `apiserver`) or one shipped artefact
//! (the deploy manifests, the image) through the built binary or the library, on the shared
//! test kit (`crates/testkit`). The image test is ignored by default; `scripts/test.sh` runs
//! it on its own (`cargo test -p kubectl-endpoints --test it -- --ignored image::`).

mod audit_cli;
mod bench_cli;
mod bounded_input;
mod conformance;
mod deploy_manifests;
mod fault_schedules;
mod image;
mod listen_cli;
mod logging_cli;
mod plan_cli;

/// The conformance corpus: cluster states with what kube-controller-manager wrote for them.
fn corpus() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/cases")
}
