//! The kube-controller-manager flags that decide what the controllers write, and how many
//! workers and how much batching they get: one definition for `run`, `dev`, `plan`, `audit`
//! and a conformance case's `flags` file, so each takes them by the same names, defaults and
//! ranges.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser};
use reconcile::KubeVersion;
use std::time::Duration;

/// Parses a Go-style duration: `0`, `500ms`, `15s`, `1m30s`, `2h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    if rest.is_empty() {
        return Err("empty duration".into());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{s:?}: missing unit (e.g. 1s)"))?;
        let (number, tail) = rest.split_at(digits);
        let value: f64 = number
            .parse()
            .map_err(|_| format!("{s:?}: bad number {number:?}"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => return Err(format!("{s:?}: unknown unit {other:?}")),
        };
        // Go's time.ParseDuration refuses anything past i64::MAX nanoseconds (about 292
        // years); so do we, rather than panic in the conversion or in later clock arithmetic.
        total = Duration::try_from_secs_f64(value * seconds)
            .ok()
            .and_then(|part| total.checked_add(part))
            .filter(|t| *t <= MAX_DURATION)
            .ok_or_else(|| format!("{s:?}: out of range (at most 2562047h)"))?;
        rest = next;
    }
    Ok(total)
}

/// The longest duration Go's `time.Duration` holds: i64::MAX nanoseconds.
const MAX_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// The flags that decide which controllers run and what they write. `plan`, `audit`, `run`
/// and `dev` take them all; of the mirroring controller's three, only
/// `--mirroring-max-endpoints-per-subset` changes what is written.
#[derive(Debug, Args, Clone, PartialEq)]
pub struct OutputFlags {
    /// Controllers to run, as kube-controller-manager reads the list: `*` (all three),
    /// `endpoints-controller` (`endpoint`), `endpointslice-controller` (`endpointslice`),
    /// `endpointslice-mirroring-controller` (`endpointslicemirroring`); `-name` disables one.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// Maximum endpoints in one EndpointSlice (1 to 1000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_endpoints_per_slice: u32,
    /// Number of syncs the EndpointSlice mirroring controller does at once (1 to 50).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub mirroring_concurrent_service_endpoint_syncs: u32,
    /// Maximum addresses of one Endpoints subset the mirroring controller copies into
    /// EndpointSlices (1 to 1000); the rest are left out, with a Warning event.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub mirroring_max_endpoints_per_subset: u32,
    /// How long Endpoints events wait before the mirroring controller syncs.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub mirroring_endpointslice_updates_batch_period: Duration,
    /// The Kubernetes version whose kube-controller-manager to write like, as
    /// kube-controller-manager takes it: `1.34` or `kube=1.34` (v1.33 to v1.36). It moves the
    /// feature gates' defaults to that version's, and the port order and rewrite rules with
    /// them. Default: the API server's version, read from its /version (`plan` and the
    /// embedded server: v1.36). Pin it while kube-controller-manager is a minor behind its API
    /// servers during an upgrade.
    #[arg(long, value_parser = parse_emulated_version)]
    pub emulated_version: Option<KubeVersion>,
    /// kube-controller-manager's `Name=true|false,...` feature gates.
    /// `PreferSameTrafficDistribution` changes what is written (off by default on v1.33, on
    /// from v1.34, locked on from v1.35); the others are accepted so that flag files carry
    /// over, and change nothing.
    #[arg(long, value_delimiter = ',', value_parser = parse_feature_gate)]
    pub feature_gates: Vec<(String, bool)>,
}

/// `--emulated-version`: `1.34`, `v1.34` or `kube=1.34`, within the versions whose rules are
/// known (kube-controller-manager likewise refuses versions it cannot emulate).
pub fn parse_emulated_version(s: &str) -> Result<KubeVersion, String> {
    let text = match s.split_once('=') {
        Some(("kube", v)) => v,
        Some((component, _)) => {
            return Err(format!(
                "{component:?}: only the component \"kube\" has an emulated version"
            ))
        }
        None => s,
    };
    let version: KubeVersion = text.parse().map_err(|e| format!("{e}"))?;
    if !version.is_supported() {
        return Err(format!(
            "{version} is outside the versions kube-endpoints can follow, {} to {}",
            KubeVersion::OLDEST,
            KubeVersion::NEWEST
        ));
    }
    Ok(version)
}

/// One `Name=true|false` of `--feature-gates`.
pub fn parse_feature_gate(s: &str) -> Result<(String, bool), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected Name=true or Name=false"))?;
    let value = match value.trim() {
        "true" => true,
        "false" => false,
        other => return Err(format!("{name}: {other:?} is not true or false")),
    };
    if name.trim().is_empty() {
        return Err(format!("{s:?}: missing gate name"));
    }
    Ok((name.trim().to_owned(), value))
}

