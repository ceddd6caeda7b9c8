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
fn a_flag_for_another_controller_is_accepted_and_kept_out_of_help() {
    let (code, stdout, stderr) = kube_endpoints(&[
        "run",
        "--concurrent-deployment-syncs=5",
        "--cluster-name",
        "k",
        "--help",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("--kubeconfig"), "{stdout}");
    for hidden in [
        "--cluster-name",
        "--concurrent-deployment-syncs",
        "--allocate-node-cidrs",
    ] {
        assert!(!stdout.contains(hidden), "{hidden} in --help");
    }
}

#[test]
fn a_typo_is_refused_naming_the_closest_flag() {
    let (code, _, stderr) = kube_endpoints(&["run", "--concurent-deployment-syncs=5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown flag --concurent-deployment-syncs; did you mean --concurrent-deployment-syncs?"),
        "{stderr}"
    );
}

/// kubeadm's kube-controller-manager command line, word for word (its paths pointing at files
/// this test writes), given to `run` against the embedded API server: it starts, warns once
/// naming the flags it ignores, and writes the Service's Endpoints and EndpointSlice, each
/// controller as its own ServiceAccount (`--use-service-account-credentials=true`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeadms_command_line_runs_warns_once_and_converges() {
    use serde_json::json;
    use std::time::{Duration, Instant};

    let handle = apiserver::ApiServer::start(apiserver::Config::default())
        .await
        .unwrap();
    handle.record_requests(true);
    let pod = |name: &str, ip: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
               "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "x"}]},
               "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                          "conditions": [{"type": "Ready", "status": "True"}]}})
    };
    handle
        .apply_objects(vec![
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}),
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "web", "namespace": "default"},
                   "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
            pod("web-1", "10.0.0.1"),
            pod("web-2", "10.0.0.2"),
        ])
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    let conf = dir.path().join("controller-manager.conf");
    handle.write_kubeconfig(&conf).unwrap();
    for file in ["ca.crt", "ca.key", "front-proxy-ca.crt", "sa.key"] {
        std::fs::write(pki.join(file), "written by the test; never read\n").unwrap();
    }
    let path = |p: &std::path::Path| p.display().to_string();
    let (conf, pki) = (path(&conf), path(&pki));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let args = [
        "--allocate-node-cidrs=true".to_owned(),
        format!("--authentication-kubeconfig={conf}"),
        format!("--authorization-kubeconfig={conf}"),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--client-ca-file={pki}/ca.crt"),
        "--cluster-cidr=10.244.0.0/16".to_owned(),
        "--cluster-name=kubernetes".to_owned(),
        format!("--cluster-signing-cert-file={pki}/ca.crt"),
        format!("--cluster-signing-key-file={pki}/ca.key"),
        "--controllers=*,bootstrapsigner,tokencleaner".to_owned(),
        format!("--kubeconfig={conf}"),
        "--leader-elect=true".to_owned(),
        format!("--requestheader-client-ca-file={pki}/front-proxy-ca.crt"),
        format!("--root-ca-file={pki}/ca.crt"),
        format!("--service-account-private-key-file={pki}/sa.key"),
        "--service-cluster-ip-range=10.96.0.0/12".to_owned(),
        "--use-service-account-credentials=true".to_owned(),
        // Not kubeadm's: a free port instead of 10257, which other tests may hold.
        format!("--secure-port={port}"),
    ];
    let (mut child, log) = spawn_run(&args);
    let client = client_of(&handle).await;
    let slices: kube::Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
        kube::Api::namespaced(client.clone(), "default");
    let endpoints: kube::Api<k8s_openapi::api::core::v1::Endpoints> =
        kube::Api::namespaced(client, "default");
    let deadline = Instant::now() + Duration::from_secs(60);
    let converged = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!(
                "run exited with {status}:\n{}",
                std::fs::read_to_string(log.path()).unwrap()
            );
        }
        let in_slices: usize = slices
            .list(&Default::default())
            .await
            .map(|l| l.items.iter().map(|s| s.endpoints.len()).sum())
            .unwrap_or(0);
        let addresses: usize = endpoints
            .get_opt("web")
            .await
            .ok()
            .flatten()
            .map(|e| {
                e.subsets
                    .iter()
                    .flatten()
                    .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
                    .sum()
            })
            .unwrap_or(0);
        if in_slices == 2 && addresses == 2 {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    drop(child);
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(converged, "not converged in 60s:\n{text}");
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("accepted kube-controller-manager flags"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    for ignored in [
        "--allocate-node-cidrs=true",
        "--cluster-name=kubernetes",
        "--root-ca-file=",
        "--service-cluster-ip-range=10.96.0.0/12",
    ] {
        assert!(warnings[0].contains(ignored), "{ignored}: {}", warnings[0]);
    }
    for acted_on in ["--kubeconfig", "--use-service-account-credentials"] {
        assert!(
            !warnings[0].contains(acted_on),
            "{acted_on}: {}",
            warnings[0]
        );
    }
    // Who wrote what: each controller as its ServiceAccount, the Lease as --kubeconfig's user.
    let writers = |resource: &str| -> std::collections::BTreeSet<Option<String>> {
        handle
            .request_log()
            .into_iter()
            .filter(|r| r.resource == resource && r.is_write() && r.succeeded())
            .map(|r| r.user)
            .collect()
    };
    let sa = |name: &str| Some(format!("system:serviceaccount:kube-system:{name}"));
    assert_eq!(
        writers("endpointslices"),
        [sa("endpointslice-controller")].into()
    );
    assert_eq!(writers("endpoints"), [sa("endpoint-controller")].into());
    assert_eq!(writers("leases"), [None].into());
    assert!(
        warnings[0]
            .contains("client_certificates=\"--client-ca-file --requestheader-client-ca-file\""),
        "{}",
        warnings[0]
    );
    assert!(
        !text.contains("ERROR") && !text.lines().any(|l| l.starts_with('E')),
        "{text}"
    );
    handle.shutdown().await.unwrap();
}

/// `kube-endpoints run` with `args`, its output in a file; killed when dropped.
struct Run(std::process::Child);

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_run(args: &[String]) -> (Run, tempfile::NamedTempFile) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kube-endpoints"))
        .arg("run")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(log.reopen().unwrap())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    (Run(child), log)
}

