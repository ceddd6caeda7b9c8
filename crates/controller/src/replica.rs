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

use prometheus::Registry;
use tokio_util::sync::CancellationToken;
use tracing::error;

use crate::health::{Liveness, Readiness};
use crate::leader::{LeaderElector, LeadershipEnd};
use crate::{Clients, Options};

/// Everything one replica needs.
#[derive(Clone)]
pub struct Replica {
    /// Clients to the API server: the Lease is held through `leader_election`, the
    /// controllers use the rest.
    pub clients: Clients,
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
            clients,
            options,
            registry,
            readiness,
            liveness,
            identity,
            health_margin,
        } = self;
        // A standby serves and has nothing to sync: ready.
        readiness.set(true);
        let lease = options.settings.leader_election.resource_name.clone();
        let master = match master_status(&registry, &lease) {
            Ok(gauge) => Some(gauge),
            Err(err) => {
                error!(%err, "registering leader_election_master_status");
                None
            }
        };
        let elector = LeaderElector::new(
            clients.leader_election.clone(),
            options.settings.leader_election.clone(),
            identity,
        )
        .with_liveness(liveness.clone(), health_margin)
        .with_wire(clients.wire.clone());
        elector
            .run(
                |token| {
                    let master = master.clone();
                    let lead = lead(clients, options, registry, readiness, liveness, token);
                    async move {
                        master.iter().for_each(|m| m.set(1));
                        lead.await;
                        master.iter().for_each(|m| m.set(0));
                    }
                },
                async move { shutdown.cancelled().await },
            )
            .await
    }
}

/// Registers client-go's `leader_election_master_status{name}`: 1 while this replica leads
/// the Lease `name`, 0 otherwise.
fn master_status(
    registry: &Registry,
    name: &str,
) -> Result<prometheus::IntGauge, prometheus::Error> {
    let gauge = crate::instruments::Instruments::new(registry)
        .metric_vec::<prometheus::IntGaugeVec>(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates \
         backup, 1 indicates master. 'name' is the string used to identify the lease.",
            &["name"],
        )?;
    let status = gauge.with_label_values(&[name]);
    status.set(0);
    Ok(status)
}

/// The leader's work: the controllers, in their own task, until `token` is cancelled.
async fn lead(
    clients: Clients,
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
                clients,
                &options,
                &registry,
                readiness,
                crate::Activity::new(),
                token,
            )
            .await
        }
    });
    // If this future is dropped (the Lease was lost), the controllers go with it.
    let task = tokio_util::task::AbortOnDropHandle::new(task);
    let why = match task.await {
        Ok(Ok(())) if token.is_cancelled() => return,
        Ok(Ok(())) => "the controllers returned without being asked to stop".to_owned(),
        Ok(Err(err)) => format!("the controllers failed: {err}"),
        Err(err) => format!("the controllers' task died: {err}"),
    };
    error!(%why, "controllers stopped");
    liveness.controllers_stopped(why);
}

#[cfg(test)]
mod master_status_tests {
    use super::*;

    #[test]
    fn leader_status_is_exported_by_lease_name() {
        let registry = Registry::new();
        let status = master_status(&registry, "kube-endpoints").expect("registers");
        status.set(1);
        let text = crate::metrics::render(&registry).expect("renders");
        assert!(
            text.contains("leader_election_master_status{name=\"kube-endpoints\"} 1"),
            "{text}"
        );
    }
}
