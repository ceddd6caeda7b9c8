//! kube-controller-manager's flags for the two controllers: same names, same defaults.

use anyhow::{bail, Result};
use clap::Args;
use controller::config::Settings;
use controller::secure_serving::{CertSource, SecureServingSettings, DEFAULT_SECURE_PORT};
use std::net::IpAddr;
use std::path::PathBuf;
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

/// Flags shared by `run` and `dev`.
#[derive(Debug, Args, Clone)]
pub struct ControllerFlags {
    /// Controllers to run, as kube-controller-manager reads the list: `*` (all three),
    /// `endpoints-controller` (`endpoint`), `endpointslice-controller` (`endpointslice`),
    /// `endpointslice-mirroring-controller` (`endpointslicemirroring`); `-name` disables one.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// Number of Endpoints syncs done at once.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrent_endpoint_syncs: u32,
    /// Number of EndpointSlice syncs done at once (1 to 50).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub concurrent_service_endpoint_syncs: u32,
    /// Maximum endpoints in one EndpointSlice (1 to 1000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_endpoints_per_slice: u32,
    /// How long pod events wait before the Endpoints controller syncs (batches changes).
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub endpoint_updates_batch_period: Duration,
    /// How long pod events wait before the EndpointSlice controller syncs.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub endpointslice_updates_batch_period: Duration,
    /// Number of syncs the EndpointSlice mirroring controller does at once (1 to 50).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub mirroring_concurrent_service_endpoint_syncs: u32,
    /// Maximum endpoints the mirroring controller puts in one EndpointSlice (1 to 1000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub mirroring_max_endpoints_per_subset: u32,
    /// How long Endpoints events wait before the mirroring controller syncs.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub mirroring_endpointslice_updates_batch_period: Duration,
    /// Client-side limit of requests per second to the API server.
    #[arg(long, default_value_t = 20.0)]
    pub kube_api_qps: f32,
    /// Client-side burst of requests to the API server.
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,
    /// Content type of requests to the API server. Only `application/json` is spoken
    /// (kube-controller-manager defaults to protobuf, which kube-rs does not encode).
    #[arg(long, default_value = JSON_CONTENT_TYPE, value_parser = parse_content_type)]
    pub kube_api_content_type: String,
    /// Address for /metrics, /healthz, /livez and /readyz, on both ports.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// Port for /metrics, /healthz, /livez and /readyz over plain HTTP, without TLS or
    /// authentication. Off unless given (0 also turns it off); `dev` serves it on 10252.
    #[arg(long)]
    pub port: Option<u16>,
    #[command(flatten)]
    pub serving: SecureServingFlags,
    #[command(flatten)]
    pub logging: LoggingFlags,
    /// kube-controller-manager's `Name=true|false,...` feature gates. Accepted so that flag
    /// files carry over; the controllers behave as the spec says whatever they are.
    #[arg(long, value_delimiter = ',', value_parser = parse_feature_gate)]
    pub feature_gates: Vec<(String, bool)>,
}

/// The only content type the client speaks.
pub const JSON_CONTENT_TYPE: &str = "application/json";

fn parse_content_type(s: &str) -> Result<String, String> {
    match s {
        JSON_CONTENT_TYPE => Ok(s.to_owned()),
        "application/vnd.kubernetes.protobuf" => {
            Err("protobuf is not supported by kube-endpoints' client; use application/json".into())
        }
        other => Err(format!(
            "unknown content type {other:?}; use application/json"
        )),
    }
}

