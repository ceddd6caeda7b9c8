//! The migration guard against the embedded API server: a second writer posing as
//! kube-controller-manager on a slice or an Endpoints object we manage is reported once (an
//! error log line, a Warning Event on the Service, a counter), while our own writes and a
//! user's label edit are not, and a person's edit of a slice's endpoints is only counted.
//!
//! The "not reported" checks need no waiting for nothing to happen: each informer hands its
//! events to the guard in order, so once a later foreign write has been reported, every write
//! before it has been looked at too. The tests run on a current-thread runtime so that the
//! log capture, a thread-local subscriber, sees the controllers' tasks.

use std::sync::{Arc, Mutex, PoisonError};

use controller::field_manager::FIELD_MANAGER;
use controller::migration_guard::REASON;
use controller::Options;
use k8s_openapi::api::core::v1::{Endpoints, Event};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;
use testkit::mirroring::hand_written;
use testkit::{
    addresses, endpoints_only, eventually, options, pod, service, slices_only, web_pod,
    Controllers, TestCluster,
};

const NS: &str = "default";
const KCM: &str = "kube-controller-manager";
const FOREIGN_WRITES: &str = "migration_guard_foreign_writes_total";
/// How a log line names kube-controller-manager as the writer (the message's advice names it
/// too, whoever wrote).
const BY_KCM: &str = "manager=kube-controller-manager";

/// Log lines written at warn level or above while it is alive, on this thread.
struct Logs {
    lines: Arc<Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

#[derive(Clone)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn capture() -> Self {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Sink(lines.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || sink.clone())
            .finish();
        Self {
            lines,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    /// The ERROR lines that mention every one of `words`.
    fn errors_about(&self, words: &[&str]) -> Vec<String> {
        let bytes = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| line.contains("ERROR") && words.iter().all(|w| line.contains(w)))
            .map(str::to_owned)
            .collect()
    }
}

fn as_manager(manager: &str) -> PostParams {
    PostParams {
        field_manager: Some(manager.to_owned()),
        ..PostParams::default()
    }
}

/// Controllers running against a cluster, the guard's log lines captured.
struct Guarded {
    logs: Logs,
    cluster: TestCluster,
    controllers: Controllers,
}

impl Guarded {
    /// Runs `options`' controllers on `cluster`, capturing log lines from before they start.
    async fn run(cluster: TestCluster, options: Options) -> Self {
        let logs = Logs::capture();
        let controllers = cluster.run_controllers(options).await;
        Self {
            logs,
            cluster,
            controllers,
        }
    }

    /// `web`, with one ready pod per IP in `web_ips`, and `api`, with two: selector
    /// Services whose objects `options`' controllers then write.
    async fn two_services(web_ips: &[&str], options: Options) -> anyhow::Result<Self> {
        let cluster = TestCluster::start().await;
        web_like(&cluster, "web", web_ips).await?;
        web_like(&cluster, "api", &["10.0.1.1", "10.0.1.2"]).await?;
        Ok(Self::run(cluster, options).await)
    }

    /// The foreign writes counted with `labels`, in all.
    fn foreign_writes(&self, labels: &[(&str, &str)]) -> f64 {
        self.controllers.metric(FOREIGN_WRITES, labels)
    }

    /// Waits until the counter shows `n` foreign writes by kube-controller-manager in all.
    async fn wait_for_reports(&self, n: f64) {
        eventually(&format!("{n} foreign writes reported"), || {
            let seen = self.foreign_writes(&[("manager", KCM)]);
            async move {
                (seen == n)
                    .then_some(())
                    .ok_or_else(|| format!("{seen} reported"))
            }
        })
        .await;
    }

    /// Waits until kube-controller-manager's first write has been reported, checks that it
    /// was reported once (the counter, one ERROR line, a Warning Event) and that it is the
    /// only foreign write counted, and returns the Event.
    async fn first_report(&self, report: FirstReport<'_>) -> Event {
        self.wait_for_reports(1.0).await;
        let lines = self.logs.errors_about(report.logged);
        assert_eq!(lines.len(), 1, "{lines:#?}");
        let event = self
            .cluster
            .wait_for_event(NS, report.service, REASON)
            .await;
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        let by_kcm = [("controller", report.controller), ("manager", KCM)];
        assert_eq!(self.foreign_writes(&by_kcm), 1.0);
        assert_eq!(
            self.foreign_writes(&[]),
            1.0,
            "{} counted",
            report.not_counted
        );
        event
    }

    /// How many ERROR lines mention every one of `words`.
    fn errors_about(&self, words: &[&str]) -> usize {
        self.logs.errors_about(words).len()
    }
}

/// kube-controller-manager's first write to an object a controller manages, as the guard
/// must report it.
struct FirstReport<'a> {
    /// The controller that manages the object (the counter's `controller` label).
    controller: &'a str,
    /// Words the one ERROR line about the write holds.
    logged: &'a [&'a str],
    /// The Service the Warning Event is about.
    service: &'a str,
    /// The write before it that must not be counted.
    not_counted: &'a str,
}

