//! The image users deploy: built by `scripts/build-image.sh` with buildah, mounted, and its
//! entrypoint run from inside its own root (chroot, as the image's user) against the embedded
//! API server over plain HTTP on 127.0.0.1. It must converge on `examples/` to what `plan`
//! says, and serve `/healthz` on its secure port.
//!
//! Slow (a static build of the lean binary), so it is ignored by a plain `cargo test`;
//! `scripts/test.sh` runs it with `--ignored`, timed on its own. It needs root and buildah
//! (`scripts/install-test-deps.sh` installs Debian's); without them it says why and passes,
//! except under `CI=true`, where it fails.

use crate::free_port;
use kubectl_endpoints::conformance::{compare, Written};
use kubectl_endpoints::fault_schedule::verdict::live;
use kubectl_endpoints::manifests::{into_values, load_paths};
use kubectl_endpoints::plan::{plan, PlanSettings};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use testkit::process::run;

const IMAGE: &str = "localhost/kube-endpoints:image-test";
/// A lighter profile than release (thin LTO), defined in the workspace's Cargo.toml: the
/// image a user builds with the script gets the release profile.
const PROFILE: &str = "image-test";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What `buildah ARGS` prints, trimmed; the test fails when it fails.
fn buildah(args: &[&str]) -> String {
    run(Command::new("buildah")
        .args(["--storage-driver", "vfs"])
        .args(args))
    .succeeded()
    .trim()
    .to_owned()
}

/// Whether the test can run here; under CI=true it must.
fn can_build_images() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let has_buildah = Command::new("buildah").arg("--version").output().is_ok();
    if root && has_buildah {
        return true;
    }
    let why = if root {
        "buildah is not installed (scripts/install-test-deps.sh installs it)"
    } else {
        "building and mounting images needs root"
    };
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    println!("skipping the image test: {why}");
    false
}

/// Removes the working container when the test ends, however it ends.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("buildah")
            .args(["--storage-driver", "vfs", "umount", &self.0])
            .output();
        let _ = Command::new("buildah")
            .args(["--storage-driver", "vfs", "rm", &self.0])
            .output();
    }
}

/// Kills the controller when the test ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET https://127.0.0.1:PORT/healthz, trusting the self-signed certificate.
async fn healthz(port: u16) -> Option<String> {
    let mut config = kube::Config::new(format!("https://127.0.0.1:{port}").parse().unwrap());
    config.accept_invalid_certs = true;
    config.connect_timeout = Some(Duration::from_secs(2));
    let client = kube::Client::try_from(config).ok()?;
    let request = http::Request::get("/healthz").body(Vec::new()).unwrap();
    client.request_text(request).await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow: a static build of the image; scripts/test.sh runs it"]
async fn the_image_runs_as_its_user_from_its_own_root_and_converges() {
    if !can_build_images() {
        return;
    }
    // Build the image the way users do, with a lighter cargo profile.
    let started = Instant::now();
    let status = Command::new(repo().join("scripts/build-image.sh"))
        .arg(IMAGE)
        .env("PROFILE", PROFILE)
        .status()
        .unwrap();
    assert!(status.success(), "scripts/build-image.sh failed");
    println!("image built in {:.0}s", started.elapsed().as_secs_f64());

    let inspected: Value =
        serde_json::from_str(&buildah(&["inspect", "--type", "image", IMAGE])).unwrap();
    let config = &inspected["OCIv1"]["config"];
    assert_eq!(config["User"], "65532:65532", "{config:#}");
    assert!(
        config["ExposedPorts"]
            .as_object()
            .is_some_and(|p| p.contains_key("10257/tcp") || p.contains_key("10257")),
        "{config:#}"
    );
    let mut command_line: Vec<String> = Vec::new();
    for key in ["Entrypoint", "Cmd"] {
        for part in config[key].as_array().into_iter().flatten() {
            command_line.push(part.as_str().unwrap().to_owned());
        }
    }
    assert_eq!(command_line, ["/kube-endpoints", "run"], "{config:#}");

    let container = Container(buildah(&["from", IMAGE]));
    let root = PathBuf::from(buildah(&["mount", &container.0]));
    assert!(root.join("kube-endpoints").is_file());

    // The embedded API server on loopback, loaded with the examples.
    let handle = apiserver::ApiServer::start(apiserver::Config::default())
        .await
        .unwrap();
    let examples = load_paths(&[repo().join("examples")]).unwrap();
    let objects = into_values(examples.objects).unwrap();
    handle.apply_objects(objects.clone()).unwrap();
    std::fs::create_dir_all(root.join("etc/kube-endpoints")).unwrap();
    handle
        .write_kubeconfig(root.join("etc/kube-endpoints/kubeconfig"))
        .unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&handle.kubeconfig()).unwrap();
    let client = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap(),
    )
    .unwrap();

    // What the controllers should write: plan's answer for the same manifests.
    let planned = plan(objects, &PlanSettings::new(reconcile::Timestamp::now()))
        .await
        .unwrap();
    let want = Written::from_outcome(planned).unwrap().without_events();

    // The image's entrypoint and command, from inside its root, as its user.
    let port = free_port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut chroot = Command::new("chroot");
    chroot
        .arg("--userspec=65532:65532")
        .arg(&root)
        .args(&command_line)
        .arg("--kubeconfig=/etc/kube-endpoints/kubeconfig")
        .arg(format!("--secure-port={port}"))
        .arg("--bind-address=127.0.0.1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap());
    let mut running = Running(chroot.spawn().expect("running chroot"));

    let deadline = Instant::now() + Duration::from_secs(120);
    let mut differences = Vec::new();
    let mut health = None;
    while Instant::now() < deadline {
        if let Some(status) = running.0.try_wait().unwrap() {
            panic!(
                "the image's entrypoint exited with {status}:\n{}",
                std::fs::read_to_string(log.path()).unwrap_or_default()
            );
        }
        differences = compare(&live(&client).await.unwrap(), &want);
        if health.is_none() {
            health = healthz(port).await;
        }
        if differences.is_empty() && health.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let log_text = std::fs::read_to_string(log.path()).unwrap_or_default();
    assert!(
        differences.is_empty(),
        "not converged in 120s: {differences:#?}\n{log_text}"
    );
    assert!(
        health
            .as_deref()
            .is_some_and(|h| h.contains("healthz check passed")),
        "{health:?}\n{log_text}"
    );
    drop(running);
    handle.shutdown().await.unwrap();
}
