//! Which Kubernetes version's controllers these follow: the API server's, read from its
//! `/version` at start, or the one pinned with `--emulated-version`.
//!
//! A cluster's kube-controller-manager is of its API server's minor version, so by default
//! that is the version followed; mid-upgrade, when kube-controller-manager is still one minor
//! behind its API servers, `--emulated-version` pins it. The rules themselves are
//! `reconcile::VersionRules`; this module only finds the version, applies `--feature-gates`,
//! logs what is followed and publishes it as `kube_endpoints_followed_version_info`.

use crate::config::Settings;
use reconcile::{KubeVersion, VersionRules};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The gauge that names the version followed (always 1).
pub const METRIC: &str = "kube_endpoints_followed_version_info";

/// Where the followed version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--emulated-version`.
    Flag,
    /// The API server's `/version`.
    ApiServer,
}

impl Source {
    fn label(self) -> &'static str {
        match self {
            Self::Flag => "flag",
            Self::ApiServer => "apiserver",
        }
    }
}

/// Why no version could be followed.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// A `--feature-gates` value that version's kube-controller-manager refuses.
    #[error(transparent)]
    Gate(#[from] reconcile::kube_version::GateError),
    /// The API server's `/version` did not answer.
    #[error("reading the API server's /version: {0}")]
    Request(#[from] kube::Error),
    /// The API server's `/version` names no version.
    #[error("the API server's /version names no Kubernetes version (gitVersion {0:?}); pin one with --emulated-version")]
    Unreadable(String),
}

/// The rules to follow: those of `--emulated-version` when set, otherwise those of the API
/// server `client` talks to, whose `/version` is asked until it answers (or `shutdown`, which
/// gives `Ok(None)`). `--feature-gates` apply on top. The result is logged, and registered in
/// `registry` as [`METRIC`] with the labels `version` and `source`.
pub async fn follow(
    client: &kube::Client,
    settings: &Settings,
    registry: &prometheus::Registry,
    shutdown: &CancellationToken,
) -> Result<Option<VersionRules>, VersionError> {
    let (version, source) = match settings.emulated_version {
        Some(version) => (version, Source::Flag),
        None => {
            let Some(version) = server_version(client, shutdown).await? else {
                return Ok(None);
            };
            (version, Source::ApiServer)
        }
    };
    if let Some(warning) = version.unsupported_warning() {
        tracing::warn!("{warning}");
    }
    let rules = settings.rules_of(version)?;
    tracing::info!(
        followed = %rules,
        source = source.label(),
        "writing what kube-controller-manager {} writes",
        rules.version
    );
    register(registry, &rules, source);
    Ok(Some(rules))
}

/// The version the API server `client` talks to reports through `/version`, asked once.
pub async fn read_server_version(client: &kube::Client) -> Result<KubeVersion, VersionError> {
    let info = client.apiserver_version().await?;
    KubeVersion::from_server(&info.major, &info.minor, &info.git_version)
        .ok_or(VersionError::Unreadable(info.git_version))
}

/// [`read_server_version`], asked again with a growing delay while the server does not
/// answer; `None` on `shutdown`.
async fn server_version(
    client: &kube::Client,
    shutdown: &CancellationToken,
) -> Result<Option<KubeVersion>, VersionError> {
    let mut delay = Duration::from_millis(200);
    loop {
        let answer = tokio::select! {
            answer = read_server_version(client) => answer,
            () = shutdown.cancelled() => return Ok(None),
        };
        match answer {
            Ok(version) => return Ok(Some(version)),
            Err(VersionError::Request(error)) => {
                tracing::warn!(%error, retry_in = ?delay, "reading the API server's /version");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = shutdown.cancelled() => return Ok(None),
                }
                delay = (delay * 2).min(Duration::from_secs(10));
            }
            Err(error) => return Err(error),
        }
    }
}

fn register(registry: &prometheus::Registry, rules: &VersionRules, source: Source) {
    let opts = prometheus::Opts::new(
        METRIC,
        "The Kubernetes version whose kube-controller-manager these controllers write like, \
         and where it came from (apiserver: its /version; flag: --emulated-version).",
    );
    let Ok(gauge) = prometheus::IntGaugeVec::new(opts, &["version", "source"]) else {
        return;
    };
    gauge
        .with_label_values(&[rules.version.to_string().as_str(), source.label()])
        .set(1);
    // A second run in the same process (tests) finds it registered already: keep the first.
    let _ = registry.register(Box::new(gauge));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client with no server behind it (a pinned version must not need one), and settings
    /// pinning v1.`minor` with `PreferSameTrafficDistribution` set to `gate`.
    fn pinned(minor: u32, gate: bool) -> (kube::Client, Settings) {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let settings = Settings {
            emulated_version: Some(KubeVersion::new(1, minor)),
            feature_gates: vec![("PreferSameTrafficDistribution".into(), gate)],
            ..Settings::default()
        };
        (kube::Client::try_from(config).unwrap(), settings)
    }

    #[tokio::test]
    async fn a_pinned_version_is_followed_without_asking_the_server_and_published() {
        let (client, settings) = pinned(33, true);
        let registry = prometheus::Registry::new();
        let rules = follow(&client, &settings, &registry, &CancellationToken::new())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rules.version, KubeVersion::new(1, 33));
        assert!(rules.prefer_same_traffic_distribution);
        let text = crate::metrics::render(&registry).unwrap();
        assert!(
            text.contains(
                r#"kube_endpoints_followed_version_info{source="flag",version="v1.33"} 1"#
            ),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_gate_the_version_locks_is_refused() {
        let (client, settings) = pinned(35, false);
        let error = follow(
            &client,
            &settings,
            &prometheus::Registry::new(),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(error.to_string().contains("locked"), "{error}");
    }
}
