//! The manifests in `deploy/` are what Kubernetes accepts: each parses into its typed
//! k8s-openapi struct with no field dropped (a misspelt or misplaced field would be ignored
//! by a lenient parse and silently lost on the cluster), the kustomization lists every
//! file, and, where kubectl is installed, `kubectl kustomize deploy/` renders them.
//!
//! Unknown fields are found by round trip: parse into the typed struct, serialise it back,
//! and compare with the document as written. Anything the struct does not know is missing
//! on the way back.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use testkit::process::{on_path, run};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn read_yaml(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The files `kustomization.yaml` lists as resources.
fn kustomized_files() -> Vec<String> {
    let kustomization = read_yaml(&deploy_dir().join("kustomization.yaml"));
    kustomization["resources"]
        .as_array()
        .expect("a resources list")
        .iter()
        .map(|v| v.as_str().expect("a file name").to_owned())
        .collect()
}

/// Where `written` and `typed` differ, as JSON paths with both values.
fn differences(path: &str, written: &Value, typed: &Value, out: &mut Vec<String>) {
    match (written, typed) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<_> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let (x, y) = (a.get(key), b.get(key));
                match (x, y) {
                    (Some(x), Some(y)) => differences(&format!("{path}.{key}"), x, y, out),
                    (Some(_), None) => out.push(format!("{path}.{key}: unknown field, dropped")),
                    (None, Some(y)) => out.push(format!("{path}.{key}: added as {y}")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ if written == typed => {}
        _ => out.push(format!("{path}: written {written}, read back {typed}")),
    }
}

/// Parses `value` as `T` and returns what the round trip lost or changed.
fn round_trip<T: DeserializeOwned + Serialize>(value: &Value) -> Result<Vec<String>, String> {
    let typed: T = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    differences("", value, &back, &mut out);
    Ok(out)
}

/// Checks one document against the struct its `apiVersion` and `kind` name.
fn check(value: &Value) -> Result<Vec<String>, String> {
    let api_version = value["apiVersion"].as_str().unwrap_or_default();
    let kind = value["kind"].as_str().unwrap_or_default();
    match (api_version, kind) {
        ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(value),
        ("v1", "Service") => round_trip::<Service>(value),
        ("apps/v1", "Deployment") => round_trip::<Deployment>(value),
        ("policy/v1", "PodDisruptionBudget") => round_trip::<PodDisruptionBudget>(value),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<ClusterRole>(value),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            round_trip::<ClusterRoleBinding>(value)
        }
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(value),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<RoleBinding>(value),
        other => Err(format!("no typed struct for {other:?}")),
    }
}

#[test]
fn every_manifest_parses_into_its_typed_struct_without_dropping_a_field() {
    let files = kustomized_files();
    assert!(!files.is_empty());
    for file in &files {
        let value = read_yaml(&deploy_dir().join(file));
        match check(&value) {
            Ok(lost) => assert!(lost.is_empty(), "{file}:\n{}", lost.join("\n")),
            Err(e) => panic!("{file}: {e}"),
        }
    }
}

#[test]
fn a_misspelt_or_misplaced_field_is_reported() {
    let mut deployment = read_yaml(&deploy_dir().join("deployment.yaml"));
    deployment["spec"]["replica"] = Value::from(3);
    deployment["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFilesystem"] =
        Value::from(true);
    let lost = check(&deployment).expect("still a Deployment");
    assert!(
        lost.contains(&".spec.replica: unknown field, dropped".to_owned()),
        "{lost:?}"
    );
    assert!(
        lost.iter()
            .any(|l| l.starts_with(".spec.template.spec.containers[0].readOnlyRootFilesystem")),
        "{lost:?}"
    );
    assert!(check(&serde_json::json!({"apiVersion": "v1", "kind": "Secret"})).is_err());
}

#[test]
fn the_kustomization_lists_every_manifest_in_deploy() {
    let listed: BTreeSet<String> = kustomized_files().into_iter().collect();
    let present: BTreeSet<String> = std::fs::read_dir(deploy_dir())
        .expect("reading deploy/")
        .map(|entry| entry.expect("a directory entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") && name != "kustomization.yaml")
        .collect();
    assert_eq!(listed, present);
}

