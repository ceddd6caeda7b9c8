//! `kubectl-endpoints bench` end to end: the binary against the embedded API server and the
//! embedded controllers, at tiny sizes. No timing assertions: only that runs converge, exit as
//! documented, and report every figure.

use crate::cli;
use serde_json::Value;
use std::process::{Command, Output};

/// One `bench` run: a scenario, its size and flags, with warnings only in the log.
struct Bench(Command);

impl Bench {
    /// `bench --scenario NAME` at the scenario's default size.
    fn scenario(name: &str) -> Self {
        let mut command = cli();
        command
            .args(["bench", "--scenario", name])
            .env("RUST_LOG", "warn");
        Self(command)
    }

    /// `--services` and `--pods-per-service`.
    fn size(mut self, services: u32, pods_per_service: u32) -> Self {
        self.0
            .arg("--services")
            .arg(services.to_string())
            .arg("--pods-per-service")
            .arg(pods_per_service.to_string());
        self
    }

    /// `--churn`: the size of the measured churn (readiness flips, pods replaced...).
    fn churn(mut self, pods: u32) -> Self {
        self.0.arg("--churn").arg(pods.to_string());
        self
    }

    /// More flags.
    fn args(mut self, args: &[&str]) -> Self {
        self.0.args(args);
        self
    }

    /// Runs it with the JSON report, stopping it after `timeout`.
    fn json_within(mut self, timeout: &str) -> Output {
        self.0
            .args(["--quiet", "-o", "json", "--timeout", timeout])
            .output()
            .unwrap()
    }

    /// Runs it with the JSON report and a timeout that only ends a hung run.
    fn json(self) -> Output {
        self.json_within("2m")
    }

    /// Runs it with the table report, quiet (`-q`) and without a timeout.
    fn table(mut self) -> Output {
        self.0.arg("-q").output().unwrap()
    }

    /// Runs it with the JSON report, which must say the run converged.
    fn converged(self) -> Value {
        assert_converged(&self.json())
    }
}

