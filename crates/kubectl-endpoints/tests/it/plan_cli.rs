//! `kubectl-endpoints plan` end to end: manifests in, the planned writes and objects out.

use crate::cli;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use testkit::process::{required, run, Outcome};
use testkit::{node, pod, service, PodBuilder};

fn nodes() -> Vec<Value> {
    ["a", "b", "c"]
        .iter()
        .map(|z| {
            node(&format!("node-{z}"))
                .zone(&format!("zone-{z}"))
                .manifest()
        })
        .collect()
}

/// The `web` Service: `app=web`, one unnamed port 80.
fn web_service() -> Value {
    service("web")
        .selector("app", "web")
        .unnamed_port(80)
        .manifest()
}

/// The `web` Service with port `http` 80 targeting the container port named `http`.
fn web_service_to_named_port() -> Value {
    service("web")
        .selector("app", "web")
        .named_port("http", 80, "http")
        .manifest()
}

/// A ready pod of `web` on `node-a`.
fn web_pod(name: &str, ip: &str) -> PodBuilder {
    testkit::web_pod(name, ip).node("node-a")
}

/// `count` ready pods of `web` on `node-a` (`web-0`, `web-1`...), 200 to a /24 from 10.1.0.0.
fn web_pods(count: usize) -> impl Iterator<Item = PodBuilder> {
    (0..count).map(|i| {
        web_pod(
            &format!("web-{i}"),
            &format!("10.1.{}.{}", i / 200, i % 200),
        )
    })
}

/// Three zoned nodes, the `web` Service and its ready pod `a` at 10.0.0.1.
fn web_with_pod_a() -> Vec<Value> {
    let mut docs = nodes();
    docs.push(web_service());
    docs.push(web_pod("a", "10.0.0.1").manifest());
    docs
}

/// A selector-less Service `ext` with hand-written Endpoints holding `ips` on its port, for
/// the mirroring controller, beside the three zoned nodes.
fn selectorless_ext(ips: &[&str]) -> Vec<Value> {
    let addresses: Vec<Value> = ips.iter().map(|ip| json!({ "ip": ip })).collect();
    let mut docs = nodes();
    docs.push(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "ext", "namespace": "default"},
        "spec": {"ports": [{"name": "db", "port": 5432}]}}));
    docs.push(json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "ext", "namespace": "default"},
        "subsets": [{"addresses": addresses, "ports": [{"name": "db", "port": 5432}]}]}));
    docs
}

/// `plan` on `docs`, as JSON, with `args` after the file: the run and its parsed output
/// (null when stdout is not JSON).
fn plan(args: &[&str], docs: &[Value]) -> (Outcome, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    let text: String = docs.iter().map(|d| format!("---\n{d}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let run = run_plan(&[&["-f", path.to_str().unwrap(), "-o", "json"], args].concat());
    let value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    (run, value)
}

/// `plan` on one file `bad.yaml` holding `text` as written, with the default output.
fn plan_text(text: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, text).unwrap();
    run_plan(&["-f", path.to_str().unwrap()])
}

/// `kubectl-endpoints plan ARGS` on the fixed clock the tests compare names under.
fn run_plan(args: &[&str]) -> Outcome {
    run(cli()
        .arg("plan")
        .args(args)
        .args(["--now", "2026-01-01T00:00:00Z"]))
}

/// The items of the list `v[list]` (`objects`, `actions` or `events`), in order.
fn items<'a>(v: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    v[list].as_array().unwrap().iter()
}

/// The string `field` of each item of the list `v[list]`, in order.
fn each<'a>(v: &'a Value, list: &str, field: &str) -> Vec<&'a str> {
    items(v, list).map(|i| i[field].as_str().unwrap()).collect()
}

/// The (`first`, `second`) fields of each of the run's actions, in send order.
fn actions<'a>(v: &'a Value, first: &str, second: &str) -> Vec<(&'a str, &'a str)> {
    each(v, "actions", first)
        .into_iter()
        .zip(each(v, "actions", second))
        .collect()
}