/// A user labels object `name` with kubectl, which is no foreign write to report.
async fn label_as_a_user<K>(api: &Api<K>, name: &str) -> anyhow::Result<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let label = json!({"metadata": {"labels": {"team": "payments"}}});
    let params = PatchParams {
        field_manager: Some("kubectl-label".into()),
        ..PatchParams::default()
    };
    api.patch(name, &params, &Patch::Merge(&label)).await?;
    Ok(())
}

fn endpoint_count(slices: &[EndpointSlice]) -> usize {
    slices.iter().map(|s| s.endpoints.len()).sum()
}

/// A selector Service `name` with one ready pod per IP.
async fn web_like(cluster: &TestCluster, name: &str, ips: &[&str]) -> anyhow::Result<()> {
    cluster
        .create_service(&service(name).selector("app", name).port("http", 80, 8080))
        .await?;
    for (i, ip) in ips.iter().enumerate() {
        let pod = pod(&format!("{name}-{i}"))
            .label("app", name)
            .ip(ip)
            .ready(true);
        cluster.create_pod(&pod).await?;
    }
    Ok(())
}

/// Replaces the slice under field manager `manager`, keeping only its first endpoint.
async fn trim(cluster: &TestCluster, slice: &str, manager: &str) -> anyhow::Result<()> {
    let api = cluster.slices(NS);
    let mut current = api.get(slice).await?;
    current.endpoints.truncate(1);
    api.replace(slice, &as_manager(manager), &current).await?;
    Ok(())
}

/// Waits until the managed slices of `service` hold `count` endpoints, and returns the
/// first one's name.
async fn slice_with(cluster: &TestCluster, service: &str, count: usize) -> String {
    let what = format!("{count} endpoints");
    let slices = cluster
        .wait_for_slices(NS, service, &what, |s| endpoint_count(s) == count)
        .await;
    slices[0].metadata.name.clone().unwrap_or_default()
}

#[tokio::test]
async fn kube_controller_managers_write_to_a_managed_slice_is_reported_once_and_ours_never(
) -> anyhow::Result<()> {
    let guarded = Guarded::two_services(&["10.0.0.1"], slices_only()).await?;
    let cluster = &guarded.cluster;
    let web_slice = slice_with(cluster, "web", 1).await;

    // Our create, and an update after a second pod: written under our name.
    cluster.create_pod(&web_pod("web-1", "10.0.0.2")).await?;
    slice_with(cluster, "web", 2).await;
    let slice = cluster.slices(NS).get(&web_slice).await?;
    let managers: Vec<_> = slice
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|e| e.manager.clone())
        .collect();
    assert_eq!(managers, [FIELD_MANAGER]);

    // A user labels the slice, then kube-controller-manager rewrites its endpoints.
    label_as_a_user(&cluster.slices(NS), &web_slice).await?;
    trim(cluster, &web_slice, KCM).await?;
    let event = guarded
        .first_report(FirstReport {
            controller: "endpointslice-controller",
            logged: &[&web_slice, BY_KCM],
            service: "web",
            not_counted: "the label edit",
        })
        .await;
    assert_eq!(event.involved_object.kind.as_deref(), Some("Service"));
    let message = event.message.unwrap_or_default();
    assert!(
        message.contains(&web_slice) && message.contains(KCM),
        "{message}"
    );

    // We put the endpoint back. A person then trims it with kubectl: counted under their
    // name, but no error and no Event. Then kube-controller-manager writes another Service's
    // slice, which is reported after both.
    slice_with(cluster, "web", 2).await;
    trim(cluster, &web_slice, "kubectl-edit").await?;
    let api_slice = slice_with(cluster, "api", 2).await;
    trim(cluster, &api_slice, KCM).await?;
    guarded.wait_for_reports(2.0).await;
    cluster.wait_for_event(NS, "api", REASON).await;

    assert_eq!(guarded.foreign_writes(&[("manager", "kubectl-edit")]), 1.0);
    assert_eq!(guarded.foreign_writes(&[]), 3.0, "our repairs were counted");
    assert_eq!(guarded.errors_about(&[&web_slice]), 1);
    assert_eq!(guarded.errors_about(&[&api_slice, BY_KCM]), 1);
    // One Event about web, never repeated: the person's edit made none.
    let about_web =
        ListParams::default().fields(&format!("involvedObject.name=web,reason={REASON}"));
    let counts: Vec<_> = cluster
        .events(NS)
        .list(&about_web)
        .await?
        .items
        .into_iter()
        .map(|e| e.count)
        .collect();
    assert_eq!(counts, [Some(1)], "the person's edit made an Event");
    guarded.controllers.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_writer_with_kube_controller_managers_user_agent_on_managed_endpoints_is_reported(
) -> anyhow::Result<()> {
    let guarded = Guarded::two_services(&["10.0.0.1", "10.0.0.2"], endpoints_only()).await?;
    let cluster = &guarded.cluster;
    let two_ready = |e: Option<&Endpoints>| addresses(e).0.len() == 2;
    cluster
        .wait_for_endpoints(NS, "web", "two addresses", two_ready)
        .await;

    label_as_a_user(&cluster.endpoints(NS), "web").await?;
    kcm_puts_one_address(cluster, "web").await?;
    guarded
        .first_report(FirstReport {
            controller: "endpoints-controller",
            logged: &["Endpoints", "default/web", BY_KCM],
            service: "web",
            not_counted: "the label edit",
        })
        .await;

    // The Endpoints controller does not react to edits of Endpoints (upstream only watches
    // their deletion): a new pod makes us write it again.
    cluster.create_pod(&web_pod("web-2", "10.0.0.3")).await?;
    cluster
        .wait_for_endpoints(NS, "web", "the new pod's address", |e| {
            addresses(e).0.contains(&"10.0.0.3".to_owned())
        })
        .await;
    cluster
        .wait_for_endpoints(NS, "api", "two addresses", two_ready)
        .await;
    kcm_puts_one_address(cluster, "api").await?;
    guarded.wait_for_reports(2.0).await;
    assert_eq!(
        guarded.foreign_writes(&[]),
        2.0,
        "our write after the foreign one was counted"
    );
    assert_eq!(guarded.errors_about(&["default/web"]), 1);
    guarded.controllers.stop().await;
    Ok(())
}

