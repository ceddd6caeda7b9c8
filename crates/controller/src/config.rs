//! The settings both controllers share, with kube-controller-manager's defaults.
//!
//! Plain data: the `cli` crate maps its flags (same names as kube-controller-manager's) onto
//! these fields, and tests build them directly. Keeping clap out of this crate keeps the
//! controllers usable from tests and from `kubectl-endpoints dev` without a command line.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::client::ClientSettings;
use crate::secure_serving::SecureServingSettings;

use reconcile::slice::MAX_ENDPOINTS_PER_SLICE_LIMIT;

/// Upstream's cap on `--mirroring-concurrent-service-endpoint-syncs`.
pub const MIRRORING_WORKERS_LIMIT: u32 = 50;

/// Upstream's cap on `--mirroring-max-endpoints-per-subset`.
pub const MIRRORING_MAX_ENDPOINTS_PER_SUBSET_LIMIT: u32 = 1000;

/// Settings of one `kube-endpoints run`.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--concurrent-endpoint-syncs`: Endpoints controller workers (5).
    pub concurrent_endpoint_syncs: u32,
    /// `--concurrent-service-endpoint-syncs`: EndpointSlice controller workers (5).
    pub concurrent_service_endpoint_syncs: u32,
    /// `--max-endpoints-per-slice`: endpoints per EndpointSlice (100, at most 1000).
    pub max_endpoints_per_slice: u32,
    /// `--endpoint-updates-batch-period`: how long the Endpoints controller holds pod
    /// changes before syncing their services (0: at once).
    pub endpoint_updates_batch_period: Duration,
    /// `--endpointslice-updates-batch-period`: the same for the EndpointSlice controller.
    pub endpointslice_updates_batch_period: Duration,
    /// `--mirroring-concurrent-service-endpoint-syncs`: mirroring controller workers (5, at
    /// most 50).
    pub mirroring_concurrent_service_endpoint_syncs: u32,
    /// `--mirroring-max-endpoints-per-subset`: addresses mirrored per Endpoints subset (1000,
    /// at most 1000).
    pub mirroring_max_endpoints_per_subset: u32,
    /// `--mirroring-endpointslice-updates-batch-period`: how long the mirroring controller
    /// holds slice changes before syncing their Endpoints (0: at once).
    pub mirroring_endpointslice_updates_batch_period: Duration,
    /// How to reach the API server, and `--kube-api-qps`/`--kube-api-burst`.
    pub client: ClientSettings,
    /// `--leader-elect` and its companions.
    pub leader_election: LeaderElectionSettings,
    /// Where /metrics, /healthz and /readyz are served.
    pub serving: ServingSettings,
    /// `--emulated-version`: the Kubernetes version whose controllers are followed. `None`
    /// follows the API server's (its `/version`), as a kube-controller-manager of the same
    /// version as its API server writes.
    pub emulated_version: Option<reconcile::KubeVersion>,
    /// `--feature-gates`: those that change what is written apply on top of the version's
    /// defaults (`PreferSameTrafficDistribution`); the others are accepted and ignored.
    pub feature_gates: Vec<(String, bool)>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            concurrent_endpoint_syncs: 5,
            concurrent_service_endpoint_syncs: 5,
            max_endpoints_per_slice: 100,
            endpoint_updates_batch_period: Duration::ZERO,
            endpointslice_updates_batch_period: Duration::ZERO,
            mirroring_concurrent_service_endpoint_syncs: 5,
            mirroring_max_endpoints_per_subset: 1000,
            mirroring_endpointslice_updates_batch_period: Duration::ZERO,
            client: ClientSettings::default(),
            leader_election: LeaderElectionSettings::default(),
            serving: ServingSettings::default(),
            emulated_version: None,
            feature_gates: Vec::new(),
        }
    }
}

