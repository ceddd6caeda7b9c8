//! Every recorded upstream case, through the path `plan` uses (the controllers on an
//! in-process server) and through the live controllers over TCP, compared with what
//! kube-controller-manager wrote. Dynamic cases (with `steps.yaml`) run live only, and their
//! writes during the steps are compared too. Every version's recordings run, each following
//! the rules of the version that wrote it.

use crate::{corpus, every_version_corpus};
use controller::wire::Encoding;
use kubectl_endpoints::conformance::{
    compare, compare_by, find_cases, load_case, run_dynamic, run_offline, upstream_written, Rules,
};
use kubectl_endpoints::dynamic::{compare_writes, describe_writes, Writes};

/// A case's differences from upstream as one failure, showing the first ten; `None` when
/// there are none.
fn failure(case: &str, diffs: &[String]) -> Option<String> {
    let shown: Vec<&str> = diffs.iter().take(10).map(String::as_str).collect();
    (!diffs.is_empty()).then(|| format!("{case}:\n  {}", shown.join("\n  ")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_matches_upstream_on_every_recorded_case_of_every_version() {
    let _cpu = crate::shares_cpu().await;
    let cases: Vec<_> = every_version_corpus()
        .iter()
        .flat_map(|dir| find_cases(dir).expect("corpus present"))
        .collect();
    assert!(
        cases.len() >= 4 * 12,
        "expected the recorded corpus of four versions, found {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    for dir in &cases {
        let case = load_case(dir).expect("case loads");
        if case.steps.is_some() {
            continue;
        }
        let upstream = case.upstream.as_ref().expect("recorded case");
        let ours = run_offline(&case).await.expect("the controllers settle");
        let diffs = compare(&ours, &upstream_written(upstream).expect("recording reads"));
        failures.extend(failure(&format!("{} {}", case.version, case.name), &diffs));
    }
    assert!(
        failures.is_empty(),
        "cases differ from upstream:\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_comparison_notices_a_wrong_answer() {
    // Guard against a comparison that cannot fail: a different slice size limit must differ.
    let dir = find_cases(&corpus())
        .unwrap()
        .into_iter()
        .find(|d| d.ends_with("public-random-100"))
        .unwrap();
    let mut case = load_case(&dir).unwrap();
    case.flags.output.max_endpoints_per_slice = 50;
    let diffs = compare(
        &run_offline(&case).await.unwrap(),
        &upstream_written(case.upstream.as_ref().unwrap()).unwrap(),
    );
    assert!(diffs.iter().any(|d| d.contains("sizes")), "{diffs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_controllers_match_upstream_on_every_recorded_case_of_every_version() {
    let _cpu = crate::shares_cpu().await;
    live_controllers_match_upstream_in(Encoding::Protobuf, &every_version_corpus()).await;
}

/// The same pass with `--kube-api-content-type=application/json`, on v1.36's recordings (the
/// encoding and the version are independent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_controllers_speaking_json_match_upstream_on_every_recorded_case() {
    let _cpu = crate::shares_cpu().await;
    live_controllers_match_upstream_in(Encoding::Json, &[corpus()]).await;
}

async fn live_controllers_match_upstream_in(encoding: Encoding, corpora: &[std::path::PathBuf]) {
    use kubectl_endpoints::conformance::run_live_in;
    let mut failures = Vec::new();
    let dirs = corpora
        .iter()
        .flat_map(|dir| find_cases(dir).expect("corpus present"));
    for dir in dirs {
        let case = load_case(&dir).expect("case loads");
        if case.steps.is_some() {
            continue;
        }
        let upstream = upstream_written(case.upstream.as_ref().expect("recorded case"))
            .expect("recording reads");
        let name = format!("{} {}", case.version, case.name);
        match run_live_in(&case, encoding).await {
            Ok(written) => failures.extend(failure(&name, &compare(&written, &upstream))),
            Err(err) => failures.push(format!("{name}: {err:#}")),
        }
    }
    assert!(
        failures.is_empty(),
        "live controllers ({encoding:?}) differ from upstream:\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_cases_of_every_version_reach_upstreams_objects_with_no_more_writes() {
    let _cpu = crate::alone().await;
    let mut failures = Vec::new();
    let mut ran = 0;
    let dirs: Vec<_> = every_version_corpus()
        .iter()
        .flat_map(|dir| find_cases(dir).expect("corpus present"))
        .collect();
    for dir in dirs {
        let case = load_case(&dir).expect("case loads");
        if case.steps.is_none() {
            continue;
        }
        ran += 1;
        let recorded = case.upstream.as_ref().expect("recorded case");
        let upstream_writes = Writes::from_upstream(recorded).expect("upstream writes recorded");
        let name = format!("{} {}", case.version, case.name);
        match run_dynamic(&case).await {
            Ok((written, writes)) => {
                println!(
                    "{name}: writes {}",
                    describe_writes(&writes, &upstream_writes)
                );
                let upstream = upstream_written(recorded).expect("recording reads");
                let mut diffs = compare_by(&written, &upstream, Rules::Dynamic);
                diffs.extend(compare_writes(&writes, &upstream_writes));
                failures.extend(failure(&name, &diffs));
            }
            Err(err) => failures.push(format!("{name}: {err:#}")),
        }
    }
    assert!(ran >= 1, "no dynamic case in the corpus");
    assert!(
        failures.is_empty(),
        "dynamic cases differ from upstream:\n{}",
        failures.join("\n")
    );
}

#[test]
fn mirrored_slices_are_compared_like_the_controllers_own() {
    let dir = find_cases(&corpus())
        .unwrap()
        .into_iter()
        .find(|d| d.ends_with("public-dyn-mirroring"))
        .unwrap();
    let case = load_case(&dir).unwrap();
    let upstream = upstream_written(case.upstream.as_ref().unwrap()).unwrap();
    let alone = reconcile::compare::differences(
        &upstream.objects(),
        &Default::default(),
        Rules::Dynamic,
        reconcile::compare::Sides::UPSTREAM,
    );
    assert!(
        alone
            .iter()
            .any(|d| d.what.contains("mirrored EndpointSlices")),
        "{alone:?}"
    );
    let mut fewer = upstream.clone();
    for slice in &mut fewer.endpoint_slices {
        slice.endpoints.pop();
    }
    assert!(!compare_by(&fewer, &upstream, Rules::Dynamic).is_empty());
}

/// A case written here, as the corpus lays one out: a selector-less Service whose
/// hand-written Endpoints have three addresses in one subset, recorded with
/// `--mirroring-max-endpoints-per-subset=2` in its `flags` file. The flag must reach the
/// mirroring controller offline and live alike: two addresses are mirrored, and the Warning
/// upstream emits for the third is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cases_mirroring_flag_truncates_the_same_way_offline_and_live() {
    let _cpu = crate::shares_cpu().await;
    use kubectl_endpoints::conformance::run_live;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("input.yaml"),
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: mirror}
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: mirror}
spec:
  ports: [{name: db, port: 5432}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ext, namespace: mirror}
subsets:
- addresses: [{ip: 192.168.0.10}, {ip: 192.168.0.11}, {ip: 192.168.0.12}]
  ports: [{name: db, port: 5432}]
"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("flags"),
        "--mirroring-max-endpoints-per-subset=2\n",
    )
    .unwrap();
    let case = load_case(dir.path()).expect("case loads");
    assert_eq!(case.flags.output.mirroring_max_endpoints_per_subset, 2);

    let offline = run_offline(&case).await.expect("offline run");
    let live = run_live(&case).await.expect("live run");
    assert_eq!(compare(&offline, &live), Vec::<String>::new());

    for (how, written) in [("offline", &offline), ("live", &live)] {
        let mirrored: Vec<_> = written
            .endpoint_slices
            .iter()
            .filter(|s| {
                s.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("endpointslice.kubernetes.io/managed-by"))
                    .is_some_and(|m| m == "endpointslicemirroring-controller.k8s.io")
            })
            .collect();
        let endpoints: usize = mirrored.iter().map(|s| s.endpoints.len()).sum();
        assert_eq!(endpoints, 2, "{how}: {mirrored:#?}");
        let warning = written
            .events
            .iter()
            .find(|e| e.reason == "TooManyAddressesToMirror")
            .unwrap_or_else(|| panic!("{how}: no warning in {:?}", written.events));
        assert_eq!(
            (
                warning.type_.as_str(),
                warning.namespace.as_str(),
                warning.name.as_str()
            ),
            ("Warning", "mirror", "ext"),
            "{how}"
        );
        assert!(
            warning.message.contains("A max of 2 addresses")
                && warning.message.contains("1 addresses were skipped"),
            "{how}: {}",
            warning.message
        );
    }

    // Without the flag, all three are mirrored: the comparison tells the two apart.
    let mut unflagged = load_case(dir.path()).unwrap();
    unflagged.flags = Default::default();
    let all = run_offline(&unflagged).await.unwrap();
    assert!(!compare(&all, &offline).is_empty());
}

