//! The binary's log output, read back from a file as a log shipper would read it.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `dev --exit-when-synced` on the examples with `flags`, stderr to a file; returns
/// what it logged.
fn dev_log(flags: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let kubeconfig = dir.path().join("kubeconfig");
    let status = Command::new(env!("CARGO_BIN_EXE_kubectl-endpoints"))
        .arg("dev")
        .arg("--exit-when-synced")
        .arg("-f")
        .arg(&examples)
        .arg("--write-kubeconfig")
        .arg(&kubeconfig)
        .args(flags)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(log)
        .status()
        .expect("the binary runs");
    assert!(status.success(), "dev failed: {status}");
    std::fs::read_to_string(&log_path).expect("log readable")
}

#[test]
fn json_logs_are_one_object_a_line_and_name_each_synced_service() {
    let log = dev_log(&["--logging-format=json", "-v", "4"]);
    let mut finished = Vec::new();
    for line in log.lines() {
        let value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        for key in ["ts", "caller", "msg"] {
            assert!(value.get(key).is_some(), "no {key}: {line}");
        }
        if value["msg"] == "Finished syncing service" {
            assert_eq!(value["v"], 4, "{line}");
            finished.push(value["service"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert!(
        finished.iter().any(|s| s == "shop/web"),
        "no finished sync of shop/web in:\n{log}"
    );
}

#[test]
fn text_logs_to_a_file_have_klog_headers_and_no_escape_codes() {
    let log = dev_log(&["--v=4"]);
    assert!(!log.contains('\u{1b}'), "escape codes in:\n{log}");
    let header = |line: &str| {
        let b = line.as_bytes();
        line.len() > 30
            && matches!(b[0], b'I' | b'W' | b'E')
            && b[1..5].iter().all(u8::is_ascii_digit)
            && b[5] == b' '
            && line.contains("] ")
    };
    for line in log.lines() {
        assert!(header(line), "not a klog line: {line}");
    }
    assert!(
        log.lines()
            .any(|l| l.contains("\"Finished syncing service\"")
                && l.contains("service=\"shop/web\"")),
        "no finished sync of shop/web in:\n{log}"
    );
}

#[test]
fn verbosity_zero_hides_the_per_sync_lines() {
    let log = dev_log(&["--logging-format=json"]);
    assert!(!log.contains("Finished syncing service"), "{log}");
    assert!(log.contains("controllers running"), "{log}");
}
