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
mod monitoring;
mod plan_cli;

/// `kubectl-endpoints`, the binary built for these tests, to give arguments and run.
fn cli() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-endpoints"))
}

/// A loopback port free now, for a child process to listen on.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The conformance corpus: cluster states with what kube-controller-manager wrote for them.
fn corpus() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/cases")
}

/// The recordings of every Kubernetes version: `cases/` (v1.36) and each older version's
/// `versions/v1.3X/` (the same cases' answers, read with the inputs under `cases/`).
fn every_version_corpus() -> Vec<std::path::PathBuf> {
    let versions = corpus().join("../versions");
    let mut dirs = vec![corpus()];
    for version in reconcile::KubeVersion::supported() {
        let dir = versions.join(version.to_string());
        if dir.is_dir() {
            dirs.push(dir);
        }
    }
    assert_eq!(
        dirs.len(),
        4,
        "v1.36 and the recordings of v1.33, v1.34, v1.35"
    );
    dirs
}

/// Held by the tests that keep the CPU busy (controllers and a server planning or syncing every
/// case flat out), shared among them ([`shares_cpu`]), and alone ([`alone`]) by the test that
/// counts the controllers' writes against upstream's (how many writes a burst takes depends on
/// how the syncs interleave, which a busy CPU changes) and by the fifty fault schedules (six at
/// a time, with wall-clock deadlines). Tests that mostly wait (the bench runs, the single
/// pinned seeds) take no part.
static CPU: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// For a test that loads the CPU: it may run beside others like it, not beside [`alone`].
async fn shares_cpu() -> tokio::sync::RwLockReadGuard<'static, ()> {
    CPU.read().await
}

/// For the test whose figures a busy CPU would change: no [`shares_cpu`] test runs meanwhile.
async fn alone() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    CPU.write().await
}
