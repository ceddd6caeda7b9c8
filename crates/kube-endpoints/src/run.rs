//! `kube-endpoints run`: the controllers against a cluster.

use crate::args::{ControllerFlags, EnabledControllers};
use crate::flags::parse_duration;
use anyhow::{Context, Result};
use clap::Args;
use controller::health::{self, Liveness, Readiness};
use controller::leader::{default_identity, LeadershipEnd, HEALTH_CHECK_MARGIN};
use controller::replica::Replica;
use controller::secure_serving::{self, ServingCert};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Run the Endpoints and EndpointSlice controllers against a cluster, in place of
/// kube-controller-manager's (start it with `--controllers=*,-endpoints-controller,-endpointslice-controller,
/// -endpointslice-mirroring-controller`).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// kube-controller-manager flags given that concern nothing here, as written; set by the
    /// command line parser (see [`crate::ignored_flags`]), named in one warning at start.
    #[arg(skip)]
    pub ignored_flags: Vec<String>,
    /// kubeconfig to use; without it, the in-cluster config or the default kubeconfig.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the API server, overriding the kubeconfig's.
    #[arg(long)]
    pub master: Option<String>,
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
    /// Kind of lock object; only `leases` (kube-controller-manager's default and, since the
    /// other locks were removed upstream, its only choice).
    #[arg(long, default_value = "leases", value_parser = parse_resource_lock)]
    pub leader_elect_resource_lock: String,
    /// Shadow mode: run beside the controllers that write (kube-controller-manager's), write
    /// nothing (no objects, no Events, no Lease: leader election is off), and report every
    /// Service on which these controllers would write something else: logged at error level,
    /// counted in `shadow_divergent_services` and `shadow_checks_total{result}`, and listed
    /// in `--shadow-report`.
    #[arg(long)]
    pub shadow: bool,
    /// In shadow mode, how long a difference must stay the same before it counts (the writer
    /// may simply not have caught up yet).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub shadow_grace_period: Duration,
    /// In shadow mode, a file rewritten (JSON) with the current divergences whenever they
    /// change.
    #[arg(long)]
    pub shadow_report: Option<PathBuf>,
}

