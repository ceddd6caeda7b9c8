//! kube-controller-manager's own command line, as it is: the flags of v1.36 that concern its
//! other controllers or features kube-endpoints does not have are accepted and ignored, so a
//! manifest written for kube-controller-manager runs unchanged. They stay out of `--help`;
//! `run` names the ones it was given in one warning at start. A flag neither binary knows
//! is still an error, with the closest known flag.

use std::ffi::OsString;

/// Whether an ignored flag takes a value. Bool flags take one only as `--flag=value`, as
/// pflag parses them; the others also as the next argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// `--flag` or `--flag=true|false`.
    Bool,
    /// `--flag=value` or `--flag value`.
    Value,
}

/// kube-controller-manager v1.36's bool flags that kube-endpoints accepts and ignores: every
/// flag its `--help` lists as `bool` that `run` does not define itself.
const IGNORED_BOOL: &[&str] = &[
    "allocate-node-cidrs",
    "authentication-tolerate-lookup-failure",
    "configure-cloud-routes",
    "contention-profiling",
    "disable-attach-detach-reconcile-sync",
    "disable-force-detach-on-timeout",
    "disable-http2-serving",
    "enable-dynamic-provisioning",
    "enable-garbage-collector",
    "enable-hostpath-provisioner",
    "enable-leader-migration",
    "log-json-split-stream",
    "log-text-split-stream",
    "permit-address-sharing",
    "permit-port-sharing",
    "unsupported-kube-api-over-localhost",
];

/// kube-controller-manager v1.36's other flags that kube-endpoints accepts and ignores, each
/// taking a value.
const IGNORED_VALUE: &[&str] = &[
    "allow-metric-labels",
    "allow-metric-labels-manifest",
    "attach-detach-reconcile-sync-period",
    "cidr-allocator-type",
    "cloud-config",
    "cloud-provider",
    "cluster-cidr",
    "cluster-name",
    "cluster-signing-cert-file",
    "cluster-signing-duration",
    "cluster-signing-key-file",
    "cluster-signing-kube-apiserver-client-cert-file",
    "cluster-signing-kube-apiserver-client-key-file",
    "cluster-signing-kubelet-client-cert-file",
    "cluster-signing-kubelet-client-key-file",
    "cluster-signing-kubelet-serving-cert-file",
    "cluster-signing-kubelet-serving-key-file",
    "cluster-signing-legacy-unknown-cert-file",
    "cluster-signing-legacy-unknown-key-file",
    "concurrent-cron-job-syncs",
    "concurrent-daemonset-syncs",
    "concurrent-deployment-syncs",
    "concurrent-device-taint-eviction-syncs",
    "concurrent-ephemeralvolume-syncs",
    "concurrent-gc-syncs",
    "concurrent-horizontal-pod-autoscaler-syncs",
    "concurrent-job-syncs",
    "concurrent-namespace-syncs",
    "concurrent-rc-syncs",
    "concurrent-replicaset-syncs",
    "concurrent-resource-quota-syncs",
    "concurrent-resourceclaim-syncs",
    "concurrent-service-syncs",
    "concurrent-serviceaccount-token-syncs",
    "concurrent-statefulset-syncs",
    "concurrent-ttl-after-finished-syncs",
    "concurrent-validating-admission-policy-status-syncs",
    "controller-shutdown-timeout",
    "controller-start-interval",
    "disabled-metrics",
    "external-cloud-volume-plugin",
    "flex-volume-plugin-dir",
    "horizontal-pod-autoscaler-cpu-initialization-period",
    "horizontal-pod-autoscaler-downscale-stabilization",
    "horizontal-pod-autoscaler-initial-readiness-delay",
    "horizontal-pod-autoscaler-sync-period",
    "horizontal-pod-autoscaler-tolerance",
    "http2-max-streams-per-connection",
    "large-cluster-size-threshold",
    "leader-migration-config",
    "legacy-service-account-token-clean-up-period",
    "log-flush-frequency",
    "log-json-info-buffer-size",
    "log-text-info-buffer-size",
    "min-compatibility-version",
    "min-resync-period",
    "namespace-sync-period",
    "node-cidr-mask-size",
    "node-cidr-mask-size-ipv4",
    "node-cidr-mask-size-ipv6",
    "node-eviction-rate",
    "node-monitor-grace-period",
    "node-monitor-period",
    "node-startup-grace-period",
    "pv-recycler-increment-timeout-nfs",
    "pv-recycler-minimum-timeout-hostpath",
    "pv-recycler-minimum-timeout-nfs",
    "pv-recycler-pod-template-filepath-hostpath",
    "pv-recycler-pod-template-filepath-nfs",
    "pv-recycler-timeout-increment-hostpath",
    "pvclaimbinder-sync-period",
    "requestheader-allowed-names",
    "requestheader-extra-headers-prefix",
    "requestheader-group-headers",
    "requestheader-uid-headers",
    "requestheader-username-headers",
    "resource-quota-sync-period",
    "root-ca-file",
    "route-reconciliation-period",
    "secondary-node-eviction-rate",
    "service-account-private-key-file",
    "service-cluster-ip-range",
    "show-hidden-metrics-for-version",
    "terminated-pod-gc-threshold",
    "tls-cipher-suites",
    "tls-curve-preferences",
    "tls-min-version",
    "tls-sni-cert-key",
    "unhealthy-zone-threshold",
];

