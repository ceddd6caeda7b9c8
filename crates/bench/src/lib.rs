//! `kube-endpoints bench`: drive a kubelet-like load against an API server, check
//! independently that a controller's EndpointSlices and Endpoints follow it, and report how
//! fast (per-change latency, time to convergence) and at what cost (requests, writes, CPU,
//! memory).
//!
//! ```text
//!  load generator ──writes──> API server <──watch/writes── controller (embedded or external)
//!       │ expects                  │ watch slices + Endpoints
//!       v                          v
//!  tracker: model of pods ──compare── what the controller wrote ──> latencies, convergence
//! ```
//!
//! [`load`] writes, [`converge`] judges, [`figures`] reports; [`run`] wires them up and keeps
//! the run within its time limit.

pub mod converge;
pub mod count;
pub mod figures;
pub mod load;
pub mod model;
pub mod rng;

use anyhow::{bail, Context, Result};
use controller::health::Readiness;
use converge::{lock, Shared};
use count::{Counts, RequestCounter};
use figures::{proc, ChangeLatency, Percentiles, Report, Resources};
use load::{Load, LoadOptions, Progress};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Most pods a run may create at the start (`--services` x `--pods-per-service`).
pub const MAX_PODS: usize = 200_000;
/// Most changes of the measured phase.
pub const MAX_CHURN: usize = 1_000_000;
/// The prefix of the embedded controller's thread names, to count their CPU apart.
const CONTROLLER_THREADS: &str = "ke-ctl";

/// What the measured phase does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// N Services with M pods each, from empty.
    Create,
    /// Replace every pod in batches, like a Deployment rollout.
    Rolling,
    /// Flip the readiness of random pods.
    Flap,
    /// Scale random Services up and down.
    Scale,
    /// Nodes go NotReady (their pods unready) and back, or change zone; hints are on.
    Nodes,
}

impl Scenario {
    /// The scenario's name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Rolling => "rolling",
            Self::Flap => "flap",
            Self::Scale => "scale",
            Self::Nodes => "nodes",
        }
    }
}

/// Which controller is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ControllerMode {
    /// Ours, in this process.
    Embedded,
    /// One already watching the API server (ours in another process, or another).
    External,
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The scenario.
    pub scenario: Scenario,
    /// Services.
    pub services: usize,
    /// Pods per Service.
    pub pods_per_service: usize,
    /// Nodes.
    pub nodes: usize,
    /// Zones.
    pub zones: usize,
    /// Changes (flap, scale, nodes) or pods per Service per step (rolling); `None`: default.
    pub churn: Option<usize>,
    /// Seed of random picks.
    pub seed: u64,
    /// Load generator requests per second.
    pub qps: f64,
    /// Load generator writes in flight.
    pub concurrency: usize,
    /// Longest run.
    pub timeout: Duration,
    /// Namespace of the bench's objects.
    pub namespace: String,
    /// API server; `None`: start the embedded one.
    pub kubeconfig: Option<PathBuf>,
    /// Where to write the embedded API server's kubeconfig.
    pub write_kubeconfig: Option<PathBuf>,
    /// Which controller.
    pub controller: ControllerMode,
    /// The external controller's process, for CPU and memory.
    pub controller_pid: Option<u32>,
    /// The external controller's metrics URL (`http://127.0.0.1:PORT/metrics`).
    pub controller_metrics: Option<String>,
    /// The embedded controller's --kube-api-qps.
    pub controller_qps: f32,
    /// The embedded controller's --kube-api-burst.
    pub controller_burst: u32,
    /// Whether to remove the namespace afterwards (only with --kubeconfig).
    pub cleanup: bool,
    /// Whether to print a progress line every second.
    pub progress: bool,
}

