//! `apiserver` and `dev` refuse to serve their unauthenticated API beyond loopback unless
//! told to with `--allow-remote`. The refusal comes before anything is bound, so these tests
//! open no socket.

use std::process::Command;

fn kube_endpoints(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-endpoints"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn apiserver_refuses_a_non_loopback_listen_address_without_allow_remote() {
    let (code, stderr) = kube_endpoints(&["apiserver", "--listen", "0.0.0.0:0"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "refusing to listen on 0.0.0.0:0: the embedded API server has no authentication"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("--allow-remote"), "{stderr}");
}

#[test]
fn dev_refuses_a_non_loopback_listen_address_without_allow_remote() {
    let (code, stderr) = kube_endpoints(&["dev", "--listen", "[::]:0", "--exit-when-synced"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("refusing to listen on [::]:0"), "{stderr}");
}

#[test]
fn allow_remote_is_documented_with_its_risk() {
    for command in ["apiserver", "dev"] {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-endpoints"))
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--allow-remote"), "{command}: {help}");
        assert!(help.contains("no authentication"), "{command}: {help}");
    }
}
