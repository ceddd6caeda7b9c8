//! `apiserver` and `dev` refuse to serve their unauthenticated API beyond loopback unless
//! told to with `--allow-remote`. The refusal comes before anything is bound, so these tests
//! open no socket.

use crate::{cli, free_port};
use testkit::process::run;

#[test]
fn apiserver_refuses_a_non_loopback_listen_address_without_allow_remote() {
    run(cli().args(["apiserver", "--listen", "0.0.0.0:0"])).assert_exit(
        1,
        &[
            "refusing to listen on 0.0.0.0:0: the embedded API server has no authentication",
            "--allow-remote",
        ],
    );
}

#[test]
fn dev_refuses_a_non_loopback_listen_address_without_allow_remote() {
    run(cli().args(["dev", "--listen", "[::]:0", "--exit-when-synced"]))
        .assert_exit(1, &["refusing to listen on [::]:0"]);
}

#[test]
fn allow_remote_is_documented_with_its_risk() {
    for command in ["apiserver", "dev"] {
        let help = run(cli().args([command, "--help"])).stdout;
        assert!(help.contains("--allow-remote"), "{command}: {help}");
        assert!(help.contains("no authentication"), "{command}: {help}");
    }
}

/// The address `dev` serves its plain-HTTP metrics on, from its log.
fn dev_metrics_address(extra: &[&str]) -> String {
    let port = free_port().to_string();
    let out = run(cli()
        .args([
            "dev",
            "-f",
            "../../examples",
            "--exit-when-synced",
            "--port",
            &port,
        ])
        .args(extra));
    out.assert_exit(0, &[]);
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("over plain HTTP"))
        .unwrap_or_else(|| panic!("no plain HTTP line in {}", out.stderr))
        .to_owned();
    line.split("address=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line}"))
        .trim_matches('"')
        .to_owned()
}

#[test]
fn dev_serves_its_unauthenticated_metrics_on_loopback_unless_told_otherwise() {
    let default = dev_metrics_address(&[]);
    assert!(default.starts_with("127.0.0.1:"), "{default}");
    let asked = dev_metrics_address(&["--bind-address", "0.0.0.0"]);
    assert!(asked.starts_with("0.0.0.0:"), "{asked}");
}
