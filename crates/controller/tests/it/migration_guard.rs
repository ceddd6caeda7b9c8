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
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use reconcile::labels::{MIRRORING_CONTROLLER_NAME, SERVICE_NAME, SLICE_MANAGED_BY};
use serde_json::json;
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

fn foreign_writes(controllers: &Controllers, labels: &[(&str, &str)]) -> f64 {
    controllers.metric(FOREIGN_WRITES, labels)
}

/// Waits until the counter shows `n` foreign writes by kube-controller-manager in all.
async fn wait_for_reports(controllers: &Controllers, n: f64) {
    eventually(&format!("{n} foreign writes reported"), || {
        let seen = foreign_writes(controllers, &[("manager", KCM)]);
        async move {
            (seen == n)
                .then_some(())
                .ok_or_else(|| format!("{seen} reported"))
        }
    })
    .await;
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

#[tokio::test]
async fn kube_controller_managers_write_to_a_managed_slice_is_reported_once_and_ours_never(
) -> anyhow::Result<()> {
    let logs = Logs::capture();
    let cluster = TestCluster::start().await;
    web_like(&cluster, "web", &["10.0.0.1"]).await?;
    web_like(&cluster, "api", &["10.0.1.1", "10.0.1.2"]).await?;
    let controllers = cluster.run_controllers(slices_only()).await;
    let web = cluster
        .wait_for_slices(NS, "web", "one endpoint", |s| endpoint_count(s) == 1)
        .await;
    let web_slice = web[0].metadata.name.clone().unwrap_or_default();

    // Our create, and an update after a second pod: written under our name.
    cluster.create_pod(&web_pod("web-1", "10.0.0.2")).await?;
    let web = cluster
        .wait_for_slices(NS, "web", "two endpoints", |s| endpoint_count(s) == 2)
        .await;
    let managers: Vec<_> = web[0]
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|e| e.manager.clone())
        .collect();
    assert_eq!(managers, [FIELD_MANAGER]);

    // A user labels the slice, then kube-controller-manager rewrites its endpoints.
    let label = json!({"metadata": {"labels": {"team": "payments"}}});
    cluster
        .slices(NS)
        .patch(
            &web_slice,
            &PatchParams {
                field_manager: Some("kubectl-label".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&label),
        )
        .await?;
    trim(&cluster, &web_slice, KCM).await?;

    wait_for_reports(&controllers, 1.0).await;
    let lines = logs.errors_about(&[&web_slice, BY_KCM]);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let event = cluster.wait_for_event(NS, "web", REASON).await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.involved_object.kind.as_deref(), Some("Service"));
    let message = event.message.unwrap_or_default();
    assert!(
        message.contains(&web_slice) && message.contains(KCM),
        "{message}"
    );
    assert_eq!(
        foreign_writes(
            &controllers,
            &[("controller", "endpointslice-controller"), ("manager", KCM)]
        ),
        1.0
    );
    assert_eq!(
        foreign_writes(&controllers, &[]),
        1.0,
        "the label edit counted"
    );

    // We put the endpoint back. A person then trims it with kubectl: counted under their
    // name, but no error and no Event. Then kube-controller-manager writes another Service's
    // slice, which is reported after both.
    cluster
        .wait_for_slices(NS, "web", "two endpoints again", |s| endpoint_count(s) == 2)
        .await;
    trim(&cluster, &web_slice, "kubectl-edit").await?;
    let api = cluster
        .wait_for_slices(NS, "api", "two endpoints", |s| endpoint_count(s) == 2)
        .await;
    let api_slice = api[0].metadata.name.clone().unwrap_or_default();
    trim(&cluster, &api_slice, KCM).await?;
    wait_for_reports(&controllers, 2.0).await;
    cluster.wait_for_event(NS, "api", REASON).await;

    assert_eq!(
        foreign_writes(&controllers, &[("manager", "kubectl-edit")]),
        1.0
    );
    assert_eq!(
        foreign_writes(&controllers, &[]),
        3.0,
        "our repairs were counted"
    );
    assert_eq!(logs.errors_about(&[&web_slice]).len(), 1);
    assert_eq!(logs.errors_about(&[&api_slice, BY_KCM]).len(), 1);
    let about_web: Vec<_> = cluster
        .events(NS)
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(REASON) && e.involved_object.name.as_deref() == Some("web")
        })
        .map(|e| e.count)
        .collect();
    assert_eq!(about_web, [Some(1)], "the person's edit made an Event");
    controllers.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_writer_with_kube_controller_managers_user_agent_on_managed_endpoints_is_reported(
) -> anyhow::Result<()> {
    let logs = Logs::capture();
    let cluster = TestCluster::start().await;
    web_like(&cluster, "web", &["10.0.0.1", "10.0.0.2"]).await?;
    web_like(&cluster, "api", &["10.0.1.1", "10.0.1.2"]).await?;
    let controllers = cluster.run_controllers(endpoints_only()).await;
    let two_ready = |e: Option<&Endpoints>| addresses(e).0.len() == 2;
    cluster
        .wait_for_endpoints(NS, "web", "two addresses", two_ready)
        .await;

    let label = json!({"metadata": {"labels": {"team": "payments"}}});
    cluster
        .endpoints(NS)
        .patch(
            "web",
            &PatchParams {
                field_manager: Some("kubectl-label".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&label),
        )
        .await?;
    kcm_puts_one_address(&cluster, "web").await?;

    wait_for_reports(&controllers, 1.0).await;
    let lines = logs.errors_about(&["Endpoints", "default/web", BY_KCM]);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let event = cluster.wait_for_event(NS, "web", REASON).await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        foreign_writes(
            &controllers,
            &[("controller", "endpoints-controller"), ("manager", KCM)]
        ),
        1.0
    );
    assert_eq!(
        foreign_writes(&controllers, &[]),
        1.0,
        "the label edit counted"
    );

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
    kcm_puts_one_address(&cluster, "api").await?;
    wait_for_reports(&controllers, 2.0).await;
    assert_eq!(
        foreign_writes(&controllers, &[]),
        2.0,
        "our write after the foreign one was counted"
    );
    assert_eq!(logs.errors_about(&["default/web"]).len(), 1);
    controllers.stop().await;
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
    let logs = Logs::capture();
    let cluster = TestCluster::start().await;
    cluster
        .create_service(&service("ext").port("db", 9000, 9000))
        .await?;
    let endpoints: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": "ext", "namespace": NS},
        "subsets": [{
            "addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}],
            "ports": [{"name": "db", "port": 9000, "protocol": "TCP"}],
        }],
    }))?;
    // All three controllers: the hand-written Endpoints of a Service without a selector,
    // written after they started, is not the Endpoints controller's to guard.
    let controllers = cluster
        .run_controllers(Options {
            mirroring: true,
            ..options()
        })
        .await;
    cluster
        .endpoints(NS)
        .create(&PostParams::default(), &endpoints)
        .await?;
    let selector = format!("{SERVICE_NAME}=ext,{SLICE_MANAGED_BY}={MIRRORING_CONTROLLER_NAME}");
    let mirrored = eventually("a mirrored slice with two endpoints", || {
        let api = cluster.slices(NS);
        let lp = ListParams::default().labels(&selector);
        async move {
            let slices = api.list(&lp).await.map_err(|e| e.to_string())?.items;
            (endpoint_count(&slices) == 2)
                .then(|| slices[0].metadata.name.clone().unwrap_or_default())
                .ok_or_else(|| format!("{} endpoints", endpoint_count(&slices)))
        }
    })
    .await;

    trim(&cluster, &mirrored, KCM).await?;
    wait_for_reports(&controllers, 1.0).await;
    assert_eq!(
        foreign_writes(
            &controllers,
            &[("controller", "endpointslice-mirroring-controller")]
        ),
        1.0
    );
    assert_eq!(
        foreign_writes(&controllers, &[]),
        1.0,
        "the Endpoints counted"
    );
    assert_eq!(logs.errors_about(&[&mirrored, BY_KCM]).len(), 1);
    let event = cluster.wait_for_event(NS, "ext", REASON).await;
    assert!(
        event
            .message
            .unwrap_or_default()
            .contains("-endpointslice-mirroring-controller"),
        "the Event names the controller to turn off"
    );
    controllers.stop().await;
    Ok(())
}
