//! One replica of a leader-elected Deployment: wait for the Lease, run the controllers while
//! holding it, and keep `/readyz` and `/healthz` truthful throughout.
//!
//! A standby runs no informers, as kube-controller-manager's does: it would only double the
//! watch load on the API server for a faster take-over. It is ready as soon as it serves,
//! so a rolling update of two replicas proceeds. When it becomes leader it turns not ready
//! until its informers synced. The controllers run in their own task so that a panic there
//! is seen: it fails `/healthz`, and the Lease is handed back so the standby takes over
//! while this process exits.

use std::time::Duration;

use kube::Client;
use prometheus::Registry;
use tokio_util::sync::CancellationToken;
use tracing::error;

use crate::health::{Liveness, Readiness};
use crate::leader::{LeaderElector, LeadershipEnd};
use crate::Options;

/// Everything one replica needs.
#[derive(Clone)]
pub struct Replica {
    /// Client to the API server.
    pub client: Client,
    /// Which controllers, with which settings (`settings.leader_election` names the Lease).
    pub options: Options,
    /// Where the controllers register their metrics.
    pub registry: Registry,
    /// Served on `/readyz`.
    pub readiness: Readiness,
    /// Served on `/healthz` and `/livez`.
    pub liveness: Liveness,
    /// This replica's identity in the Lease.
    pub identity: String,
    /// How long past the renew deadline `/healthz` tolerates a leader without renewal
    /// ([`crate::leader::HEALTH_CHECK_MARGIN`] outside tests).
    pub health_margin: Duration,
}

impl Replica {
    /// Competes for the Lease and runs the controllers while holding it, until `shutdown`
    /// is cancelled or leadership ends. [`LeadershipEnd::Finished`] means the controllers
    /// stopped on their own; `/healthz` then says why.
    pub async fn run(self, shutdown: CancellationToken) -> LeadershipEnd {
        let Self {
            client,
            options,
            registry,
            readiness,
            liveness,
            identity,
            health_margin,
        } = self;
        // A standby serves and has nothing to sync: ready.
        readiness.set(true);
        let elector = LeaderElector::new(
            client.clone(),
            options.settings.leader_election.clone(),
            identity,
        )
        .with_liveness(liveness.clone(), health_margin);
        elector
            .run(
                |token| lead(client, options, registry, readiness, liveness, token),
                async move { shutdown.cancelled().await },
            )
            .await
    }
}

/// The leader's work: the controllers, in their own task, until `token` is cancelled.
async fn lead(
    client: Client,
    options: Options,
    registry: Registry,
    readiness: Readiness,
    liveness: Liveness,
    token: CancellationToken,
) {
    // Not ready again until the informers synced (the controllers set it).
    readiness.set(false);
    let task = tokio::spawn({
        let token = token.clone();
        async move {
            crate::run(
                client,
                &options,
                &registry,
                readiness,
                crate::Activity::new(),
                token,
            )
            .await
        }
    });
    let why = match task.await {
        Ok(Ok(())) if token.is_cancelled() => return,
        Ok(Ok(())) => "the controllers returned without being asked to stop".to_owned(),
        Ok(Err(err)) => format!("the controllers failed: {err}"),
        Err(err) => format!("the controllers' task died: {err}"),
    };
    error!(%why, "controllers stopped");
    liveness.controllers_stopped(why);
}
