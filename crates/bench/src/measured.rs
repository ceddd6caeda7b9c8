//! The controller a run measures, when the bench starts it: ours in this process (on threads
//! of its own), or ours as a separate `kube-endpoints run` process, whose CPU and memory are
//! then the controller's alone, as an operator would see them.

use anyhow::{bail, Context, Result};
use controller::health::Readiness;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::{ControllerMode, Options};

/// The prefix of the embedded controller's thread names, to count their CPU apart.
pub const CONTROLLER_THREADS: &str = "ke-ctl";

/// A controller the bench started.
pub enum Started {
    /// In this process.
    Embedded(EmbeddedController),
    /// A child process.
    Process(ProcessController),
}

impl Started {
    /// Starts the controller `options.controller` names (`None` for an external one).
    pub fn start(kubeconfig: &Path, options: &Options) -> Result<Option<Self>> {
        Ok(match options.controller {
            ControllerMode::Embedded => Some(Self::Embedded(EmbeddedController::start(
                kubeconfig, options,
            )?)),
            ControllerMode::Process => Some(Self::Process(ProcessController::start(
                kubeconfig, options,
            )?)),
            ControllerMode::External => None,
        })
    }

    /// Waits until the controller's informers have synced; an error when the process ended.
    pub async fn wait_ready(&mut self) -> Result<()> {
        match self {
            Self::Embedded(c) => {
                while !c.readiness.is_ready() {
                    if c.thread.is_finished() {
                        bail!("the embedded controller stopped before it was ready");
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(())
            }
            Self::Process(c) => c.wait_ready().await,
        }
    }

    /// The controller's `/metrics` page; `None` when it cannot be read.
    pub async fn metrics_page(&self) -> Option<String> {
        match self {
            Self::Embedded(c) => controller::metrics::render(&c.registry).ok(),
            Self::Process(c) => http_get(&format!("{}/metrics", c.base_url))
                .await
                .ok()
                .map(|(_, page)| page),
        }
    }

    /// The child's process id, for /proc figures.
    pub fn pid(&self) -> Option<u32> {
        match self {
            Self::Embedded(_) => None,
            Self::Process(c) => Some(c.child.id()),
        }
    }

    /// Stops the controller.
    pub async fn stop(self) {
        match self {
            Self::Embedded(c) => c.stop().await,
            Self::Process(c) => c.stop().await,
        }
    }
}

/// Our controllers in this process, on their own Tokio runtime and threads so their CPU time
/// can be counted apart.
pub struct EmbeddedController {
    registry: prometheus::Registry,
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
        let registry = prometheus::Registry::new();
        let (r, s, metrics) = (readiness.clone(), shutdown.clone(), registry.clone());
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
                    controller::run(
                        client,
                        &options,
                        &metrics,
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
            registry,
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

/// The `kube-endpoints` binary installed beside the running one (`kubectl-endpoints`), as a
/// release or `cargo build` puts them.
fn sibling_controller_binary() -> Result<PathBuf> {
    let me = std::env::current_exe().context("finding the running binary")?;
    let dir = me.parent().context("the running binary has no directory")?;
    // Test binaries run from target/<profile>/deps; the binaries sit one level up.
    let candidates = [dir.join("kube-endpoints"), dir.join("../kube-endpoints")];
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .with_context(|| {
            format!(
                "no kube-endpoints binary beside {} (build it with `cargo build -p \
                 kube-endpoints`, or name one with --controller-program)",
                me.display()
            )
        })
}

/// `kube-endpoints run` as a child process: leader election off, plain HTTP health and
/// metrics on a free loopback port, its log in a file beside the kubeconfig.
pub struct ProcessController {
    child: Child,
    /// `http://127.0.0.1:PORT`, where its /readyz and /metrics are served.
    pub base_url: String,
    log: PathBuf,
}

impl ProcessController {
    fn start(kubeconfig: &Path, options: &Options) -> Result<Self> {
        // This binary serves HTTPS on 10257 unless told not to; another build (an older one
        // without the flag) gets only what every version takes, and the caller adds the rest.
        let (program, own) = match &options.controller_program {
            Some(path) => (path.clone(), false),
            None => (sibling_controller_binary()?, true),
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .context("finding a free port for the controller's /metrics")?
            .port();
        let log = kubeconfig.with_extension(format!("controller-{port}.log"));
        let log_file = std::fs::File::create(&log)
            .with_context(|| format!("creating the controller's log {}", log.display()))?;
        let mut command = Command::new(&program);
        command
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--leader-elect=false")
            .args(own.then_some("--secure-port=0"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg(format!("--kube-api-qps={}", options.controller_qps))
            .arg(format!("--kube-api-burst={}", options.controller_burst))
            .args(&options.controller_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        die_with_parent(&mut command);
        let child = command
            .spawn()
            .with_context(|| format!("starting {} run", program.display()))?;
        Ok(Self {
            child,
            base_url: format!("http://127.0.0.1:{port}"),
            log,
        })
    }

    async fn wait_ready(&mut self) -> Result<()> {
        loop {
            if let Some(status) = self.child.try_wait()? {
                let tail = std::fs::read_to_string(&self.log).unwrap_or_default();
                let tail: Vec<&str> = tail.lines().rev().take(5).collect();
                bail!(
                    "the controller process exited ({status}) before it was ready; its log ({}) ends: {}",
                    self.log.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                );
            }
            if let Ok((200, _)) = http_get(&format!("{}/readyz", self.base_url)).await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(mut self) {
        if let Err(err) = self.child.kill() {
            tracing::warn!(%err, "stopping the controller process");
        }
        let _ = tokio::task::spawn_blocking(move || self.child.wait()).await;
    }
}

/// GETs a page over plain HTTP (a controller's /metrics or /readyz): status and body.
pub async fn http_get(url: &str) -> Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("{url} is not an http:// URL"))?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = tokio::net::TcpStream::connect(host)
        .await
        .with_context(|| format!("connecting to {host}"))?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or((response.as_str(), ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("{url} answered without a status line"))?;
    Ok((status, body.to_owned()))
}

/// Has the kernel kill the controller when the bench dies, however it dies: a bench stopped
/// by a signal, or aborted, runs no destructor, and its controller would go on running
/// against a server that is gone, spoiling the next run's figures. The signal follows the
/// thread that forked, not the process: the controller is started from the main thread or a
/// runtime worker, both of which live as long as the bench (never from `spawn_blocking`,
/// whose threads end when idle).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only makes the
    // async-signal-safe prctl system call.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}