impl Options {
    /// Rejects sizes and settings the bench does not run.
    pub fn validate(&self) -> Result<()> {
        if self.services == 0 || self.pods_per_service == 0 {
            bail!("--services and --pods-per-service must be at least 1");
        }
        let pods = self.services.saturating_mul(self.pods_per_service);
        if pods > MAX_PODS {
            bail!("--services x --pods-per-service is {pods}, more than the {MAX_PODS} a run may create");
        }
        if self.nodes == 0 || self.zones == 0 {
            bail!("--nodes and --zones must be at least 1");
        }
        if self.nodes > 5_000 {
            bail!("--nodes may be at most 5000");
        }
        if self.churn.is_some_and(|c| c > MAX_CHURN) {
            bail!("--churn may be at most {MAX_CHURN}");
        }
        if !(self.qps > 0.0 && self.qps.is_finite()) {
            bail!("--qps must be a positive number");
        }
        if self.concurrency == 0 {
            bail!("--concurrency must be at least 1");
        }
        if self.timeout.is_zero() {
            bail!("--timeout must be positive");
        }
        if self.controller == ControllerMode::Embedded && self.controller_pid.is_some() {
            bail!("--controller-pid is for --controller external");
        }
        Ok(())
    }

    /// The churn used: the flag, or a default sized to the run.
    pub fn churn(&self) -> usize {
        let pods = self.services * self.pods_per_service;
        self.churn.unwrap_or(match self.scenario {
            Scenario::Create => 0,
            Scenario::Rolling => (self.pods_per_service / 4).max(1),
            Scenario::Flap => pods,
            Scenario::Scale => (2 * self.services).max(4),
            Scenario::Nodes => (2 * self.nodes).max(4),
        })
    }
}

/// Marks taken when the measured phase starts.
#[derive(Debug, Clone)]
struct Marks {
    start: Instant,
    load_end: Option<Instant>,
    server_counts: Counts,
    generator_counts: Counts,
    controller_cpu: Option<f64>,
    process_cpu: Option<f64>,
    pod_writes: u64,
    setup: Duration,
}

/// The controller running in this process, on its own runtime and threads so that its CPU
/// time can be told apart from the API server's and the load generator's.
struct EmbeddedController {
    readiness: Readiness,
    shutdown: CancellationToken,
    thread: std::thread::JoinHandle<Result<()>>,
}

impl EmbeddedController {
    fn start(kubeconfig: &Path, options: &Options) -> Result<Self> {
        let mut settings = controller::config::Settings::default();
        settings.client.kubeconfig = Some(kubeconfig.to_owned());
        settings.client.qps = options.controller_qps;
        settings.client.burst = options.controller_burst;
        settings.leader_election.enabled = false;
        settings.validate()?;
        let readiness = Readiness::new();
        let shutdown = CancellationToken::new();
        let (r, s) = (readiness.clone(), shutdown.clone());
        let thread = std::thread::Builder::new()
            .name(format!("{CONTROLLER_THREADS}-main"))
            .spawn(move || -> Result<()> {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name(format!("{CONTROLLER_THREADS}-worker"))
                    .enable_all()
                    .build()?;
                runtime.block_on(async move {
                    let client = controller::client::build_client(&settings.client).await?;
                    let options = controller::Options {
                        settings,
                        endpoints: true,
                        endpoint_slices: true,
                        shadow: None,
                        mirroring: true,
                    };
                    let registry = prometheus::Registry::new();
                    controller::run(
                        client,
                        &options,
                        &registry,
                        r,
                        controller::Activity::new(),
                        s,
                    )
                    .await?;
                    Ok(())
                })
            })
            .context("starting the controller thread")?;
        Ok(Self {
            readiness,
            shutdown,
            thread,
        })
    }

    async fn stop(self) {
        self.shutdown.cancel();
        let join = tokio::task::spawn_blocking(move || self.thread.join());
        match tokio::time::timeout(Duration::from_secs(15), join).await {
            Ok(Ok(Ok(Ok(())))) => {}
            Ok(Ok(Ok(Err(err)))) => tracing::warn!(%err, "embedded controller failed"),
            Ok(_) => tracing::warn!("embedded controller thread panicked"),
            Err(_) => tracing::warn!("embedded controller did not stop within 15s"),
        }
    }
}