fn parse_resource_lock(s: &str) -> Result<String, String> {
    if s == "leases" {
        Ok(s.to_owned())
    } else {
        Err(format!("{s:?}: only \"leases\" is supported"))
    }
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

/// What `run` and `dev` share: a client, the controller options, a shutdown token cancelled by
/// SIGINT/SIGTERM, and the /metrics, /healthz, /livez, /readyz server.
pub struct Session {
    /// Client to the API server, for reads outside the controllers.
    pub client: kube::Client,
    /// One client per controller, the informers and the Lease, each with its own
    /// `--kube-api-qps`/`--kube-api-burst` budget, as kube-controller-manager gives them.
    pub clients: controller::Clients,
    /// Which controllers, with which settings.
    pub options: controller::Options,
    /// Cancelled on a signal (or by the caller).
    pub shutdown: CancellationToken,
    /// Registry served on /metrics.
    pub registry: prometheus::Registry,
    /// Served on /readyz.
    pub readiness: Readiness,
    /// Whether the controllers have work queued or in flight.
    pub activity: controller::Activity,
    /// Served on /healthz and /livez.
    pub liveness: Liveness,
    /// Where plain HTTP (`--port`) is served, if it is.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Where HTTPS (`--secure-port`) is served, if it is.
    pub secure_addr: Option<std::net::SocketAddr>,
    servers: Vec<tokio::task::JoinHandle<Result<()>>>,
}

impl Session {
    /// Connects, installs the signal handler and starts the health server.
    pub async fn start(
        settings: controller::config::Settings,
        flags: &ControllerFlags,
    ) -> Result<Self> {
        let enabled: EnabledControllers = flags.enabled()?;
        settings.validate()?;
        let registry = prometheus::Registry::new();
        crate::build_info::register(&registry).context("registering kubernetes_build_info")?;
        controller::metrics::register_process_metrics(&registry)
            .context("registering the process metrics")?;
        let rest_metrics = controller::rest_metrics::RestClientMetrics::register(&registry)
            .context("registering the REST client metrics")?;
        let clients =
            controller::Clients::build(&settings.client, &rest_metrics, &enabled.identities())
                .await
                .context("connecting to the API server")?;
        // The process's own identity, whichever the controllers use.
        let client = clients.leader_election.clone();
        let shutdown = CancellationToken::new();
        cancel_on_signals(shutdown.clone());
        let readiness = Readiness::new();
        let liveness = Liveness::new();
        let stop = || {
            let t = shutdown.clone();
            async move { t.cancelled().await }
        };
        let mut servers = Vec::new();
        let serving = &settings.serving;
        // Both ports are bound before either server starts, so a port in use fails the
        // start-up with nothing left running.
        let plain = health::bind(serving).await.with_context(|| {
            format!(
                "binding --bind-address {} --port {:?}",
                serving.bind_address, serving.port
            )
        })?;
        let mut secure_addr = None;
        if serving.secure.enabled() {
            let tls = ServingCert::load(&serving.secure.cert)
                .and_then(|cert| cert.server_config())
                .context("loading the serving certificate")?;
            let (authn, authz) = secure_serving::review_clients(&serving.secure, &settings.client)
                .await
                .context("connecting for TokenReviews and SubjectAccessReviews")?;
            let access = secure_serving::Access::new(authn, authz, &serving.secure);
            let listener = serving
                .secure
                .bind(serving.bind_address)
                .await
                .with_context(|| {
                    format!(
                        "binding --bind-address {} --secure-port {}",
                        serving.bind_address, serving.secure.port
                    )
                })?;
            let addr = listener.local_addr()?;
            let mut router = health::router(registry.clone(), readiness.clone(), liveness.clone());
            if flags.serving.profiling {
                router = router.merge(controller::profiling::router());
                tracing::info!(address = %addr, "serving /metrics, /healthz, /livez, /readyz and /debug/pprof/profile over HTTPS");
            } else {
                tracing::info!(address = %addr, "serving /metrics, /healthz, /livez and /readyz over HTTPS");
            }
            secure_addr = Some(addr);
            let stop = stop();
            servers.push(tokio::spawn(async move {
                secure_serving::serve(listener, tls, access, router, stop)
                    .await
                    .context("serving HTTPS")
            }));
        }
        let metrics_addr = match plain {
            Some(listener) => {
                let addr = listener.local_addr()?;
                tracing::warn!(address = %addr, "serving /metrics, /healthz, /livez and /readyz over plain HTTP, without authentication (--port)");
                let server = health::serve(
                    listener,
                    health::router(registry.clone(), readiness.clone(), liveness.clone()),
                    stop(),
                );
                servers.push(tokio::spawn(async move {
                    server.await.context("serving plain HTTP")
                }));
                Some(addr)
            }
            None => None,
        };
        if servers.is_empty() {
            tracing::warn!(
                "--secure-port 0 and no --port: /metrics and the health checks are not served"
            );
        }
        let options = controller::Options {
            settings,
            endpoints: enabled.endpoints,
            endpoint_slices: enabled.endpoint_slices,
            mirroring: enabled.mirroring,
            shadow: None,
        };
        Ok(Self {
            client,
            clients,
            options,
            shutdown,
            registry,
            readiness,
            activity: controller::Activity::new(),
            liveness,
            metrics_addr,
            secure_addr,
            servers,
        })
    }

    /// Runs the controllers until `token` is cancelled.
    pub fn controllers(
        &self,
        token: CancellationToken,
    ) -> impl std::future::Future<Output = Result<(), controller::RunError>> + Send + 'static {
        let (clients, options, registry, readiness, activity) = (
            self.clients.clone(),
            self.options.clone(),
            self.registry.clone(),
            self.readiness.clone(),
            self.activity.clone(),
        );
        async move { controller::run(clients, &options, &registry, readiness, activity, token).await }
    }

    /// Stops the servers of /metrics and the health checks.
    pub async fn finish(self) {
        self.shutdown.cancel();
        for server in self.servers {
            match server.await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => tracing::warn!(err = %format!("{err:#}"), "metrics server failed"),
                Err(err) => tracing::warn!(%err, "metrics server task failed"),
            }
        }
    }
}