fn parse_feature_gate(s: &str) -> Result<(String, bool), String> {
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

/// kube-controller-manager's secure serving and delegated authentication and authorization
/// flags (see `controller::secure_serving`). Client certificates are not supported: their
/// flags are accepted so that flag files carry over, and the start-up log names them.
#[derive(Debug, Args, Clone)]
pub struct SecureServingFlags {
    /// HTTPS port for /metrics, /healthz, /livez and /readyz; 0 turns HTTPS off. Default:
    /// 10257 for `run`; `dev` serves no HTTPS unless given.
    #[arg(long)]
    pub secure_port: Option<u16>,
    /// Certificate (PEM, then any intermediates) for HTTPS. Without it and
    /// --tls-private-key-file, a self-signed certificate is generated at start.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Where the generated self-signed certificate is written (kube-endpoints.crt and
    /// kube-endpoints.key), and read back on the next start. Without it, the generated
    /// certificate is kept in memory only. Ignored with --tls-cert-file.
    #[arg(long)]
    pub cert_dir: Option<PathBuf>,
    /// kubeconfig for TokenReviews (delegated authentication); default: the controllers'
    /// own connection (--kubeconfig, or the in-cluster config).
    #[arg(long)]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// Upstream looks up client-certificate settings in the cluster unless this is set;
    /// kube-endpoints never does (client certificates are not supported), so it changes
    /// nothing. Accepted for flag files.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    pub authentication_skip_lookup: bool,
    /// How long TokenReview answers are cached.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authentication_token_webhook_cache_ttl: Duration,
    /// kubeconfig for SubjectAccessReviews (delegated authorization); default: the
    /// controllers' own connection.
    #[arg(long)]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// Paths served without authorization (a trailing `*` matches by prefix).
    #[arg(long, value_delimiter = ',', default_value = "/healthz,/readyz,/livez")]
    pub authorization_always_allow_paths: Vec<String>,
    /// How long "allowed" SubjectAccessReview answers are cached.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// How long "denied" SubjectAccessReview answers are cached.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    /// CA bundle for client certificate authentication (not supported; accepted for flag
    /// files).
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// CA bundle for the front proxy's client certificates (not supported; accepted for
    /// flag files).
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,
}

impl SecureServingFlags {
    /// The flags given that kube-endpoints does not act on.
    pub fn unapplied(&self) -> Vec<&'static str> {
        let given = [
            ("--client-ca-file", self.client_ca_file.is_some()),
            (
                "--requestheader-client-ca-file",
                self.requestheader_client_ca_file.is_some(),
            ),
        ];
        given
            .into_iter()
            .filter(|(_, set)| *set)
            .map(|(flag, _)| flag)
            .collect()
    }

    /// The secure serving settings; `--secure-port` defaults to `default_port`.
    pub fn settings(&self, default_port: u16) -> SecureServingSettings {
        let cert = match (&self.tls_cert_file, &self.tls_private_key_file) {
            (Some(cert), Some(key)) => CertSource::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            // clap requires the two together.
            _ => CertSource::SelfSigned {
                cert_dir: self.cert_dir.clone(),
            },
        };
        SecureServingSettings {
            port: self.secure_port.unwrap_or(default_port),
            cert,
            authentication_kubeconfig: self.authentication_kubeconfig.clone(),
            token_cache_ttl: self.authentication_token_webhook_cache_ttl,
            authorization_kubeconfig: self.authorization_kubeconfig.clone(),
            always_allow_paths: self.authorization_always_allow_paths.clone(),
            authorized_ttl: self.authorization_webhook_cache_authorized_ttl,
            unauthorized_ttl: self.authorization_webhook_cache_unauthorized_ttl,
        }
    }
}

/// klog's output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LoggingFormat {
    /// klog's text lines.
    Text,
    /// One JSON object a line.
    Json,
}

/// kube-controller-manager's logging flags.
#[derive(Debug, Args, Clone)]
pub struct LoggingFlags {
    /// Log verbosity, as klog's `-v`: 0-1 info, 2-3 more info, 4 and up debug.
    #[arg(short = 'v', long = "v", default_value_t = 0)]
    pub verbosity: u8,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LoggingFormat::Text)]
    pub logging_format: LoggingFormat,
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

