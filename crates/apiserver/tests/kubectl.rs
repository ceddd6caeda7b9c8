//! The embedded API server driven by kubectl over TCP.
//!
//! These tests run only where `kubectl` is on PATH; elsewhere each prints why it was skipped.
//! Each test starts its own server and writes its own kubeconfig and discovery cache.

use apiserver::{ApiServer, ApiServerHandle, Config};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

struct Kubectl {
    dir: PathBuf,
    server: ApiServerHandle,
}

fn kubectl_on_path() -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join("kubectl").is_file()))
        .unwrap_or(false)
}

impl Kubectl {
    /// A server and a kubeconfig for it, or `None` (with a message) without kubectl.
    async fn start(test: &str) -> Option<Self> {
        if !kubectl_on_path() {
            println!("skipping {test}: kubectl is not on PATH");
            return None;
        }
        let server = ApiServer::start(Config::default()).await.unwrap();
        let dir = std::env::temp_dir().join(format!(
            "kube-endpoints-kubectl-{}-{}",
            std::process::id(),
            server.addr().port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        server.write_kubeconfig(dir.join("kubeconfig")).unwrap();
        Some(Self { dir, server })
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.env("KUBECONFIG", self.dir.join("kubeconfig"))
            .env("HOME", &self.dir)
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .args(args)
            .kill_on_drop(true);
        cmd
    }

    /// Runs kubectl with `stdin`, returning stdout; fails the test with stderr on error.
    async fn run(&self, args: &[&str], stdin: Option<&str>) -> String {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).await.unwrap();
        }
        drop(input);
        let out = within("kubectl", child.wait_with_output()).await.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stderr}\n{stdout}"
        );
        stdout
    }

    async fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args, None).await;
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("kubectl {args:?} printed no JSON ({e}): {out}"))
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            println!("could not remove {}: {e}", self.dir.display());
        }
    }
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(60), fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

fn pod_manifest(name: &str) -> String {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]},
    })
    .to_string()
}

#[tokio::test]
async fn kubectl_creates_gets_patches_status_and_deletes_a_pod() {
    let Some(k) = Kubectl::start("kubectl_creates_gets_patches_status_and_deletes_a_pod").await
    else {
        return;
    };
    k.run(&["create", "-f", "-"], Some(&pod_manifest("web-1")))
        .await;
    let pod = k.json(&["get", "pod", "web-1", "-o", "json"]).await;
    assert_eq!(pod["metadata"]["name"], "web-1");
    assert_eq!(pod["status"]["phase"], "Pending");

    let list = k.json(&["get", "pods", "-o", "json"]).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));

    k.run(
        &[
            "patch",
            "pod",
            "web-1",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Running","podIP":"10.0.0.1"}}"#,
        ],
        None,
    )
    .await;
    let pod = k.json(&["get", "pod", "web-1", "-o", "json"]).await;
    assert_eq!(pod["status"]["phase"], "Running");
    assert_eq!(pod["status"]["podIPs"][0]["ip"], "10.0.0.1");

    k.run(&["label", "pod", "web-1", "tier=front"], None).await;
    let pod = k
        .json(&["get", "pods", "-l", "tier=front", "-o", "json"])
        .await;
    assert_eq!(pod["items"][0]["metadata"]["name"], "web-1");

    k.run(&["delete", "pod", "web-1"], None).await;
    let list = k.json(&["get", "pods", "-o", "json"]).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0));
    // Plain table output works too (the server returns lists, not Tables).
    let table = k.run(&["get", "namespaces"], None).await;
    assert!(table.contains("kube-system"), "{table}");
}

#[tokio::test]
async fn kubectl_apply_creates_then_patches_with_last_applied_configuration() {
    let Some(k) =
        Kubectl::start("kubectl_apply_creates_then_patches_with_last_applied_configuration").await
    else {
        return;
    };
    let service = |port: u16| {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    app: web\n  ports:\n  - name: http\n    port: {port}\n    targetPort: 8080\n"
        )
    };
    k.run(&["apply", "-f", "-"], Some(&service(80))).await;
    let svc = k.json(&["get", "svc", "web", "-o", "json"]).await;
    assert!(
        svc["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    let cluster_ip = svc["spec"]["clusterIP"].clone();
    assert!(cluster_ip.is_string());

    k.run(&["apply", "-f", "-"], Some(&service(81))).await;
    let svc = k.json(&["get", "service", "web", "-o", "json"]).await;
    assert_eq!(svc["spec"]["ports"].as_array().map(Vec::len), Some(1));
    assert_eq!(svc["spec"]["ports"][0]["port"], 81);
    assert_eq!(
        svc["spec"]["clusterIP"], cluster_ip,
        "the ClusterIP is kept across applies"
    );

    k.run(
        &["apply", "--server-side", "-f", "-"],
        Some(&pod_manifest("ssa")),
    )
    .await;
    let pod = k.json(&["get", "po", "ssa", "-o", "json"]).await;
    assert_eq!(pod["metadata"]["labels"]["app"], "web");
}

#[tokio::test]
async fn kubectl_get_watch_prints_later_changes() {
    let Some(k) = Kubectl::start("kubectl_get_watch_prints_later_changes").await else {
        return;
    };
    k.run(&["create", "-f", "-"], Some(&pod_manifest("first")))
        .await;
    let mut child = k
        .command(&["get", "pods", "-w", "-o", "name", "--request-timeout=60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = within("first pod", lines.next_line()).await.unwrap();
    assert_eq!(first.as_deref(), Some("pod/first"));
    k.run(&["create", "-f", "-"], Some(&pod_manifest("second")))
        .await;
    let second = within("second pod", lines.next_line()).await.unwrap();
    assert_eq!(second.as_deref(), Some("pod/second"));
    child.kill().await.unwrap();
    assert!(k
        .server
        .request_counts()
        .contains_key(&("watch".to_owned(), "pods".to_owned())));
}

#[tokio::test]
async fn kubectl_delete_svc_removes_its_endpoint_slices() {
    let Some(k) = Kubectl::start("kubectl_delete_svc_removes_its_endpoint_slices").await else {
        return;
    };
    let service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n";
    k.run(&["create", "-f", "-"], Some(service)).await;
    let svc = k.json(&["get", "svc", "web", "-o", "json"]).await;
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "web-abcde", "labels": {"kubernetes.io/service-name": "web"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web",
                "uid": svc["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}],
        "ports": [{"name": "", "port": 80, "protocol": "TCP"}],
    });
    k.run(&["create", "-f", "-"], Some(&slice.to_string()))
        .await;
    k.run(&["delete", "svc", "web"], None).await;
    // The garbage collection runs inside the delete, so the slice is gone when kubectl returns.
    let slices = k.json(&["get", "endpointslices", "-o", "json"]).await;
    assert_eq!(
        slices["items"].as_array().map(Vec::len),
        Some(0),
        "{slices}"
    );
}
