//! What `deploy/monitoring/` ships for operators: the Prometheus rules, their Prometheus
//! Operator wrapping, the kustomize Component and the Grafana dashboard.
//!
//! `promtool` checks the rules and runs their unit tests (`deploy/monitoring/tests/`), and a
//! real `prometheus` scrapes `dev`'s controllers, evaluates every rule and every dashboard
//! query against what it scraped, and raises the foreign-writer alert when another field
//! manager writes a slice. Both tools come with Debian's `prometheus` package, which
//! `scripts/install-test-deps.sh` installs; without them these tests say they are skipped,
//! except under `CI=true`, where they fail.

use crate::{cli, free_port};
use anyhow::Context;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use testkit::eventually;
use testkit::process::{required, run};

/// The scrape job the rules select (`job="kube-endpoints"`), and the dashboard's `$job`.
const JOB: &str = "kube-endpoints";

/// Queries that must return series once Prometheus has scraped `dev` under a little load:
/// the figures an operator looks at first, and a recording rule built on them.
const MUST_HAVE_DATA: &[&str] = &[
    r#"endpoint_slice_controller_syncs{job="kube-endpoints"}"#,
    r#"endpoint_controller_syncs{job="kube-endpoints"}"#,
    r#"controller_result:kube_endpoints_syncs:rate5m"#,
    r#"workqueue_depth{job="kube-endpoints"}"#,
    r#"process_resident_memory_bytes{job="kube-endpoints"}"#,
    r#"kube_endpoints_informer_to_write_duration_seconds_bucket{job="kube-endpoints"}"#,
];

/// Metric names the rules and the dashboard use that `dev` does not expose, and why. Every
/// other name they use must be among those Prometheus scraped from `dev`.
const NOT_FROM_DEV: &[&str] = &[
    // Prometheus' own: whether a scrape succeeded.
    "up",
    // `run` elects a leader; `dev` does not.
    "leader_election_master_status",
    // Only `run --shadow` counts these.
    "shadow_divergent_services",
    "shadow_checks_total",
    // Series of these appear with the first failed watch or reset re-list.
    "informer_watch_failures_total",
    "informer_relists_after_resource_version_reset_total",
];

fn monitoring_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/monitoring")
}

