//! The embedded API server driven by kubectl over TCP.
//!
//! These tests run only where `kubectl` is on PATH; elsewhere each prints why it was skipped.
//! Each test starts its own server and writes its own kubeconfig and discovery cache.

use apiserver::{ApiServer, ApiServerHandle, Config};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use testkit::wait::within_for;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

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
    async fn start() -> Option<Self> {
        if !kubectl_on_path() {
            // The test harness names the thread of each test after the test.
            let thread = std::thread::current();
            let test = thread.name().unwrap_or("this test");
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
        let out = within_for(KUBECTL, "kubectl", child.wait_with_output())
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stderr}\n{stdout}"
        );
        stdout
    }

    /// Creates pod `name` from [`pod_manifest`].
    async fn create_pod(&self, name: &str) {
        self.run(&["create", "-f", "-"], Some(&pod_manifest(name)))
            .await;
    }

    /// Starts kubectl with `args` (a `get --watch`), reading what it prints line by line.
    fn watch(&self, args: &[&str]) -> Watch {
        let mut child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Watch { child, lines }
    }

    /// Runs kubectl with `args` and asserts that it prints each of `texts`.
    async fn assert_prints(&self, args: &[&str], texts: &[&str]) {
        let out = self.run(args, None).await;
        for text in texts {
            assert!(
                out.contains(text),
                "kubectl {args:?} did not print {text:?}: {out}"
            );
        }
    }

    async fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args, None).await;
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("kubectl {args:?} printed no JSON ({e}): {out}"))
    }
}

/// A kubectl watch running, and what it prints.
struct Watch {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Watch {
    /// The next line kubectl prints (`None` once it has ended); `what` names it in a timeout.
    async fn next_line(&mut self, what: &str) -> Option<String> {
        within_for(KUBECTL, what, self.lines.next_line())
            .await
            .unwrap()
    }

    async fn stop(mut self) {
        self.child.kill().await.unwrap();
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            println!("could not remove {}: {e}", self.dir.display());
        }
    }
}

/// How long a `kubectl` run may take on a loaded machine.
const KUBECTL: Duration = Duration::from_secs(60);

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
    let Some(k) = Kubectl::start().await else {
        return;
    };
    k.create_pod("web-1").await;
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
    // Plain table output works too: the server answers with a Table, whose STATUS column
    // kubectl could not print from the objects alone.
    k.assert_prints(&["get", "namespaces"], &["STATUS", "kube-system"])
        .await;
}

#[tokio::test]
async fn kubectl_apply_creates_then_patches_with_last_applied_configuration() {
    let Some(k) = Kubectl::start().await else {
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
    let Some(k) = Kubectl::start().await else {
        return;
    };
    k.create_pod("first").await;
    let mut watch = k.watch(&["get", "pods", "-w", "-o", "name", "--request-timeout=60s"]);
    let first = watch.next_line("first pod").await;
    assert_eq!(first.as_deref(), Some("pod/first"));
    k.create_pod("second").await;
    let second = watch.next_line("second pod").await;
    assert_eq!(second.as_deref(), Some("pod/second"));
    watch.stop().await;
    assert!(k
        .server
        .request_counts()
        .contains_key(&("watch".to_owned(), "pods".to_owned())));
}

#[tokio::test]
async fn kubectl_delete_svc_removes_its_endpoint_slices() {
    let Some(k) = Kubectl::start().await else {
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

/// The header line of `kubectl get`, split into column names (kubectl pads with 3 spaces).
fn headers(output: &str) -> Vec<String> {
    output
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One object of every served kind, so that each `kubectl get` prints a table.
fn one_of_each_kind() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v1.33.0", "machineID": "", "systemUUID": "", "bootID": "",
                    "kernelVersion": "6.1", "osImage": "Debian", "containerRuntimeVersion": "containerd://1.7",
                    "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"}}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [{"name": "c",
                "ready": true, "restartCount": 0, "image": "nginx", "imageID": "", "state": {"running": {}}}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 8080}]}]}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abcde", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}],
            "ports": [{"name": "", "port": 8080, "protocol": "TCP"}]}),
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1"},
            "involvedObject": {"kind": "Service", "name": "web", "namespace": "default"},
            "type": "Normal", "reason": "Synced", "message": "hello",
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z", "count": 1}),
        // The server keeps events.k8s.io events apart from core ones (kube-apiserver shares them).
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web.2"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "c", "reportingInstance": "i",
            "action": "Sync", "regarding": {"kind": "Service", "name": "web", "namespace": "default"},
            "type": "Normal", "reason": "Synced", "note": "hello"}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock"},
            "spec": {"holderIdentity": "me"}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web"}}),
    ]
}