/// A controller kube-endpoints runs, by the names kube-controller-manager accepts for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Endpoints,
    EndpointSlices,
    Mirroring,
}

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
            bail!(
                "--controllers: unknown controller {name:?} (kube-endpoints runs \
                 endpoints-controller, endpointslice-controller and \
                 endpointslice-mirroring-controller, or `*` for all)"
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

/// kube-controller-manager flags for controllers or features kube-endpoints does not have,
/// by exact name or (ending in `-`) by prefix.
const FOREIGN_FLAGS: &[&str] = &[
    "allocate-node-cidrs",
    "attach-detach-reconcile-sync-period",
    "cidr-allocator-type",
    "cloud-config",
    "cloud-provider",
    "cluster-cidr",
    "cluster-name",
    "cluster-signing-",
    "configure-cloud-routes",
    "disable-attach-detach-reconcile-sync",
    "enable-dynamic-provisioning",
    "enable-garbage-collector",
    "enable-hostpath-provisioner",
    "enable-taint-manager",
    "external-cloud-volume-plugin",
    "flex-volume-plugin-dir",
    "horizontal-pod-autoscaler-",
    "large-cluster-size-threshold",
    "namespace-sync-period",
    "node-cidr-mask-size",
    "node-eviction-rate",
    "node-monitor-",
    "node-startup-grace-period",
    "pod-eviction-timeout",
    "pv-recycler-",
    "resource-quota-sync-period",
    "root-ca-file",
    "route-reconciliation-period",
    "secondary-node-eviction-rate",
    "service-account-private-key-file",
    "service-cluster-ip-range",
    "terminated-pod-gc-threshold",
    "unhealthy-zone-threshold",
    "use-service-account-credentials",
    "volume-host-",
];

/// `concurrent-*` flags that belong to the controllers kube-endpoints runs.
const OWN_CONCURRENT_FLAGS: &[&str] = &[
    "concurrent-endpoint-syncs",
    "concurrent-service-endpoint-syncs",
];

/// Rejects a kube-controller-manager flag meant for another controller, naming it, rather
/// than letting it pass as "unexpected argument" among kube-endpoints' own.
pub fn reject_foreign_flags<S: AsRef<str>>(args: &[S]) -> Result<()> {
    for arg in args {
        let Some(flag) = arg.as_ref().strip_prefix("--") else {
            continue;
        };
        let name = flag.split_once('=').map_or(flag, |(name, _)| name);
        let foreign = FOREIGN_FLAGS.iter().any(|f| {
            if f.ends_with('-') {
                name.starts_with(f)
            } else {
                name == *f
            }
        }) || (name.starts_with("concurrent-")
            && !OWN_CONCURRENT_FLAGS.contains(&name));
        if foreign {
            bail!(
                "--{name} is a kube-controller-manager flag for a controller kube-endpoints does \
                 not run (it runs the endpoints, endpointslice and endpointslice-mirroring \
                 controllers); remove it"
            );
        }
    }
    Ok(())
}

impl ControllerFlags {
    /// The enabled controllers.
    pub fn enabled(&self) -> Result<EnabledControllers> {
        enabled_controllers(&self.controllers)
    }

    /// Settings for the controller crate.
    pub fn settings(&self, kubeconfig: Option<PathBuf>) -> Result<Settings> {
        let mut s = Settings {
            concurrent_endpoint_syncs: self.concurrent_endpoint_syncs,
            concurrent_service_endpoint_syncs: self.concurrent_service_endpoint_syncs,
            max_endpoints_per_slice: self.max_endpoints_per_slice,
            endpoint_updates_batch_period: self.endpoint_updates_batch_period,
            endpointslice_updates_batch_period: self.endpointslice_updates_batch_period,
            mirroring_concurrent_service_endpoint_syncs: self
                .mirroring_concurrent_service_endpoint_syncs,
            mirroring_max_endpoints_per_subset: self.mirroring_max_endpoints_per_subset,
            mirroring_endpointslice_updates_batch_period: self
                .mirroring_endpointslice_updates_batch_period,
            ..Settings::default()
        };
        s.client.kubeconfig = kubeconfig;
        s.client.qps = self.kube_api_qps;
        s.client.burst = self.kube_api_burst;
        s.serving.bind_address = self.bind_address;
        // Upstream's --port 0 meant "no plain HTTP"; so does ours.
        s.serving.port = self.port.filter(|port| *port != 0);
        s.serving.secure = self.serving.settings(DEFAULT_SECURE_PORT);
        if self.kube_api_qps <= 0.0 {
            bail!("--kube-api-qps must be positive, got {}", self.kube_api_qps);
        }
        Ok(s)
    }
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
}