/// The load generator's client: its own rate limit, and a counter of its requests.
async fn generator_client(
    kubeconfig: &Path,
    qps: f64,
    counter: &RequestCounter,
) -> Result<kube::Client> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let file = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let mut config = kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("using {}", kubeconfig.display()))?;
    // Our own retries (in `load`) are counted; kube's would not be.
    config.default_retry = false;
    let burst = (qps.ceil() as u32).max(1);
    let limit = controller::client::QpsLimitLayer::new(qps, burst);
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&count::CountLayer(counter.clone()))
        .with_layer(&limit)
        .build())
}

/// Fetches a page over plain HTTP (the external controller's /metrics).
async fn http_get(url: &str) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url
        .strip_prefix("http://")
        .context("--controller-metrics must be an http:// URL")?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = tokio::net::TcpStream::connect(host)
        .await
        .with_context(|| format!("connecting to {host}"))?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await?;
    let mut body = String::new();
    stream.read_to_string(&mut body).await?;
    Ok(body
        .split_once("\r\n\r\n")
        .map_or(body.clone(), |(_, b)| b.to_owned()))
}

/// What /proc figures are taken from.
fn proc_target(options: &Options) -> Option<String> {
    match options.controller {
        ControllerMode::Embedded => Some("self".to_owned()),
        ControllerMode::External => options.controller_pid.map(|p| p.to_string()),
    }
}

fn controller_cpu(options: &Options) -> Option<f64> {
    match options.controller {
        ControllerMode::Embedded => proc::threads_cpu(CONTROLLER_THREADS),
        ControllerMode::External => proc::process_cpu(&options.controller_pid?.to_string()),
    }
}