/// Replaces an Endpoints object over raw HTTP with kube-controller-manager's User-Agent (and
/// no fieldManager), keeping one address.
async fn kcm_puts_one_address(cluster: &TestCluster, name: &str) -> anyhow::Result<()> {
    let mut current = cluster.endpoints(NS).get(name).await?;
    for subset in current.subsets.iter_mut().flatten() {
        if let Some(addresses) = subset.addresses.as_mut() {
            addresses.truncate(1);
        }
    }
    let request = http::Request::put(format!("/api/v1/namespaces/{NS}/endpoints/{name}"))
        .header(
            http::header::USER_AGENT,
            "kube-controller-manager/v1.35.0 (linux/amd64) kubernetes/66452049/system:serviceaccount:kube-system:endpoint-controller",
        )
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&current)?)?;
    let _: Endpoints = cluster.client.request(request).await?;
    Ok(())
}

#[tokio::test]
async fn kube_controller_managers_write_to_a_mirrored_slice_names_the_mirroring_controller(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let ext = hand_written("ext")
        .address("10.1.0.1")
        .address("10.1.0.2")
        .port("db", 9000);
    ext.create_service(&cluster).await?;
    // All three controllers: the hand-written Endpoints of a Service without a selector,
    // written after they started, is not the Endpoints controller's to guard.
    let all_three = Options {
        mirroring: true,
        ..options()
    };
    let guarded = Guarded::run(cluster, all_three).await;
    ext.create_endpoints(&guarded.cluster).await?;
    let mirrored = eventually("a mirrored slice with two endpoints", || {
        let listed = ext.mirrored(&guarded.cluster);
        async move {
            let slices = listed.await.map_err(|e| e.to_string())?;
            (endpoint_count(&slices) == 2)
                .then(|| slices[0].metadata.name.clone().unwrap_or_default())
                .ok_or_else(|| format!("{} endpoints", endpoint_count(&slices)))
        }
    })
    .await;

    trim(&guarded.cluster, &mirrored, KCM).await?;
    let event = guarded
        .first_report(FirstReport {
            controller: "endpointslice-mirroring-controller",
            logged: &[&mirrored, BY_KCM],
            service: "ext",
            not_counted: "the Endpoints",
        })
        .await;
    assert!(
        event
            .message
            .unwrap_or_default()
            .contains("-endpointslice-mirroring-controller"),
        "the Event names the controller to turn off"
    );
    guarded.controllers.stop().await;
    Ok(())
}

/// The series an alert on the counter watches exist at 0 from the start, one per controller
/// running, so that Prometheus' `increase()` sees the first foreign write.
#[tokio::test]
async fn kube_controller_managers_series_start_at_zero_for_each_controller_running() {
    let cluster = TestCluster::start().await;
    let controllers = cluster.run_controllers(options()).await;
    let series = |controller: &str| -> Option<f64> {
        let labels = [("controller", controller), ("manager", KCM)];
        testkit::cluster::series(&controllers.registry, FOREIGN_WRITES, &labels)
            .first()
            .map(|(_, m)| m.get_counter().get_value())
    };
    testkit::until("the guard's counter is registered", || {
        series("endpointslice-controller").is_some()
    })
    .await;
    assert_eq!(series("endpointslice-controller"), Some(0.0));
    assert_eq!(series("endpoints-controller"), Some(0.0));
    assert_eq!(
        series("endpointslice-mirroring-controller"),
        None,
        "the mirroring controller does not run"
    );
    controllers.stop().await;
}