/// kube-controller-manager v1.36's flags that kube-endpoints accepts and ignores (every flag
/// its `--help` lists that `run` does not define itself), with what each takes, by name.
pub fn all() -> Vec<(&'static str, Takes)> {
    let bools = IGNORED_BOOL.iter().map(|name| (*name, Takes::Bool));
    let values = IGNORED_VALUE.iter().map(|name| (*name, Takes::Value));
    let mut all: Vec<_> = bools.chain(values).collect();
    all.sort_unstable_by_key(|(name, _)| *name);
    all
}

/// What the command line holds once the ignored flags are taken out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The arguments for clap, in order.
    pub args: Vec<OsString>,
    /// The ignored flags given, as written (`--cluster-name=kubernetes`), in order.
    pub ignored: Vec<String>,
}

/// What the ignored flag a `--name` argument names takes, if it names one.
fn ignored(name: &str) -> Option<Takes> {
    if IGNORED_BOOL.contains(&name) {
        Some(Takes::Bool)
    } else {
        IGNORED_VALUE.contains(&name).then_some(Takes::Value)
    }
}

/// Takes the ignored flags out of `args`. A value flag without a value is an error, as it is
/// for kube-controller-manager. Everything after a bare `--` is left alone.
pub fn split(args: Vec<OsString>) -> Result<Split, String> {
    let mut out = Split::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--" {
            out.args.push(arg);
            out.args.extend(args.by_ref());
            break;
        }
        let Some(flag) = text.strip_prefix("--") else {
            out.args.push(arg);
            continue;
        };
        let (name, value) = match flag.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (flag, None),
        };
        match (ignored(name), value) {
            (None, _) => out.args.push(arg),
            (Some(_), Some(_)) | (Some(Takes::Bool), None) => out.ignored.push(text.into_owned()),
            (Some(Takes::Value), None) => match args.next() {
                Some(value) => out
                    .ignored
                    .push(format!("--{name}={}", value.to_string_lossy())),
                None => return Err(format!("flag needs an argument: --{name}")),
            },
        }
    }
    Ok(out)
}

/// The known flag closest to `unknown` (without its dashes), among `known` and the ignored
/// ones, when one is close enough to be a likely typo.
pub fn closest<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let unknown = unknown.trim_start_matches('-');
    let unknown = unknown.split_once('=').map_or(unknown, |(name, _)| name);
    known
        .into_iter()
        .chain(all().into_iter().map(|(name, _)| name))
        .map(|name| (strsim::jaro_winkler(unknown, name), name))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| format!("--{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_text(args: &[&str]) -> Result<(Vec<String>, Vec<String>), String> {
        let s = split(args.iter().map(OsString::from).collect())?;
        Ok((
            s.args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            s.ignored,
        ))
    }

    #[test]
    fn ignored_flags_are_taken_out_with_their_values() {
        let (args, ignored) = split_text(&[
            "run",
            "--allocate-node-cidrs",
            "--cluster-name",
            "kubernetes",
            "--kubeconfig=/k",
            "--cluster-cidr=10.244.0.0/16",
            "--use-service-account-credentials=true",
            "--unsupported-kube-api-over-localhost=true",
            "--leader-elect",
            "true",
        ])
        .unwrap();
        assert_eq!(
            args,
            [
                "run",
                "--kubeconfig=/k",
                "--use-service-account-credentials=true",
                "--leader-elect",
                "true"
            ]
        );
        assert_eq!(
            ignored,
            [
                "--allocate-node-cidrs",
                "--cluster-name=kubernetes",
                "--cluster-cidr=10.244.0.0/16",
                "--unsupported-kube-api-over-localhost=true"
            ]
        );
    }

    #[test]
    fn a_bool_flag_never_takes_the_next_argument() {
        let (args, ignored) = split_text(&["--configure-cloud-routes", "--v=2"]).unwrap();
        assert_eq!(args, ["--v=2"]);
        assert_eq!(ignored, ["--configure-cloud-routes"]);
    }

    #[test]
    fn a_value_flag_without_its_value_is_an_error() {
        assert_eq!(
            split_text(&["run", "--cluster-name"]).unwrap_err(),
            "flag needs an argument: --cluster-name"
        );
    }

    #[test]
    fn every_flag_of_kube_controller_manager_is_ours_or_ignored() {
        let spec = include_str!("../../../tests/spec/kube-controller-manager-flags-v1.36.txt");
        let listed: Vec<&str> = spec
            .lines()
            .filter_map(|l| l.strip_prefix("--"))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert!(listed.len() > 140, "{}", listed.len());
        let ours = crate::run::own_long_flags();
        for name in &listed {
            assert!(
                ours.iter().any(|o| o == name) || ignored(name).is_some() || *name == "help",
                "--{name} is neither run's nor ignored"
            );
        }
        for (name, takes) in all() {
            let line = spec
                .lines()
                .find(|l| l.split_whitespace().next() == Some(&format!("--{name}")))
                .unwrap_or_else(|| panic!("--{name} is not a v1.36 flag"));
            let is_bool = line.split_whitespace().nth(1) == Some("bool");
            assert_eq!(is_bool, takes == Takes::Bool, "--{name}");
            assert!(!ours.iter().any(|o| o == name), "--{name} is ours too");
        }
    }

    #[test]
    fn typos_get_the_closest_flag() {
        assert_eq!(
            closest("--cluster-nmae", ["kubeconfig"]).as_deref(),
            Some("--cluster-name")
        );
        assert_eq!(
            closest("--kubeconfg=/x", ["kubeconfig", "master"]).as_deref(),
            Some("--kubeconfig")
        );
        assert_eq!(closest("--zzz", ["kubeconfig"]), None);
    }
}
