//! The table, checked against golden files through [`render`], the function the command
//! calls, on a scenario with one pod of each kind a reader looks for.
//!
//! The golden files are `src/explain/testdata/*.txt`. After a deliberate change to the
//! table, rewrite them with
//! `UPDATE_GOLDEN=1 cargo test -p kubectl-endpoints --lib explain::table`
//! and read the diff before committing it.

use crate::explain::{explain, find_service, render, Explanation, Output, Source};
use crate::manifests::{load_paths, Object};
use crate::snapshot::Snapshot;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/explain/testdata")
        .join(name)
}

/// The objects of `testdata/shop-web.yaml`, read as `explain -f` reads them.
fn scenario() -> Vec<Object> {
    load_paths(&[testdata("shop-web.yaml")]).unwrap().objects
}

/// Explains `shop/web` among `objects`, as the command does.
async fn explain_shop_web(objects: Vec<Object>) -> Explanation {
    let snapshot = Snapshot::from_objects(objects);
    find_service(&snapshot, "shop/web").unwrap();
    let flags = kube_endpoints::flags::CaseFlags::default().output;
    let mut all = explain(
        &snapshot,
        Source::Manifests,
        &["shop/web".to_owned()],
        &flags,
    )
    .await
    .unwrap();
    all.pop().unwrap()
}

/// Fails unless `actual` is the golden file `name`; with `UPDATE_GOLDEN=1` in the
/// environment, writes `actual` to it instead.
fn assert_golden(name: &str, actual: &str) {
    let path = testdata(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; UPDATE_GOLDEN=1 writes it", path.display()));
    assert!(
        golden == actual,
        "the output differs from {} (UPDATE_GOLDEN=1 rewrites it):\n--- golden\n{golden}\n--- now\n{actual}",
        path.display()
    );
}

/// The line of the table that starts with the pod `name`.
fn line_of<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{table}"))
}

#[tokio::test]
async fn the_default_table_gives_each_pod_one_line_with_its_reason() {
    let e = explain_shop_web(scenario()).await;
    let table = render(&e, Output::Table).unwrap();
    assert_golden("shop-web.txt", &table);

    // What the golden file must keep saying, whatever else changes in it.
    let header = table.lines().find(|l| l.starts_with("NAME")).unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "IP", "NODE", "ENDPOINT", "REASON"]
    );
    let not_ready = line_of(&table, "web-not-ready");
    assert!(
        not_ready.contains(" not ready ")
            && not_ready.ends_with(
                "Ready=False (ContainersNotReady): containers with unready status: [app], \
                 since 2026-11-24T09:12:00Z"
            ),
        "{not_ready}"
    );
    assert!(line_of(&table, "web-ready").contains(" ready "));
    assert!(line_of(&table, "web-terminating").contains(" terminating "));
    let portless = line_of(&table, "web-portless");
    assert!(
        portless.contains("port http does not resolve"),
        "{portless}"
    );
    let canary = line_of(&table, "web-canary");
    assert!(
        canary.contains(" no ")
            && canary.ends_with("label app=other does not match selector app=web"),
        "{canary}"
    );
    assert!(line_of(&table, "web-pending").ends_with("not scheduled yet"));
    // One line per pod, whatever its reason says.
    let pods = table.lines().filter(|l| l.starts_with("web-")).count();
    assert_eq!(pods, e.pods.len());
}

#[tokio::test]
async fn the_wide_table_adds_the_slice_the_endpoints_placement_the_zone_and_the_hints() {
    let e = explain_shop_web(scenario()).await;
    let wide = render(&e, Output::Wide).unwrap();
    assert_golden("shop-web-wide.txt", &wide);
    let header = wide.lines().find(|l| l.starts_with("NAME")).unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "NAME",
            "IP",
            "NODE",
            "ENDPOINT",
            "SLICE",
            "ENDPOINTS",
            "ZONE",
            "HINTS",
            "REASON"
        ]
    );
    let cells = |name: &str| -> Vec<&str> {
        line_of(&wide, name)
            .split("   ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    };
    // The manifests hold no slice: the controllers would write every endpoint anew.
    assert_eq!(
        cells("web-ready")[3..7],
        ["ready", "<pending>", "addresses", "zone-a"]
    );
    assert_eq!(cells("web-not-ready")[5], "notReadyAddresses");
    assert_eq!(cells("web-terminating")[5], "-");
    assert_eq!(cells("web-canary")[3..7], ["no", "<none>", "-", "<none>"]);
}

#[tokio::test]
async fn the_wide_table_names_the_slice_that_holds_the_pod_now() {
    let mut objects = scenario();
    objects.push(Object::EndpointSlice(
        serde_json::from_value(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "name": "web-x7k2p", "namespace": "shop",
                "labels": {
                    "kubernetes.io/service-name": "web",
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"
                }
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{
                "addresses": ["10.244.0.10"], "conditions": {"ready": true},
                "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-ready"}
            }]
        }))
        .unwrap(),
    ));
    let e = explain_shop_web(objects).await;
    let wide = render(&e, Output::Wide).unwrap();
    assert!(
        line_of(&wide, "web-ready").contains("   web-x7k2p   "),
        "{wide}"
    );
    // The not-ready pod's endpoint is in no slice the cluster holds yet.
    assert!(
        line_of(&wide, "web-not-ready").contains("   <pending>   "),
        "{wide}"
    );
    // What the cluster holds is compared after the pods.
    assert!(
        wide.contains("\nCompared:") && wide.contains("the cluster differs"),
        "{wide}"
    );
}

#[tokio::test]
async fn yaml_and_json_carry_the_whole_explanation_and_parse_back() {
    let e = explain_shop_web(scenario()).await;
    let record = serde_json::to_value(&e).unwrap();
    let from_json: Value = serde_json::from_str(&render(&e, Output::Json).unwrap()).unwrap();
    assert_eq!(from_json, record);
    let from_yaml: Value = serde_norway::from_str(&render(&e, Output::Yaml).unwrap()).unwrap();
    assert_eq!(from_yaml, record);
    // The full record: every pod with its verdict and particulars, not the table's cells.
    let not_ready = record["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "web-not-ready")
        .unwrap();
    assert_eq!(not_ready["verdict"], "not-ready endpoint");
    assert_eq!(not_ready["readyCondition"]["since"], "2026-11-24T09:12:00Z");
    assert_eq!(not_ready["zone"], "zone-b");
}

#[tokio::test]
async fn the_text_form_is_still_there_with_o_text() {
    let e = explain_shop_web(scenario()).await;
    let text = render(&e, Output::Text).unwrap();
    assert!(text.contains("not-ready endpoint (1):\n  web-not-ready  10.244.1.11  node worker-b"));
}