/// The leader-elected replica of `session`, known in the Lease as `identity`.
fn replica(session: &Session, identity: String) -> Replica {
    Replica {
        clients: session.clients.clone(),
        options: session.options.clone(),
        registry: session.registry.clone(),
        readiness: session.readiness.clone(),
        liveness: session.liveness.clone(),
        identity,
        health_margin: HEALTH_CHECK_MARGIN,
    }
}

/// One warning at start naming every kube-controller-manager flag given that `run` accepts
/// and does not act on: those of other controllers or features, and the client-certificate
/// CAs of serving (scrapers authenticate with bearer tokens).
fn warn_of_flags_not_acted_on(args: &RunArgs) {
    let client_certificates = args.controllers.serving.unapplied();
    if args.ignored_flags.is_empty() && client_certificates.is_empty() {
        return;
    }
    tracing::warn!(
        flags = args.ignored_flags.join(" "),
        client_certificates = client_certificates.join(" "),
        "accepted kube-controller-manager flags that are not acted on: `flags` concern other \
         controllers or features; client certificates are not supported, scrapers \
         authenticate with bearer tokens"
    );
}

/// The long names of `run`'s own flags, without their dashes.
pub fn own_long_flags() -> Vec<String> {
    use clap::Args;
    RunArgs::augment_args(clap::Command::new("run"))
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_owned))
        .collect()
}