/// Runs the bench; `Ok` holds the figures also when the run timed out or did not converge.
pub async fn run(options: Options) -> Result<Report> {
    options.validate()?;
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + options.timeout;
    let churn = options.churn();

    let (server, kubeconfig) = api_server(&options).await?;
    let counter = RequestCounter::default();
    let client = generator_client(&kubeconfig, options.qps, &counter).await?;
    let controller = match options.controller {
        ControllerMode::Embedded => Some(EmbeddedController::start(&kubeconfig, &options)?),
        ControllerMode::External => None,
    };
    let tracker = Shared::default();
    let progress = Arc::new(Progress::default());
    let peak_rss = Arc::new(AtomicU64::new(0));
    let target = proc_target(&options);
    let server_counts = || {
        server
            .as_ref()
            .map(|s| s.request_counts())
            .unwrap_or_default()
    };

    let progress_task = spawn_progress(
        started,
        &tracker,
        &progress,
        &peak_rss,
        target.clone(),
        options.progress,
    );

    let mut marks = Marks {
        start: started,
        load_end: None,
        server_counts: server_counts(),
        generator_counts: counter.snapshot(),
        controller_cpu: controller_cpu(&options),
        process_cpu: target.as_deref().and_then(proc::process_cpu),
        pod_writes: 0,
        setup: Duration::ZERO,
    };
    let mut load = Load::new(
        client.clone(),
        &options.namespace,
        tracker.clone(),
        progress.clone(),
        LoadOptions {
            services: options.services,
            pods_per_service: options.pods_per_service,
            nodes: options.nodes,
            zones: options.zones,
            seed: options.seed,
            concurrency: options.concurrency,
        },
    );
    let mut watches = Vec::new();
    let outcome = {
        let drive = drive(
            &options,
            churn,
            &mut load,
            &client,
            &tracker,
            &mut watches,
            controller.as_ref().map(|c| &c.readiness),
            server.as_ref().map(|h| h.server()),
            &counter,
            &kubeconfig,
            &mut marks,
            started,
        );
        tokio::select! {
            result = drive => Some(result),
            () = tokio::time::sleep_until(deadline) => None,
        }
    };
    let timed_out = outcome.is_none();
    if let Some(Err(err)) = outcome {
        progress_task.abort();
        for w in &watches {
            w.abort();
        }
        if let Some(c) = controller {
            c.stop().await;
        }
        return Err(err);
    }
    progress.set_phase("report");

    // Figures are taken before anything stops, so shutdown work is not counted.
    let generator = count::difference(&counter.snapshot(), &marks.generator_counts);
    let controller_requests = controller_requests(
        &options,
        server.is_some(),
        &server_counts(),
        &marks.server_counts,
        &generator,
    )
    .await;
    if let Some(rss) = target
        .as_deref()
        .and_then(|t| proc::status_bytes(t, "VmRSS"))
    {
        peak_rss.fetch_max(rss, Ordering::Relaxed);
    }
    let resources = resources(&options, &marks, target.as_deref(), &peak_rss);
    let report = {
        let t = lock(&tracker);
        let latency = |samples: &[Duration], changes, superseded, unobserved| ChangeLatency {
            changes,
            latency: Percentiles::of(samples),
            superseded,
            unobserved,
        };
        Report {
            scenario: options.scenario.name().into(),
            services: options.services,
            pods_per_service: options.pods_per_service,
            nodes: options.nodes,
            zones: options.zones,
            churn,
            controller: match options.controller {
                ControllerMode::Embedded => "embedded".into(),
                ControllerMode::External => "external".into(),
            },
            api_server: options
                .kubeconfig
                .as_ref()
                .map_or("embedded (in this process, 127.0.0.1)".into(), |p| {
                    p.display().to_string()
                }),
            converged: t.converged() && !timed_out,
            timed_out,
            setup_seconds: figures::seconds(marks.setup),
            load_seconds: marks.load_end.map(|e| figures::seconds(e - marks.start)),
            convergence_seconds: t
                .converged_at
                .filter(|_| t.converged())
                .map(|c| figures::seconds(c.saturating_duration_since(marks.start))),
            converged_services: t.converged_services(),
            pod_writes: progress.pod_writes.load(Ordering::Relaxed) - marks.pod_writes,
            slice_latency: latency(
                &t.slice_latency.samples,
                t.slice_latency.changes,
                t.slice_latency.superseded,
                t.slice_latency.unobserved(),
            ),
            endpoints_latency: latency(
                &t.endpoints_latency.samples,
                t.endpoints_latency.changes,
                t.endpoints_latency.superseded,
                t.endpoints_latency.unobserved(),
            ),
            controller_requests,
            load_generator_requests: generator
                .iter()
                .map(|((v, r), n)| (format!("{v} {r}"), *n))
                .collect(),
            slice_writes: t.slice_writes,
            endpoints_writes: t.endpoints_writes,
            hinted_endpoints: (options.scenario == Scenario::Nodes).then(|| t.hints()),
            resources,
            mismatches: t.mismatches(5),
        }
    };

    progress_task.abort();
    for w in &watches {
        w.abort();
    }
    if let Some(c) = controller {
        c.stop().await;
    }
    if options.kubeconfig.is_some() && options.cleanup {
        let cleanup = async {
            load.release_all().await?;
            load.delete_namespace().await
        };
        match tokio::time::timeout(Duration::from_secs(120), cleanup).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                tracing::warn!(error = %format!("{err:#}"), "cleaning up the bench namespace failed")
            }
            Err(_) => tracing::warn!("cleaning up the bench namespace took over 120s; left as is"),
        }
    }
    if let Some(handle) = server {
        if let Err(err) = handle.shutdown().await {
            tracing::warn!(%err, "stopping the embedded API server");
        }
        if options.write_kubeconfig.is_none() {
            // Only our temporary file; a path the user asked for stays.
            let _ = std::fs::remove_file(&kubeconfig);
        }
    }
    Ok(report)
}

