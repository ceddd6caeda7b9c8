//! One module per subcommand.

pub mod apiserver;
pub mod audit;
pub mod bench;
pub mod conformance;
pub mod dev;
pub mod explain;
pub mod faults;
pub mod plan;

/// A client for the cluster of `kubeconfig`, or of the in-cluster config or the default
/// kubeconfig without one: how the read-only commands connect.
pub async fn connect(kubeconfig: Option<std::path::PathBuf>) -> anyhow::Result<kube::Client> {
    use anyhow::Context;
    let settings = controller::client::ClientSettings {
        kubeconfig,
        ..Default::default()
    };
    controller::client::build_client(&settings)
        .await
        .context("connecting to the API server")
}