impl OutputFlags {
    /// The enabled controllers.
    pub fn enabled(&self) -> Result<EnabledControllers> {
        enabled_controllers(&self.controllers)
    }

    /// Sets the controllers and settings these flags name, then checks the settings' ranges.
    pub fn apply(&self, options: &mut controller::Options) -> Result<()> {
        let enabled = self.enabled()?;
        options.endpoints = enabled.endpoints;
        options.endpoint_slices = enabled.endpoint_slices;
        options.mirroring = enabled.mirroring;
        self.apply_settings(&mut options.settings);
        options.settings.validate()?;
        Ok(())
    }

    /// Sets the settings these flags name (not which controllers run), unchecked.
    pub fn apply_settings(&self, s: &mut controller::config::Settings) {
        s.max_endpoints_per_slice = self.max_endpoints_per_slice;
        s.mirroring_concurrent_service_endpoint_syncs =
            self.mirroring_concurrent_service_endpoint_syncs;
        s.mirroring_max_endpoints_per_subset = self.mirroring_max_endpoints_per_subset;
        s.mirroring_endpointslice_updates_batch_period =
            self.mirroring_endpointslice_updates_batch_period;
        s.emulated_version = self.emulated_version;
        s.feature_gates = self.feature_gates.clone();
    }
}

/// Workers and batching of the Endpoints and EndpointSlice controllers: how fast and how often
/// they write, not what.
#[derive(Debug, Args, Clone, PartialEq)]
pub struct TuningFlags {
    /// Number of Endpoints syncs done at once.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrent_endpoint_syncs: u32,
    /// Number of EndpointSlice syncs done at once (1 to 50).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub concurrent_service_endpoint_syncs: u32,
    /// How long pod events wait before the Endpoints controller syncs (batches changes).
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub endpoint_updates_batch_period: Duration,
    /// How long pod events wait before the EndpointSlice controller syncs.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub endpointslice_updates_batch_period: Duration,
}

impl TuningFlags {
    /// Sets the settings these flags name, unchecked.
    pub fn apply_settings(&self, settings: &mut controller::config::Settings) {
        settings.concurrent_endpoint_syncs = self.concurrent_endpoint_syncs;
        settings.concurrent_service_endpoint_syncs = self.concurrent_service_endpoint_syncs;
        settings.endpoint_updates_batch_period = self.endpoint_updates_batch_period;
        settings.endpointslice_updates_batch_period = self.endpointslice_updates_batch_period;
    }
}

/// A conformance case's `flags` file: the kube-controller-manager flags the case was recorded
/// with, whitespace-separated. Every flag is read; one these controllers do not know is an
/// error, so a case never passes by silently running with other flags than upstream had.
#[derive(Debug, Parser, Clone, PartialEq)]
#[command(name = "flags", no_binary_name = true, disable_help_flag = true)]
pub struct CaseFlags {
    /// What the controllers write.
    #[command(flatten)]
    pub output: OutputFlags,
    /// Workers and batching.
    #[command(flatten)]
    pub tuning: TuningFlags,
}

impl Default for CaseFlags {
    fn default() -> Self {
        Self::from_text("").expect("no flags are valid flags")
    }
}

impl CaseFlags {
    /// Reads the text of a `flags` file (`#` starts a comment line).
    pub fn from_text(text: &str) -> Result<Self> {
        let words: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('#'))
            .flat_map(str::split_whitespace)
            .collect();
        if let Some(stray) = words.iter().find(|w| !w.starts_with("--")) {
            bail!("{stray:?} is not a flag (flags are written --name=value)");
        }
        Self::try_parse_from(&words).map_err(|e| {
            // clap's rendering carries a usage block meant for a terminal: keep its first line.
            let text = e.to_string();
            anyhow::anyhow!(
                "{}",
                text.lines()
                    .next()
                    .unwrap_or("bad flags")
                    .trim_start_matches("error: ")
            )
        })
    }

    /// The options of an offline run (`plan`) with these flags.
    pub fn offline(&self, options: &mut controller::Options) -> Result<()> {
        self.output.apply(options)
    }

    /// The options of a live run with these flags: also the workers and batching.
    pub fn live(&self, options: &mut controller::Options) -> Result<()> {
        self.output.apply(options)?;
        self.tuning.apply_settings(&mut options.settings);
        options.settings.validate().context("the case's flags")?;
        Ok(())
    }
}

/// Which controllers a `--controllers` list enables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnabledControllers {
    /// The Endpoints controller.
    pub endpoints: bool,
    /// The EndpointSlice controller.
    pub endpoint_slices: bool,
    /// The EndpointSlice mirroring controller.
    pub mirroring: bool,
}