#[test]
fn a_case_whose_flags_file_names_an_unknown_flag_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("input.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("flags"),
        "--max-endpoints-per-slice=80 --mirroring-max-endpoint-per-subset=2\n",
    )
    .unwrap();
    let err = format!("{:#}", load_case(dir.path()).unwrap_err());
    assert!(
        err.contains("--mirroring-max-endpoint-per-subset") && err.contains("flags"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_agrees_with_upstream_on_every_pod_of_every_static_case() {
    let _cpu = crate::shares_cpu().await;
    use kubectl_endpoints::explain::{corpus::disagreements, explain, Source};
    use kubectl_endpoints::snapshot::Snapshot;
    let mut failures = Vec::new();
    let (mut cases, mut pods) = (0, 0);
    for dir in find_cases(&corpus()).expect("corpus present") {
        let case = load_case(&dir).expect("case loads");
        if case.steps.is_some() {
            continue;
        }
        let snapshot = Snapshot::from_objects(case.objects);
        let keys = snapshot.service_keys();
        let explanations = explain(&snapshot, Source::Manifests, &keys, &case.flags.output)
            .await
            .expect("explain runs");
        assert_eq!(explanations.len(), keys.len());
        cases += 1;
        pods += explanations.iter().map(|e| e.pods.len()).sum::<usize>();
        let lines = disagreements(&explanations, case.upstream.as_ref().expect("recorded"));
        if !lines.is_empty() {
            failures.push(format!("{}:\n  {}", case.name, lines.join("\n  ")));
        }
    }
    assert!(cases >= 12 && pods > 1000, "{cases} cases, {pods} pods");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