/// The embedded API server (unless `--kubeconfig` names another) and the kubeconfig to use.
async fn api_server(options: &Options) -> Result<(Option<apiserver::ApiServerHandle>, PathBuf)> {
    let history_window = (options.services * options.pods_per_service * 4).max(10_000);
    Ok(match &options.kubeconfig {
        Some(path) => (None, path.clone()),
        None => {
            let config = apiserver::Config {
                history_window,
                ..apiserver::Config::default()
            };
            let handle = apiserver::ApiServer::start(config)
                .await
                .context("starting the embedded API server")?;
            let path = options.write_kubeconfig.clone().unwrap_or_else(|| {
                std::env::temp_dir().join(format!(
                    "kube-endpoints-bench-{}.kubeconfig",
                    std::process::id()
                ))
            });
            handle
                .write_kubeconfig(&path)
                .with_context(|| format!("writing {}", path.display()))?;
            (Some(handle), path)
        }
    })
}

/// Samples the target's RSS every second and, when asked, prints a progress line.
fn spawn_progress(
    started: Instant,
    tracker: &Shared,
    progress: &Arc<Progress>,
    peak_rss: &Arc<AtomicU64>,
    target: Option<String>,
    print: bool,
) -> tokio::task::JoinHandle<()> {
    let (tracker, progress, peak_rss) = (tracker.clone(), progress.clone(), peak_rss.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            if let Some(rss) = target
                .as_deref()
                .and_then(|t| proc::status_bytes(t, "VmRSS"))
            {
                peak_rss.fetch_max(rss, Ordering::Relaxed);
            }
            if print {
                let t = lock(&tracker);
                eprintln!(
                        "bench: {:>5.1}s phase {:<9} pod writes {:>7}  services converged {:>6}/{:<6} pending slice changes {}",
                        started.elapsed().as_secs_f64(),
                        progress.phase(),
                        progress.pod_writes.load(Ordering::Relaxed),
                        t.converged_services(),
                        t.services.len(),
                        t.slice_latency.unobserved(),
                    );
            }
        }
    })
}

/// The controller's requests during the run: from the embedded server's counters less the
/// load generator's, or from the controller's own `/metrics`.
async fn controller_requests(
    options: &Options,
    has_server: bool,
    server_now: &Counts,
    server_then: &Counts,
    generator: &Counts,
) -> figures::Requests {
    match (has_server, &options.controller_metrics) {
        (true, _) => {
            let server_delta = count::difference(server_now, server_then);
            let own = count::difference(&server_delta, generator);
            figures::requests(
                "embedded API server counters minus the load generator's",
                &own,
            )
        }
        (false, Some(url)) => match http_get(url)
            .await
            .map(|page| figures::scrape_requests(&page))
        {
            Ok(Some(by_method)) => figures::Requests {
                source: format!(
                    "rest_client_requests_total from {url}, by method, whole process life"
                ),
                total: Some(by_method.values().sum()),
                by_verb_resource: Default::default(),
                by_verb: by_method,
            },
            Ok(None) => figures::Requests {
                source: format!("n/a: no rest_client_requests_total at {url}"),
                ..Default::default()
            },
            Err(err) => figures::Requests {
                source: format!("n/a: {err:#}"),
                ..Default::default()
            },
        },
        (false, None) => figures::Requests {
            source: "n/a: external API server; pass --controller-metrics".into(),
            ..Default::default()
        },
    }
}

/// The controller's CPU and memory over the run.
fn resources(
    options: &Options,
    marks: &Marks,
    target: Option<&str>,
    peak_rss: &AtomicU64,
) -> Resources {
    let cpu_delta = |now: Option<f64>, then: Option<f64>| {
        now.zip(then)
            .map(|(n, t)| ((n - t).max(0.0) * 100.0).round() / 100.0)
    };
    Resources {
        cpu_seconds: cpu_delta(controller_cpu(options), marks.controller_cpu),
        cpu_note: match (options.controller, options.controller_pid) {
            (ControllerMode::Embedded, _) => {
                "the embedded controller's threads (its client, informers, workers)".into()
            }
            (ControllerMode::External, Some(pid)) => format!("process {pid}"),
            (ControllerMode::External, None) => "n/a: pass --controller-pid".into(),
        },
        process_cpu_seconds: cpu_delta(target.and_then(proc::process_cpu), marks.process_cpu),
        peak_rss_bytes: Some(peak_rss.load(Ordering::Relaxed)).filter(|b| *b > 0),
        vm_hwm_bytes: target.and_then(|t| proc::status_bytes(t, "VmHWM")),
        memory_note: match options.controller {
            ControllerMode::Embedded => {
                "the whole bench process: embedded API server, load generator and controller".into()
            }
            ControllerMode::External if options.controller_pid.is_some() => {
                "the controller process; VmHWM covers its whole life".into()
            }
            ControllerMode::External => "n/a: pass --controller-pid".into(),
        },
    }
}