/// A client of the embedded server.
async fn client_of(handle: &apiserver::ApiServerHandle) -> kube::Client {
    kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::from_yaml(&handle.kubeconfig()).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap()
}

/// Against an API server that reports v1.33 and, like one, refuses streaming lists and
/// `trafficDistribution: PreferSameNode`: `run` lists instead and says so, follows v1.33
/// (read from `/version`, logged), and writes ports in v1.33's MD5 order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_v1_33_server_run_lists_follows_v1_33_and_converges() {
    use k8s_openapi::api::core::v1::Endpoints;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use serde_json::json;
    use std::time::{Duration, Instant};

    let v133 = apiserver::ServerVersion::of(reconcile::KubeVersion::new(1, 33));
    let handle = apiserver::ApiServer::start(apiserver::Config {
        version: v133,
        ..apiserver::Config::default()
    })
    .await
    .unwrap();
    let port = |name: &str, number: u16, target: u16, protocol: &str, app: Option<&str>| {
        json!({"name": name, "port": number, "targetPort": target, "protocol": protocol,
               "appProtocol": app})
    };
    let service = |name: &str, distribution: Option<&str>| {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": "default"},
               "spec": {"selector": {"app": "web"}, "trafficDistribution": distribution,
                        "ports": [port("web", 443, 8443, "TCP", Some("https")),
                                  port("admin", 9000, 9000, "TCP", None),
                                  port("stream", 5000, 5000, "UDP", Some("kubernetes.io/ws"))]}})
    };
    let refused = handle
        .server()
        .load_objects(vec![service("near", Some("PreferSameNode"))]);
    assert_eq!(
        refused.refused.len(),
        1,
        "a v1.33 server refuses PreferSameNode"
    );
    handle
        .apply_objects(vec![
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}),
            service("web", None),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}},
                   "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "x",
                            "ports": [{"containerPort": 8443}, {"containerPort": 9000},
                                      {"containerPort": 5000, "protocol": "UDP"}]}]},
                   "status": {"phase": "Running", "podIP": "10.0.0.1",
                              "podIPs": [{"ip": "10.0.0.1"}],
                              "conditions": [{"type": "Ready", "status": "True"}]}}),
        ])
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kubeconfig");
    handle.write_kubeconfig(&conf).unwrap();
    let (mut child, log) = spawn_run(&[
        format!("--kubeconfig={}", conf.display()),
        "--leader-elect=false".to_owned(),
        "--secure-port=0".to_owned(),
    ]);
    let client = client_of(&handle).await;
    let slices: kube::Api<EndpointSlice> = kube::Api::namespaced(client.clone(), "default");
    let endpoints: kube::Api<Endpoints> = kube::Api::namespaced(client, "default");
    fn names<P>(ports: Option<Vec<P>>, name: fn(P) -> Option<String>) -> Vec<String> {
        let ports = ports.unwrap_or_default().into_iter();
        ports.map(|p| name(p).unwrap_or_default()).collect()
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let (slice_ports, endpoints_ports) = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!(
                "run exited with {status}:\n{}",
                std::fs::read_to_string(log.path()).unwrap()
            );
        }
        let slice_ports: Vec<Vec<String>> = slices
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|s| !s.endpoints.is_empty())
            .map(|s| names(s.ports, |p| p.name))
            .collect();
        let endpoints_ports: Vec<Vec<String>> = endpoints
            .get_opt("web")
            .await
            .ok()
            .flatten()
            .and_then(|e| e.subsets)
            .unwrap_or_default()
            .into_iter()
            .map(|s| names(s.ports, |p| p.name))
            .collect();
        if !slice_ports.is_empty() && !endpoints_ports.is_empty() {
            break (slice_ports, endpoints_ports);
        }
        assert!(
            Instant::now() < deadline,
            "not converged in 60s:\n{}",
            std::fs::read_to_string(log.path()).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    drop(child);
    let text = std::fs::read_to_string(log.path()).unwrap();
    // What kube-controller-manager v1.33.13 wrote for the same ports (the corpus' recording
    // of public-appprotocol-ports).
    assert_eq!(slice_ports, [["stream", "admin", "web"]], "{text}");
    assert_eq!(endpoints_ports, [["web", "admin", "stream"]], "{text}");
    assert!(
        text.contains("writing what kube-controller-manager v1.33 writes"),
        "{text}"
    );
    assert!(
        text.contains("the API server does not serve streaming lists; listing instead"),
        "{text}"
    );
}
