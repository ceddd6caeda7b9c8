//! `kube-endpoints run`: the controllers against a cluster.

use crate::args::{parse_duration, ControllerFlags};
use anyhow::{Context, Result};
use clap::Args;
use controller::health::{self, Readiness};
use controller::leader::{default_identity, LeaderElector, LeadershipEnd};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Run the Endpoints and EndpointSlice controllers against a cluster, in place of
/// kube-controller-manager's (start it with `--controllers=*,-endpoint,-endpointslice`).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// kubeconfig to use; without it, the in-cluster config or the default kubeconfig.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub controllers: ControllerFlags,
    /// Hold a Lease so only one replica writes.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// How long a Lease holder's claim lasts without renewal.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the holder keeps trying to renew before giving up leadership.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How often to try to acquire or renew.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// Name of the Lease.
    #[arg(long, default_value = "kube-endpoints")]
    pub leader_elect_resource_name: String,
    /// Namespace of the Lease.
    #[arg(long, default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
}

/// Cancels the token on SIGINT or SIGTERM.
pub fn cancel_on_signals(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {}
            () = term => {}
        }
        tracing::info!("signal received, shutting down");
        token.cancel();
    });
}

/// Runs the command; false when leadership was lost (the process exits non-zero).
pub async fn run(args: RunArgs) -> Result<bool> {
    let (endpoints, endpoint_slices) = args.controllers.enabled()?;
    let mut settings = args.controllers.settings(args.kubeconfig.clone())?;
    settings.leader_election.enabled = args.leader_elect;
    settings.leader_election.lease_duration = args.leader_elect_lease_duration;
    settings.leader_election.renew_deadline = args.leader_elect_renew_deadline;
    settings.leader_election.retry_period = args.leader_elect_retry_period;
    settings.leader_election.resource_name = args.leader_elect_resource_name.clone();
    settings.leader_election.resource_namespace = args.leader_elect_resource_namespace.clone();
    settings.validate()?;
    let client = controller::client::build_client(&settings.client)
        .await
        .context("connecting to the API server")?;
    let options = controller::Options {
        settings: settings.clone(),
        endpoints,
        endpoint_slices,
    };

    let shutdown = CancellationToken::new();
    cancel_on_signals(shutdown.clone());
    let registry = prometheus::Registry::new();
    let readiness = Readiness::new();
    let listener = health::bind(&settings.serving).await.with_context(|| {
        format!(
            "binding --bind-address {} --port {}",
            settings.serving.bind_address, settings.serving.port
        )
    })?;
    tracing::info!(address = %listener.local_addr()?, "serving /metrics, /healthz and /readyz");
    let server = tokio::spawn(health::serve(
        listener,
        registry.clone(),
        readiness.clone(),
        {
            let t = shutdown.clone();
            async move { t.cancelled().await }
        },
    ));

    let ok = if settings.leader_election.enabled {
        let identity = default_identity();
        tracing::info!(identity, lease = %settings.leader_election.resource_name, "waiting for leadership");
        let elector =
            LeaderElector::new(client.clone(), settings.leader_election.clone(), identity);
        let end = elector
            .run(
                |token| {
                    let (client, options, registry, readiness) = (
                        client.clone(),
                        options.clone(),
                        registry.clone(),
                        readiness.clone(),
                    );
                    async move {
                        if let Err(err) =
                            controller::run(client, &options, &registry, readiness, token).await
                        {
                            tracing::error!(%err, "controllers stopped");
                        }
                    }
                },
                {
                    let t = shutdown.clone();
                    async move { t.cancelled().await }
                },
            )
            .await;
        if matches!(end, LeadershipEnd::Lost) {
            tracing::error!("leader election lost");
            false
        } else {
            true
        }
    } else {
        controller::run(client, &options, &registry, readiness, shutdown.clone()).await?;
        true
    };
    shutdown.cancel();
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::warn!(%err, "metrics server failed"),
        Err(err) => tracing::warn!(%err, "metrics server task failed"),
    }
    Ok(ok)
}
