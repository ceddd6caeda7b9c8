//! `kubectl-endpoints bench`: drive a kubelet-like load against an API server, check
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
pub mod measured;
pub mod model;
pub mod server;
pub mod shape;

use anyhow::{bail, Context, Result};
use converge::{lock, Shared};
use count::{Counts, RequestCounter};
use figures::{proc, ChangeLatency, Percentiles, Report, Resources, ServerCpu};
use load::{Load, LoadOptions, Progress};
use measured::Started;
use server::EmbeddedServer;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Most pods a run may create at the start (`--services` x `--pods-per-service`).
pub const MAX_PODS: usize = 200_000;
/// Most changes of the measured phase.
pub const MAX_CHURN: usize = 1_000_000;

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
    /// N Services with M Ready pods are created with no controller running; the measured
    /// phase starts the controller (a restart, an upgrade, a leader hand-over onto a cluster
    /// whose Endpoints and slices are missing) and ends when it converged.
    Cold,
    /// A steady flap (`--soak-rate` pods a second) for `--soak-duration`, the controller's
    /// resident memory sampled every `--soak-sample`: whether it grows over time.
    Soak,
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
            Self::Cold => "cold",
            Self::Soak => "soak",
        }
    }
}

/// Which controller is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ControllerMode {
    /// Ours, in this process.
    Embedded,
    /// Ours, started by the bench as a `kube-endpoints run` process of its own, so that its
    /// CPU and memory are the controller's alone.
    Process,
    /// One already watching the API server (ours in another process, or another).
    External,
}

impl ControllerMode {
    /// The mode's name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Embedded => "embedded",
            Self::Process => "process",
            Self::External => "external",
        }
    }
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
    /// What the pods carry besides what the controllers read.
    pub pod_shape: load::PodShape,
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
    /// The embedded or process controller's --kube-api-qps.
    pub controller_qps: f32,
    /// The embedded or process controller's --kube-api-burst.
    pub controller_burst: u32,
    /// The binary of `--controller process` (default: this one).
    pub controller_program: Option<PathBuf>,
    /// More flags for `--controller process`'s `run`.
    pub controller_args: Vec<String>,
    /// Whether to remove the namespace afterwards (only with --kubeconfig).
    pub cleanup: bool,
    /// Whether to print a progress line every second.
    pub progress: bool,
    /// The soak's length, rate and sampling.
    pub soak: SoakOptions,
}

/// How long and how hard `--scenario soak` runs.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// How long the flap lasts (added to the run's timeout).
    pub duration: Duration,
    /// Pods flipped a second.
    pub rate: f64,
    /// How often the controller's resident memory is read.
    pub sample_every: Duration,
}

