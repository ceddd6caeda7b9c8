//! `apiserver` and `dev` refuse to serve their unauthenticated API beyond loopback unless
//! told to with `--allow-remote`. The refusal comes before anything is bound, so these tests
//! open no socket.

use crate::cli;
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
