//! `kubectl-endpoints apiserver`: the embedded API server on its own.

use anyhow::{Context, Result};
use clap::Args;
use kubectl_endpoints::manifests::{load_paths, to_values};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Start the embedded in-memory Kubernetes API server (for development and tests, not
/// production), optionally loaded with manifests, and write a kubeconfig for kubectl and the
/// controllers. Runs until interrupted.
#[derive(Debug, Args)]
pub struct ApiServerArgs {
    /// Address to listen on (loopback by default; port 0 picks a free port). Other addresses
    /// need --allow-remote.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Allow a non-loopback --listen address. The server has no authentication: anyone who
    /// can reach it can read and change every object.
    #[arg(long)]
    pub allow_remote: bool,
    /// Manifests to load at start (files or directories; repeatable).
    #[arg(short = 'f', long = "filename")]
    pub files: Vec<PathBuf>,
    /// Where to write a kubeconfig pointing at the server.
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,
    /// The kube-apiserver version to imitate, `1.33` to `1.36` (or `kube=1.34`): `/version`
    /// reports it, and the server refuses what that version refuses (v1.33:
    /// `trafficDistribution: PreferSameZone|PreferSameNode`, and streaming lists).
    #[arg(long, default_value = "1.36", value_parser = kube_endpoints::flags::parse_emulated_version)]
    pub emulated_version: reconcile::KubeVersion,
    /// kube-apiserver's `Name=true|false,...` feature gates; `PreferSameTrafficDistribution`
    /// and `WatchList` change what this server accepts, the others nothing.
    #[arg(long, value_delimiter = ',', value_parser = kube_endpoints::flags::parse_feature_gate)]
    pub feature_gates: Vec<(String, bool)>,
}

/// Reads manifests into the raw objects the API server loads, printing notes on skipped
/// documents.
pub fn raw_objects(files: &[PathBuf]) -> Result<Vec<serde_json::Value>> {
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let loaded = load_paths(files)?;
    for note in &loaded.notes {
        tracing::warn!(%note, "manifest document skipped");
    }
    to_values(&loaded.objects).context("re-encoding a manifest")
}

/// Refuses a non-loopback `listen` without `allow_remote`, and warns when it is allowed.
pub fn check_listen(listen: SocketAddr, allow_remote: bool) -> Result<()> {
    if let Some(warning) = kubectl_endpoints::listen::check(listen, allow_remote)? {
        eprintln!("{warning}");
    }
    Ok(())
}

/// Starts the server, imitating `version`, and loads the manifests; returns the running
/// handle.
pub async fn start(
    listen: SocketAddr,
    files: &[PathBuf],
    kubeconfig: Option<&PathBuf>,
    version: apiserver::ServerVersion,
) -> Result<apiserver::ApiServerHandle> {
    let objects = raw_objects(files)?;
    let config = apiserver::Config {
        bind: listen,
        version,
        ..Default::default()
    };
    let handle = apiserver::ApiServer::start(config)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    let count = objects.len();
    handle
        .server()
        .apply_objects(objects)
        .context("loading manifests")?;
    if let Some(path) = kubeconfig {
        handle
            .write_kubeconfig(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    tracing::info!(
        url = %handle.url(),
        objects = count,
        version = %version.git_version(),
        "embedded API server started"
    );
    Ok(handle)
}

/// Runs the command.
pub async fn run(args: ApiServerArgs) -> Result<()> {
    check_listen(args.listen, args.allow_remote)?;
    let version =
        apiserver::ServerVersion::of(args.emulated_version).with_feature_gates(&args.feature_gates);
    let handle = start(
        args.listen,
        &args.files,
        args.write_kubeconfig.as_ref(),
        version,
    )
    .await?;
    if let Some(path) = &args.write_kubeconfig {
        eprintln!(
            "kubeconfig written to {}; try: kubectl --kubeconfig {} get pods -A",
            path.display(),
            path.display()
        );
    }
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    handle
        .shutdown()
        .await
        .context("stopping the embedded API server")?;
    Ok(())
}
