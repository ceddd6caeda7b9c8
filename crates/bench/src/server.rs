//! The embedded API server of a bench run, on threads of its own so that its CPU time (the
//! API server's load) can be told apart from the load generator's and an embedded
//! controller's; or, with `--kubeconfig`, a real API server whose CPU is read from its own
//! `/metrics` where the bench's identity may read them.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use tokio::sync::oneshot;

use crate::figures::proc;

/// The prefix of the embedded API server's thread names.
pub const SERVER_THREADS: &str = "ke-api";

/// The embedded API server running on its own runtime.
pub struct EmbeddedServer {
    handle: apiserver::ApiServerHandle,
    stop_runtime: oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl EmbeddedServer {
    /// Starts the server on 127.0.0.1 with `config`, on a runtime of two worker threads named
    /// [`SERVER_THREADS`]. Connections it accepts are served there too.
    pub async fn start(config: apiserver::Config) -> Result<Self> {
        let (handle_tx, handle_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("{SERVER_THREADS}-main"))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name(format!("{SERVER_THREADS}-worker"))
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(err) => {
                        let _ = handle_tx.send(Err(err));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let started = apiserver::ApiServer::start(config).await;
                    if handle_tx.send(started).is_err() {
                        return;
                    }
                    // Keep the runtime (and so the server's tasks) alive until told to stop.
                    let _ = stop_rx.await;
                });
            })
            .context("starting the API server's thread")?;
        let handle = handle_rx
            .await
            .context("the API server's thread ended before it started")?
            .context("starting the embedded API server")?;
        Ok(Self {
            handle,
            stop_runtime: stop_tx,
            thread,
        })
    }

    /// The server.
    pub fn server(&self) -> &apiserver::ApiServer {
        self.handle.server()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.handle.url()
    }

    /// Writes a kubeconfig pointing at the server.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        self.handle.write_kubeconfig(path)
    }

    /// CPU seconds the server's threads have used so far.
    pub fn cpu_seconds() -> Option<f64> {
        proc::threads_cpu(SERVER_THREADS)
    }

    /// Stops serving and ends the server's runtime.
    pub async fn shutdown(self) -> Result<()> {
        let result = self.handle.shutdown().await.map_err(anyhow::Error::from);
        // The runtime's thread has nothing left to wait for once told; a send error means it
        // already ended.
        let _ = self.stop_runtime.send(());
        let _ = tokio::task::spawn_blocking(move || self.thread.join()).await;
        result
    }
}

/// The embedded API server (unless `kubeconfig` names another) and the kubeconfig to use.
pub async fn start(
    kubeconfig: Option<&Path>,
    write_kubeconfig: Option<&Path>,
    history_window: usize,
) -> Result<(Option<EmbeddedServer>, PathBuf)> {
    if let Some(path) = kubeconfig {
        return Ok((None, path.to_owned()));
    }
    let config = apiserver::Config {
        history_window,
        ..apiserver::Config::default()
    };
    let server = EmbeddedServer::start(config).await?;
    let path = write_kubeconfig.map(Path::to_owned).unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "kube-endpoints-bench-{}.kubeconfig",
            std::process::id()
        ))
    });
    server
        .write_kubeconfig(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((Some(server), path))
}

/// `process_cpu_seconds_total` from a real API server's `/metrics`, read through `client`
/// (`None` when the bench's identity may not read them, or the server does not export it).
pub async fn remote_cpu_seconds(client: &kube::Client) -> Option<f64> {
    let request = http::Request::get("/metrics").body(Vec::new()).ok()?;
    let page = client.request_text(request).await.ok()?;
    process_cpu_seconds(&page)
}

/// The `process_cpu_seconds_total` sample of a Prometheus text page.
pub fn process_cpu_seconds(page: &str) -> Option<f64> {
    page.lines()
        .find_map(|line| line.strip_prefix("process_cpu_seconds_total "))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_sample_is_read_from_a_metrics_page() {
        let page = "# HELP process_cpu_seconds_total x\n# TYPE process_cpu_seconds_total counter\n\
                    process_cpu_seconds_total 171.25\nprocess_open_fds 40\n";
        assert_eq!(process_cpu_seconds(page), Some(171.25));
        assert_eq!(process_cpu_seconds("go_goroutines 5\n"), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_server_runs_on_threads_of_its_own_and_stops() {
        let server = EmbeddedServer::start(apiserver::Config::default())
            .await
            .unwrap();
        let config = kube::Config::new(server.url().parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client);
        pods.list(&Default::default()).await.unwrap();
        let names: Vec<String> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .map(|t| std::fs::read_to_string(t.path().join("comm")).unwrap_or_default())
            .collect();
        assert!(
            names.iter().any(|n| n.starts_with(SERVER_THREADS)),
            "{names:?}"
        );
        assert!(EmbeddedServer::cpu_seconds().is_some());
        server.shutdown().await.unwrap();
    }
}
