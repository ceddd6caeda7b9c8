//! The Kubernetes version the workstation tools follow for a live cluster: the one pinned
//! with `--emulated-version`, otherwise the cluster's own, read from its `/version` as the
//! controllers read it at start.

use anyhow::Result;
use kube_endpoints::flags::OutputFlags;
use reconcile::KubeVersion;

/// Pins `flags` to the version to follow for the cluster `client` talks to, and returns it:
/// `--emulated-version` when given, else the API server's (the nearest known one, with a
/// warning, when it is outside v1.33 to v1.36).
pub async fn follow_cluster(client: &kube::Client, flags: &mut OutputFlags) -> Result<KubeVersion> {
    if let Some(version) = flags.emulated_version {
        return Ok(version);
    }
    let version = controller::followed_version::read_server_version(client).await?;
    // These commands print their answer alone, without the controllers' log: say it here.
    if let Some(warning) = version.unsupported_warning() {
        eprintln!("warning: {warning}");
    }
    let followed = version.nearest_supported();
    flags.emulated_version = Some(followed);
    Ok(followed)
}