fn slices(v: &Value) -> Vec<&Value> {
    items(v, "objects")
        .filter(|o| o["kind"] == "EndpointSlice")
        .collect()
}

fn sizes(v: &Value, service: &str) -> Vec<usize> {
    let mut s: Vec<usize> = slices(v)
        .into_iter()
        .filter(|o| o["metadata"]["labels"]["kubernetes.io/service-name"] == service)
        .map(|o| o["endpoints"].as_array().map_or(0, Vec::len))
        .collect();
    s.sort();
    s
}

#[test]
fn two_hundred_fifty_pods_make_slices_of_100_100_and_50() {
    let mut docs = nodes();
    docs.push(web_service_to_named_port());
    docs.extend(web_pods(250).map(|p| p.container_port("http", 8080).manifest()));
    let (run, v) = plan(&[], &docs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(sizes(&v, "web"), vec![50, 100, 100]);
    // Actions come in send order with the generated name and the object sent.
    let creates: Vec<&Value> = items(&v, "actions")
        .filter(|a| a["kind"] == "EndpointSlice")
        .collect();
    assert_eq!(creates.len(), 3);
    assert!(creates
        .iter()
        .all(|a| a["verb"] == "create" && a["name"].as_str().unwrap().starts_with("web-")));
    assert_eq!(slices(&v)[0]["apiVersion"], "discovery.k8s.io/v1");
}

#[test]
fn max_endpoints_per_slice_flag_changes_the_packing() {
    let mut docs = nodes();
    docs.push(web_service());
    docs.extend(web_pods(250).map(|p| p.manifest()));
    let (_, v) = plan(&["--max-endpoints-per-slice", "80"], &docs);
    assert_eq!(sizes(&v, "web"), vec![10, 80, 80, 80]);
    // Out of range is a usage error, as it is for `run`.
    let (run, _) = plan(&["--max-endpoints-per-slice", "1001"], &docs);
    run.assert_exit(2, &["--max-endpoints-per-slice"]);
}

#[test]
fn service_without_pods_gets_a_placeholder_slice() {
    let mut docs = nodes();
    docs.push(
        service("empty")
            .selector("app", "empty")
            .unnamed_port(80)
            .manifest(),
    );
    let (_, v) = plan(&[], &docs);
    let s = slices(&v);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["endpoints"], json!([]));
    assert!(s[0].get("ports").is_none());
}

#[test]
fn named_port_resolving_to_different_numbers_gives_one_slice_per_group() {
    let mut docs = nodes();
    docs.push(web_service_to_named_port());
    docs.push(
        web_pod("a", "10.0.0.1")
            .container_port("http", 8080)
            .manifest(),
    );
    docs.push(
        web_pod("b", "10.0.0.2")
            .container_port("http", 8081)
            .manifest(),
    );
    let (_, v) = plan(&[], &docs);
    let mut ports: Vec<i64> = slices(&v)
        .iter()
        .map(|s| s["ports"][0]["port"].as_i64().unwrap())
        .collect();
    ports.sort();
    assert_eq!(ports, vec![8080, 8081]);
}

