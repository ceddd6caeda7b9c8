//! `kube-endpoints`: the controllers' binary, the one that runs in a cluster.
//!
//! It has one command, `run`. The workstation tools (`plan`, `audit`, `dev`, `bench`, ...)
//! are the `kubectl-endpoints` binary, so none of their code is in this one.

use clap::{Parser, Subcommand};
use kube_endpoints::ignored_flags;
use kube_endpoints::run::RunArgs;

use std::process::ExitCode;

/// Kubernetes' Endpoints, EndpointSlice and EndpointSlice mirroring controllers, rebuilt in
/// Rust.
#[derive(Debug, Parser)]
#[command(name = "kube-endpoints", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Run(RunArgs),
}

/// Why the command line was turned away.
#[derive(Debug)]
enum ParseError {
    /// A flag neither `run` nor kube-controller-manager knows, or an ignored flag without
    /// its value: the message to print.
    Unknown(String),
    /// Anything clap rejects (and --help, --version).
    Clap(clap::Error),
}

/// Parses the command line. kube-controller-manager's flags that concern nothing here are
/// taken out first (and kept, for `run` to name them); a flag nobody knows is an error that
/// names the closest known one.
fn parse(args: Vec<std::ffi::OsString>) -> Result<Cli, ParseError> {
    let split = ignored_flags::split(args).map_err(ParseError::Unknown)?;
    let mut cli = match Cli::try_parse_from(split.args) {
        Ok(cli) => cli,
        Err(err) if err.kind() == clap::error::ErrorKind::UnknownArgument => {
            let unknown = match err.get(clap::error::ContextKind::InvalidArg) {
                Some(clap::error::ContextValue::String(arg)) => arg.clone(),
                _ => return Err(ParseError::Clap(err)),
            };
            let own = kube_endpoints::run::own_long_flags();
            let hint = match ignored_flags::closest(&unknown, own.iter().map(String::as_str)) {
                Some(flag) => format!("; did you mean {flag}?"),
                None => String::new(),
            };
            return Err(ParseError::Unknown(format!(
                "unknown flag {unknown}{hint} (see kube-endpoints run --help, and \
                 docs/flags.md for the kube-controller-manager flags accepted and ignored)"
            )));
        }
        Err(err) => return Err(ParseError::Clap(err)),
    };
    let Command::Run(run) = &mut cli.command;
    run.ignored_flags = split.ignored;
    Ok(cli)
}

fn main() -> ExitCode {
    kube_endpoints::allocator::tune();
    let cli = match parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(ParseError::Clap(err)) => err.exit(),
        Err(ParseError::Unknown(message)) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Run(args) => {
            kube_endpoints::runtime(Some(&args.controllers.logging), run_worker_threads())
                .and_then(|rt| rt.block_on(kube_endpoints::run::run(args)))
        }
    };
    kube_endpoints::exit_code(result)
}

/// Worker threads for `run`: one (the main thread itself), unless `TOKIO_WORKER_THREADS`
/// asks for more.
///
/// The controllers spend their time waiting for their request budget; a 10,000-pod cluster
/// whose pods all flip readiness in ten seconds keeps one core a tenth busy. With a worker per
/// core, objects decoded on one thread were freed on another, and each thread's allocator
/// kept its own partly used pages: on the bench's `flap` (200 x 50) one worker peaks about
/// 5 MiB lower and spends less CPU than two. On one thread the runtime needs no worker of its
/// own either: the tasks run on the main thread, and no wake-up crosses threads. An operator
/// of a very large cluster can give the runtime more threads with `TOKIO_WORKER_THREADS`.
fn run_worker_threads() -> Option<usize> {
    workers_unless_set(std::env::var_os("TOKIO_WORKER_THREADS"))
}

