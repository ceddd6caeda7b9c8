//! One API client per request budget, the way kube-controller-manager hands them out.
//!
//! kube-controller-manager does not share one `--kube-api-qps`/`--kube-api-burst` token
//! bucket among its controllers: its client builder makes a client per controller
//! (`endpoint-controller`, `endpointslice-controller`, `endpointslice-mirroring-controller`),
//! each with the full budget, the shared informers get a client of their own, and so does
//! leader election. A controller's Events go out through that controller's client, as each
//! upstream controller's event broadcaster writes with the controller's own client. So a
//! burst of slice writes for a thousand new Services throttles the EndpointSlice controller
//! alone; the Endpoints controller keeps writing at its own rate, and no write delays a
//! re-list. We keep that division, so the flags keep their upstream meaning: a budget per
//! controller, not for the whole process.

use kube::Client;

use crate::client::{load_config, metered_client_from_config, ClientError, ClientSettings};
use crate::rest_metrics::RestClientMetrics;
use crate::wire::Negotiated;

/// The clients of one run: one per budget.
#[derive(Clone)]
pub struct Clients {
    /// Watches and lists of the shared informers.
    pub informers: Client,
    /// The Endpoints controller's writes and Events.
    pub endpoints: Client,
    /// The EndpointSlice controller's writes and Events.
    pub endpoint_slices: Client,
    /// The mirroring controller's writes and Events.
    pub mirroring: Client,
    /// The Lease.
    pub leader_election: Client,
    /// The encoding they speak (`--kube-api-content-type`), shared so that a server
    /// refusing protobuf turns them all to JSON.
    pub wire: Negotiated,
}

impl Clients {
    /// Clients for `settings`, each with its own token bucket, all counted in `metrics`.
    pub async fn build(
        settings: &ClientSettings,
        metrics: &RestClientMetrics,
    ) -> Result<Self, ClientError> {
        let config = load_config(settings).await?;
        let mut clients =
            Self::try_from_fn(|| metered_client_from_config(config.clone(), settings, metrics))?;
        clients.wire = Negotiated::new(settings.encoding);
        Ok(clients)
    }

    /// Clients made by `make`, called once per budget, speaking protobuf.
    pub fn try_from_fn<E>(mut make: impl FnMut() -> Result<Client, E>) -> Result<Self, E> {
        Ok(Self {
            informers: make()?,
            endpoints: make()?,
            endpoint_slices: make()?,
            mirroring: make()?,
            leader_election: make()?,
            wire: Negotiated::default(),
        })
    }
}

/// Every budget shares `client`: one bucket for everything, as tests and tools that do not
/// care about budgets want. They speak protobuf.
impl From<Client> for Clients {
    fn from(client: Client) -> Self {
        Self {
            informers: client.clone(),
            endpoints: client.clone(),
            endpoint_slices: client.clone(),
            mirroring: client.clone(),
            leader_election: client,
            wire: Negotiated::default(),
        }
    }
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients").finish_non_exhaustive()
    }
}