impl EnabledControllers {
    /// The ServiceAccounts the enabled controllers act as with
    /// `--use-service-account-credentials`.
    pub fn identities(&self) -> Vec<controller::service_accounts::Identity> {
        use controller::service_accounts::Identity;
        [
            (self.endpoints, Identity::Endpoints),
            (self.endpoint_slices, Identity::EndpointSlices),
            (self.mirroring, Identity::Mirroring),
        ]
        .into_iter()
        .filter_map(|(on, identity)| on.then_some(identity))
        .collect()
    }
}

/// A controller kube-endpoints runs, by the names kube-controller-manager accepts for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Endpoints,
    EndpointSlices,
    Mirroring,
}

/// The names of the three, as [`known`] accepts them.
const OUR_CONTROLLERS: &[&str] = &[
    "endpoints-controller",
    "endpoint",
    "endpoints",
    "endpointslice-controller",
    "endpointslice",
    "endpointslices",
    "endpointslice-mirroring-controller",
    "endpointslicemirroring",
];

fn known(name: &str) -> Option<Known> {
    match name {
        "endpoints-controller" | "endpoint" | "endpoints" => Some(Known::Endpoints),
        "endpointslice-controller" | "endpointslice" | "endpointslices" => {
            Some(Known::EndpointSlices)
        }
        "endpointslice-mirroring-controller" | "endpointslicemirroring" => Some(Known::Mirroring),
        _ => None,
    }
}

/// kube-controller-manager's other controllers, by their names and the older names it still
/// accepts for them. A `--controllers` list may name them (kubeadm's adds `bootstrapsigner`
/// and `tokencleaner`); they do not run here, so naming them changes nothing.
const OTHER_CONTROLLERS: &[&str] = &[
    "attachdetach",
    "bootstrap-signer-controller",
    "bootstrapsigner",
    "certificatesigningrequest-approving-controller",
    "certificatesigningrequest-cleaner-controller",
    "certificatesigningrequest-signing-controller",
    "cloud-node-lifecycle",
    "cloud-node-lifecycle-controller",
    "clusterrole-aggregation",
    "clusterrole-aggregation-controller",
    "cronjob",
    "cronjob-controller",
    "csrapproving",
    "csrcleaner",
    "csrsigning",
    "daemonset",
    "daemonset-controller",
    "deployment",
    "deployment-controller",
    "device-taint-eviction-controller",
    "disruption",
    "disruption-controller",
    "ephemeral-volume",
    "ephemeral-volume-controller",
    "garbage-collector-controller",
    "garbagecollector",
    "horizontal-pod-autoscaler-controller",
    "horizontalpodautoscaling",
    "job",
    "job-controller",
    "kube-apiserver-serving-clustertrustbundle-publisher-controller",
    "legacy-service-account-token-cleaner",
    "legacy-serviceaccount-token-cleaner-controller",
    "namespace",
    "namespace-controller",
    "node-ipam-controller",
    "node-lifecycle-controller",
    "node-route-controller",
    "nodeipam",
    "nodelifecycle",
    "persistentvolume-attach-detach-controller",
    "persistentvolume-binder",
    "persistentvolume-binder-controller",
    "persistentvolume-expander",
    "persistentvolume-expander-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "pod-garbage-collector-controller",
    "podcertificaterequest-cleaner-controller",
    "podgc",
    "pv-protection",
    "pvc-protection",
    "replicaset",
    "replicaset-controller",
    "replicationcontroller",
    "replicationcontroller-controller",
    "resource-claim-controller",
    "resourceclaim-controller",
    "resourcequota",
    "resourcequota-controller",
    "root-ca-cert-publisher",
    "root-ca-certificate-publisher-controller",
    "route",
    "selinux-warning-controller",
    "service",
    "service-cidr-controller",
    "service-lb-controller",
    "serviceaccount",
    "serviceaccount-controller",
    "serviceaccount-token",
    "serviceaccount-token-controller",
    "statefulset",
    "statefulset-controller",
    "storage-version-gc",
    "storage-version-migrator-controller",
    "storageversion-garbage-collector-controller",
    "taint-eviction-controller",
    "token-cleaner-controller",
    "tokencleaner",
    "ttl",
    "ttl-after-finished",
    "ttl-after-finished-controller",
    "ttl-controller",
    "validatingadmissionpolicy-status-controller",
    "volumeattributesclass-protection-controller",
];