/// The run itself, from waiting for the controller to convergence; cancelled on timeout.
#[expect(
    clippy::too_many_arguments,
    reason = "the run's parts, borrowed once by its one caller"
)]
async fn drive(
    options: &Options,
    churn: usize,
    load: &mut Load,
    client: &kube::Client,
    tracker: &Shared,
    watches: &mut Vec<tokio::task::JoinHandle<()>>,
    readiness: Option<&Readiness>,
    server: Option<&apiserver::ApiServer>,
    counter: &RequestCounter,
    kubeconfig: &Path,
    marks: &mut Marks,
    started: Instant,
) -> Result<()> {
    let progress = |phase: &str| tracing::debug!(phase, "bench phase");
    progress("controller");
    match (readiness, server) {
        (Some(ready), _) => {
            while !ready.is_ready() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        (None, Some(server)) => {
            eprintln!(
                "bench: waiting for an external controller; start it with --kubeconfig {}",
                kubeconfig.display()
            );
            wait_for_external(server, counter).await;
        }
        (None, None) => {}
    }
    load.create_namespace().await?;
    watches.extend(converge::spawn_watches(client, &options.namespace, tracker));
    while lock(tracker).synced != (true, true) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    load.create_nodes().await?;
    if options.scenario != Scenario::Create {
        load.create_services(options.scenario == Scenario::Nodes)
            .await?;
        load.fill_services().await?;
        load.set_phase("settle");
        lock(tracker).set_load_done(Instant::now());
        wait_converged(tracker).await;
    }
    *marks = Marks {
        start: Instant::now(),
        load_end: None,
        server_counts: server
            .map(apiserver::ApiServer::request_counts)
            .unwrap_or_default(),
        generator_counts: counter.snapshot(),
        controller_cpu: controller_cpu(options),
        process_cpu: proc_target(options).as_deref().and_then(proc::process_cpu),
        pod_writes: load.pod_writes(),
        setup: started.elapsed(),
    };
    lock(tracker).start_phase();
    match options.scenario {
        Scenario::Create => {
            load.create_services(false).await?;
            load.fill_services().await?;
        }
        Scenario::Rolling => load.rolling(churn).await?,
        Scenario::Flap => load.flap(churn).await?,
        Scenario::Scale => load.scale(churn).await?,
        Scenario::Nodes => load.node_churn(churn).await?,
    }
    let done = Instant::now();
    load.set_phase("converge");
    marks.load_end = Some(done);
    lock(tracker).set_load_done(done);
    wait_converged(tracker).await;
    Ok(())
}

/// Waits until every Service matches and stays so for a moment (a late write could undo it).
async fn wait_converged(tracker: &Shared) {
    loop {
        tokio::time::sleep(Duration::from_millis(25)).await;
        if lock(tracker).converged() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if lock(tracker).converged() {
                return;
            }
        }
    }
}

/// Waits until a client other than ours watches pods, services and slices.
async fn wait_for_external(server: &apiserver::ApiServer, counter: &RequestCounter) {
    let watching = |counts: &Counts, resource: &str| {
        counts
            .get(&("watch".to_owned(), resource.to_owned()))
            .copied()
            .unwrap_or(0)
    };
    loop {
        let theirs = count::difference(&server.request_counts(), &counter.snapshot());
        if ["pods", "services", "endpointslices"]
            .iter()
            .all(|r| watching(&theirs, r) > 0)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
