//! One API client per request budget, the way kube-controller-manager hands them out.
//!
//! kube-controller-manager does not share one `--kube-api-qps`/`--kube-api-burst` token
//! bucket among its controllers: its client builder makes a client per controller
//! (`endpoint-controller`, `endpointslice-controller`, `endpointslicemirroring-controller`),
//! each with the full budget, the shared informers get a client of their own, and so does
//! leader election. A controller's Events go out through that controller's client, as each
//! upstream controller's event broadcaster writes with the controller's own client. So a
//! burst of slice writes for a thousand new Services throttles the EndpointSlice controller
//! alone; the Endpoints controller keeps writing at its own rate, and no write delays a
//! re-list. We keep that division, so the flags keep their upstream meaning: a budget per
//! controller, not for the whole process.
//!
//! With `--use-service-account-credentials` the same clients carry different identities:
//! each controller's client its own ServiceAccount's token, each informer the token of a
//! running controller allowed to watch its kind, and leader election the process's own
//! credentials (see [`crate::service_accounts`]).

use kube::Client;

use crate::client::{
    load_config, metered_client, metered_client_from_config, ClientError, ClientSettings,
    QpsLimitLayer, USER_AGENT,
};
use crate::rest_metrics::RestClientMetrics;
use crate::service_accounts::{Identity, Token, Watched};
use crate::wire::Negotiated;

/// The shared informers' clients, a kind each; they share one budget.
#[derive(Clone)]
pub struct InformerClients {
    /// Pods.
    pub pods: Client,
    /// Services.
    pub services: Client,
    /// Nodes.
    pub nodes: Client,
    /// EndpointSlices.
    pub endpoint_slices: Client,
    /// Endpoints.
    pub endpoints: Client,
}

impl InformerClients {
    /// The client watching `kind`.
    pub fn of(&self, kind: Watched) -> &Client {
        match kind {
            Watched::Pods => &self.pods,
            Watched::Services => &self.services,
            Watched::Nodes => &self.nodes,
            Watched::EndpointSlices => &self.endpoint_slices,
            Watched::Endpoints => &self.endpoints,
        }
    }

    /// A client for each kind, made by `make`.
    fn try_from_fn<E>(mut make: impl FnMut(Watched) -> Result<Client, E>) -> Result<Self, E> {
        Ok(Self {
            pods: make(Watched::Pods)?,
            services: make(Watched::Services)?,
            nodes: make(Watched::Nodes)?,
            endpoint_slices: make(Watched::EndpointSlices)?,
            endpoints: make(Watched::Endpoints)?,
        })
    }
}

/// One client watches every kind.
impl From<Client> for InformerClients {
    fn from(client: Client) -> Self {
        Self {
            pods: client.clone(),
            services: client.clone(),
            nodes: client.clone(),
            endpoint_slices: client.clone(),
            endpoints: client,
        }
    }
}

/// The clients of one run: one per budget.
#[derive(Clone)]
pub struct Clients {
    /// Watches and lists of the shared informers.
    pub informers: InformerClients,
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
    /// `running` names the controllers that will run: with
    /// `--use-service-account-credentials`, their ServiceAccounts get tokens now, and the
    /// informers watch as they do.
    pub async fn build(
        settings: &ClientSettings,
        metrics: &RestClientMetrics,
        running: &[Identity],
    ) -> Result<Self, ClientError> {
        let config = load_config(settings).await?;
        let mut clients = if settings.use_service_account_credentials {
            Self::as_service_accounts(config, settings, metrics, running).await?
        } else {
            Self::try_from_fn(|| metered_client_from_config(config.clone(), settings, metrics))?
        };
        clients.wire = Negotiated::new(settings.encoding);
        Ok(clients)
    }

    /// The clients of `--use-service-account-credentials`.
    async fn as_service_accounts(
        config: kube::Config,
        settings: &ClientSettings,
        metrics: &RestClientMetrics,
        running: &[Identity],
    ) -> Result<Self, ClientError> {
        let own = metered_client_from_config(config.clone(), settings, metrics)?;
        let mut tokens = Vec::new();
        for &identity in running {
            match Token::start(own.clone(), identity).await {
                Ok(token) => tokens.push((identity, token)),
                // kube-controller-manager would exit here. A cluster whose RBAC does not let
                // this identity mint tokens (deploy/ rather than the overlay) still gets its
                // Endpoints and slices written, under one identity, and is told so.
                Err(err) if err.is_forbidden() => {
                    tracing::error!(
                        error = %err,
                        "--use-service-account-credentials: the --kubeconfig identity may not \
                         read or create the controllers' ServiceAccounts or their tokens; every \
                         controller acts as the --kubeconfig identity instead (grant it get and \
                         create on serviceaccounts and create on serviceaccounts/token in \
                         kube-system, as overlays/service-account-credentials/ does)"
                    );
                    return Self::try_from_fn(|| {
                        metered_client_from_config(config.clone(), settings, metrics)
                    });
                }
                Err(err) => return Err(err.into()),
            }
        }
        tracing::info!(
            service_accounts = running
                .iter()
                .map(|id| id.username())
                .collect::<Vec<_>>()
                .join(","),
            "each controller acts as its own ServiceAccount (--use-service-account-credentials)"
        );
        // The controllers' clients present a token and nothing else of the kubeconfig's.
        let mut anonymous = config.clone();
        anonymous.auth_info = kube::config::AuthInfo::default();
        let token_of = |identity: Option<Identity>| {
            tokens
                .iter()
                .find(|(id, _)| Some(*id) == identity)
                .map(|(_, token)| token.layer())
        };
        let client_as = |identity: Option<Identity>, limit: &QpsLimitLayer| {
            match (identity, token_of(identity)) {
                (Some(identity), Some(bearer)) => {
                    // As upstream, the agent names the account too.
                    let mut config = anonymous.clone();
                    let agent = format!("{USER_AGENT}/{}", identity.username());
                    config.headers.push((
                        http::header::USER_AGENT,
                        http::HeaderValue::try_from(agent)
                            .map_err(|e| ClientError::Build(kube::Error::Service(Box::new(e))))?,
                    ));
                    metered_client(config, settings, metrics, limit, Some(&bearer))
                }
                // A controller that does not run keeps the process's identity, unused.
                _ => metered_client(config.clone(), settings, metrics, limit, None),
            }
        };
        let budget = || QpsLimitLayer::new(f64::from(settings.qps), settings.burst);
        let informers_budget = budget();
        Ok(Self {
            informers: InformerClients::try_from_fn(|kind| {
                client_as(Identity::watching(kind, running), &informers_budget)
            })?,
            endpoints: client_as(Some(Identity::Endpoints), &budget())?,
            endpoint_slices: client_as(Some(Identity::EndpointSlices), &budget())?,
            mirroring: client_as(Some(Identity::Mirroring), &budget())?,
            leader_election: own,
            wire: Negotiated::default(),
        })
    }

    /// The client `controller` writes and records its Events through.
    pub fn of(&self, controller: Identity) -> &Client {
        match controller {
            Identity::Endpoints => &self.endpoints,
            Identity::EndpointSlices => &self.endpoint_slices,
            Identity::Mirroring => &self.mirroring,
        }
    }

    /// Clients made by `make`, called once per budget, speaking protobuf.
    pub fn try_from_fn<E>(mut make: impl FnMut() -> Result<Client, E>) -> Result<Self, E> {
        Ok(Self {
            informers: make()?.into(),
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
            informers: client.clone().into(),
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