/// Reads a `--controllers` list as kube-controller-manager does: a controller named with a
/// leading `-` is off, one named plainly is on, and otherwise `*` turns it on; the order of
/// the items does not matter. A list that enables none of the three is an error.
pub fn enabled_controllers(list: &[String]) -> Result<EnabledControllers> {
    let mut star = false;
    let mut on = Vec::new();
    let mut off = Vec::new();
    for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if item == "*" {
            star = true;
            continue;
        }
        let (name, disable) = match item.strip_prefix('-') {
            Some(name) => (name, true),
            None => (item, false),
        };
        let Some(which) = known(name) else {
            if OTHER_CONTROLLERS.contains(&name) {
                continue;
            }
            let closest = OTHER_CONTROLLERS
                .iter()
                .chain(OUR_CONTROLLERS)
                .map(|known| (strsim::jaro_winkler(name, known), *known))
                .filter(|(score, _)| *score >= 0.85)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, known)| format!("; did you mean {known:?}?"))
                .unwrap_or_default();
            bail!(
                "--controllers: unknown controller {name:?}{closest} (kube-endpoints runs \
                 endpoints-controller, endpointslice-controller and \
                 endpointslice-mirroring-controller; kube-controller-manager's other \
                 controllers may be named and do not run here)"
            );
        };
        if disable {
            off.push(which);
        } else {
            on.push(which);
        }
    }
    let enabled = |which| !off.contains(&which) && (on.contains(&which) || star);
    let enabled = EnabledControllers {
        endpoints: enabled(Known::Endpoints),
        endpoint_slices: enabled(Known::EndpointSlices),
        mirroring: enabled(Known::Mirroring),
    };
    if !(enabled.endpoints || enabled.endpoint_slices || enabled.mirroring) {
        bail!("--controllers {:?} enables no controller", list.join(","));
    }
    Ok(enabled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5x").is_err());
    }

    #[test]
    fn durations_past_gos_range_are_refused_without_panicking() {
        assert!(parse_duration("2562047h").is_ok());
        for huge in ["2562048h", "99999999999999999999999999h", "1e400s"] {
            assert!(parse_duration(huge).is_err(), "{huge}");
        }
    }

    #[test]
    fn a_flags_file_is_read_whole() {
        let flags = CaseFlags::from_text(
            "# recorded with\n--max-endpoints-per-slice=80\n--mirroring-max-endpoints-per-subset=2 \
             --mirroring-concurrent-service-endpoint-syncs=3\n\
             --mirroring-endpointslice-updates-batch-period=1s --controllers=*,-endpoint\n\
             --concurrent-service-endpoint-syncs=7 --endpoint-updates-batch-period=500ms",
        )
        .unwrap();
        assert_eq!(flags.output.max_endpoints_per_slice, 80);
        assert_eq!(flags.output.mirroring_max_endpoints_per_subset, 2);
        assert_eq!(flags.output.mirroring_concurrent_service_endpoint_syncs, 3);
        assert_eq!(
            flags.output.mirroring_endpointslice_updates_batch_period,
            Duration::from_secs(1)
        );
        assert_eq!(flags.tuning.concurrent_service_endpoint_syncs, 7);
        assert_eq!(
            flags.tuning.endpoint_updates_batch_period,
            Duration::from_millis(500)
        );
        let enabled = flags.output.enabled().unwrap();
        assert!(!enabled.endpoints && enabled.endpoint_slices && enabled.mirroring);
        assert_eq!(CaseFlags::from_text("").unwrap(), CaseFlags::default());
    }

    #[test]
    fn a_flags_file_line_nobody_knows_is_refused_by_name() {
        for (text, named) in [
            (
                "--max-endpoints-per-slice=80 --max-endpoint-per-slice=3",
                "--max-endpoint-per-slice",
            ),
            ("--node-monitor-period=5s", "--node-monitor-period"),
            ("--mirroring-max-endpoints-per-subset=0", "0"),
            ("max-endpoints-per-slice=3", "max-endpoints-per-slice=3"),
        ] {
            let err = CaseFlags::from_text(text).unwrap_err().to_string();
            assert!(err.contains(named), "{text}: {err}");
        }
    }

    #[test]
    fn offline_runs_take_what_changes_the_output_and_live_runs_everything() {
        let flags = CaseFlags::from_text(
            "--mirroring-max-endpoints-per-subset=2 --concurrent-endpoint-syncs=9",
        )
        .unwrap();
        let base = controller::Options {
            settings: Default::default(),
            endpoints: true,
            endpoint_slices: true,
            mirroring: true,
            shadow: None,
        };
        let mut offline = base.clone();
        flags.offline(&mut offline).unwrap();
        assert_eq!(offline.settings.mirroring_max_endpoints_per_subset, 2);
        assert_eq!(offline.settings.concurrent_endpoint_syncs, 5);
        let mut live = base;
        flags.live(&mut live).unwrap();
        assert_eq!(live.settings.mirroring_max_endpoints_per_subset, 2);
        assert_eq!(live.settings.concurrent_endpoint_syncs, 9);
    }
}
