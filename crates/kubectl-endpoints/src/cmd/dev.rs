//! `kubectl-endpoints dev`: the embedded API server with both controllers running against it.

use anyhow::{Context, Result};
use clap::Args;
use kube_endpoints::args::ControllerFlags;
use kube_endpoints::run::Session;
use kubectl_endpoints::settle::{settle, Controllers, Quiet};
use kubectl_endpoints::snapshot::list;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// When `--exit-when-synced` prints (see [`kubectl_endpoints::settle`]): the controllers idle with
/// nothing due within a second (what a 500 ms quiet window with a 500 ms horizon waited
/// for), or after ten minutes whatever they do.
const QUIET: Quiet = Quiet::on_writes(Duration::from_millis(500), Duration::from_secs(600));

/// Start the embedded API server, load manifests into it, and run the controllers against it
/// over HTTP, as they would run against a cluster. Prints how to use kubectl with it. Runs
/// until interrupted (or, with --exit-when-synced, until the controllers are idle).
#[derive(Debug, Args)]
pub struct DevArgs {
    /// Manifests to load (files or directories; repeatable).
    #[arg(short = 'f', long = "filename")]
    pub files: Vec<PathBuf>,
    /// Address of the embedded API server (loopback; other addresses need --allow-remote).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Allow a non-loopback --listen address. The server has no authentication: anyone who
    /// can reach it can read and change every object.
    #[arg(long)]
    pub allow_remote: bool,
    /// Where to write the kubeconfig (default: kube-endpoints-dev.kubeconfig in the temp dir).
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub controllers: ControllerFlags,
    /// Stop once the controllers have synced everything and gone quiet, printing the
    /// EndpointSlices and Endpoints they wrote (a one-shot demo; also handy in scripts).
    #[arg(long)]
    pub exit_when_synced: bool,
}

/// Runs the command.
pub async fn run(args: DevArgs) -> Result<()> {
    crate::cmd::apiserver::check_listen(args.listen, args.allow_remote)?;
    let kubeconfig = args
        .write_kubeconfig
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("kube-endpoints-dev.kubeconfig"));
    let flags = &args.controllers;
    let mut settings = flags.settings(Some(kubeconfig.clone()))?;
    // The embedded server claims the version of --emulated-version (v1.36 without), and the
    // controllers read it from its /version as they would from a cluster's.
    let version = kubectl_endpoints::plan::embedded_server_version(&settings);
    let handle =
        crate::cmd::apiserver::start(args.listen, &args.files, Some(&kubeconfig), version).await?;
    // A development loop: plain HTTP on 10252 unless told otherwise (any free port for a
    // one-shot run, which others may run side by side), and HTTPS only when --secure-port
    // is given, since the embedded server knows no scraper's token.
    if flags.port.is_none() {
        settings.serving.port = Some(if args.exit_when_synced { 0 } else { 10252 });
    }
    if flags.serving.secure_port.is_none() {
        settings.serving.secure.port = 0;
    }
    // Plain HTTP has no authentication: loopback only, unless --bind-address says otherwise.
    if flags.bind_address.is_none() {
        settings.serving.bind_address = std::net::Ipv4Addr::LOCALHOST.into();
    }
    let session = Session::start(settings, flags).await?;
    let metrics = match (session.metrics_addr, session.secure_addr) {
        (Some(plain), _) => format!("http://{plain}/metrics"),
        (None, Some(secure)) => format!("https://{secure}/metrics"),
        (None, None) => "not served".to_owned(),
    };
    tracing::info!(
        metrics = %metrics,
        hint = %format!(
            "kubectl --kubeconfig {} get endpointslices,endpoints -A",
            kubeconfig.display()
        ),
        "controllers running"
    );
    let controllers = tokio::spawn(session.controllers(session.shutdown.clone()));
    if args.exit_when_synced {
        let controllers = Controllers::InProcess {
            readiness: &session.readiness,
            activity: &session.activity,
        };
        let settled = settle(handle.server(), &controllers, &QUIET).await;
        if !settled {
            tracing::warn!("the controllers did not settle within 600s; printing what is there");
        }
        print_objects(&session.client).await?;
        session.shutdown.cancel();
    }
    match controllers.await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => return Err(err.into()),
        Err(err) => anyhow::bail!("controllers task failed: {err}"),
    }
    session.finish().await;
    handle
        .shutdown()
        .await
        .context("stopping the embedded API server")?;
    Ok(())
}

async fn print_objects(client: &kube::Client) -> Result<()> {
    use k8s_openapi::api::core::v1::Endpoints;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let slices: Vec<EndpointSlice> = list(client, None).await?;
    let endpoints: Vec<Endpoints> = list(client, None).await?;
    // managedFields only say who wrote what when, and kubectl hides them too.
    for mut e in endpoints {
        e.metadata.managed_fields = None;
        println!("---\n{}", serde_norway::to_string(&e)?);
    }
    for mut s in slices {
        s.metadata.managed_fields = None;
        println!("---\n{}", serde_norway::to_string(&s)?);
    }
    Ok(())
}
