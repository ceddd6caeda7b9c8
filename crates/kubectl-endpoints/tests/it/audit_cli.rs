//! `kubectl-endpoints audit` end to end: an embedded API server holding a recorded case's input
//! and what upstream kube-controller-manager wrote for it, audited over TCP by the binary.

use crate::corpus;
use kubectl_endpoints::conformance::{find_cases, load_case};
use kubectl_endpoints::manifests::to_values;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// The static cases (dynamic ones hold the objects after their steps, not for their input).
fn static_cases() -> Vec<std::path::PathBuf> {
    find_cases(&corpus())
        .expect("corpus present")
        .into_iter()
        .filter(|d| !d.join("steps.yaml").exists())
        .collect()
}

/// A running server of the version that recorded `case`, loaded with its input plus
/// `upstream`'s Endpoints and slices.
async fn cluster_with(
    case: &kubectl_endpoints::conformance::Case,
    upstream: &Value,
    dir: &Path,
) -> (apiserver::ApiServerHandle, std::path::PathBuf) {
    let handle = apiserver::ApiServer::start(apiserver::Config {
        version: apiserver::ServerVersion::of(case.version),
        ..apiserver::Config::default()
    })
    .await
    .unwrap();
    let mut objects = to_values(&case.objects).unwrap();
    let key = |o: &Value, kind: &str| {
        let at = |p: &str| {
            o.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        (
            kind.to_lowercase(),
            at("/metadata/namespace"),
            at("/metadata/name"),
        )
    };
    // Hand-written Endpoints of the input (mirrored by upstream) are recorded again.
    let loaded: std::collections::BTreeSet<_> = objects
        .iter()
        .map(|o| key(o, o["kind"].as_str().unwrap_or("")))
        .collect();
    for kind in ["endpoints", "endpointslices"] {
        for object in upstream[kind].as_array().into_iter().flatten() {
            let name = object.pointer("/metadata/name").and_then(Value::as_str);
            let singular = if kind == "endpoints" {
                "endpoints"
            } else {
                "endpointslice"
            };
            if name == Some("kubernetes") || loaded.contains(&key(object, singular)) {
                continue;
            }
            let mut object = object.clone();
            object["apiVersion"] = Value::from(if kind == "endpoints" {
                "v1"
            } else {
                "discovery.k8s.io/v1"
            });
            object["kind"] = Value::from(if kind == "endpoints" {
                "Endpoints"
            } else {
                "EndpointSlice"
            });
            objects.push(object);
        }
    }
    handle.apply_objects(objects).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    handle.write_kubeconfig(&kubeconfig).unwrap();
    handle.reset_request_counts();
    (handle, kubeconfig)
}

/// Runs `audit` with the flags the case was recorded with (its `flags` file, as written).
async fn audit(kubeconfig: &Path, case_dir: &Path, extra: &[&str]) -> Output {
    let flags = std::fs::read_to_string(case_dir.join("flags")).unwrap_or_default();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-endpoints"));
    command
        .arg("audit")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(flags.split_whitespace())
        .args(extra);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn writes(server: &apiserver::ApiServer) -> u64 {
    server
        .request_counts()
        .iter()
        .filter(|((verb, _), _)| {
            matches!(
                verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
        })
        .map(|(_, n)| n)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_finds_every_service_of_every_case_the_same_and_writes_nothing() {
    let _cpu = crate::shares_cpu().await;
    let dir = tempfile::tempdir().unwrap();
    for case_dir in static_cases() {
        let case = load_case(&case_dir).unwrap();
        let upstream = case.upstream.clone().unwrap();
        let (handle, kubeconfig) = cluster_with(&case, &upstream, dir.path()).await;
        let out = audit(&kubeconfig, &case_dir, &[]).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}\n{}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = stdout.lines().last().unwrap_or_default();
        assert!(
            summary.ends_with(" same, 0 differ (following kube-controller-manager v1.36)")
                && !summary.starts_with("0 services"),
            "{}: {summary}",
            case.name
        );
        assert_eq!(writes(handle.server()), 0, "{}: audit wrote", case.name);
        assert!(
            handle
                .request_counts()
                .keys()
                .any(|(verb, _)| verb == "list"),
            "the audit read the cluster"
        );
        handle.shutdown().await.unwrap();
    }
}

/// The first slice of `upstream` (other than `default/kubernetes`) whose endpoints satisfy
/// `wanted`, and its Service.
fn pick_slice(upstream: &mut Value, wanted: impl Fn(&Value) -> bool) -> (&mut Value, String) {
    let slice = upstream["endpointslices"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| {
            s.pointer("/metadata/labels/kubernetes.io~1service-name")
                .and_then(Value::as_str)
                .is_some_and(|n| n != "kubernetes")
                && s["endpoints"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(&wanted))
        })
        .expect("a slice to perturb");
    let service = format!(
        "{}/{}",
        slice["metadata"]["namespace"].as_str().unwrap(),
        slice
            .pointer("/metadata/labels/kubernetes.io~1service-name")
            .and_then(Value::as_str)
            .unwrap()
    );
    (slice, service)
}

/// Flips the ready condition of the first endpoint that has one; returns its Service and the
/// condition as it was.
fn flip_ready(upstream: &mut Value) -> (String, bool) {
    let (slice, service) = pick_slice(upstream, |e| e["conditions"]["ready"].is_boolean());
    let endpoint = slice["endpoints"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["conditions"]["ready"].is_boolean())
        .unwrap();
    let ready = endpoint["conditions"]["ready"].as_bool().unwrap();
    endpoint["conditions"]["ready"] = Value::from(!ready);
    (service, ready)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_names_exactly_the_service_and_field_that_differ() {
    let _cpu = crate::shares_cpu().await;
    let dir = tempfile::tempdir().unwrap();
    let case_dir = corpus().join("public-random-100");
    let case = load_case(&case_dir).unwrap();
    type Perturb = fn(&mut Value) -> String;
    let perturbations: [(&str, Perturb, &str); 4] = [
        (
            "an endpoint removed",
            |u| {
                let (slice, service) = pick_slice(u, |_| true);
                slice["endpoints"].as_array_mut().unwrap().pop();
                service
            },
            "endpoints",
        ),
        ("a ready flag flipped", |u| flip_ready(u).0, "endpoints"),
        (
            "a hint changed",
            |u| {
                let (slice, service) = pick_slice(u, |e| e.get("hints").is_some());
                let endpoint = slice["endpoints"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|e| e.get("hints").is_some())
                    .unwrap();
                endpoint["hints"] = serde_json::json!({"forZones": [{"name": "nowhere"}]});
                service
            },
            "hint",
        ),
        (
            "a label dropped",
            |u| {
                let (slice, service) = pick_slice(u, |_| true);
                slice["metadata"]["labels"]
                    .as_object_mut()
                    .unwrap()
                    .remove("endpointslice.kubernetes.io/managed-by");
                service
            },
            "EndpointSlices",
        ),
    ];
    for (what, perturb, field) in perturbations {
        let mut upstream = case.upstream.clone().unwrap();
        let service = perturb(&mut upstream);
        let (handle, kubeconfig) = cluster_with(&case, &upstream, dir.path()).await;
        let out = audit(&kubeconfig, &case_dir, &["-o", "json"]).await;
        assert_eq!(out.status.code(), Some(1), "{what}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let differing: Vec<&str> = report["services"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["result"] == "differs")
            .map(|s| s["service"].as_str().unwrap())
            .collect();
        assert_eq!(differing, vec![service.as_str()], "{what}: {report:#}");
        let differences = report["services"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["service"] == service.as_str())
            .unwrap()["differences"]
            .to_string();
        assert!(differences.contains(field), "{what}: {differences}");
        assert_eq!(writes(handle.server()), 0, "{what}: audit wrote");
        handle.shutdown().await.unwrap();
    }
}

/// What v1.34's kube-controller-manager wrote for `public-appprotocol-ports` (ports in MD5
/// order) is the same for an audit following v1.34, the cluster's version, and for one
/// following v1.36, which would not rewrite it for its order alone. What v1.36 wrote
/// (FNV-128a order) differs under v1.34's rules, which would rewrite it, and the audit says
/// so in one line. A changed ready condition differs whatever the version, named in one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_follows_the_clusters_version_and_ignores_orders_it_would_not_rewrite() {
    let _cpu = crate::shares_cpu().await;
    let dir = tempfile::tempdir().unwrap();
    let case_dir = corpus().join("../versions/v1.34/public-appprotocol-ports");
    let case = load_case(&case_dir).unwrap();
    assert_eq!(case.version.to_string(), "v1.34");
    let upstream = case.upstream.clone().unwrap();
    let summary = |out: &Output| {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), format!("{stdout}{stderr}"))
    };

    let (handle, kubeconfig) = cluster_with(&case, &upstream, dir.path()).await;
    let (code, text) = summary(&audit(&kubeconfig, &case_dir, &[]).await);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("(following kube-controller-manager v1.34)"),
        "{text}"
    );
    let (code, text) = summary(&audit(&kubeconfig, &case_dir, &["--emulated-version=1.36"]).await);
    assert_eq!(
        code,
        Some(0),
        "order only, which v1.36 leaves alone: {text}"
    );
    assert!(text.contains("v1.36"), "{text}");
    assert_eq!(writes(handle.server()), 0);
    handle.shutdown().await.unwrap();

    // v1.36's objects, judged by v1.34's rules: its Endpoints would be rewritten.
    let v136_dir = corpus().join("public-appprotocol-ports");
    let v136 = load_case(&v136_dir).unwrap();
    let (handle, kubeconfig) =
        cluster_with(&v136, v136.upstream.as_ref().unwrap(), dir.path()).await;
    let (code, text) = summary(&audit(&kubeconfig, &v136_dir, &["--emulated-version=1.34"]).await);
    assert_eq!(code, Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains(": differs"))
        .unwrap_or_default();
    assert!(
        line.contains("ports in another order, which kube-controller-manager v1.34 rewrites"),
        "{text}"
    );
    handle.shutdown().await.unwrap();

    // A ready condition flipped is a difference under either version's rules.
    let mut flipped = upstream.clone();
    let (service, ready) = flip_ready(&mut flipped);
    let (handle, kubeconfig) = cluster_with(&case, &flipped, dir.path()).await;
    for version in [&[][..], &["--emulated-version=1.36"][..]] {
        let (code, text) = summary(&audit(&kubeconfig, &case_dir, version).await);
        assert_eq!(code, Some(1), "{version:?}: {text}");
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{service}: differs")))
            .unwrap_or_default();
        assert!(
            line.contains(&format!(
                "conditions.ready {ready} in the plan, {} in the cluster",
                !ready
            )),
            "{version:?}: {text}"
        );
    }
    handle.shutdown().await.unwrap();
}

fn only_reads(server: &apiserver::ApiServer) -> Vec<String> {
    server
        .request_counts()
        .keys()
        .filter(|(verb, _)| !matches!(verb.as_str(), "get" | "list" | "watch"))
        .map(|(verb, resource)| format!("{verb} {resource}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_live_agrees_with_upstream_and_only_reads() {
    let _cpu = crate::shares_cpu().await;
    use kubectl_endpoints::explain::{corpus::disagreements, explain, Source};
    use kubectl_endpoints::snapshot::Snapshot;
    let dir = tempfile::tempdir().unwrap();
    let mut explained = 0;
    for case_dir in static_cases() {
        let case = load_case(&case_dir).unwrap();
        let upstream = case.upstream.clone().unwrap();
        let (handle, kubeconfig) = cluster_with(&case, &upstream, dir.path()).await;
        // Over HTTP, through the kube client, as `explain --kubeconfig` reads a cluster.
        let client = controller::client::build_client(&controller::client::ClientSettings {
            kubeconfig: Some(kubeconfig.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
        let snapshot = Snapshot::read(&client, None).await.unwrap();
        let keys = snapshot.service_keys();
        let explanations = explain(&snapshot, Source::Cluster, &keys, &case.flags.output)
            .await
            .unwrap();
        let lines = disagreements(&explanations, &upstream);
        assert!(lines.is_empty(), "{}:\n{}", case.name, lines.join("\n"));
        // The cluster holds upstream's objects, which are what ours would write.
        for e in &explanations {
            assert_eq!(
                e.as_written,
                Some(true),
                "{} {}: {:?}",
                case.name,
                e.service,
                e.differences
            );
            assert!(
                e.pods.iter().all(|p| p.as_written == Some(true)),
                "{}",
                e.service
            );
        }
        explained += explanations.len();

        // The binary, for one Service, the way a user runs it.
        let service = keys.iter().find(|k| !k.ends_with("/kubernetes")).unwrap();
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-endpoints"));
        command
            .args(["explain", service, "-o", "json", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(
                std::fs::read_to_string(case_dir.join("flags"))
                    .unwrap_or_default()
                    .split_whitespace(),
            );
        let out = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        let ready = report["readyEndpoints"].as_u64().unwrap();
        assert_eq!(out.status.code(), Some(if ready > 0 { 0 } else { 3 }));
        assert_eq!(report["service"], service.as_str());

        assert_eq!(
            only_reads(handle.server()),
            Vec::<String>::new(),
            "{}",
            case.name
        );
        handle.shutdown().await.unwrap();
    }
    assert!(explained >= 12, "{explained}");
}