/// A setting outside the range kube-controller-manager accepts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    /// `--max-endpoints-per-slice` must be between 1 and 1000.
    #[error(
        "--max-endpoints-per-slice must be between 1 and {MAX_ENDPOINTS_PER_SLICE_LIMIT}, got {0}"
    )]
    MaxEndpointsPerSlice(u32),
    /// `--mirroring-max-endpoints-per-subset` must be between 1 and 1000.
    #[error(
        "--mirroring-max-endpoints-per-subset must be between 1 and \
         {MIRRORING_MAX_ENDPOINTS_PER_SUBSET_LIMIT}, got {0}"
    )]
    MirroringMaxEndpointsPerSubset(u32),
    /// `--mirroring-concurrent-service-endpoint-syncs` must be between 1 and 50.
    #[error(
        "--mirroring-concurrent-service-endpoint-syncs must be between 1 and \
         {MIRRORING_WORKERS_LIMIT}, got {0}"
    )]
    MirroringWorkers(u32),
    /// Worker counts must be positive.
    #[error("{flag} must be at least 1")]
    NoWorkers {
        /// The flag that is zero.
        flag: &'static str,
    },
    /// client-go requires lease duration > renew deadline > retry period * 1.2.
    #[error(
        "leader election needs --leader-elect-lease-duration > --leader-elect-renew-deadline > \
         1.2 x --leader-elect-retry-period"
    )]
    LeaderElectionTimings,
    /// A `--feature-gates` value the pinned `--emulated-version` refuses.
    #[error(transparent)]
    FeatureGate(#[from] reconcile::kube_version::GateError),
}

impl Settings {
    /// Checks the ranges kube-controller-manager checks at start-up.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if !(1..=MAX_ENDPOINTS_PER_SLICE_LIMIT).contains(&(self.max_endpoints_per_slice as usize)) {
            return Err(SettingsError::MaxEndpointsPerSlice(
                self.max_endpoints_per_slice,
            ));
        }
        if self.concurrent_endpoint_syncs == 0 {
            return Err(SettingsError::NoWorkers {
                flag: "--concurrent-endpoint-syncs",
            });
        }
        if self.concurrent_service_endpoint_syncs == 0 {
            return Err(SettingsError::NoWorkers {
                flag: "--concurrent-service-endpoint-syncs",
            });
        }
        if !(1..=MIRRORING_WORKERS_LIMIT)
            .contains(&self.mirroring_concurrent_service_endpoint_syncs)
        {
            return Err(SettingsError::MirroringWorkers(
                self.mirroring_concurrent_service_endpoint_syncs,
            ));
        }
        if !(1..=MIRRORING_MAX_ENDPOINTS_PER_SUBSET_LIMIT)
            .contains(&self.mirroring_max_endpoints_per_subset)
        {
            return Err(SettingsError::MirroringMaxEndpointsPerSubset(
                self.mirroring_max_endpoints_per_subset,
            ));
        }
        if self.leader_election.enabled {
            self.leader_election.validate()?;
        }
        // With the version pinned, its gates can be checked now; otherwise once the API
        // server's version is known.
        if let Some(version) = self.emulated_version {
            self.rules_of(version)?;
        }
        Ok(())
    }

    /// The rules of `version`'s kube-controller-manager under `--feature-gates`.
    pub fn rules_of(
        &self,
        version: reconcile::KubeVersion,
    ) -> Result<reconcile::VersionRules, reconcile::kube_version::GateError> {
        reconcile::VersionRules::of(version).with_feature_gates(&self.feature_gates)
    }
}

/// `--leader-elect*`: whether and how to elect one active instance through a Lease.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderElectionSettings {
    /// `--leader-elect` (true): run only while holding the Lease.
    pub enabled: bool,
    /// `--leader-elect-lease-duration` (15s): how long others wait, after last seeing the
    /// Lease change, before taking it over.
    pub lease_duration: Duration,
    /// `--leader-elect-renew-deadline` (10s): how long the leader keeps trying to renew
    /// before it gives up leading.
    pub renew_deadline: Duration,
    /// `--leader-elect-retry-period` (2s): the pause between tries to acquire or renew.
    pub retry_period: Duration,
    /// `--leader-elect-resource-name`: the Lease's name. `kube-endpoints` by default, not
    /// `kube-controller-manager`: both run side by side, each with its own lock.
    pub resource_name: String,
    /// `--leader-elect-resource-namespace` (kube-system): the Lease's namespace.
    pub resource_namespace: String,
}

impl Default for LeaderElectionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            resource_name: "kube-endpoints".to_string(),
            resource_namespace: "kube-system".to_string(),
        }
    }
}

impl LeaderElectionSettings {
    /// client-go's checks: lease duration > renew deadline > 1.2 x retry period (its
    /// jitter factor), all positive.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let jittered_retry = self.retry_period.mul_f64(1.2);
        if self.retry_period.is_zero()
            || self.lease_duration <= self.renew_deadline
            || self.renew_deadline <= jittered_retry
        {
            return Err(SettingsError::LeaderElectionTimings);
        }
        Ok(())
    }
}

