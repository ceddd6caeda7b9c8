//! The Kubernetes version the workstation tools follow for a live cluster: the one pinned
//! with `--emulated-version`, otherwise the cluster's own, read from its `/version` as the
//! controllers read it at start.

use anyhow::{Context, Result};
use kube_endpoints::flags::OutputFlags;
use reconcile::KubeVersion;

/// Pins `flags` to the version to follow for the cluster `client` talks to, and returns it:
/// `--emulated-version` when given, else the API server's (the nearest known one, with a
/// warning, when it is outside v1.33 to v1.36).
pub async fn follow_cluster(client: &kube::Client, flags: &mut OutputFlags) -> Result<KubeVersion> {
    if let Some(version) = flags.emulated_version {
        return Ok(version);
    }
    let info = client
        .apiserver_version()
        .await
        .context("reading the API server's /version")?;
    let version = KubeVersion::from_server(&info.major, &info.minor, &info.git_version)
        .with_context(|| {
            format!(
                "the API server's /version names no Kubernetes version (gitVersion {:?}); \
                 pin one with --emulated-version",
                info.git_version
            )
        })?;
    let followed = version.nearest_supported();
    if followed != version {
        eprintln!(
            "warning: the cluster runs Kubernetes {version}; kube-endpoints knows the controllers \
             of {} to {} and follows {followed}",
            KubeVersion::OLDEST,
            KubeVersion::NEWEST
        );
    }
    flags.emulated_version = Some(followed);
    Ok(followed)
}
