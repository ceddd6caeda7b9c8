//! Which Kubernetes minor version's controllers we write like, and what that changes.
//!
//! The endpoint controllers of kube-controller-manager v1.33 to v1.36 write the same objects
//! but for a few details: the hash that orders ports and subsets, whether an Endpoints object
//! in another order is rewritten, and whether `PreferSameZone` / `PreferSameNode` count. A
//! cluster's own kube-controller-manager is of its API server's minor version (or one behind,
//! mid-upgrade), so we follow that version: [`VersionRules`] holds every such difference as
//! plain data, and the planners read it from their input. No other module compares versions.

use std::fmt;
use std::str::FromStr;

/// A Kubernetes `major.minor` version, e.g. `1.34`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeVersion {
    /// Always 1 for the versions that exist.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

impl KubeVersion {
    /// The oldest version whose rules we know: v1.33.
    pub const OLDEST: Self = Self::new(1, 33);
    /// The newest version whose rules we know, and the default offline: v1.36.
    pub const NEWEST: Self = Self::new(1, 36);

    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// Every version whose rules we know, oldest first.
    pub fn supported() -> impl Iterator<Item = Self> {
        (Self::OLDEST.minor..=Self::NEWEST.minor).map(|minor| Self::new(1, minor))
    }

    /// The nearest version whose rules we know (itself when it is one).
    pub fn nearest_supported(self) -> Self {
        self.clamp(Self::OLDEST, Self::NEWEST)
    }

    /// Whether we know this version's rules.
    pub fn is_supported(self) -> bool {
        (Self::OLDEST..=Self::NEWEST).contains(&self)
    }

    /// For a version whose rules we do not know, the warning to give: which versions we know
    /// and which one is followed instead. `None` for a known one.
    pub fn unsupported_warning(self) -> Option<String> {
        (!self.is_supported()).then(|| {
            format!(
                "Kubernetes {self}: kube-endpoints knows the controllers of {} to {} and follows {}",
                Self::OLDEST,
                Self::NEWEST,
                self.nearest_supported()
            )
        })
    }

    /// Reads the version out of an API server's `/version` answer: `major` and `minor` as
    /// the server gives them (`"1"`, `"34"`, or `"34+"` as some distributions report), with
    /// `gitVersion` (`v1.34.9`, `v1.34.9+k3s1`) as the fallback when they are not numbers.
    pub fn from_server(major: &str, minor: &str, git_version: &str) -> Option<Self> {
        let number = |s: &str| -> Option<u32> {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        match (number(major), number(minor)) {
            (Some(major), Some(minor)) => Some(Self::new(major, minor)),
            _ => git_version.parse().ok(),
        }
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        Self::NEWEST
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}", self.major, self.minor)
    }
}

/// A version that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a Kubernetes version: expected MAJOR.MINOR, e.g. 1.34 or v1.34.9")]
pub struct BadVersion(pub String);

impl FromStr for KubeVersion {
    type Err = BadVersion;

    /// `1.34`, `v1.34`, `v1.34.9`, `v1.34.9-rc.1+k3s1`: the major and minor count, the rest
    /// is ignored.
    fn from_str(s: &str) -> Result<Self, BadVersion> {
        let bad = || BadVersion(s.to_owned());
        let text = s.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts = text.splitn(3, '.');
        let major = parts.next().ok_or_else(bad)?;
        let minor = parts.next().ok_or_else(bad)?;
        let digits = |t: &str| -> Option<u32> {
            let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            (end > 0).then(|| t[..end].parse().ok()).flatten()
        };
        // The minor may carry a suffix only when no patch follows (`1.34+`).
        let (Some(major), Some(minor)) = (major.parse().ok(), digits(minor)) else {
            return Err(bad());
        };
        Ok(Self::new(major, minor))
    }
}

/// The hash upstream sorts ports (and Endpoints subsets) by, over Go's debug dump of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderHash {
    /// MD5, up to v1.34.
    Md5,
    /// FNV-128a, from v1.35.
    Fnv128a,
}