/// Where /metrics, /healthz, /livez and /readyz are served: HTTPS on `--secure-port`, and
/// plain HTTP on `--port` only when asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingSettings {
    /// `--bind-address` (0.0.0.0), for both ports.
    pub bind_address: IpAddr,
    /// `--port`: plain HTTP, without authentication; off by default (`None`). `Some(0)`
    /// picks any free port (`dev --exit-when-synced` does).
    pub port: Option<u16>,
    /// HTTPS with delegated authentication and authorization, as kube-controller-manager.
    pub secure: SecureServingSettings,
}

impl Default for ServingSettings {
    fn default() -> Self {
        Self {
            bind_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: None,
            secure: SecureServingSettings::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_kube_controller_manager() {
        let settings = Settings::default();
        assert_eq!(settings.concurrent_endpoint_syncs, 5);
        assert_eq!(settings.concurrent_service_endpoint_syncs, 5);
        assert_eq!(settings.max_endpoints_per_slice, 100);
        assert_eq!(settings.endpoint_updates_batch_period, Duration::ZERO);
        assert_eq!(settings.endpointslice_updates_batch_period, Duration::ZERO);
        assert_eq!(settings.mirroring_concurrent_service_endpoint_syncs, 5);
        assert_eq!(settings.mirroring_max_endpoints_per_subset, 1000);
        assert_eq!(
            settings.mirroring_endpointslice_updates_batch_period,
            Duration::ZERO
        );
        assert_eq!(settings.client.qps, 20.0);
        assert_eq!(settings.client.burst, 30);
        let election = &settings.leader_election;
        assert!(election.enabled);
        assert_eq!(election.lease_duration, Duration::from_secs(15));
        assert_eq!(election.renew_deadline, Duration::from_secs(10));
        assert_eq!(election.retry_period, Duration::from_secs(2));
        assert_eq!(election.resource_namespace, "kube-system");
        assert_eq!(settings.validate(), Ok(()));
    }

    #[test]
    fn a_gate_the_pinned_version_locks_is_refused_before_anything_starts() {
        let pinned = |minor, on| {
            validated(|s| {
                s.emulated_version = Some(reconcile::KubeVersion::new(1, minor));
                s.feature_gates = vec![("PreferSameTrafficDistribution".into(), on)];
            })
        };
        assert_eq!(pinned(34, false), Ok(()));
        assert_eq!(pinned(35, true), Ok(()));
        assert!(matches!(
            pinned(35, false),
            Err(SettingsError::FeatureGate(_))
        ));
    }

    /// What `validate` says of the default settings changed by `change`.
    fn validated(change: impl FnOnce(&mut Settings)) -> Result<(), SettingsError> {
        let mut settings = Settings::default();
        change(&mut settings);
        settings.validate()
    }

    /// Asserts that the number `set` sets is valid up to `max` and at it, refused as
    /// `refusal` past it, and refused at zero.
    fn assert_capped(set: fn(&mut Settings, u32), max: u32, refusal: fn(u32) -> SettingsError) {
        assert_eq!(validated(|s| set(s, max)), Ok(()));
        assert_eq!(validated(|s| set(s, max + 1)), Err(refusal(max + 1)));
        assert!(validated(|s| set(s, 0)).is_err());
    }

    #[test]
    fn max_endpoints_per_slice_is_capped_at_one_thousand() {
        assert_capped(
            |s, n| s.max_endpoints_per_slice = n,
            1000,
            SettingsError::MaxEndpointsPerSlice,
        );
    }

    #[test]
    fn mirroring_settings_stay_within_upstream_ranges() {
        let workers = |s: &mut Settings, n| s.mirroring_concurrent_service_endpoint_syncs = n;
        let per_subset = |s: &mut Settings, n| s.mirroring_max_endpoints_per_subset = n;
        assert_eq!(
            validated(|s| {
                workers(s, 50);
                per_subset(s, 1);
            }),
            Ok(())
        );
        assert_capped(workers, 50, SettingsError::MirroringWorkers);
        assert_eq!(
            validated(|s| workers(s, 0)),
            Err(SettingsError::MirroringWorkers(0))
        );
        assert_capped(
            per_subset,
            1000,
            SettingsError::MirroringMaxEndpointsPerSubset,
        );
    }

    #[test]
    fn leader_election_timings_must_nest() {
        let renew_too_late = |s: &mut Settings| {
            s.leader_election.renew_deadline = Duration::from_secs(15);
        };
        assert_eq!(
            validated(renew_too_late),
            Err(SettingsError::LeaderElectionTimings)
        );
        assert_eq!(
            validated(|s| {
                renew_too_late(s);
                s.leader_election.enabled = false;
            }),
            Ok(())
        );
    }
}