#[test]
fn the_deployment_runs_locked_down_with_leader_election_and_probes() {
    let deployment: Deployment =
        serde_json::from_value(read_yaml(&deploy_dir().join("deployment.yaml"))).unwrap();
    let spec = deployment.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    let pod = spec.template.spec.unwrap();
    let pod_security = pod.security_context.unwrap();
    assert_eq!(pod_security.run_as_non_root, Some(true));
    let container = &pod.containers[0];
    let has_arg = |arg: &str| container.args.iter().flatten().any(|a| a == arg);
    assert!(has_arg("--leader-elect=true"));
    let security = container.security_context.clone().unwrap();
    assert_eq!(security.allow_privilege_escalation, Some(false));
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(
        security.capabilities.unwrap().drop,
        Some(vec!["ALL".to_owned()])
    );
    assert_eq!(
        security.seccomp_profile.map(|p| p.type_),
        Some("RuntimeDefault".to_owned())
    );
    let path = |probe: &Option<k8s_openapi::api::core::v1::Probe>| {
        probe
            .as_ref()
            .and_then(|p| p.http_get.as_ref())
            .and_then(|h| h.path.clone())
    };
    assert_eq!(path(&container.liveness_probe).as_deref(), Some("/healthz"));
    assert_eq!(path(&container.readiness_probe).as_deref(), Some("/readyz"));
    // The probes reach the secure port, where the health paths need no token.
    for probe in [&container.liveness_probe, &container.readiness_probe] {
        let http = probe.as_ref().and_then(|p| p.http_get.as_ref()).unwrap();
        assert_eq!(http.scheme.as_deref(), Some("HTTPS"));
        assert_eq!(
            http.port,
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("metrics".into())
        );
    }
    let metrics_port = container
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some("metrics"))
        .unwrap();
    assert_eq!(metrics_port.container_port, 10257);
    assert!(has_arg("--secure-port=10257"));
    let resources = container.resources.clone().unwrap();
    assert!(resources.requests.unwrap().contains_key("memory"));
    assert!(resources.limits.unwrap().contains_key("memory"));
}

/// `kubectl kustomize DIR`'s documents, or `None` (the test is skipped) without kubectl.
fn kustomize(dir: &Path) -> Option<Vec<Value>> {
    if !on_path("kubectl") {
        println!("skipping: kubectl is not on PATH (scripts/install-test-deps.sh installs it)");
        return None;
    }
    let rendered = run(Command::new("kubectl").arg("kustomize").arg(dir)).succeeded();
    Some(
        rendered
            .split("\n---\n")
            .map(|doc| serde_norway::from_str::<Value>(doc).expect("a rendered document"))
            .collect(),
    )
}

#[test]
fn kubectl_kustomize_renders_every_object() {
    let Some(rendered) = kustomize(&deploy_dir()) else {
        return;
    };
    // Each object as `kind/name`.
    let kind_and_name = |v: &Value| {
        format!(
            "{}/{}",
            v["kind"].as_str().unwrap_or_default(),
            v["metadata"]["name"].as_str().unwrap_or_default()
        )
    };
    let kinds: BTreeSet<String> = rendered.iter().map(kind_and_name).collect();
    let expected: BTreeSet<String> = kustomized_files()
        .iter()
        .map(|f| kind_and_name(&read_yaml(&deploy_dir().join(f))))
        .collect();
    assert_eq!(kinds, expected);
}

/// The service-account-credentials overlay renders with kubectl as `rbac.rs` reads it:
/// deploy/'s objects, the ClusterRole's rules replaced by the overlay's, the Role for the
/// controllers' tokens, and the flag on the container.
#[test]
fn the_service_account_credentials_overlay_renders_as_the_rbac_test_reads_it() {
    let overlay = deploy_dir().join("../overlays/service-account-credentials");
    let Some(rendered) = kustomize(&overlay) else {
        return;
    };
    let find = |kind: &str, name: &str| {
        rendered
            .iter()
            .find(|v| v["kind"] == kind && v["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind}/{name} rendered"))
    };
    let patch = read_yaml(&overlay.join("clusterrole.yaml"));
    assert_eq!(
        find("ClusterRole", "kube-endpoints")["rules"],
        patch["rules"]
    );
    let role = read_yaml(&overlay.join("role.yaml"));
    assert_eq!(
        find("Role", "kube-endpoints-credentials")["rules"],
        role["rules"]
    );
    find("RoleBinding", "kube-endpoints-credentials");
    find("Role", "kube-endpoints-leader-election");
    let args =
        &find("Deployment", "kube-endpoints")["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--use-service-account-credentials=true"),
        "{args}"
    );
    assert_eq!(rendered.len(), kustomized_files().len() + 2);
}