impl Default for SoakOptions {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(30 * 60),
            rate: 10.0,
            sample_every: Duration::from_secs(60),
        }
    }
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
        if self.scenario == Scenario::Soak {
            let soak = &self.soak;
            if soak.duration.is_zero() || soak.sample_every.is_zero() {
                bail!("--soak-duration and --soak-sample must be positive");
            }
            if !(soak.rate > 0.0 && soak.rate.is_finite()) {
                bail!("--soak-rate must be a positive number");
            }
        }
        if self.controller != ControllerMode::External && self.controller_pid.is_some() {
            bail!("--controller-pid is for --controller external");
        }
        if self.controller != ControllerMode::Process
            && (self.controller_program.is_some() || !self.controller_args.is_empty())
        {
            bail!("--controller-program and --controller-arg are for --controller process");
        }
        Ok(())
    }

    /// The churn used: the flag, or a default sized to the run.
    pub fn churn(&self) -> usize {
        let pods = self.services * self.pods_per_service;
        self.churn.unwrap_or(match self.scenario {
            Scenario::Create | Scenario::Cold => 0,
            Scenario::Rolling => (self.pods_per_service / 4).max(1),
            Scenario::Flap => pods,
            Scenario::Scale => (2 * self.services).max(4),
            Scenario::Nodes => (2 * self.nodes).max(4),
            Scenario::Soak => (self.soak.rate * self.soak.duration.as_secs_f64()).round() as usize,
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
    server_cpu: Option<f64>,
    pod_writes: u64,
    /// The controller's informers' bytes received and events, from its `/metrics`.
    bytes_read: Option<u64>,
    watch_events: Option<u64>,
    setup: Duration,
    /// The controllers' latency SLI histograms at the start of the phase.
    sli: Sli,
    /// `--scenario soak`: the controller's resident memory (seconds into the soak, bytes),
    /// and the flips made.
    soak: Option<(Vec<(f64, u64)>, u64)>,
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
        .with_layer(&counter.layer())
        .with_layer(&limit)
        .build())
}

/// The process /proc figures are taken from: this one for the embedded controller, the
/// child for `process` (known once it started), `--controller-pid` for an external one.
#[derive(Debug, Clone, Default)]
struct Target(Arc<OnceLock<String>>);

impl Target {
    fn new(options: &Options) -> Self {
        let target = Self::default();
        match options.controller {
            ControllerMode::Embedded => target.set("self".to_owned()),
            ControllerMode::External => {
                if let Some(pid) = options.controller_pid {
                    target.set(pid.to_string());
                }
            }
            ControllerMode::Process => {}
        }
        target
    }

    fn set(&self, target: String) {
        // Set once, when the controller starts; a second start would be a bug of the caller.
        let _ = self.0.set(target);
    }

    fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

fn controller_cpu(options: &Options, target: &Target) -> Option<f64> {
    match options.controller {
        ControllerMode::Embedded => proc::threads_cpu(measured::CONTROLLER_THREADS),
        ControllerMode::Process | ControllerMode::External => proc::process_cpu(target.get()?),
    }
}

/// The API server's CPU seconds so far: the embedded server's threads, or a real server's
/// `process_cpu_seconds_total`.
async fn server_cpu(server: Option<&EmbeddedServer>, client: &kube::Client) -> Option<f64> {
    match server {
        Some(_) => EmbeddedServer::cpu_seconds(),
        None => server::remote_cpu_seconds(client).await,
    }
}

/// Runs the bench; `Ok` holds the figures also when the run timed out or did not converge.
pub async fn run(options: Options) -> Result<Report> {
    options.validate()?;
    let started = Instant::now();
    let deadline = tokio::time::Instant::now()
        + options.timeout
        + if options.scenario == Scenario::Soak {
            options.soak.duration
        } else {
            Duration::ZERO
        };
    let churn = options.churn();

    let history_window = (options.services * options.pods_per_service * 4).max(10_000);
    let (server, kubeconfig) = server::start(
        options.kubeconfig.as_deref(),
        options.write_kubeconfig.as_deref(),
        history_window,
    )
    .await?;
    let counter = RequestCounter::default();
    let client = generator_client(&kubeconfig, options.qps, &counter).await?;
    let target = Target::new(&options);
    // A cold start begins with no controller; it is started in the measured phase.
    let mut controller = if options.scenario == Scenario::Cold {
        None
    } else {
        start_controller(&kubeconfig, &options, &target)?
    };
    let tracker = Shared::default();
    let progress = Arc::new(Progress::default());
    let peak_rss = Arc::new(AtomicU64::new(0));
    let server_counts = || {
        server
            .as_ref()
            .map(|s| s.server().request_counts())
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
        controller_cpu: controller_cpu(&options, &target),
        process_cpu: target.get().and_then(proc::process_cpu),
        server_cpu: None,
        pod_writes: 0,
        bytes_read: None,
        watch_events: None,
        setup: Duration::ZERO,
        sli: Sli::default(),
        soak: None,
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
            pod_shape: options.pod_shape,
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
            &mut controller,
            &target,
            server.as_ref(),
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
        controller.as_ref(),
        server.is_some(),
        &server_counts(),
        &marks.server_counts,
        &generator,
    )
    .await;
    if let Some(rss) = target.get().and_then(|t| proc::status_bytes(t, "VmRSS")) {
        peak_rss.fetch_max(rss, Ordering::Relaxed);
    }
    let resources = resources(&options, &marks, &target, &peak_rss);
    let pod_changes = progress.pod_writes.load(Ordering::Relaxed) - marks.pod_writes;
    let since = |now: Option<u64>, then: Option<u64>| {
        now.zip(then).map(|(now, then)| now.saturating_sub(then))
    };
    let (bytes_now, events_now) = match &controller {
        Some(c) => (
            scrape(c, "informer_received_bytes_total").await,
            scrape(c, "informer_watch_events_total").await,
        ),
        None => (None, None),
    };
    let sli = figures_since(
        &sli_histograms(controller.as_ref(), &options).await,
        &marks.sli,
    );
    let wire = figures::Wire::new(
        since(bytes_now, marks.bytes_read),
        since(events_now, marks.watch_events),
        resources.cpu_seconds,
        pod_changes,
    );
    let api_server_cpu = ServerCpu {
        cpu_seconds: cpu_delta(server_cpu(server.as_ref(), &client).await, marks.server_cpu),
        note: match server {
            Some(_) => "the embedded API server's threads (request handling, watches)".into(),
            None if marks.server_cpu.is_some() => {
                "process_cpu_seconds_total from the API server's /metrics".into()
            }
            None => "n/a: the API server's /metrics cannot be read with this kubeconfig".into(),
        },
    };
    let report = {
        let t = lock(&tracker);
        let load_seconds = marks.load_end.map(|e| figures::seconds(e - marks.start));
        let convergence_seconds = t
            .converged_at
            .filter(|_| t.converged())
            .map(|c| figures::seconds(c.saturating_duration_since(marks.start)));
        let latency =
            |samples: &[Duration], from_change: &[Duration], changes, superseded, unobserved| {
                ChangeLatency {
                    changes,
                    latency: Percentiles::of(samples),
                    from_change: Percentiles::of(from_change),
                    superseded,
                    unobserved,
                }
            };
        Report {
            scenario: options.scenario.name().into(),
            services: options.services,
            pods_per_service: options.pods_per_service,
            nodes: options.nodes,
            zones: options.zones,
            churn,
            controller: options.controller.name().into(),
            api_server: options
                .kubeconfig
                .as_ref()
                .map_or("embedded (in this process, 127.0.0.1)".into(), |p| {
                    p.display().to_string()
                }),
            converged: t.converged() && !timed_out,
            timed_out,
            setup_seconds: figures::seconds(marks.setup),
            load_seconds,
            convergence_seconds,
            converged_services: t.converged_services(),
            pod_writes: pod_changes,
            load_writes_per_second: load_seconds
                .filter(|s| *s > 0.0 && pod_changes > 0)
                .map(|s| (pod_changes as f64 / s * 10.0).round() / 10.0),
            bottleneck: figures::bottleneck(load_seconds, convergence_seconds),
            slice_latency: latency(
                &t.slice_latency.samples,
                &t.slice_latency.from_change,
                t.slice_latency.changes,
                t.slice_latency.superseded,
                t.slice_latency.unobserved(),
            ),
            endpoints_latency: latency(
                &t.endpoints_latency.samples,
                &t.endpoints_latency.from_change,
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
            api_server_cpu,
            mismatches: t.mismatches(5),
            soak: marks
                .soak
                .clone()
                .map(|(samples, flips)| figures::Soak::new(flips, samples, options.soak.duration)),
            wire,
            sli,
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
    if let Some(server) = server {
        if let Err(err) = server.shutdown().await {
            tracing::warn!(error = %format!("{err:#}"), "stopping the embedded API server");
        }
        if options.write_kubeconfig.is_none() {
            // Only our temporary file; a path the user asked for stays.
            let _ = std::fs::remove_file(&kubeconfig);
        }
    }
    Ok(report)
}

/// Starts the controller the options name, and points the /proc figures at it.
fn start_controller(
    kubeconfig: &Path,
    options: &Options,
    target: &Target,
) -> Result<Option<Started>> {
    let started = Started::start(kubeconfig, options)?;
    if let Some(pid) = started.as_ref().and_then(Started::pid) {
        target.set(pid.to_string());
    }
    Ok(started)
}

/// Samples the target's RSS every second and, when asked, prints a progress line.
fn spawn_progress(
    started: Instant,
    tracker: &Shared,
    progress: &Arc<Progress>,
    peak_rss: &Arc<AtomicU64>,
    target: Target,
    print: bool,
) -> tokio::task::JoinHandle<()> {
    let (tracker, progress, peak_rss) = (tracker.clone(), progress.clone(), peak_rss.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            if let Some(rss) = target.get().and_then(|t| proc::status_bytes(t, "VmRSS")) {
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

/// The controllers' latency SLI histograms, by (histogram, controller).
type Sli = std::collections::BTreeMap<(&'static str, &'static str), figures::Buckets>;

/// The SLI histograms on the controller's `/metrics` (or `--controller-metrics`); empty when
/// they cannot be read.
async fn sli_histograms(controller: Option<&Started>, options: &Options) -> Sli {
    use controller::write_latency::{INFORMER_TO_WRITE, TRIGGER_TO_WRITE};
    let page = match (controller, &options.controller_metrics) {
        (Some(c), _) => c.metrics_page().await,
        (None, Some(url)) => measured::http_get(url).await.ok().map(|(_, page)| page),
        (None, None) => None,
    };
    let Some(page) = page else {
        return Sli::default();
    };
    let mut found = Sli::default();
    for (name, metric) in [
        ("informer_to_write", INFORMER_TO_WRITE),
        ("trigger_to_write", TRIGGER_TO_WRITE),
    ] {
        for controller in controller::service_accounts::Identity::ALL.map(|c| c.controller_name()) {
            if let Some(buckets) =
                figures::scrape_histogram(&page, metric, ("controller", controller))
            {
                found.insert((name, controller), buckets);
            }
        }
    }
    found
}

/// The SLI figures of what was observed between two readings, for the histograms that
/// timed a write in between.
fn figures_since(now: &Sli, then: &Sli) -> Vec<figures::SliLatency> {
    now.iter()
        .map(|(&(name, controller), buckets)| {
            figures::SliLatency::of(
                name,
                controller,
                &buckets.since(then.get(&(name, controller))),
            )
        })
        .filter(|s| s.writes > 0)
        .collect()
}

/// A counter of a controller process's `/metrics`, summed over its series.
async fn scrape(controller: &Started, metric: &str) -> Option<u64> {
    let Started::Process(_) = controller else {
        return None;
    };
    figures::scrape_sum(&controller.metrics_page().await?, metric)
}

/// The controller's requests during the run: from the embedded server's counters less the
/// load generator's, or from the controller's own `/metrics`.
async fn controller_requests(
    options: &Options,
    controller: Option<&Started>,
    has_server: bool,
    server_now: &Counts,
    server_then: &Counts,
    generator: &Counts,
) -> figures::Requests {
    let metrics = match controller {
        Some(Started::Process(c)) => Some(format!("{}/metrics", c.base_url)),
        _ => options.controller_metrics.clone(),
    };
    match (has_server, &metrics) {
        (true, _) => {
            let server_delta = count::difference(server_now, server_then);
            let own = count::difference(&server_delta, generator);
            figures::requests(
                "embedded API server counters minus the load generator's",
                &own,
            )
        }
        (false, Some(url)) => match measured::http_get(url)
            .await
            .map(|(_, page)| figures::scrape_requests(&page))
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

/// CPU seconds used between two readings, to the hundredth; `None` when either is unknown.
fn cpu_delta(now: Option<f64>, then: Option<f64>) -> Option<f64> {
    now.zip(then)
        .map(|(n, t)| ((n - t).max(0.0) * 100.0).round() / 100.0)
}

/// The controller's CPU and memory over the run.
fn resources(options: &Options, marks: &Marks, target: &Target, peak_rss: &AtomicU64) -> Resources {
    let pid = target.get();
    Resources {
        cpu_seconds: cpu_delta(controller_cpu(options, target), marks.controller_cpu),
        cpu_note: match (options.controller, pid) {
            (ControllerMode::Embedded, _) => {
                "the embedded controller's threads (its client, informers, workers)".into()
            }
            (ControllerMode::Process, Some(pid)) => format!("the controller process {pid}"),
            (ControllerMode::External, Some(pid)) => format!("process {pid}"),
            (_, None) => "n/a: pass --controller-pid".into(),
        },
        process_cpu_seconds: cpu_delta(pid.and_then(proc::process_cpu), marks.process_cpu),
        peak_rss_bytes: Some(peak_rss.load(Ordering::Relaxed)).filter(|b| *b > 0),
        vm_hwm_bytes: pid.and_then(|t| proc::status_bytes(t, "VmHWM")),
        memory_note: match (options.controller, pid) {
            (ControllerMode::Embedded, _) => {
                "the whole bench process: embedded API server, load generator and controller".into()
            }
            (ControllerMode::Process, Some(_)) => {
                "the controller process alone; VmHWM covers its whole life".into()
            }
            (ControllerMode::External, Some(_)) => {
                "the controller process; VmHWM covers its whole life".into()
            }
            (_, None) => "n/a: pass --controller-pid".into(),
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
    controller: &mut Option<Started>,
    target: &Target,
    server: Option<&EmbeddedServer>,
    counter: &RequestCounter,
    kubeconfig: &Path,
    marks: &mut Marks,
    started: Instant,
) -> Result<()> {
    let cold = options.scenario == Scenario::Cold;
    tracing::debug!(phase = "controller", "bench phase");
    if !cold {
        wait_for_controller(controller, server, counter, kubeconfig).await?;
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
        if !cold {
            load.set_phase("settle");
            lock(tracker).set_load_done(Instant::now());
            wait_converged(tracker).await;
        }
    }
    *marks = Marks {
        start: Instant::now(),
        load_end: None,
        server_counts: server
            .map(|s| s.server().request_counts())
            .unwrap_or_default(),
        generator_counts: counter.snapshot(),
        // A controller started in this phase has used nothing before it.
        controller_cpu: controller_cpu(options, target).or(cold.then_some(0.0)),
        process_cpu: target
            .get()
            .and_then(proc::process_cpu)
            .or(cold.then_some(0.0)),
        server_cpu: server_cpu(server, client).await,
        pod_writes: load.pod_writes(),
        bytes_read: match controller {
            Some(c) => scrape(c, "informer_received_bytes_total").await,
            None => cold.then_some(0),
        },
        watch_events: match controller {
            Some(c) => scrape(c, "informer_watch_events_total").await,
            None => cold.then_some(0),
        },
        setup: started.elapsed(),
        sli: sli_histograms(controller.as_ref(), options).await,
        soak: None,
    };
    lock(tracker).start_phase();
    match options.scenario {
        Scenario::Create => {
            load.create_services(false).await?;
            load.fill_services().await?;
        }
        Scenario::Rolling => load.rolling(churn).await?,
        Scenario::Flap => load.flap(churn).await?,
        Scenario::Soak => {
            let soak = &options.soak;
            let rss = || target.get().and_then(|t| proc::status_bytes(t, "VmRSS"));
            marks.soak = Some(
                load.soak(soak.rate, soak.duration, soak.sample_every, rss)
                    .await?,
            );
        }
        Scenario::Scale => load.scale(churn).await?,
        Scenario::Nodes => load.node_churn(churn).await?,
        Scenario::Cold => {
            load.set_phase("start");
            *controller = start_controller(kubeconfig, options, target)?;
            if controller.is_none() {
                eprintln!(
                    "bench: the workload is in place; start the controller now with --kubeconfig {}",
                    kubeconfig.display()
                );
            }
            // Convergence is timed from here, through the controller's start and first sync.
            let done = Instant::now();
            lock(tracker).set_load_done(done);
            marks.load_end = Some(done);
            load.set_phase("converge");
            wait_for_controller(controller, server, counter, kubeconfig).await?;
            wait_converged(tracker).await;
            return Ok(());
        }
    }
    let done = Instant::now();
    load.set_phase("converge");
    marks.load_end = Some(done);
    lock(tracker).set_load_done(done);
    wait_converged(tracker).await;
    Ok(())
}

/// Waits until the controller is ready: ours by its readiness, an external one (with the
/// embedded API server) by its watches. With another API server an external controller is
/// taken to be running already.
async fn wait_for_controller(
    controller: &mut Option<Started>,
    server: Option<&EmbeddedServer>,
    counter: &RequestCounter,
    kubeconfig: &Path,
) -> Result<()> {
    match (controller, server) {
        (Some(c), _) => c.wait_ready().await,
        (None, Some(server)) => {
            eprintln!(
                "bench: waiting for an external controller; start it with --kubeconfig {}",
                kubeconfig.display()
            );
            wait_for_external(server.server(), counter).await;
            Ok(())
        }
        (None, None) => Ok(()),
    }
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