#[tokio::test]
async fn kubectl_get_prints_upstream_columns_for_every_kind() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    k.server.apply_objects(one_of_each_kind()).unwrap();
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("namespaces", &["NAME", "STATUS", "AGE"], &[]),
        (
            "nodes",
            &["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
            &[
                "INTERNAL-IP",
                "EXTERNAL-IP",
                "OS-IMAGE",
                "KERNEL-VERSION",
                "CONTAINER-RUNTIME",
            ],
        ),
        (
            "pods",
            &["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
            &["IP", "NODE", "NOMINATED NODE", "READINESS GATES"],
        ),
        (
            "services",
            &[
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE",
            ],
            &["SELECTOR"],
        ),
        ("endpoints", &["NAME", "ENDPOINTS", "AGE"], &[]),
        (
            "endpointslices",
            &["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
            &[],
        ),
        ("leases", &["NAME", "HOLDER", "AGE"], &[]),
        ("sa", &["NAME", "SECRETS", "AGE"], &[]),
    ];
    for (kind, columns, wide_extra) in cases {
        let out = k.run(&["get", kind], None).await;
        assert_eq!(headers(&out), *columns, "kubectl get {kind}:\n{out}");
        let wide = k.run(&["get", kind, "-o", "wide"], None).await;
        let want: Vec<&str> = columns.iter().chain(wide_extra.iter()).copied().collect();
        assert_eq!(headers(&wide), want, "kubectl get {kind} -o wide:\n{wide}");
    }
    // Events put the wide columns in between the default ones.
    for kind in ["events", "events.events.k8s.io"] {
        let out = k.run(&["get", kind], None).await;
        assert_eq!(
            headers(&out),
            ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            "{out}"
        );
        let wide = k.run(&["get", kind, "-o", "wide"], None).await;
        assert_eq!(
            headers(&wide),
            [
                "LAST SEEN",
                "TYPE",
                "REASON",
                "OBJECT",
                "SUBOBJECT",
                "SOURCE",
                "MESSAGE",
                "FIRST SEEN",
                "COUNT",
                "NAME"
            ],
            "{wide}"
        );
        assert!(
            out.contains("service/web") && out.contains("hello"),
            "{out}"
        );
    }

    let pods = k.run(&["get", "pods", "-o", "wide"], None).await;
    let row: Vec<&str> = pods.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        (row[0], row[1], row[2], row[3], row[5], row[6]),
        ("web-1", "1/1", "Running", "0", "10.0.0.1", "n1")
    );
    let endpoints = k.run(&["get", "endpoints"], None).await;
    assert!(endpoints.contains("10.0.0.1:8080"), "{endpoints}");
    let slices = k.run(&["get", "endpointslices"], None).await;
    let row: Vec<&str> = slices.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["web-abcde", "IPv4", "8080", "10.0.0.1"]);
}

#[tokio::test]
async fn kubectl_get_all_lists_pods_and_services() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    k.server.apply_objects(one_of_each_kind()).unwrap();
    let out = k.run(&["get", "all"], None).await;
    assert!(out.contains("pod/web-1"), "{out}");
    assert!(out.contains("service/web"), "{out}");
    assert!(!out.contains("endpointslice"), "{out}");
}

#[tokio::test]
async fn kubectl_typed_creates_send_protobuf_that_the_server_reads() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    k.run(&["create", "namespace", "x"], None).await;
    let ns = k.json(&["get", "namespace", "x", "-o", "json"]).await;
    assert_eq!(ns["status"]["phase"], "Active");

    k.run(
        &["create", "service", "clusterip", "s", "--tcp=80:8080"],
        None,
    )
    .await;
    let svc = k.json(&["get", "svc", "s", "-o", "json"]).await;
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["selector"]["app"], "s");
    assert_eq!(svc["spec"]["ports"][0]["port"], 80);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    assert!(svc["spec"]["clusterIP"].is_string(), "{svc}");
}

#[tokio::test]
async fn kubectl_creates_a_service_account_and_a_token_that_authenticates_it() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    k.server.record_requests(true);
    let ns = ["-n", "kube-system"];
    k.run(
        &[
            &ns[..],
            &["create", "serviceaccount", "endpoint-controller"],
        ]
        .concat(),
        None,
    )
    .await;
    let out = k
        .run(
            &[&ns[..], &["get", "sa", "endpoint-controller"]].concat(),
            None,
        )
        .await;
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..2], ["endpoint-controller", "0"], "{out}");

    // kubectl sends and accepts the TokenRequest as protobuf.
    let token = k
        .run(
            &[&ns[..], &["create", "token", "endpoint-controller"]].concat(),
            None,
        )
        .await;
    let log = k.server.request_log();
    let create = log.last().unwrap();
    assert_eq!(
        (create.verb.as_str(), create.resource.as_str()),
        ("create", "serviceaccounts")
    );
    assert_eq!(create.subresource.as_deref(), Some("token"));
    assert_eq!(
        create.content_type.as_deref(),
        Some("application/vnd.kubernetes.protobuf")
    );

    // kubectl sends credentials over TLS only, so the token is tried in-process.
    use tower::ServiceExt;
    let list = http::Request::get("/api/v1/namespaces/default/pods")
        .header(
            http::header::AUTHORIZATION,
            format!("Bearer {}", token.trim()),
        )
        .body(axum::body::Body::empty())
        .unwrap();
    let response = k.server.service().oneshot(list).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::OK);
    assert_eq!(
        k.server.request_log().last().unwrap().user.as_deref(),
        Some("system:serviceaccount:kube-system:endpoint-controller")
    );
}

#[tokio::test]
async fn kubectl_explain_prints_field_descriptions_from_the_openapi_schemas() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    let conditions = [
        "EndpointSlice",
        "conditions contains information about the current status of the endpoint",
        "ready",
        "terminating",
    ];
    k.assert_prints(
        &["explain", "endpointslice.endpoints.conditions"],
        &conditions,
    )
    .await;
    k.assert_prints(&["explain", "pods.spec.nodeName"], &["NodeName"])
        .await;
}

#[tokio::test]
async fn kubectl_get_watch_prints_table_rows_for_later_changes() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    k.create_pod("first").await;
    let mut watch = k.watch(&["get", "pods", "-w", "--request-timeout=60s"]);
    let header = watch.next_line("header").await.unwrap();
    assert_eq!(
        headers(&header),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    let first = watch.next_line("first pod").await.unwrap();
    assert!(first.starts_with("first "), "{first}");
    k.create_pod("second").await;
    let second = watch.next_line("second pod").await.unwrap();
    let cells: Vec<&str> = second.split_whitespace().collect();
    assert_eq!(&cells[..3], ["second", "0/1", "Pending"], "{second}");
    watch.stop().await;
}