fn read_yaml(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

fn dashboard() -> Value {
    let path = monitoring_dir().join("dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Every rule of `rules.yaml` as (its record or alert name, its expression).
fn rule_expressions() -> Vec<(String, String)> {
    let rules = read_yaml(&monitoring_dir().join("rules.yaml"));
    let groups = rules["groups"].as_array().expect("a list of groups");
    groups
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("a list of rules"))
        .map(|r| {
            let name = r["record"].as_str().or(r["alert"].as_str());
            let expr = r["expr"].as_str().expect("an expr");
            (
                name.expect("a record or alert name").to_owned(),
                expr.to_owned(),
            )
        })
        .collect()
}

/// The dashboard's panels, those inside rows included.
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("a list of panels") {
        out.push(panel);
        out.extend(panel["panels"].as_array().into_iter().flatten());
    }
    out
}

/// Every query of the dashboard as (its panel's title, its expression as written).
fn dashboard_expressions() -> Vec<(String, String)> {
    let dashboard = dashboard();
    panels(&dashboard)
        .into_iter()
        .flat_map(|p| {
            let title = p["title"].as_str().unwrap_or_default().to_owned();
            p["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |t| (title.clone(), t["expr"].as_str().unwrap_or("").to_owned()))
        })
        .collect()
}

/// The metric names `expr` selects (recording rules' names included). A small reading of
/// PromQL, enough for our expressions: quoted strings, label matchers and the label lists of
/// `by`, `without`, `on` and `ignoring` are skipped, and of the other words those not called
/// like functions, that are not keywords, are metric names.
fn metric_names(expr: &str) -> BTreeSet<String> {
    // Operators, and the aggregations, which may come before their `by (...)`.
    const KEYWORDS: &[&str] = &[
        "and",
        "or",
        "unless",
        "offset",
        "bool",
        "group_left",
        "group_right",
        "sum",
        "min",
        "max",
        "avg",
        "count",
        "group",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
    ];
    const LABEL_LISTS: &[&str] = &["by", "without", "on", "ignoring"];
    let mut names = BTreeSet::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let mut skip_list = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '{' || c == '[' || (c == '(' && skip_list) {
            let close = match c {
                '{' => '}',
                '[' => ']',
                _ => ')',
            };
            while i < chars.len() && chars[i] != close {
                i += 1;
            }
            i += 1;
            skip_list = false;
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            if LABEL_LISTS.contains(&word.as_str()) {
                skip_list = true;
            } else if next != Some(&'(') && !KEYWORDS.contains(&word.as_str()) {
                names.insert(word);
            }
        } else if c.is_ascii_digit() {
            // A number or a duration (5m, 1e-3).
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn metric_names_are_read_from_promql() {
    let expr = r#"sum by (job, le) (rate(a_bucket{job="x", le=~"1|2"}[5m])) / ignoring (result) group_left b:c:rate5m or vector(1e-3) unless d offset 15m > 0.8 * 2"#;
    let names: Vec<String> = metric_names(expr).into_iter().collect();
    assert_eq!(names, ["a_bucket", "b:c:rate5m", "d"]);
}

/// A dashboard expression as Grafana would send it: its template variables replaced by what
/// they hold here (the one job, every instance, a one-minute rate window).
fn as_grafana_sends_it(expr: &str) -> String {
    let expr = [
        ("${__rate_interval}", "1m"),
        ("$__rate_interval", "1m"),
        ("${job}", JOB),
        ("$job", JOB),
        ("${instance}", ".*"),
        ("$instance", ".*"),
    ]
    .iter()
    .fold(expr.to_owned(), |e, (var, value)| e.replace(var, value));
    assert!(
        !expr.contains('$'),
        "a template variable this test does not replace: {expr}"
    );
    expr
}

#[test]
fn promtool_checks_the_rules_and_passes_their_unit_tests() {
    if !required("promtool", "prometheus") {
        return;
    }
    let dir = monitoring_dir();
    println!(
        "{}",
        run(Command::new("promtool")
            .args(["check", "rules"])
            .arg(dir.join("rules.yaml")))
        .succeeded()
    );
    let mut tests: Vec<PathBuf> = std::fs::read_dir(dir.join("tests"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    tests.sort();
    assert!(!tests.is_empty());
    println!(
        "{}",
        run(Command::new("promtool")
            .args(["test", "rules"])
            .args(&tests))
        .succeeded()
    );
}

/// Each alert says how bad it is and what it means, and links its runbook: a section of
/// docs/operations.md whose heading is the alert's name.
#[test]
fn every_alert_has_a_severity_annotations_and_a_runbook_in_the_operations_guide() {
    let rules = read_yaml(&monitoring_dir().join("rules.yaml"));
    let guide = std::fs::read_to_string(monitoring_dir().join("../../docs/operations.md")).unwrap();
    let alerts: Vec<&Value> = rules["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .filter(|r| r["alert"].is_string())
        .collect();
    assert!(alerts.len() >= 10, "{} alerts", alerts.len());
    for alert in alerts {
        let name = alert["alert"].as_str().unwrap();
        assert!(
            ["critical", "warning", "info"]
                .contains(&alert["labels"]["severity"].as_str().unwrap_or("")),
            "{name}: severity"
        );
        for annotation in ["summary", "description"] {
            assert!(
                alert["annotations"][annotation].is_string(),
                "{name}: {annotation}"
            );
        }
        let anchor = name.to_lowercase();
        assert_eq!(
            alert["annotations"]["runbook_url"],
            format!("docs/operations.md#{anchor}"),
            "{name}"
        );
        assert!(
            guide.contains(&format!("\n#### {name}\n")),
            "docs/operations.md has no runbook heading `#### {name}`"
        );
    }
}

#[test]
fn the_prometheus_rule_holds_the_groups_of_rules_yaml() {
    let rules = read_yaml(&monitoring_dir().join("rules.yaml"));
    let wrapped = read_yaml(&monitoring_dir().join("prometheusrule.yaml"));
    assert_eq!(wrapped["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(wrapped["kind"], "PrometheusRule");
    assert!(
        wrapped["spec"]["groups"] == rules["groups"],
        "prometheusrule.yaml's groups differ from rules.yaml's: run scripts/gen-prometheusrule.sh"
    );
}

/// The Component adds both objects, and the ServiceMonitor scrapes the Service of `deploy/` on
/// its named port over HTTPS with a token, under the job name the rules select.
#[test]
fn the_component_scrapes_the_metrics_service_as_the_rules_expect() {
    let component = read_yaml(&monitoring_dir().join("kustomization.yaml"));
    assert_eq!(component["kind"], "Component");
    assert_eq!(component["apiVersion"], "kustomize.config.k8s.io/v1alpha1");
    assert_eq!(
        component["resources"],
        json!(["servicemonitor.yaml", "prometheusrule.yaml"])
    );
    let monitor = read_yaml(&monitoring_dir().join("servicemonitor.yaml"));
    let service = read_yaml(&monitoring_dir().join("../service.yaml"));
    let spec = &monitor["spec"];
    assert_eq!(
        spec["selector"]["matchLabels"],
        service["metadata"]["labels"]
    );
    assert_eq!(
        spec["namespaceSelector"]["matchNames"],
        json!([service["metadata"]["namespace"]])
    );
    let job_label = spec["jobLabel"].as_str().unwrap();
    assert_eq!(service["metadata"]["labels"][job_label], JOB);
    let endpoint = &spec["endpoints"][0];
    assert_eq!(endpoint["port"], service["spec"]["ports"][0]["name"]);
    assert_eq!(endpoint["scheme"], "https");
    assert!(endpoint["bearerTokenFile"].is_string());
}

/// `kubectl kustomize overlays/monitoring/` renders deploy/ plus the two monitoring objects.
#[test]
fn the_monitoring_overlay_renders_with_kubectl() {
    if !required("kubectl", "kubernetes-client") {
        return;
    }
    let overlay = monitoring_dir().join("../../overlays/monitoring");
    let rendered = run(Command::new("kubectl").arg("kustomize").arg(overlay)).succeeded();
    let kinds: Vec<Value> = rendered
        .split("\n---\n")
        .map(|doc| serde_norway::from_str::<Value>(doc).expect("a rendered document"))
        .map(|v| v["kind"].clone())
        .collect();
    for kind in ["Deployment", "Service", "ServiceMonitor", "PrometheusRule"] {
        assert!(kinds.contains(&json!(kind)), "{kind} not in {kinds:?}");
    }
}

#[test]
fn every_dashboard_panel_queries_the_datasource_variable() {
    let dashboard = dashboard();
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 39);
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let datasource = variables
        .iter()
        .find(|v| v["name"] == "datasource")
        .expect("a datasource variable");
    assert_eq!(datasource["type"], "datasource");
    assert_eq!(datasource["query"], "prometheus");
    let mut queried = 0;
    for panel in panels(&dashboard) {
        if panel["type"] == "row" {
            continue;
        }
        let title = &panel["title"];
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{title}");
        let targets = panel["targets"].as_array();
        assert!(targets.is_some_and(|t| !t.is_empty()), "{title}: no target");
        for target in targets.into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            assert!(!expr.trim().is_empty(), "{title}: a target without expr");
            as_grafana_sends_it(expr);
            queried += 1;
        }
    }
    assert!(queried > 20, "{queried} queries");
}

/// The programs a test started, killed when it ends however it ends. Each writes to a log
/// file, whose end is shown when the test fails.
struct Children(Vec<(Child, PathBuf)>);

impl Children {
    fn spawn(&mut self, command: &mut Command, log: PathBuf) {
        let out = File::create(&log).unwrap();
        let child = command
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {command:?}: {e}"));
        self.0.push((child, log));
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for (child, log) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
            if std::thread::panicking() {
                let text = std::fs::read_to_string(&*log).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                eprintln!("--- the end of {}:\n{}", log.display(), tail.join("\n"));
            }
        }
    }
}

/// Prometheus' HTTP API on `base` (`http://127.0.0.1:PORT`).
struct PrometheusApi {
    base: String,
}

impl PrometheusApi {
    /// GETs `path` and returns the answer's `data`, or the error Prometheus gave.
    async fn get(&self, path: &str) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let (code, body) = bench::measured::http_get(&url)
            .await
            .map_err(|e| format!("{e:#}"))?;
        let answer: Value =
            serde_json::from_str(&body).map_err(|e| format!("{code} {e}: {body}"))?;
        if answer["status"] != "success" {
            return Err(format!("{code}: {answer}"));
        }
        Ok(answer["data"].clone())
    }

    /// The instant vector `expr` evaluates to now.
    async fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let encoded = utf8_percent_encode(expr, NON_ALPHANUMERIC);
        let data = self.get(&format!("/api/v1/query?query={encoded}")).await?;
        Ok(data["result"].as_array().cloned().unwrap_or_default())
    }

    /// The alerts pending or firing now.
    async fn alerts(&self) -> Result<Vec<Value>, String> {
        let data = self.get("/api/v1/alerts").await?;
        Ok(data["alerts"].as_array().cloned().unwrap_or_default())
    }
}

/// A client of `dev`'s embedded API server, from the kubeconfig it wrote.
async fn client(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// Writes for all three controllers: a Service without a selector and its hand-written
/// Endpoints, to mirror, and `shop/web-00` moved out of the Service `web` and back.
async fn make_work(client: &kube::Client) -> anyhow::Result<()> {
    let params = PostParams::default();
    let services: Api<Service> = Api::namespaced(client.clone(), "shop");
    let service = json!({
        "metadata": {"name": "legacy", "namespace": "shop"},
        "spec": {"ports": [{"name": "http", "port": 80}]},
    });
    services
        .create(&params, &serde_json::from_value(service)?)
        .await
        .context("creating shop/legacy")?;
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "shop");
    let written = json!({
        "metadata": {"name": "legacy", "namespace": "shop"},
        "subsets": [{"addresses": [{"ip": "192.168.7.1"}], "ports": [{"name": "http", "port": 80}]}],
    });
    endpoints
        .create(&params, &serde_json::from_value(written)?)
        .await
        .context("creating the Endpoints shop/legacy")?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "shop");
    for app in ["other", "web", "other", "web"] {
        let patch = json!({"metadata": {"labels": {"app": app}}});
        pods.patch("web-00", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .context("relabelling shop/web-00")?;
    }
    Ok(())
}

/// Rewrites the endpoints of the EndpointSlice controller's IPv4 slice of `shop/web` as
/// kube-controller-manager would: a foreign write, for the migration guard.
async fn write_as_kube_controller_manager(client: &kube::Client) -> anyhow::Result<String> {
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "shop");
    let ours = ListParams::default().labels(
        "endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io,\
         kubernetes.io/service-name=web",
    );
    let slice = slices
        .list(&ours)
        .await?
        .items
        .into_iter()
        .find(|s| s.address_type == "IPv4");
    let name = slice
        .and_then(|s| s.metadata.name)
        .context("no IPv4 slice of the EndpointSlice controller for shop/web")?;
    let params = PatchParams {
        field_manager: Some("kube-controller-manager".to_owned()),
        ..PatchParams::default()
    };
    let patch = json!({"endpoints": [{"addresses": ["10.255.255.1"]}]});
    slices.patch(&name, &params, &Patch::Merge(&patch)).await?;
    Ok(format!("shop/{name}"))
}

/// The end-to-end check: `dev` runs the controllers on `examples/` and serves /metrics over
/// plain HTTP; a real Prometheus scrapes it every second with `rules.yaml` loaded. Every rule
/// and every dashboard query must evaluate, the figures an operator needs first must have
/// data, no alert may be pending on the healthy controllers, and a write by
/// kube-controller-manager's field manager must raise KubeEndpointsForeignWriter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_evaluates_every_rule_and_panel_and_alerts_on_a_foreign_write() {
    if !required("prometheus", "prometheus") {
        return;
    }
    // Prometheus and `dev` under churn load the CPU: not beside the tests timed `alone`.
    let _cpu = crate::shares_cpu().await;
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mut children = Children(Vec::new());

    let metrics_port = free_port();
    let kubeconfig = dir.path().join("kubeconfig");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    children.spawn(
        cli()
            .args(["dev", "--bind-address", "127.0.0.1"])
            .arg("--port")
            .arg(metrics_port.to_string())
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .arg("-f")
            .arg(&examples),
        dir.path().join("dev.log"),
    );
    let metrics = format!("http://127.0.0.1:{metrics_port}/metrics");
    eventually("dev to serve /metrics after its first syncs", || async {
        match bench::measured::http_get(&metrics).await {
            Ok((200, body)) if body.contains("endpoint_slice_controller_syncs") => Ok(()),
            Ok((code, _)) => Err(format!("{code}")),
            Err(e) => Err(format!("{e:#}")),
        }
    })
    .await;

    let prometheus_port = free_port();
    let config = dir.path().join("prometheus.yml");
    let rules = monitoring_dir().join("rules.yaml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             rule_files: [{rules:?}]\n\
             scrape_configs:\n  \
               - job_name: {JOB}\n    \
                 static_configs: [{{targets: ['127.0.0.1:{metrics_port}']}}]\n",
            rules = rules.canonicalize().unwrap()
        ),
    )
    .unwrap();
    children.spawn(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}")),
        dir.path().join("prometheus.log"),
    );
    let prometheus = PrometheusApi {
        base: format!("http://127.0.0.1:{prometheus_port}"),
    };

    // Some load once Prometheus is up, then a few more scrapes, so that rates have points.
    eventually("Prometheus to scrape dev", || {
        prometheus.query(r#"up{job="kube-endpoints"} == 1"#)
    })
    .await;
    let client = client(&kubeconfig).await.unwrap();
    make_work(&client).await.unwrap();
    eventually("five scrapes", || async {
        let scrapes = prometheus
            .query(r#"count_over_time(up{job="kube-endpoints"}[1m]) >= 5"#)
            .await?;
        (!scrapes.is_empty())
            .then_some(())
            .ok_or("fewer".to_owned())
    })
    .await;

    let mut failures = Vec::new();
    let queries = rule_expressions()
        .into_iter()
        .map(|(name, expr)| (format!("rule {name}"), expr))
        .chain(
            dashboard_expressions()
                .into_iter()
                .map(|(title, expr)| (format!("panel {title:?}"), as_grafana_sends_it(&expr))),
        );
    let mut evaluated = 0;
    for (source, expr) in queries {
        evaluated += 1;
        if let Err(e) = prometheus.query(&expr).await {
            failures.push(format!("{source}: {expr}\n  {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    for expr in MUST_HAVE_DATA {
        eventually(&format!("data for {expr}"), || async {
            let series = prometheus.query(expr).await?;
            (!series.is_empty())
                .then_some(())
                .ok_or("no series".to_owned())
        })
        .await;
    }
    // On a dozen syncs a stale retry or two can pass the stale alert's ratio: it is the
    // alert's 15 minutes that keep it quiet, so it may be pending here, never firing.
    let alerts = prometheus.alerts().await.unwrap();
    let raised: Vec<&Value> = alerts
        .iter()
        .filter(|a| {
            a["state"] == "firing" || a["labels"]["alertname"] != "KubeEndpointsStaleCacheRetries"
        })
        .collect();
    assert!(raised.is_empty(), "healthy controllers, yet: {raised:#?}");

    let slice = write_as_kube_controller_manager(&client).await.unwrap();
    eventually(
        &format!("KubeEndpointsForeignWriter after {slice} was written"),
        || async {
            let alerts = prometheus.alerts().await?;
            alerts
                .iter()
                .find(|a| {
                    a["labels"]["alertname"] == "KubeEndpointsForeignWriter"
                        && a["labels"]["manager"] == "kube-controller-manager"
                        && a["labels"]["controller"] == "endpointslice-controller"
                        && (a["state"] == "pending" || a["state"] == "firing")
                })
                .map(|_| ())
                .ok_or_else(|| format!("{alerts:#?}"))
        },
    )
    .await;
    // A misspelt metric name evaluates without error, to nothing: every name used must exist.
    let scraped: BTreeSet<String> = prometheus
        .query(r#"group by (__name__) ({job="kube-endpoints"})"#)
        .await
        .unwrap()
        .iter()
        .filter_map(|s| s["metric"]["__name__"].as_str().map(str::to_owned))
        .collect();
    let recorded: BTreeSet<String> = rule_expressions()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.contains(':'))
        .collect();
    let unknown: BTreeSet<String> = rule_expressions()
        .into_iter()
        .chain(dashboard_expressions())
        .flat_map(|(_, expr)| metric_names(&expr))
        .filter(|name| {
            !scraped.contains(name)
                && !recorded.contains(name)
                && !NOT_FROM_DEV.contains(&name.as_str())
        })
        .collect();
    assert!(
        unknown.is_empty(),
        "used but neither scraped from dev nor listed in NOT_FROM_DEV: {unknown:?}"
    );

    println!(
        "{evaluated} queries evaluated; the foreign-writer alert raised {:.1?} after the start",
        started.elapsed()
    );
}