/// Runs the command; false when leadership was lost or the controllers stopped on their own
/// (the process exits non-zero).
pub async fn run(args: RunArgs) -> Result<bool> {
    warn_of_flags_not_acted_on(&args);
    let mut settings = args.controllers.settings(args.kubeconfig.clone())?;
    settings.client.master = args.master.clone();
    settings.leader_election.enabled = args.leader_elect;
    settings.leader_election.lease_duration = args.leader_elect_lease_duration;
    settings.leader_election.renew_deadline = args.leader_elect_renew_deadline;
    settings.leader_election.retry_period = args.leader_elect_retry_period;
    settings.leader_election.resource_name = args.leader_elect_resource_name.clone();
    settings.leader_election.resource_namespace = args.leader_elect_resource_namespace.clone();
    if args.shadow {
        // A shadow takes no Lease: it must never stop the real writer from leading.
        settings.leader_election.enabled = false;
    }
    let mut session = Session::start(settings.clone(), &args.controllers).await?;
    if args.shadow {
        let shadow = controller::shadow::Shadow::new(
            args.shadow_grace_period,
            args.shadow_report.clone(),
            &session.registry,
        )
        .context("registering the shadow metrics")?;
        session.options.shadow = Some(std::sync::Arc::new(shadow));
        tracing::info!("shadow mode: nothing will be written");
    }

    // Once the informers have synced, start-up's code is behind us: its pages can go.
    tokio::spawn({
        let (readiness, shutdown) = (session.readiness.clone(), session.shutdown.clone());
        async move {
            tokio::select! {
                () = readiness.synced() => {
                    let bytes = crate::startup_pages::release();
                    tracing::debug!(bytes, "released the pages of code only start-up ran");
                }
                () = shutdown.cancelled() => {}
            }
        }
    });

    let ok = if settings.leader_election.enabled {
        let identity = default_identity();
        tracing::info!(identity, lease = %settings.leader_election.resource_name, "waiting for leadership");
        match replica(&session, identity)
            .run(session.shutdown.clone())
            .await
        {
            LeadershipEnd::ShutDown => true,
            LeadershipEnd::Lost => {
                tracing::error!("leader election lost");
                false
            }
            LeadershipEnd::Finished => {
                tracing::error!(
                    "controllers stopped on their own; exiting so a replica takes over"
                );
                false
            }
        }
    } else {
        session.controllers(session.shutdown.clone()).await?;
        true
    };
    session.finish().await;
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::collections::BTreeSet;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        run: RunArgs,
    }

    /// `GET /metrics` over plain HTTP/1.0, as a Prometheus scrape does.
    async fn scrape(addr: std::net::SocketAddr) -> std::io::Result<String> {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: metrics\r\n\r\n")
            .await?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await?;
        Ok(response)
    }

    /// The label names of the first series of `text` whose name is `series`.
    fn label_names(text: &str, series: &str) -> Option<BTreeSet<String>> {
        let line = text.lines().find(|line| {
            line.strip_prefix(series)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })?;
        let rest = &line[series.len()..];
        let Some(labels) = rest.strip_prefix('{') else {
            return Some(BTreeSet::new());
        };
        let labels = &labels[..labels.rfind('}')?];
        Some(
            labels
                .split("\",")
                .filter_map(|pair| pair.split_once('=').map(|(name, _)| name.to_owned()))
                .collect(),
        )
    }

    /// A port nothing listens on right now (`--port 0` turns plain HTTP off, as upstream).
    fn free_port() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }

    fn names(names: &[&str]) -> Option<BTreeSet<String>> {
        Some(names.iter().map(|n| (*n).to_owned()).collect())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn metrics_serves_rest_client_process_leader_and_build_metrics_with_upstream_labels() {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let api = apiserver::ApiServer::start(apiserver::Config::default())
            .await
            .unwrap();
        api.write_kubeconfig(&kubeconfig).unwrap();
        let args = Command::parse_from([
            "run",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--bind-address",
            "127.0.0.1",
            "--port",
            &free_port().to_string(),
            "--secure-port",
            "0",
        ])
        .run;
        let mut settings = args.controllers.settings(args.kubeconfig.clone()).unwrap();
        settings.leader_election.enabled = true;
        let session = Session::start(settings, &args.controllers).await.unwrap();
        let leading = tokio::spawn(replica(&session, "test".into()).run(session.shutdown.clone()));

        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        let text = loop {
            let text = scrape(session.metrics_addr.expect("plain HTTP was asked for"))
                .await
                .unwrap();
            // Leading, and the informers' lists and the Lease write went through the clients.
            if text.contains("leader_election_master_status{name=\"kube-endpoints\"} 1")
                && session.readiness.is_ready()
                && text.contains("rest_client_rate_limiter_duration_seconds_count")
            {
                break text;
            }
            assert!(tokio::time::Instant::now() < deadline, "never led:\n{text}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };

        let host = api
            .url()
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        assert!(
            text.contains(&format!(
                "rest_client_requests_total{{code=\"200\",host=\"{host}\",method=\"GET\"}}"
            )),
            "{text}"
        );
        let histogram = names(&["host", "le", "verb"]);
        let expected = [
            (
                "rest_client_requests_total",
                names(&["code", "host", "method"]),
            ),
            (
                "rest_client_request_duration_seconds_bucket",
                histogram.clone(),
            ),
            (
                "rest_client_rate_limiter_duration_seconds_bucket",
                histogram,
            ),
            ("leader_election_master_status", names(&["name"])),
            (
                "kubernetes_build_info",
                names(&[
                    "build_date",
                    "compiler",
                    "git_commit",
                    "git_tree_state",
                    "git_version",
                    "go_version",
                    "major",
                    "minor",
                    "platform",
                ]),
            ),
            ("process_cpu_seconds_total", names(&[])),
            ("process_resident_memory_bytes", names(&[])),
            ("process_virtual_memory_bytes", names(&[])),
            ("process_open_fds", names(&[])),
            ("process_max_fds", names(&[])),
            ("process_start_time_seconds", names(&[])),
        ];
        for (series, labels) in expected {
            assert_eq!(label_names(&text, series), labels, "{series} in\n{text}");
        }
        assert!(
            text.contains("rest_client_request_duration_seconds_bucket{host=")
                && text.contains("le=\"0.005\"")
                && text.contains("le=\"60\""),
            "{text}"
        );

        session.shutdown.cancel();
        leading.await.unwrap();
        session.finish().await;
        api.shutdown().await.unwrap();
    }
}