fn report(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn assert_converged(output: &Output) -> Value {
    let r = report(output);
    assert!(
        output.status.success(),
        "exit {:?}; report: {r:#}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(r["converged"], true);
    assert_eq!(r["timed_out"], false);
    assert_eq!(r["converged_services"], r["services"]);
    assert_eq!(r["mismatches"], Value::Array(vec![]));
    r
}

#[test]
fn create_reports_convergence_latency_requests_cpu_and_rss() {
    let r = Bench::scenario("create").size(5, 4).converged();
    assert!(r["convergence_seconds"].as_f64().is_some());
    for view in ["slice_latency", "endpoints_latency"] {
        let l = &r[view]["latency"];
        // Every one of the 20 pods became an endpoint: one change each, all observed.
        assert_eq!(r[view]["changes"], 20, "{view}");
        assert_eq!(l["count"], 20, "{view}");
        for p in ["p50_ms", "p90_ms", "p99_ms"] {
            assert!(l[p].as_f64().is_some(), "{view} {p}");
        }
    }
    let requests = &r["controller_requests"];
    assert!(requests["by_verb"]["create"].as_u64().unwrap() >= 10);
    assert!(
        requests["by_verb_resource"]["create endpointslices"]
            .as_u64()
            .unwrap()
            >= 5
    );
    // The generator's own writes are not charged to the controller.
    assert!(requests["by_verb_resource"]["create pods"].is_null());
    assert_eq!(r["load_generator_requests"]["create pods"], 20);
    assert!(r["slice_writes"]["created"].as_u64().unwrap() >= 5);
    assert!(r["resources"]["cpu_seconds"].as_f64().is_some());
    assert!(r["resources"]["peak_rss_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn flap_of_random_pods_converges() {
    let r = Bench::scenario("flap").size(3, 3).churn(20).converged();
    assert_eq!(r["churn"], 20);
    assert_eq!(r["pod_writes"], 20);
    // The controllers' own SLI over the phase, beside the watcher's latency: each Service
    // controller timed at most one write per flip, from its informer and from the flip's
    // Ready condition.
    for controller in ["endpointslice-controller", "endpoints-controller"] {
        for histogram in ["informer_to_write", "trigger_to_write"] {
            let sli = r["sli"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["controller"] == controller && s["histogram"] == histogram)
                .unwrap_or_else(|| panic!("no {histogram} of {controller} in {r:#}"));
            let writes = sli["writes"].as_u64().unwrap();
            assert!((1..=20).contains(&writes), "{sli:#}");
            assert!(sli["p99_ms"].as_f64().unwrap() > 0.0, "{sli:#}");
        }
    }
}

#[test]
fn rolling_replaces_every_pod_and_converges() {
    let r = Bench::scenario("rolling").size(3, 4).churn(2).converged();
    // 12 new pods (create + status), 12 old ones deleted and released.
    assert_eq!(r["pod_writes"], 48);
    assert_eq!(r["load_generator_requests"]["delete pods"], 12);
}

#[test]
fn scale_and_nodes_converge() {
    for scenario in ["scale", "nodes"] {
        let r = Bench::scenario(scenario)
            .size(3, 3)
            .args(&["--nodes", "4"])
            .converged();
        assert_eq!(r["scenario"], scenario);
    }
}

#[test]
fn a_timeout_exits_non_zero_with_the_figures_so_far() {
    let out = Bench::scenario("create").size(5, 4).json_within("1ms");
    assert!(!out.status.success());
    let r = report(&out);
    assert_eq!(r["timed_out"], true);
    assert_eq!(r["converged"], false);
    assert!(r["resources"].is_object());
    assert!(String::from_utf8_lossy(&out.stderr).contains("timed out"));
}

#[test]
fn oversized_runs_are_refused() {
    let out = Bench::scenario("create").size(1000, 1000).json();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("more than"));
}

#[test]
fn the_table_names_every_figure() {
    let out = Bench::scenario("create").size(2, 2).table();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for row in [
        "time to convergence",
        "slices latency p50/p90/p99/max",
        "slices latency from the change",
        "load generator rate",
        "bottleneck",
        "SLI informer to write endpointslice-controller",
        "SLI trigger to write endpoints-controller",
        "controller requests",
        "controller cpu",
        "peak rss",
    ] {
        assert!(table.contains(row), "missing {row:?} in\n{table}");
    }
}

#[test]
fn cold_start_of_the_controller_as_its_own_process_writes_each_object_once() {
    let r = Bench::scenario("cold")
        .args(&["--controller", "process"])
        .size(4, 3)
        .converged();
    assert_eq!(r["controller"], "process");
    assert!(r["convergence_seconds"].as_f64().is_some());
    // The workload was written before the controller started: the measured phase has no pod
    // writes, and the controller creates one Endpoints and one slice per Service.
    assert_eq!(r["pod_writes"], 0);
    let requests = &r["controller_requests"]["by_verb_resource"];
    assert_eq!(requests["create endpoints"], 4, "{r:#}");
    assert_eq!(requests["create endpointslices"], 4, "{r:#}");
    assert!(requests["update endpointslices"].is_null(), "{r:#}");
    // The informers read the pods through one streaming list (a watch), never a list.
    assert!(requests["list pods"].is_null(), "{r:#}");
    assert_eq!(requests["watch pods"], 1, "{r:#}");
    // CPU and memory are the child process's.
    assert!(r["resources"]["cpu_note"]
        .as_str()
        .unwrap()
        .starts_with("the controller process"));
    assert!(r["resources"]["vm_hwm_bytes"].as_u64().unwrap() > 0);
    assert!(r["api_server_cpu"]["cpu_seconds"].as_f64().is_some());
    // The SLI comes from the process' /metrics: one create per Service and controller.
    let informer = |controller: &str| {
        r["sli"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["controller"] == controller && s["histogram"] == "informer_to_write")
            .map(|s| s["writes"].clone())
    };
    assert_eq!(
        informer("endpointslice-controller"),
        Some(4.into()),
        "{r:#}"
    );
    assert_eq!(informer("endpoints-controller"), Some(4.into()), "{r:#}");
}

#[test]
fn process_only_flags_are_refused_for_the_embedded_controller() {
    let out = Bench::scenario("create")
        .args(&["--controller-arg=--concurrent-service-endpoint-syncs=2"])
        .json();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--controller process"));
}

/// `--scenario soak` flips pods at its rate for its duration and reports the controller's
/// resident memory sampled along the way (a short soak here; the 30-minute one is run by hand,
/// see crates/bench/README.md).
#[test]
fn soak_samples_the_controllers_memory_over_a_steady_flap() {
    let r = Bench::scenario("soak")
        .size(4, 5)
        .args(&[
            "--soak-duration",
            "4s",
            "--soak-sample",
            "1s",
            "--soak-rate",
            "5",
        ])
        .converged();
    assert_eq!(r["scenario"], "soak");
    let soak = &r["soak"];
    let samples = soak["rss_samples"].as_array().unwrap();
    // At the start, each second, and no second sample at the end.
    assert!((5..=6).contains(&samples.len()), "{soak:#}");
    assert!(
        samples.iter().all(|s| s[1].as_u64().unwrap() > 0),
        "{soak:#}"
    );
    let flips = soak["flips"].as_u64().unwrap();
    assert!((10..=20).contains(&flips), "{soak:#}");
    assert!(soak["growth_percent"].as_f64().is_some(), "{soak:#}");
}

#[test]
fn a_shape_at_kubernetes_limits_shrinks_with_scale_and_names_its_bottleneck() {
    let r = Bench::scenario("create")
        .args(&["--shape", "huge-service", "--scale", "0.01"])
        .converged();
    // One Service of 5,000 pods at a hundredth: still one Service, of 50 pods.
    assert_eq!(
        (&r["services"], &r["pods_per_service"], &r["nodes"]),
        (&1.into(), &50.into(), &3.into())
    );
    assert!(r["load_writes_per_second"].as_f64().unwrap() > 0.0, "{r:#}");
    let bottleneck = r["bottleneck"].as_str().unwrap();
    assert!(
        bottleneck.starts_with("load generator") || bottleneck.starts_with("controller"),
        "{bottleneck}"
    );

    // A shape replaces the size flags, and --scale needs a shape.
    for args in [
        &["--shape", "limits", "--services", "3"][..],
        &["--scale", "0.5"][..],
        &["--shape", "limits", "--scale", "2"][..],
    ] {
        let out = Bench::scenario("create").args(args).json();
        assert!(!out.status.success(), "{args:?} was accepted");
    }
}