#[test]
fn dual_stack_service_gets_a_slice_per_family_in_canonical_form() {
    let mut docs = nodes();
    docs.push(
        service("api")
            .selector("app", "api")
            .dual_stack()
            .unnamed_port(80)
            .manifest(),
    );
    docs.push(
        pod("a")
            .label("app", "api")
            .node("node-a")
            .ip("10.0.0.1")
            .ip("FD00:0:0:0::0A")
            .ready(true)
            .manifest(),
    );
    let (_, v) = plan(&[], &docs);
    let s = slices(&v);
    let by_type: Vec<(String, String)> = s
        .iter()
        .map(|s| {
            (
                s["addressType"].as_str().unwrap().to_owned(),
                s["endpoints"][0]["addresses"][0]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert!(by_type.contains(&("IPv4".into(), "10.0.0.1".into())));
    assert!(by_type.contains(&("IPv6".into(), "fd00::a".into())));
}

#[test]
fn headless_label_and_reserved_service_labels() {
    let mut docs = nodes();
    let mut svc = service("db").selector("app", "db").headless().manifest();
    svc["metadata"]["labels"] = json!({"team": "data", "kubernetes.io/service-name": "spoofed", "endpointslice.kubernetes.io/managed-by": "me"});
    docs.push(svc);
    docs.push(
        pod("db-0")
            .label("app", "db")
            .node("node-a")
            .ip("10.0.0.1")
            .ready(true)
            .manifest(),
    );
    let (_, v) = plan(&[], &docs);
    let labels = &slices(&v)[0]["metadata"]["labels"];
    assert_eq!(labels["service.kubernetes.io/headless"], "");
    assert_eq!(labels["kubernetes.io/service-name"], "db");
    assert_eq!(
        labels["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(labels["team"], "data");
}

#[test]
fn terminating_pods_are_serving_terminating_and_not_ready() {
    let mut docs = nodes();
    docs.push(web_service());
    let mut p = web_pod("a", "10.0.0.1").manifest();
    p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    docs.push(p);
    let (_, v) = plan(&[], &docs);
    assert_eq!(
        slices(&v)[0]["endpoints"][0]["conditions"],
        json!({"ready": false, "serving": true, "terminating": true})
    );
    // The Endpoints controller leaves terminating pods out.
    let ep = items(&v, "objects")
        .find(|o| o["kind"] == "Endpoints")
        .unwrap();
    assert!(ep.get("subsets").is_none());
}

#[test]
fn existing_slices_are_partly_reused_by_updates() {
    let mut docs = nodes();
    docs.push(web_service());
    for i in 0..5 {
        docs.push(web_pod(&format!("web-{i}"), &format!("10.0.0.{i}")).manifest());
    }
    // First plan, then feed its objects back with one pod gone and one new.
    let (_, first) = plan(&[], &docs);
    let mut state: Vec<Value> = docs
        .iter()
        .filter(|d| d["metadata"]["name"] != "web-0")
        .cloned()
        .collect();
    state.push(web_pod("web-9", "10.0.0.9").manifest());
    state.extend(first["objects"].as_array().unwrap().iter().cloned());
    let (run, second) = plan(&[], &state);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        actions(&second, "kind", "verb"),
        [("Endpoints", "update"), ("EndpointSlice", "update")]
    );
    assert_eq!(sizes(&second, "web"), vec![5]);
}

#[test]
fn endpoints_writes_appear_beside_slice_writes_and_controllers_can_be_chosen() {
    let docs = web_with_pod_a();
    let (_, v) = plan(&[], &docs);
    assert_eq!(each(&v, "actions", "kind"), ["Endpoints", "EndpointSlice"]);
    let (_, only) = plan(&["--controllers", "endpointslice"], &docs);
    assert!(items(&only, "objects").all(|o| o["kind"] == "EndpointSlice"));
    let (run, _) = plan(&["--controllers", "nodes"], &docs);
    assert_eq!(run.code, Some(1));
}

#[test]
fn generated_names_are_the_same_for_the_same_input() {
    let docs = web_with_pod_a();
    let (a, _) = plan(&[], &docs);
    let (b, _) = plan(&[], &docs);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn bad_documents_are_reported_with_file_and_number_and_nothing_on_stdout() {
    let run = plan_text("apiVersion: v1\nkind: Service\nmetadata: {name: ok, namespace: default}\n---\nkind: Pod\nmetadata: {namespace: x}\n");
    run.assert_exit(1, &["bad.yaml: document 2: Pod without metadata.name"]);
    assert!(run.stdout.is_empty());
    plan_text("kind: [unclosed\n").assert_exit(1, &["bad.yaml: document 1:"]);
    run_plan(&["-f", "/nonexistent/manifests"]).assert_exit(1, &["/nonexistent/manifests"]);
}

#[test]
fn other_kinds_are_noted_and_objects_the_api_server_refuses_are_skipped_with_a_warning() {
    let mut docs = nodes();
    docs.push(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}));
    docs.push(web_service());
    docs.push(web_pod("bad", "10.0.0.999").manifest());
    docs.push(web_pod("good", "10.0.0.1").manifest());
    let (run, v) = plan(&[], &docs);
    run.assert_exit(
        0,
        &[
            "kind Deployment skipped",
            "refuses it: loading Pod default/bad failed",
            "status.podIPs[0]",
        ],
    );
    assert_eq!(sizes(&v, "web"), vec![1]);
}

#[test]
fn yaml_output_is_a_stream_of_objects_with_a_summary_on_stderr() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let run = run_plan(&["-f", examples.to_str().unwrap()]);
    run.assert_exit(0, &["shop/web: ", "TopologyAwareHintsEnabled"]);
    assert!(run.stdout.starts_with("---\n"));
    assert!(run.stdout.contains("kind: EndpointSlice"));
}

#[test]
fn examples_plan_as_json_with_topology_hints() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let run = run_plan(&["-f", examples.to_str().unwrap(), "-o", "json"]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let web = slices(&v)
        .into_iter()
        .find(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == "web")
        .unwrap();
    assert!(web["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["hints"]["forZones"].is_array()));
    let event = items(&v, "events")
        .find(|e| e["reason"] == "TopologyAwareHintsEnabled")
        .unwrap();
    assert_eq!(event["involvedObject"]["kind"], "Service");
    assert_eq!(event["type"], "Normal");
}

#[test]
fn hand_written_endpoints_of_a_selectorless_service_are_planned_as_a_mirrored_slice() {
    let docs = selectorless_ext(&["192.168.0.10", "192.168.0.11"]);
    let (run, v) = plan(&[], &docs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let mirrored: Vec<&Value> = slices(&v)
        .into_iter()
        .filter(|s| {
            s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
                == "endpointslicemirroring-controller.k8s.io"
        })
        .collect();
    assert_eq!(mirrored.len(), 1, "{v:#}");
    assert_eq!(sizes(&v, "ext"), [2]);
    let creates = items(&v, "actions")
        .filter(|a| a["kind"] == "EndpointSlice" && a["verb"] == "create")
        .count();
    assert_eq!(creates, 1);
}

#[test]
fn preexisting_slices_owned_by_their_service_through_the_input_uid_are_updated_in_place() {
    // A cluster dump: the Service's uid is the old cluster's, and its slice's owner reference
    // points at it. The server assigns a new uid; the loader must carry the reference over,
    // or the slice would be an orphan to delete and recreate.
    let old_uid = "0b7c6a52-5a1e-4d5e-9a43-2f1c9a6b0001";
    let mut docs = nodes();
    let mut svc = service("web")
        .selector("app", "web")
        .port("http", 80, 8080)
        .manifest();
    svc["metadata"]["uid"] = json!(old_uid);
    docs.push(svc);
    docs.push(web_pod("web-0", "10.0.0.1").manifest());
    docs.push(web_pod("web-1", "10.0.0.2").manifest());
    docs.push(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-old12", "namespace": "default",
            "labels": {"kubernetes.io/service-name": "web",
                       "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                 "uid": old_uid, "controller": true, "blockOwnerDeletion": true}]},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]
    }));
    let (run, v) = plan(&["--controllers", "endpointslice"], &docs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        actions(&v, "verb", "name"),
        [("update", "web-old12")],
        "{v:#}"
    );
    assert_eq!(sizes(&v, "web"), vec![2]);
}

#[test]
fn plan_takes_the_mirroring_flags_and_caps_each_subset() {
    let docs = selectorless_ext(&["192.168.0.10", "192.168.0.11", "192.168.0.12"]);
    let (run, v) = plan(
        &[
            "--mirroring-max-endpoints-per-subset=2",
            "--mirroring-concurrent-service-endpoint-syncs=3",
            "--mirroring-endpointslice-updates-batch-period=1s",
            "--controllers=*,-endpoint",
        ],
        &docs,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(sizes(&v, "ext"), [2]);
    assert_eq!(
        each(&v, "events", "reason"),
        ["TooManyAddressesToMirror"],
        "{v:#}"
    );

    let (run, _) = plan(&["--mirroring-max-endpoints-per-subset=0"], &docs);
    assert_ne!(run.code, Some(0));
    run.assert_stderr_has(&["--mirroring-max-endpoints-per-subset"]);
}

/// On a user's PATH the binary is a kubectl plugin: `kubectl endpoints plan` runs it. Needs
/// kubectl (scripts/install-test-deps.sh installs Debian's); under CI=true it must be there.
#[test]
fn kubectl_runs_plan_as_the_endpoints_plugin() {
    if !required("kubectl", "kubernetes-client") {
        return;
    }
    // The binary's directory first on PATH, where kubectl looks for plugins.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-endpoints")).parent();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = bin_dir.map(Path::to_owned).into_iter();
    let path = std::env::join_paths(dirs.chain(std::env::split_paths(&path))).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    // `kubectl endpoints ARGS -f examples/`: what it prints, as JSON.
    let kubectl = |args: &[&str]| -> Value {
        let stdout = run(Command::new("kubectl")
            .env("PATH", &path)
            .arg("endpoints")
            .args(args)
            .arg("-f")
            .arg(&examples))
        .succeeded();
        serde_json::from_str(&stdout).unwrap()
    };
    let v = kubectl(&["plan", "-o", "json", "--now", "2026-01-01T00:00:00Z"]);
    assert!(!slices(&v).is_empty(), "{v:#}");
    let v = kubectl(&["explain", "web", "-n", "shop", "-o", "json"]);
    assert_eq!(v["service"], "shop/web");
}

/// `explain` on the worked example of docs/explain.md: the answer the docs show, and its exit
/// codes (0 with a ready endpoint, 3 without, 2 on a usage error, 1 on another error).
#[test]
fn explain_answers_the_docs_example_and_exits_by_its_codes() {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/explain-checkout.yaml");
    let explain = |args: &[&str]| run(cli().arg("explain").args(args).arg("-f").arg(&example));
    let out = explain(&["shop/checkout"]);
    assert_eq!(out.code, Some(3), "{}", out.stderr);
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/explain.md"),
    )
    .unwrap();
    assert!(
        docs.contains(out.stdout.trim_end()),
        "docs/explain.md does not show explain's answer for its example; it is now:\n{}",
        out.stdout
    );
    let out = explain(&["checkout", "-n", "shop", "-o", "json"]);
    assert_eq!(out.code, Some(3));
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let verdicts: Vec<(&str, &str, &Value)> = items(&v, "pods")
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["verdict"].as_str().unwrap(),
                &p["ready"],
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            (
                "checkout-7d9f-abcde",
                "not-ready endpoint",
                &Value::from(false)
            ),
            (
                "checkout-7d9f-fghij",
                "port does not resolve",
                &Value::from(true)
            ),
            ("checkout-canary", "selector does not match", &Value::Null),
        ]
    );
    explain(&["shop/chekout"]).assert_exit(
        1,
        &["Service shop/chekout not found; did you mean shop/checkout?"],
    );
    explain(&["shop/checkout", "-n", "other"]).assert_exit(2, &["-n says"]);
    assert_eq!(explain(&["shop/checkout", "--no-such-flag"]).code, Some(2));
    // A form -o does not know: the flag and the forms it takes are named.
    explain(&["shop/checkout", "-o", "table"]).assert_exit(
        2,
        &[
            "invalid value 'table' for '--output <OUTPUT>'",
            "[possible values: wide, yaml, json, text]",
        ],
    );
}