impl OrderHash {
    /// The digest of `data`, as the bytes upstream compares (their hex forms sort the same).
    pub fn digest(self, data: &[u8]) -> [u8; 16] {
        match self {
            Self::Md5 => {
                use md5::{Digest, Md5};
                Md5::digest(data).into()
            }
            Self::Fnv128a => crate::upstream_order::fnv128a(data),
        }
    }
}

/// kube-controller-manager's feature gate that makes `PreferSameZone` and `PreferSameNode`
/// count (alpha and off in v1.33, beta and on in v1.34, GA and locked on from v1.35).
pub const PREFER_SAME_TRAFFIC_DISTRIBUTION: &str = "PreferSameTrafficDistribution";

/// Everything the followed version changes in what the controllers write. Built by
/// [`VersionRules::of`]; `Default` is v1.36's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionRules {
    /// The version followed (always one whose rules we know).
    pub version: KubeVersion,
    /// The hash ports and subsets are sorted by.
    pub order_hash: OrderHash,
    /// Whether the Endpoints controller also leaves alone an object whose subsets, repacked,
    /// are the desired ones (from v1.35). Without it, an Endpoints whose ports are in another
    /// order is rewritten.
    pub endpoints_skip_repacked: bool,
    /// The `PreferSameTrafficDistribution` gate: whether `PreferSameZone` and
    /// `PreferSameNode` are acted on (otherwise they count as unset).
    pub prefer_same_traffic_distribution: bool,
}

impl Default for VersionRules {
    fn default() -> Self {
        Self::of(KubeVersion::NEWEST)
    }
}

/// A feature gate setting that the followed version's kube-controller-manager refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// The gate is GA and locked from this version on.
    #[error("--feature-gates: {gate} is locked to true from v1.35 on, and {version} is followed")]
    Locked {
        /// The gate.
        gate: &'static str,
        /// The version followed.
        version: KubeVersion,
    },
}

impl VersionRules {
    /// The rules of `version`'s kube-controller-manager with its default feature gates. A
    /// version whose rules we do not know gets the nearest known one's (the caller warns).
    pub fn of(version: KubeVersion) -> Self {
        let version = version.nearest_supported();
        let minor = version.minor;
        Self {
            version,
            order_hash: if minor >= 35 {
                OrderHash::Fnv128a
            } else {
                OrderHash::Md5
            },
            endpoints_skip_repacked: minor >= 35,
            prefer_same_traffic_distribution: minor >= 34,
        }
    }

    /// Applies kube-controller-manager's `--feature-gates` to these rules. Gates that change
    /// nothing here are ignored; `PreferSameTrafficDistribution=false` is refused where that
    /// version locks it on, as kube-controller-manager refuses it.
    pub fn with_feature_gates<G: AsRef<str>>(
        mut self,
        gates: &[(G, bool)],
    ) -> Result<Self, GateError> {
        for (name, on) in gates {
            let on = *on;
            if name.as_ref() == PREFER_SAME_TRAFFIC_DISTRIBUTION {
                if !on && self.version.minor >= 35 {
                    return Err(GateError::Locked {
                        gate: PREFER_SAME_TRAFFIC_DISTRIBUTION,
                        version: self.version,
                    });
                }
                self.prefer_same_traffic_distribution = on;
            }
        }
        Ok(self)
    }

    /// How a difference in port order alone is named where this version rewrites it (an
    /// Endpoints object, up to v1.34).
    pub fn port_order_rewritten(&self) -> String {
        format!(
            "ports in another order, which kube-controller-manager {} rewrites",
            self.version
        )
    }
}

