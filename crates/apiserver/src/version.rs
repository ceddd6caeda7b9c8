//! The kube-apiserver version the server imitates, and what that version changes here.
//!
//! Tests use this server as their oracle, so for each version it claims to be (through
//! `/version`) it refuses what that version's kube-apiserver refuses for the kinds the
//! controllers read: a v1.33 server has the `PreferSameTrafficDistribution` gate off, so it
//! refuses `trafficDistribution: PreferSameZone` and `PreferSameNode`, and its WatchList gate
//! is off, so it refuses `sendInitialEvents`. From v1.34 both gates are on.

use reconcile::traffic_distribution::{PREFER_CLOSE, PREFER_SAME_NODE, PREFER_SAME_ZONE};
use reconcile::KubeVersion;

/// A kube-apiserver version with the feature gates that matter here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerVersion {
    /// `major.minor`, reported through `/version`.
    pub version: KubeVersion,
    /// The `PreferSameTrafficDistribution` gate (off on v1.33 unless turned on).
    pub prefer_same_traffic_distribution: bool,
    /// The `WatchList` gate: streaming lists with `sendInitialEvents` (from v1.34).
    pub watch_list: bool,
}

impl ServerVersion {
    /// `version` with its default gates.
    pub fn of(version: KubeVersion) -> Self {
        let on_from_v1_34 = version >= KubeVersion::new(1, 34);
        Self {
            version,
            prefer_same_traffic_distribution: on_from_v1_34,
            watch_list: on_from_v1_34,
        }
    }

    /// Applies kube-apiserver's `--feature-gates` that matter here:
    /// `PreferSameTrafficDistribution` and `WatchList`. Others change nothing.
    pub fn with_feature_gates<G: AsRef<str>>(mut self, gates: &[(G, bool)]) -> Self {
        for (name, on) in gates {
            let on = *on;
            match name.as_ref() {
                reconcile::kube_version::PREFER_SAME_TRAFFIC_DISTRIBUTION => {
                    self.prefer_same_traffic_distribution = on;
                }
                "WatchList" => self.watch_list = on,
                _ => {}
            }
        }
        self
    }

    /// The `spec.trafficDistribution` values a Service may hold.
    pub fn traffic_distributions(&self) -> &'static [&'static str] {
        if self.prefer_same_traffic_distribution {
            &[PREFER_CLOSE, PREFER_SAME_ZONE, PREFER_SAME_NODE]
        } else {
            &[PREFER_CLOSE]
        }
    }

    /// The patch release `/version` reports: the one the project's recordings were made with.
    fn patch(&self) -> u32 {
        match self.version.minor {
            33 => 13,
            34 => 9,
            35 => 6,
            36 => 2,
            _ => 0,
        }
    }

    /// The `gitVersion` of `/version`, e.g. `v1.34.9-kube-endpoints`.
    pub fn git_version(&self) -> String {
        format!("{}.{}-kube-endpoints", self.version, self.patch())
    }
}

impl Default for ServerVersion {
    fn default() -> Self {
        Self::of(KubeVersion::NEWEST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_33_has_both_gates_off_and_later_versions_on() {
        let v133 = ServerVersion::of(KubeVersion::new(1, 33));
        assert!(!v133.watch_list && !v133.prefer_same_traffic_distribution);
        assert_eq!(v133.traffic_distributions(), [PREFER_CLOSE]);
        assert_eq!(v133.git_version(), "v1.33.13-kube-endpoints");
        let gated = v133.with_feature_gates(&[("PreferSameTrafficDistribution", true)]);
        assert_eq!(gated.traffic_distributions().len(), 3);
        for minor in 34..=36 {
            let v = ServerVersion::of(KubeVersion::new(1, minor));
            assert!(
                v.watch_list && v.prefer_same_traffic_distribution,
                "v1.{minor}"
            );
        }
        assert_eq!(ServerVersion::default().version, KubeVersion::NEWEST);
    }
}
