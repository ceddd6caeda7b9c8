//! The binary that runs in a cluster has the controllers' command only: the workstation tools
//! are `kubectl-endpoints`. (Building this test also puts the `kube-endpoints` binary in the
//! target directory, where `kubectl-endpoints bench --controller process` finds it.)

use std::process::Command;

fn kube_endpoints(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kube-endpoints"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_is_the_only_command() {
    let (code, stdout, _) = kube_endpoints(&["--help"]);
    assert_eq!(code, Some(0));
    let commands: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(commands, ["run", "help"], "{stdout}");
}

#[test]
fn the_workstation_commands_are_not_here() {
    for command in [
        "plan",
        "audit",
        "dev",
        "apiserver",
        "conformance",
        "bench",
        "faults",
    ] {
        let (code, _, stderr) = kube_endpoints(&[command]);
        assert_eq!(code, Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("unrecognized subcommand"),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn a_flag_for_another_controller_is_refused_by_name() {
    let (code, _, stderr) = kube_endpoints(&["run", "--concurrent-deployment-syncs=5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--concurrent-deployment-syncs"), "{stderr}");
}
