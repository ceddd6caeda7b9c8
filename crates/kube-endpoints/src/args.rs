//! kube-controller-manager's flags for the two controllers: same names, same defaults.

pub use crate::flags::{parse_duration, EnabledControllers, OutputFlags, TuningFlags};
use anyhow::{bail, Result};
use clap::Args;
use controller::config::Settings;
use controller::secure_serving::{CertSource, SecureServingSettings, DEFAULT_SECURE_PORT};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Flags shared by `run` and `dev`.
#[derive(Debug, Args, Clone)]
pub struct ControllerFlags {
    /// Which controllers run and what they write.
    #[command(flatten)]
    pub output: OutputFlags,
    /// Workers and batching.
    #[command(flatten)]
    pub tuning: TuningFlags,
    /// Client-side limit of requests per second to the API server.
    #[arg(long, default_value_t = 20.0)]
    pub kube_api_qps: f32,
    /// Client-side burst of requests to the API server.
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,
    /// Content type of requests to the API server: `application/vnd.kubernetes.protobuf`
    /// (as kube-controller-manager, and cheaper for the API server to encode and for us to
    /// decode) or `application/json`. With protobuf, a server that refuses it gets JSON.
    #[arg(long, default_value = controller::wire::PROTOBUF, value_parser = parse_content_type)]
    pub kube_api_content_type: controller::wire::Encoding,
    /// Run each controller as its own ServiceAccount in kube-system (`endpoint-controller`,
    /// `endpointslice-controller`, `endpointslicemirroring-controller`, created if missing),
    /// with tokens from the TokenRequest API, so that the cluster's bootstrap roles
    /// `system:controller:*` apply and the audit log names the controller. The --kubeconfig
    /// identity keeps the Lease and obtains the tokens.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    pub use_service_account_credentials: bool,
    /// Address for /metrics, /healthz, /livez and /readyz, on both ports. `run` binds
    /// 0.0.0.0 unless given, as kube-controller-manager does; `dev` binds 127.0.0.1, since its
    /// plain-HTTP port has no authentication.
    #[arg(long)]
    pub bind_address: Option<IpAddr>,
    /// Port for /metrics, /healthz, /livez and /readyz over plain HTTP, without TLS or
    /// authentication. Off unless given (0 also turns it off); `dev` serves it on 10252.
    #[arg(long)]
    pub port: Option<u16>,
    #[command(flatten)]
    pub serving: SecureServingFlags,
    #[command(flatten)]
    pub logging: LoggingFlags,
}

fn parse_content_type(s: &str) -> Result<controller::wire::Encoding, String> {
    controller::wire::Encoding::from_content_type(s)
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
    /// Serve a CPU profile in pprof's format at /debug/pprof/profile?seconds=N on the
    /// secure port, behind the same authentication and authorization as /metrics.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = true, action = clap::ArgAction::Set)]
    pub profiling: bool,
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

impl ControllerFlags {
    /// The enabled controllers.
    pub fn enabled(&self) -> Result<EnabledControllers> {
        self.output.enabled()
    }

    /// Settings for the controller crate.
    pub fn settings(&self, kubeconfig: Option<PathBuf>) -> Result<Settings> {
        // Ranges are checked where the settings are used (`Session::start`), the controller
        // list by `enabled`.
        let mut s = Settings::default();
        self.output.apply_settings(&mut s);
        self.tuning.apply_settings(&mut s);
        s.client.kubeconfig = kubeconfig;
        s.client.qps = self.kube_api_qps;
        s.client.burst = self.kube_api_burst;
        s.client.encoding = self.kube_api_content_type;
        s.client.use_service_account_credentials = self.use_service_account_credentials;
        if let Some(address) = self.bind_address {
            s.serving.bind_address = address;
        }
        // Upstream's --port 0 meant "no plain HTTP"; so does ours.
        s.serving.port = self.port.filter(|port| *port != 0);
        s.serving.secure = self.serving.settings(DEFAULT_SECURE_PORT);
        if self.kube_api_qps <= 0.0 {
            bail!("--kube-api-qps must be positive, got {}", self.kube_api_qps);
        }
        Ok(s)
    }
}