fn workers_unless_set(env: Option<std::ffi::OsString>) -> Option<usize> {
    env.is_none().then_some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_uses_one_worker_unless_the_operator_asks_for_more() {
        assert_eq!(workers_unless_set(None), Some(1));
        // Left to Tokio, which reads the variable itself.
        assert_eq!(workers_unless_set(Some("4".into())), None);
    }

    fn parse_run(flags: &[&str]) -> Result<RunArgs, String> {
        let mut argv: Vec<std::ffi::OsString> = vec!["kube-endpoints".into(), "run".into()];
        argv.extend(flags.iter().map(Into::into));
        match parse(argv) {
            Ok(Cli {
                command: Command::Run(args),
            }) => Ok(args),
            Err(ParseError::Unknown(message)) => Err(message),
            Err(ParseError::Clap(err)) => Err(err.to_string()),
        }
    }

    /// The flags a kubeadm static pod manifest gives kube-controller-manager, less those of
    /// controllers this binary does not run, with the controller list it would take over.
    const KUBEADM_FLAGS: &[&str] = &[
        "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
        "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
        "--bind-address=127.0.0.1",
        "--client-ca-file=/etc/kubernetes/pki/ca.crt",
        "--controllers=endpoints-controller,endpointslice-controller,endpointslice-mirroring-controller",
        "--kubeconfig=/etc/kubernetes/controller-manager.conf",
        "--leader-elect=true",
        "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
        "--secure-port=10257",
        "--tls-cert-file=/etc/kubernetes/pki/controller-manager.crt",
        "--tls-private-key-file=/etc/kubernetes/pki/controller-manager.key",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        "--v=2",
        "--logging-format=json",
        "--feature-gates=TopologyAwareHints=true,ServiceTrafficDistribution=false",
        "--leader-elect-resource-lock=leases",
        "--leader-elect-resource-name=kube-controller-manager",
        "--master=https://10.0.0.1:6443",
        "--kube-api-content-type=application/json",
        "--kube-api-qps=50",
        "--kube-api-burst=100",
        "--concurrent-endpoint-syncs=10",
        "--concurrent-service-endpoint-syncs=50",
        "--max-endpoints-per-slice=1000",
        "--endpoint-updates-batch-period=1s",
        "--endpointslice-updates-batch-period=1s",
        "--mirroring-concurrent-service-endpoint-syncs=5",
        "--mirroring-max-endpoints-per-subset=1000",
        "--mirroring-endpointslice-updates-batch-period=500ms",
    ];

    /// kubeadm's kube-controller-manager manifest, word for word: the flags that concern other
    /// controllers are accepted, kept aside for the warning, and change nothing.
    #[test]
    fn kubeadms_whole_command_line_is_accepted_and_the_foreign_part_set_aside() {
        let kubeadm = [
            "--allocate-node-cidrs=true",
            "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--bind-address=127.0.0.1",
            "--client-ca-file=/etc/kubernetes/pki/ca.crt",
            "--cluster-cidr=10.244.0.0/16",
            "--cluster-name=kubernetes",
            "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
            "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
            "--controllers=*,bootstrapsigner,tokencleaner",
            "--kubeconfig=/etc/kubernetes/controller-manager.conf",
            "--leader-elect=true",
            "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
            "--root-ca-file=/etc/kubernetes/pki/ca.crt",
            "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
            "--service-cluster-ip-range=10.96.0.0/12",
            "--use-service-account-credentials=true",
        ];
        let args = parse_run(&kubeadm).expect("kubeadm's command line parses");
        assert_eq!(
            args.ignored_flags,
            [
                "--allocate-node-cidrs=true",
                "--cluster-cidr=10.244.0.0/16",
                "--cluster-name=kubernetes",
                "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
                "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
                "--root-ca-file=/etc/kubernetes/pki/ca.crt",
                "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
                "--service-cluster-ip-range=10.96.0.0/12",
            ]
        );
        assert!(args.controllers.use_service_account_credentials);
        let enabled = args.controllers.enabled().expect("ours, all of them");
        assert!(enabled.endpoints && enabled.endpoint_slices && enabled.mirroring);
        assert_eq!(
            args.kubeconfig.as_deref(),
            Some(std::path::Path::new(
                "/etc/kubernetes/controller-manager.conf"
            ))
        );
    }

    #[test]
    fn a_typo_is_refused_with_the_closest_flag() {
        for (typo, wanted) in [
            ("--cluster-nmae=kubernetes", "--cluster-name"),
            ("--kubeconfg=/k", "--kubeconfig"),
            (
                "--concurent-endpoint-syncs=5",
                "--concurrent-endpoint-syncs",
            ),
        ] {
            let err = parse_run(&[typo]).expect_err(typo);
            assert!(
                err.contains(&format!("did you mean {wanted}?")),
                "{typo}: {err}"
            );
        }
        let err = parse_run(&["--cluster-name"]).expect_err("no value");
        assert_eq!(err, "flag needs an argument: --cluster-name");
    }

    #[test]
    fn kube_controller_manager_flags_from_a_kubeadm_manifest_are_accepted() {
        let args = parse_run(KUBEADM_FLAGS).expect("kubeadm's flags parse");
        let flags = &args.controllers;
        let enabled = flags.enabled().expect("the list enables controllers");
        assert!(enabled.endpoints && enabled.endpoint_slices && enabled.mirroring);
        assert_eq!(flags.tuning.concurrent_service_endpoint_syncs, 50);
        assert_eq!(flags.logging.verbosity, 2);
        assert_eq!(
            flags.logging.logging_format,
            kube_endpoints::args::LoggingFormat::Json
        );
        assert_eq!(flags.serving.secure_port, Some(10257));
        assert_eq!(
            flags.output.feature_gates,
            vec![
                ("TopologyAwareHints".to_owned(), true),
                ("ServiceTrafficDistribution".to_owned(), false)
            ]
        );
        assert_eq!(args.master.as_deref(), Some("https://10.0.0.1:6443"));
        let settings = flags
            .settings(args.kubeconfig.clone())
            .expect("settings are valid");
        assert_eq!(settings.concurrent_endpoint_syncs, 10);
        assert!(settings.validate().is_ok());
        let secure = &settings.serving.secure;
        assert_eq!(
            secure.cert,
            controller::secure_serving::CertSource::Files {
                cert: "/etc/kubernetes/pki/controller-manager.crt".into(),
                key: "/etc/kubernetes/pki/controller-manager.key".into(),
            }
        );
        assert_eq!(
            secure.authentication_kubeconfig.as_deref(),
            Some(std::path::Path::new(
                "/etc/kubernetes/controller-manager.conf"
            ))
        );
        assert!(secure.always_allow_paths.iter().any(|p| p == "/metrics"));
        assert_eq!(
            flags.serving.unapplied(),
            ["--client-ca-file", "--requestheader-client-ca-file"]
        );
    }

    #[test]
    fn https_is_served_on_10257_by_default_and_plain_http_only_when_asked() {
        let settings = parse_run(&[])
            .expect("parses")
            .controllers
            .settings(None)
            .expect("valid");
        assert_eq!(settings.serving.port, None);
        assert_eq!(settings.serving.secure.port, 10257);
        // kube-controller-manager's default: every interface.
        assert_eq!(
            settings.serving.bind_address,
            std::net::IpAddr::from([0, 0, 0, 0])
        );
        assert_eq!(
            settings.serving.secure.cert,
            controller::secure_serving::CertSource::SelfSigned { cert_dir: None }
        );

        let args = parse_run(&[
            "--port=10252",
            "--secure-port=0",
            "--cert-dir=/var/run/kube-endpoints",
            "--authentication-skip-lookup",
            "--authentication-token-webhook-cache-ttl=1m",
            "--authorization-webhook-cache-unauthorized-ttl=0",
        ])
        .expect("parses");
        assert!(args.controllers.serving.authentication_skip_lookup);
        let settings = args.controllers.settings(None).expect("valid");
        assert_eq!(settings.serving.port, Some(10252));
        assert!(!settings.serving.secure.enabled());
        assert_eq!(
            settings.serving.secure.cert,
            controller::secure_serving::CertSource::SelfSigned {
                cert_dir: Some("/var/run/kube-endpoints".into())
            }
        );
        assert_eq!(
            settings.serving.secure.token_cache_ttl,
            std::time::Duration::from_secs(60)
        );
        assert_eq!(
            settings.serving.secure.unauthorized_ttl,
            std::time::Duration::ZERO
        );

        let off = parse_run(&["--port=0"]).expect("parses");
        assert_eq!(
            off.controllers.settings(None).expect("valid").serving.port,
            None
        );
        let half = parse_run(&["--tls-cert-file=/tls.crt"]).unwrap_err();
        assert!(half.contains("--tls-private-key-file"), "{half}");
    }

    #[test]
    fn short_v_and_defaults_parse() {
        let args = parse_run(&["-v", "4"]).expect("parses");
        assert_eq!(args.controllers.logging.verbosity, 4);
        assert_eq!(args.controllers.tuning.concurrent_service_endpoint_syncs, 5);
        assert_eq!(
            args.controllers.output.mirroring_max_endpoints_per_subset,
            1000
        );
        assert_eq!(
            args.controllers.serving.authorization_always_allow_paths,
            ["/healthz", "/readyz", "/livez"]
        );
    }

    #[test]
    fn bad_values_are_refused_naming_the_flag() {
        let table: &[(&[&str], &str)] = &[
            (
                &["--concurrent-service-endpoint-syncs=51"],
                "51 is not in 1..=50",
            ),
            (
                &["--concurrent-service-endpoint-syncs=0"],
                "0 is not in 1..=50",
            ),
            (
                &["--concurrent-endpoint-syncs=0"],
                "--concurrent-endpoint-syncs",
            ),
            (
                &["--max-endpoints-per-slice=1001"],
                "1001 is not in 1..=1000",
            ),
            (
                &["--mirroring-concurrent-service-endpoint-syncs=51"],
                "51 is not in 1..=50",
            ),
            (
                &["--mirroring-max-endpoints-per-subset=0"],
                "0 is not in 1..=1000",
            ),
            (
                &["--mirroring-endpointslice-updates-batch-period=5"],
                "missing unit",
            ),
            (
                &["--kube-api-content-type=application/yaml"],
                "unknown content type",
            ),
            (
                &["--leader-elect-resource-lock=endpointsleases"],
                "only \"leases\"",
            ),
            (&["--logging-format=yaml"], "--logging-format"),
            (
                &["--feature-gates=TopologyAwareHints"],
                "expected Name=true",
            ),
            (
                &["--feature-gates=TopologyAwareHints=yes"],
                "is not true or false",
            ),
            // Removed from kube-controller-manager before v1.36: unknown.
            (
                &["--pod-eviction-timeout=5m"],
                "unknown flag --pod-eviction-timeout",
            ),
        ];
        for (flags, expected) in table {
            match parse_run(flags) {
                Ok(_) => panic!("{flags:?} was accepted"),
                Err(err) => assert!(err.contains(expected), "{flags:?}: {err}"),
            }
        }
    }

    #[test]
    fn controller_lists_that_enable_nothing_or_name_strangers_are_refused() {
        let table: &[(&str, &str)] = &[
            (
                "--controllers=*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller",
                "enables no controller",
            ),
            ("--controllers=-endpoint", "enables no controller"),
            ("--controllers=garbagecollector", "enables no controller"),
            (
                "--controllers=*,endpointslcie",
                "unknown controller \"endpointslcie\"; did you mean \"endpointslice\"?",
            ),
        ];
        for (flag, expected) in table {
            let args = parse_run(&[flag]).expect("the list parses");
            match args.controllers.enabled() {
                Ok(enabled) => panic!("{flag} enabled {enabled:?}"),
                Err(err) => assert!(err.to_string().contains(expected), "{flag}: {err}"),
            }
        }
    }

    #[test]
    fn controller_names_aliases_and_star_combine_as_upstream() {
        let table: &[(&str, (bool, bool, bool))] = &[
            ("*", (true, true, true)),
            ("*,-endpoints-controller", (false, true, true)),
            ("-endpointslicemirroring,*", (true, true, false)),
            ("endpoint", (true, false, false)),
            ("*,bootstrapsigner,tokencleaner", (true, true, true)),
            ("endpoint,-nodeipam", (true, false, false)),
            ("endpointslice,endpointslicemirroring", (false, true, true)),
            (
                "endpointslice-controller,-endpointslice",
                (false, false, false),
            ),
        ];
        for (list, (endpoints, slices, mirroring)) in table {
            let items: Vec<String> = list.split(',').map(str::to_owned).collect();
            let got = kube_endpoints::flags::enabled_controllers(&items);
            if !(endpoints | slices | mirroring) {
                assert!(got.is_err(), "{list}");
                continue;
            }
            let got = got.expect(list);
            assert_eq!(
                (got.endpoints, got.endpoint_slices, got.mirroring),
                (*endpoints, *slices, *mirroring),
                "{list}"
            );
        }
    }
}
