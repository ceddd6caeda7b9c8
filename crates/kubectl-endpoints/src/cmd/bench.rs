//! `kubectl-endpoints bench`: load, convergence, cost.

use anyhow::Result;
use bench::{ControllerMode, Scenario};
use clap::{Args, ValueEnum};
use kube_endpoints::flags::parse_duration;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Measure how fast a controller's EndpointSlices and Endpoints follow pods, and at what
/// cost. Drives a kubelet-like load (nodes, Services, pods and their status), checks every
/// Service's slices and Endpoints against what it wrote (independently of our reconcile code),
/// and reports per-change latency percentiles, time to convergence, the controller's API
/// requests and writes, CPU seconds and peak RSS. Exits non-zero on timeout or when the
/// controller did not converge.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// API server to load; without it, the embedded API server is started on 127.0.0.1.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// What to measure: create (N Services x M pods from empty), rolling (replace every pod in
    /// batches), flap (readiness flips of random pods), scale (Services scaled up and down),
    /// nodes (node readiness and zone changes, topology hints on), cold (the workload is
    /// created with no controller running, then the controller is started: time to converge,
    /// CPU, memory and requests of a start on an existing cluster).
    #[arg(long, value_enum)]
    pub scenario: Scenario,
    /// Number of Services.
    #[arg(long, default_value_t = 100)]
    pub services: usize,
    /// Pods per Service.
    #[arg(long, default_value_t = 10)]
    pub pods_per_service: usize,
    /// Number of nodes the pods are spread over.
    #[arg(long, default_value_t = 10)]
    pub nodes: usize,
    /// Number of zones the nodes are spread over.
    #[arg(long, default_value_t = 3)]
    pub zones: usize,
    /// A cluster shape at Kubernetes' scalability limits, instead of --services,
    /// --pods-per-service, --nodes and --zones: many-nodes (5,000 nodes, 200 Services x 50
    /// pods), many-services (10,000 Services x 15 pods), huge-service (one Service of 5,000
    /// pods), limits (10,000 Services x 15 pods on 5,000 nodes).
    #[arg(long, value_enum, conflicts_with_all = ["services", "pods_per_service", "nodes", "zones"])]
    pub shape: Option<bench::shape::Shape>,
    /// Shrinks --shape by this factor (more than 0, at most 1): a huge Service gets fewer
    /// pods, the other shapes fewer Services and nodes.
    #[arg(long, requires = "shape", default_value_t = 1.0)]
    pub scale: f64,
    /// Size of the measured churn: readiness flips (flap), scale steps (scale), node events
    /// (nodes), or pods per Service replaced per step (rolling; default a quarter of them).
    #[arg(long)]
    pub churn: Option<usize>,
    /// Seed of the random picks (same seed, same run).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// What each pod carries besides what the controllers read: `minimal` (one container,
    /// one port) or `deployment` (a Deployment's pod as kubelet reports it: owner,
    /// annotations, probes, environment, mounts, projected volume, container statuses).
    #[arg(long, value_enum, default_value = "minimal")]
    pub pod_shape: bench::load::PodShape,
    /// Which controller is measured: ours in this process (embedded), ours as a `run` process
    /// of its own that the bench starts and stops (process: CPU and memory are the
    /// controller's alone), or one already watching the API server (external).
    #[arg(long, value_enum, default_value = "embedded")]
    pub controller: ControllerMode,
    /// PID of the external controller, for its CPU seconds and peak RSS.
    #[arg(long)]
    pub controller_pid: Option<u32>,
    /// The external controller's metrics URL (http://127.0.0.1:PORT/metrics), for its request
    /// counts when the API server is not the embedded one.
    #[arg(long)]
    pub controller_metrics: Option<String>,
    /// Client-side requests per second of the load generator.
    #[arg(long, default_value_t = 200.0)]
    pub qps: f64,
    /// Load generator writes in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// The embedded or process controller's --kube-api-qps (kube-controller-manager's
    /// default).
    #[arg(long, default_value_t = 20.0)]
    pub kube_api_qps: f32,
    /// The embedded or process controller's --kube-api-burst (kube-controller-manager's
    /// default).
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,
    /// With --controller process: the kube-endpoints binary to run (default: this one), e.g.
    /// an older build to compare against. It gets --kubeconfig, --leader-elect=false,
    /// --bind-address, --port and the --kube-api-* flags; this binary also --secure-port=0,
    /// which another build that serves HTTPS by default needs as a --controller-arg.
    #[arg(long)]
    pub controller_program: Option<PathBuf>,
    /// With --controller process: one more flag for its `run` (repeatable), e.g.
    /// --controller-arg=--concurrent-service-endpoint-syncs=10.
    #[arg(long = "controller-arg", allow_hyphen_values = true)]
    pub controller_args: Vec<String>,
    /// Longest run; on expiry the figures so far are printed and the exit code is non-zero.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Namespace for the bench's Services and pods (must not exist).
    #[arg(long, default_value = "kube-endpoints-bench")]
    pub namespace: String,
    /// Where to write the embedded API server's kubeconfig (for an external controller).
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,
    /// With --kubeconfig, leave the namespace and its objects in place afterwards.
    #[arg(long)]
    pub keep: bool,
    /// No progress line on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: Output,
    /// `--scenario soak`: how long the steady flap lasts (added to --timeout).
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    pub soak_duration: Duration,
    /// `--scenario soak`: pods flipped a second.
    #[arg(long, default_value_t = 10.0)]
    pub soak_rate: f64,
    /// `--scenario soak`: how often the controller's resident memory is read.
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    pub soak_sample: Duration,
}

/// How the figures are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Two columns for people.
    Table,
    /// One JSON object.
    Json,
}

/// Runs the command; false when it timed out or did not converge.
pub async fn run(args: BenchArgs) -> Result<bool> {
    let size = match args.shape {
        Some(shape) => shape.scaled(args.scale)?,
        None => bench::shape::Size {
            services: args.services,
            pods_per_service: args.pods_per_service,
            nodes: args.nodes,
            zones: args.zones,
        },
    };
    let options = bench::Options {
        scenario: args.scenario,
        services: size.services,
        pods_per_service: size.pods_per_service,
        nodes: size.nodes,
        zones: size.zones,
        churn: args.churn,
        seed: args.seed,
        pod_shape: args.pod_shape,
        qps: args.qps,
        concurrency: args.concurrency,
        timeout: args.timeout,
        namespace: args.namespace,
        kubeconfig: args.kubeconfig,
        write_kubeconfig: args.write_kubeconfig,
        controller: args.controller,
        controller_pid: args.controller_pid,
        controller_metrics: args.controller_metrics,
        controller_qps: args.kube_api_qps,
        controller_burst: args.kube_api_burst,
        controller_program: args.controller_program,
        controller_args: args.controller_args,
        cleanup: !args.keep,
        progress: !args.quiet,
        soak: bench::SoakOptions {
            duration: args.soak_duration,
            rate: args.soak_rate,
            sample_every: args.soak_sample,
        },
    };
    let report = bench::run(options).await?;
    let mut out = std::io::stdout().lock();
    match args.output {
        Output::Table => write!(out, "{}", report.table())?,
        Output::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
    }
    out.flush()?;
    if report.timed_out {
        eprintln!("bench: timed out; the figures above are partial");
    } else if !report.converged {
        eprintln!("bench: the controller did not converge");
    }
    Ok(report.converged && !report.timed_out)
}