impl fmt::Display for VersionRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.version)?;
        let default = Self::of(self.version);
        if self.prefer_same_traffic_distribution != default.prefer_same_traffic_distribution {
            write!(
                f,
                " with {PREFER_SAME_TRAFFIC_DISTRIBUTION}={}",
                self.prefer_same_traffic_distribution
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_kube_apiserver_and_users_write_them() {
        for (text, want) in [
            ("1.34", KubeVersion::new(1, 34)),
            ("v1.33", KubeVersion::new(1, 33)),
            ("v1.34.9", KubeVersion::new(1, 34)),
            ("v1.35.6+k3s1", KubeVersion::new(1, 35)),
            ("v1.36.0-rc.1", KubeVersion::new(1, 36)),
            ("1.34+", KubeVersion::new(1, 34)),
        ] {
            assert_eq!(text.parse::<KubeVersion>(), Ok(want), "{text}");
        }
        for bad in ["", "1", "v1", "one.two", "1.x", "v.1.34"] {
            assert!(bad.parse::<KubeVersion>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_server_version_comes_from_major_and_minor_then_git_version() {
        assert_eq!(
            KubeVersion::from_server("1", "34+", "v1.34.9-eks-1"),
            Some(KubeVersion::new(1, 34))
        );
        assert_eq!(
            KubeVersion::from_server("", "", "v1.33.13"),
            Some(KubeVersion::new(1, 33))
        );
        assert_eq!(KubeVersion::from_server("", "", "unknown"), None);
    }

    #[test]
    fn each_version_has_its_controllers_rules() {
        let rules: Vec<(u32, OrderHash, bool, bool)> = KubeVersion::supported()
            .map(VersionRules::of)
            .map(|r| {
                (
                    r.version.minor,
                    r.order_hash,
                    r.endpoints_skip_repacked,
                    r.prefer_same_traffic_distribution,
                )
            })
            .collect();
        assert_eq!(
            rules,
            [
                (33, OrderHash::Md5, false, false),
                (34, OrderHash::Md5, false, true),
                (35, OrderHash::Fnv128a, true, true),
                (36, OrderHash::Fnv128a, true, true),
            ]
        );
        assert_eq!(
            VersionRules::default(),
            VersionRules::of(KubeVersion::NEWEST)
        );
    }

    #[test]
    fn versions_outside_the_known_range_get_the_nearest_rules() {
        assert_eq!(
            VersionRules::of(KubeVersion::new(1, 30)).version,
            KubeVersion::OLDEST
        );
        assert_eq!(
            VersionRules::of(KubeVersion::new(1, 40)).version,
            KubeVersion::NEWEST
        );
        assert!(!KubeVersion::new(1, 32).is_supported());
        assert_eq!(
            KubeVersion::new(1, 32).unsupported_warning().as_deref(),
            Some("Kubernetes v1.32: kube-endpoints knows the controllers of v1.33 to v1.36 and follows v1.33")
        );
        assert_eq!(KubeVersion::new(1, 34).unsupported_warning(), None);
        assert!(KubeVersion::new(1, 33).is_supported());
    }

    #[test]
    fn the_prefer_same_gate_moves_on_v1_33_and_v1_34_and_is_locked_after() {
        let on = [(PREFER_SAME_TRAFFIC_DISTRIBUTION, true)];
        let off = [(PREFER_SAME_TRAFFIC_DISTRIBUTION, false)];
        let v133 = VersionRules::of(KubeVersion::new(1, 33));
        assert!(
            v133.with_feature_gates(&on)
                .unwrap()
                .prefer_same_traffic_distribution
        );
        let v134 = VersionRules::of(KubeVersion::new(1, 34));
        assert!(
            !v134
                .with_feature_gates(&off)
                .unwrap()
                .prefer_same_traffic_distribution
        );
        let v135 = VersionRules::of(KubeVersion::new(1, 35));
        assert!(v135.with_feature_gates(&off).is_err());
        assert_eq!(v135.with_feature_gates(&on), Ok(v135));
        // Other gates change nothing here.
        assert_eq!(
            v133.with_feature_gates(&[("TopologyAwareHints", true)]),
            Ok(v133)
        );
        assert_eq!(
            v133.with_feature_gates(&on).unwrap().to_string(),
            "v1.33 with PreferSameTrafficDistribution=true"
        );
        assert_eq!(v135.to_string(), "v1.35");
    }

    #[test]
    fn md5_and_fnv_digests_match_their_reference_values() {
        // RFC 1321's test vector for "abc".
        assert_eq!(
            OrderHash::Md5.digest(b"abc"),
            0x900150983cd24fb0d6963f7d28e17f72u128.to_be_bytes()
        );
        assert_eq!(
            OrderHash::Fnv128a.digest(b""),
            0x6c62272e07bb014262b821756295c58du128.to_be_bytes()
        );
    }
}
