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

/// kube-controller-manager v1.36's flags that kube-endpoints accepts and ignores (every flag
/// its `--help` lists that `run` does not define itself), with what each takes.
pub const IGNORED: &[(&str, Takes)] = &[
    ("allocate-node-cidrs", Takes::Bool),
    ("allow-metric-labels", Takes::Value),
    ("allow-metric-labels-manifest", Takes::Value),
    ("attach-detach-reconcile-sync-period", Takes::Value),
    ("authentication-tolerate-lookup-failure", Takes::Bool),
    ("cidr-allocator-type", Takes::Value),
    ("cloud-config", Takes::Value),
    ("cloud-provider", Takes::Value),
    ("cluster-cidr", Takes::Value),
    ("cluster-name", Takes::Value),
    ("cluster-signing-cert-file", Takes::Value),
    ("cluster-signing-duration", Takes::Value),
    ("cluster-signing-key-file", Takes::Value),
    (
        "cluster-signing-kube-apiserver-client-cert-file",
        Takes::Value,
    ),
    (
        "cluster-signing-kube-apiserver-client-key-file",
        Takes::Value,
    ),
    ("cluster-signing-kubelet-client-cert-file", Takes::Value),
    ("cluster-signing-kubelet-client-key-file", Takes::Value),
    ("cluster-signing-kubelet-serving-cert-file", Takes::Value),
    ("cluster-signing-kubelet-serving-key-file", Takes::Value),
    ("cluster-signing-legacy-unknown-cert-file", Takes::Value),
    ("cluster-signing-legacy-unknown-key-file", Takes::Value),
    ("concurrent-cron-job-syncs", Takes::Value),
    ("concurrent-daemonset-syncs", Takes::Value),
    ("concurrent-deployment-syncs", Takes::Value),
    ("concurrent-device-taint-eviction-syncs", Takes::Value),
    ("concurrent-ephemeralvolume-syncs", Takes::Value),
    ("concurrent-gc-syncs", Takes::Value),
    ("concurrent-horizontal-pod-autoscaler-syncs", Takes::Value),
    ("concurrent-job-syncs", Takes::Value),
    ("concurrent-namespace-syncs", Takes::Value),
    ("concurrent-rc-syncs", Takes::Value),
    ("concurrent-replicaset-syncs", Takes::Value),
    ("concurrent-resource-quota-syncs", Takes::Value),
    ("concurrent-resourceclaim-syncs", Takes::Value),
    ("concurrent-service-syncs", Takes::Value),
    ("concurrent-serviceaccount-token-syncs", Takes::Value),
    ("concurrent-statefulset-syncs", Takes::Value),
    ("concurrent-ttl-after-finished-syncs", Takes::Value),
    (
        "concurrent-validating-admission-policy-status-syncs",
        Takes::Value,
    ),
    ("configure-cloud-routes", Takes::Bool),
    ("contention-profiling", Takes::Bool),
    ("controller-shutdown-timeout", Takes::Value),
    ("controller-start-interval", Takes::Value),
    ("disable-attach-detach-reconcile-sync", Takes::Bool),
    ("disable-force-detach-on-timeout", Takes::Bool),
    ("disable-http2-serving", Takes::Bool),
    ("disabled-metrics", Takes::Value),
    ("emulated-version", Takes::Value),
    ("enable-dynamic-provisioning", Takes::Bool),
    ("enable-garbage-collector", Takes::Bool),
    ("enable-hostpath-provisioner", Takes::Bool),
    ("enable-leader-migration", Takes::Bool),
    ("external-cloud-volume-plugin", Takes::Value),
    ("flex-volume-plugin-dir", Takes::Value),
    (
        "horizontal-pod-autoscaler-cpu-initialization-period",
        Takes::Value,
    ),
    (
        "horizontal-pod-autoscaler-downscale-stabilization",
        Takes::Value,
    ),
    (
        "horizontal-pod-autoscaler-initial-readiness-delay",
        Takes::Value,
    ),
    ("horizontal-pod-autoscaler-sync-period", Takes::Value),
    ("horizontal-pod-autoscaler-tolerance", Takes::Value),
    ("http2-max-streams-per-connection", Takes::Value),
    ("large-cluster-size-threshold", Takes::Value),
    ("leader-migration-config", Takes::Value),
    ("legacy-service-account-token-clean-up-period", Takes::Value),
    ("log-flush-frequency", Takes::Value),
    ("log-json-info-buffer-size", Takes::Value),
    ("log-json-split-stream", Takes::Bool),
    ("log-text-info-buffer-size", Takes::Value),
    ("log-text-split-stream", Takes::Bool),
    ("min-compatibility-version", Takes::Value),
    ("min-resync-period", Takes::Value),
    ("namespace-sync-period", Takes::Value),
    ("node-cidr-mask-size", Takes::Value),
    ("node-cidr-mask-size-ipv4", Takes::Value),
    ("node-cidr-mask-size-ipv6", Takes::Value),
    ("node-eviction-rate", Takes::Value),
    ("node-monitor-grace-period", Takes::Value),
    ("node-monitor-period", Takes::Value),
    ("node-startup-grace-period", Takes::Value),
    ("permit-address-sharing", Takes::Bool),
    ("permit-port-sharing", Takes::Bool),
    ("pv-recycler-increment-timeout-nfs", Takes::Value),
    ("pv-recycler-minimum-timeout-hostpath", Takes::Value),
    ("pv-recycler-minimum-timeout-nfs", Takes::Value),
    ("pv-recycler-pod-template-filepath-hostpath", Takes::Value),
    ("pv-recycler-pod-template-filepath-nfs", Takes::Value),
    ("pv-recycler-timeout-increment-hostpath", Takes::Value),
    ("pvclaimbinder-sync-period", Takes::Value),
    ("requestheader-allowed-names", Takes::Value),
    ("requestheader-extra-headers-prefix", Takes::Value),
    ("requestheader-group-headers", Takes::Value),
    ("requestheader-uid-headers", Takes::Value),
    ("requestheader-username-headers", Takes::Value),
    ("resource-quota-sync-period", Takes::Value),
    ("root-ca-file", Takes::Value),
    ("route-reconciliation-period", Takes::Value),
    ("secondary-node-eviction-rate", Takes::Value),
    ("service-account-private-key-file", Takes::Value),
    ("service-cluster-ip-range", Takes::Value),
    ("show-hidden-metrics-for-version", Takes::Value),
    ("terminated-pod-gc-threshold", Takes::Value),
    ("tls-cipher-suites", Takes::Value),
    ("tls-curve-preferences", Takes::Value),
    ("tls-min-version", Takes::Value),
    ("tls-sni-cert-key", Takes::Value),
    ("unhealthy-zone-threshold", Takes::Value),
    ("unsupported-kube-api-over-localhost", Takes::Bool),
];

/// What the command line holds once the ignored flags are taken out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The arguments for clap, in order.
    pub args: Vec<OsString>,
    /// The ignored flags given, as written (`--cluster-name=kubernetes`), in order.
    pub ignored: Vec<String>,
}

/// The ignored flag a `--name` argument names, if any.
fn ignored(name: &str) -> Option<Takes> {
    IGNORED
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, takes)| *takes)
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
        .chain(IGNORED.iter().map(|(name, _)| *name))
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
        for (name, takes) in IGNORED {
            let line = spec
                .lines()
                .find(|l| l.split_whitespace().next() == Some(&format!("--{name}")))
                .unwrap_or_else(|| panic!("--{name} is not a v1.36 flag"));
            let is_bool = line.split_whitespace().nth(1) == Some("bool");
            assert_eq!(is_bool, *takes == Takes::Bool, "--{name}");
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
