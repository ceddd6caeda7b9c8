//! The harness of the end-to-end tests: an embedded API server per test, an in-process kube
//! client, the controllers running in a task, builders for the objects they read, and waits
//! that poll the API until a condition holds.
//!
//! Waits poll at a short interval and give up after a generous deadline that only fails a
//! hung test; no test asserts on how long anything took. [`TestCluster`] is the only place
//! that knows how to start things. Tests run on tokio's multi-thread runtime, as the binary
//! does, so the controllers' workers really run side by side with the server.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use apiserver::{ApiServer, Config, Faults};
use controller::config::Settings;
use controller::health::Readiness;
use controller::Options;
use k8s_openapi::api::core::v1::{Endpoints, Event, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use prometheus::proto::MetricType;
use prometheus::Registry;
use reconcile::labels::{SERVICE_NAME, SLICE_CONTROLLER_NAME, SLICE_MANAGED_BY};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The node label that carries its zone.
pub use reconcile::projection::ZONE_LABEL;

/// The node [`TestCluster::start`] creates and [`pod`] schedules on.
pub const DEFAULT_NODE: &str = "node-1";

/// How long a wait may take before the test fails as hung.
pub const DEADLINE: Duration = Duration::from_secs(30);
/// How often a wait polls.
const POLL: Duration = Duration::from_millis(50);

/// Polls `probe` until it returns `Ok`, and returns its value. `probe` returns `Err` with a
/// description of what it saw; after [`DEADLINE`] the test fails showing the last one.
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let last = match probe().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out waiting for {what}; last seen:\n{last}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Sends the controllers' logs to the test output when `RUST_LOG` is set.
fn init_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("RUST_LOG").is_some() {
            let _already_set = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
                .with_test_writer()
                .try_init();
        }
    });
}

/// Fails a test whose future hangs; never a timing assertion.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(DEADLINE, fut).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// The Endpoints and EndpointSlice controllers with kube-controller-manager's defaults,
/// leader election off.
pub fn options() -> Options {
    let mut settings = Settings::default();
    settings.leader_election.enabled = false;
    Options {
        settings,
        endpoints: true,
        endpoint_slices: true,
        mirroring: false,
        shadow: None,
    }
}

/// Only the EndpointSlice mirroring controller.
pub fn mirroring_only() -> Options {
    Options {
        endpoints: false,
        endpoint_slices: false,
        mirroring: true,
        ..options()
    }
}

/// Only the EndpointSlice controller.
pub fn slices_only() -> Options {
    Options {
        endpoints: false,
        ..options()
    }
}

/// Only the Endpoints controller.
pub fn endpoints_only() -> Options {
    Options {
        endpoint_slices: false,
        ..options()
    }
}

/// One embedded API server and a client for it.
pub struct TestCluster {
    /// The server, for faults and request counts.
    pub server: ApiServer,
    /// An in-process client.
    pub client: Client,
}

/// The TCP server and kubeconfig behind [`TestCluster::service_account_clients`]; dropping
/// it stops serving.
pub struct OverTcp {
    _dir: tempfile::TempDir,
    _serving: tokio_util::sync::DropGuard,
}

/// Controllers running in a task against a [`TestCluster`].
pub struct Controllers {
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), controller::RunError>>,
    /// Their metrics.
    pub registry: Registry,
    /// What `/readyz` would answer.
    pub readiness: Readiness,
}

impl Controllers {
    /// The sum of a counter's or gauge's series whose labels include `labels` (0 when the
    /// metric has no such series yet).
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        metric(&self.registry, name, labels)
    }

    /// `endpoint_slice_controller_syncs{result}`.
    pub fn slice_syncs(&self, result: &str) -> f64 {
        self.metric("endpoint_slice_controller_syncs", &[("result", result)])
    }

    /// `endpoint_controller_syncs{result}`.
    pub fn endpoints_syncs(&self, result: &str) -> f64 {
        self.metric("endpoint_controller_syncs", &[("result", result)])
    }

    /// Cancels the controllers and waits until they returned.
    pub async fn stop(self) {
        self.shutdown.cancel();
        within("the controllers to stop", self.task)
            .await
            .expect("the controller task panicked")
            .expect("the controllers failed");
    }
}

/// The sum of the series of a counter or gauge in `registry` whose labels include `labels`.
pub fn metric(registry: &Registry, name: &str, labels: &[(&str, &str)]) -> f64 {
    registry
        .gather()
        .iter()
        .filter(|family| family.name() == name)
        .flat_map(|family| {
            let kind = family.get_field_type();
            family.get_metric().iter().map(move |m| (kind, m))
        })
        .filter(|(_, m)| {
            labels.iter().all(|(k, v)| {
                m.get_label()
                    .iter()
                    .any(|pair| pair.name() == *k && pair.value() == *v)
            })
        })
        .map(|(kind, m)| match kind {
            MetricType::COUNTER => m.get_counter().get_value(),
            MetricType::GAUGE => m.get_gauge().get_value(),
            _ => 0.0,
        })
        .sum()
}

impl TestCluster {
    /// A fresh server with the initial namespaces and one ready node, [`DEFAULT_NODE`]
    /// (no zone), where [`pod`] schedules pods unless told otherwise.
    pub async fn start() -> Self {
        let cluster = Self::start_without_nodes();
        cluster
            .create_node(&node(DEFAULT_NODE))
            .await
            .expect("creating the default node");
        cluster
    }

    /// A fresh server holding only the initial namespaces: no nodes (a node without a zone
    /// would turn topology hints off cluster-wide).
    pub fn start_without_nodes() -> Self {
        init_logs();
        let server = ApiServer::new(Config::default());
        let client = Client::new(server.service(), "default");
        Self { server, client }
    }

    /// Clients built as `run --use-service-account-credentials=true` builds them, for all
    /// three controllers: the cluster is served over TCP with a kubeconfig of a user without
    /// credentials. Keep the returned [`OverTcp`] for as long as the clients are used.
    pub async fn service_account_clients(&self) -> anyhow::Result<(controller::Clients, OverTcp)> {
        use controller::client::ClientSettings;
        use controller::rest_metrics::RestClientMetrics;
        use controller::service_accounts::Identity;

        let dir = tempfile::tempdir()?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let stop = CancellationToken::new();
        let server = self.server.clone();
        let stopped = stop.clone();
        tokio::spawn(async move { server.serve(listener, stopped.cancelled_owned()).await });
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\n\
                 clusters: [{{name: test, cluster: {{server: \"{url}\"}}}}]\n\
                 users: [{{name: test, user: {{}}}}]\n\
                 contexts: [{{name: test, context: {{cluster: test, user: test}}}}]\n\
                 current-context: test\n"
            ),
        )?;
        let settings = ClientSettings {
            kubeconfig: Some(kubeconfig),
            qps: 1000.0,
            burst: 1000,
            use_service_account_credentials: true,
            ..ClientSettings::default()
        };
        let metrics = RestClientMetrics::register(&Registry::new())?;
        let clients = controller::Clients::build(&settings, &metrics, &Identity::ALL).await?;
        Ok((
            clients,
            OverTcp {
                _dir: dir,
                _serving: stop.drop_guard(),
            },
        ))
    }

    /// The server's fault settings.
    pub fn faults(&self) -> &Faults {
        self.server.faults()
    }

    /// An in-process client limited to `qps` requests per second in bursts of `burst`, with
    /// a token bucket of its own.
    pub fn limited_client(&self, qps: f64, burst: u32) -> Client {
        kube::client::ClientBuilder::new(self.server.service(), "default")
            .with_layer(&controller::client::QpsLimitLayer::new(qps, burst))
            .build()
    }

    /// How many requests of `verb` on `resource` the server has served so far.
    pub fn requests(&self, verb: &str, resource: &str) -> u64 {
        self.server
            .request_counts()
            .get(&(verb.to_owned(), resource.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Starts the controllers with `options` and waits until their informers synced.
    pub async fn run_controllers(&self, options: Options) -> Controllers {
        self.run_controllers_with(options, self.client.clone().into())
            .await
    }

    /// [`run_controllers`](Self::run_controllers) with a client per budget.
    pub async fn run_controllers_with(
        &self,
        options: Options,
        clients: controller::Clients,
    ) -> Controllers {
        let shutdown = CancellationToken::new();
        let registry = Registry::new();
        let readiness = Readiness::new();
        let activity = controller::Activity::new();
        let task = tokio::spawn({
            let (registry, readiness, activity, shutdown) = (
                registry.clone(),
                readiness.clone(),
                activity.clone(),
                shutdown.clone(),
            );
            async move {
                controller::run(clients, &options, &registry, readiness, activity, shutdown).await
            }
        });
        eventually("the informers to sync", || {
            let ready = readiness.is_ready();
            async move { ready.then_some(()).ok_or_else(|| "not ready".to_owned()) }
        })
        .await;
        Controllers {
            shutdown,
            task,
            registry,
            readiness,
        }
    }

    // ---- typed APIs ----

    /// Services of a namespace.
    pub fn services(&self, ns: &str) -> Api<Service> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// Pods of a namespace.
    pub fn pods(&self, ns: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// EndpointSlices of a namespace.
    pub fn slices(&self, ns: &str) -> Api<EndpointSlice> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// Endpoints of a namespace.
    pub fn endpoints(&self, ns: &str) -> Api<Endpoints> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// Events of a namespace.
    pub fn events(&self, ns: &str) -> Api<Event> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// Nodes.
    pub fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    /// Namespaces.
    pub fn namespaces(&self) -> Api<Namespace> {
        Api::all(self.client.clone())
    }

    // ---- writes ----

    /// Creates a namespace.
    pub async fn create_namespace(&self, name: &str) -> anyhow::Result<Namespace> {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        Ok(self
            .namespaces()
            .create(&PostParams::default(), &ns)
            .await?)
    }

    /// Creates a Service.
    pub async fn create_service(&self, service: &ServiceBuilder) -> anyhow::Result<Service> {
        let object: Service = serde_json::from_value(service.to_json())?;
        Ok(self
            .services(&service.namespace)
            .create(&PostParams::default(), &object)
            .await?)
    }

    /// Creates a Pod, then writes its status (IPs, phase, readiness) through the status
    /// subresource, as a kubelet would.
    pub async fn create_pod(&self, pod: &PodBuilder) -> anyhow::Result<Pod> {
        let api = self.pods(&pod.namespace);
        let object: Pod = serde_json::from_value(pod.to_json())?;
        api.create(&PostParams::default(), &object).await?;
        let status = json!({"status": pod.status_json()});
        Ok(api
            .patch_status(&pod.name, &PatchParams::default(), &Patch::Merge(&status))
            .await?)
    }

    /// Creates a Node and writes its status (Ready, allocatable CPU).
    pub async fn create_node(&self, node: &NodeBuilder) -> anyhow::Result<Node> {
        let object: Node = serde_json::from_value(json!({
            "metadata": {"name": node.name, "labels": node.labels},
        }))?;
        self.nodes().create(&PostParams::default(), &object).await?;
        let status = json!({"status": {
            "allocatable": {"cpu": node.cpu},
            "conditions": [{"type": "Ready", "status": "True"}],
        }});
        Ok(self
            .nodes()
            .patch_status(&node.name, &PatchParams::default(), &Patch::Merge(&status))
            .await?)
    }

    /// Sets a pod's Ready condition through the status subresource.
    pub async fn set_pod_ready(&self, ns: &str, name: &str, ready: bool) -> anyhow::Result<()> {
        let status = json!({"status": {"conditions": [ready_condition(ready)]}});
        self.pods(ns)
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        Ok(())
    }

    /// Sets a pod's Ready condition with an explicit lastTransitionTime.
    pub async fn set_pod_ready_since(
        &self,
        ns: &str,
        name: &str,
        ready: bool,
        since: k8s_openapi::jiff::Timestamp,
    ) -> anyhow::Result<()> {
        let mut condition = ready_condition(ready);
        condition["lastTransitionTime"] = json!(since.to_string());
        let status = json!({"status": {"conditions": [condition]}});
        self.pods(ns)
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        Ok(())
    }

    /// Replaces a pod's IPs through the status subresource.
    pub async fn set_pod_ips(&self, ns: &str, name: &str, ips: &[&str]) -> anyhow::Result<()> {
        let status = json!({"status": {
            "podIP": ips.first(),
            "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>(),
        }});
        self.pods(ns)
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        Ok(())
    }

    /// Merge-patches a pod (labels, finalizers, ...).
    pub async fn patch_pod(&self, ns: &str, name: &str, patch: Value) -> anyhow::Result<Pod> {
        Ok(self
            .pods(ns)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    /// Merge-patches a Service.
    pub async fn patch_service(
        &self,
        ns: &str,
        name: &str,
        patch: Value,
    ) -> anyhow::Result<Service> {
        Ok(self
            .services(ns)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    /// Merge-patches a Node.
    pub async fn patch_node(&self, name: &str, patch: Value) -> anyhow::Result<Node> {
        Ok(self
            .nodes()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    /// Deletes a pod (it stays, terminating, while it has finalizers).
    pub async fn delete_pod(&self, ns: &str, name: &str) -> anyhow::Result<()> {
        self.pods(ns).delete(name, &DeleteParams::default()).await?;
        Ok(())
    }

    /// Deletes a Service.
    pub async fn delete_service(&self, ns: &str, name: &str) -> anyhow::Result<()> {
        self.services(ns)
            .delete(name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    // ---- reads and waits ----

    /// The slices labelled for `service` and managed by the EndpointSlice controller.
    pub async fn managed_slices(
        &self,
        ns: &str,
        service: &str,
    ) -> anyhow::Result<Vec<EndpointSlice>> {
        let mut slices: Vec<EndpointSlice> = self
            .slices(ns)
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|s| {
                let labels = s.metadata.labels.as_ref();
                labels.and_then(|l| l.get(SERVICE_NAME)).map(String::as_str) == Some(service)
                    && labels
                        .and_then(|l| l.get(SLICE_MANAGED_BY))
                        .map(String::as_str)
                        == Some(SLICE_CONTROLLER_NAME)
            })
            .collect();
        slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(slices)
    }

    /// Waits until the managed slices of `service` satisfy `done`, and returns them.
    pub async fn wait_for_slices(
        &self,
        ns: &str,
        service: &str,
        what: &str,
        done: impl Fn(&[EndpointSlice]) -> bool,
    ) -> Vec<EndpointSlice> {
        let what = format!("slices of {ns}/{service}: {what}");
        eventually(&what, || {
            let listed = self.managed_slices(ns, service);
            let done = &done;
            async move {
                let slices = listed.await.map_err(|e| e.to_string())?;
                if done(&slices) {
                    Ok(slices)
                } else {
                    Err(pretty(&slices))
                }
            }
        })
        .await
    }

    /// The Endpoints object named `name`, if it exists.
    pub async fn get_endpoints(&self, ns: &str, name: &str) -> anyhow::Result<Option<Endpoints>> {
        Ok(self.endpoints(ns).get_opt(name).await?)
    }

    /// Waits until the Endpoints object `name` (or its absence) satisfies `done`.
    pub async fn wait_for_endpoints(
        &self,
        ns: &str,
        name: &str,
        what: &str,
        done: impl Fn(Option<&Endpoints>) -> bool,
    ) -> Option<Endpoints> {
        let what = format!("Endpoints {ns}/{name}: {what}");
        eventually(&what, || {
            let got = self.get_endpoints(ns, name);
            let done = &done;
            async move {
                let endpoints = got.await.map_err(|e| e.to_string())?;
                if done(endpoints.as_ref()) {
                    Ok(endpoints)
                } else {
                    Err(pretty(&endpoints))
                }
            }
        })
        .await
    }

    /// Waits until an Event with `reason` about `involved` exists in `ns`, and returns it.
    pub async fn wait_for_event(&self, ns: &str, involved: &str, reason: &str) -> Event {
        let what = format!("an event {reason} about {ns}/{involved}");
        eventually(&what, || {
            let api = self.events(ns);
            async move {
                let events = api
                    .list(&ListParams::default())
                    .await
                    .map_err(|e| e.to_string())?
                    .items;
                events
                    .iter()
                    .find(|e| {
                        e.reason.as_deref() == Some(reason)
                            && e.involved_object.name.as_deref() == Some(involved)
                    })
                    .cloned()
                    .ok_or_else(|| {
                        let seen: Vec<_> = events
                            .iter()
                            .map(|e| (e.reason.clone(), e.involved_object.name.clone()))
                            .collect();
                        format!("{seen:?}")
                    })
            }
        })
        .await
    }

    // ---- what the controllers should converge to ----

    /// A fresh server holding this one's namespaces, nodes, Services and Pods (no Endpoints or
    /// slices), on which the controllers ran until they settled: what they write for the
    /// stored objects from scratch, through the same code path `plan` uses.
    pub async fn rerun_from_scratch(
        &self,
        max_endpoints_per_slice: u32,
    ) -> anyhow::Result<TestCluster> {
        let mut objects: Vec<Value> = Vec::new();
        objects.extend(values_of(self.namespaces()).await?);
        objects.extend(values_of(self.nodes()).await?);
        objects.extend(values_of(Api::<Service>::all(self.client.clone())).await?);
        objects.extend(values_of(Api::<Pod>::all(self.client.clone())).await?);
        let server = ApiServer::new(apiserver::Config::default());
        server.apply_objects(objects)?;
        let client = kube::Client::new(server.service(), "default");
        let fresh = TestCluster { server, client };
        let options = Options {
            settings: Settings {
                max_endpoints_per_slice,
                ..Settings::default()
            },
            ..options()
        };
        let registry = Registry::new();
        let (readiness, activity) = (Readiness::new(), controller::Activity::new());
        let shutdown = CancellationToken::new();
        let task = tokio::spawn({
            let (client, readiness, activity, shutdown) = (
                fresh.client.clone(),
                readiness.clone(),
                activity.clone(),
                shutdown.clone(),
            );
            async move {
                controller::run(client, &options, &registry, readiness, activity, shutdown).await
            }
        });
        let settle = Duration::from_millis(200);
        let settled = fresh
            .server
            .wait_until_quiet(&["endpoints", "endpointslices"], settle, DEADLINE, || {
                readiness.is_ready() && activity.is_idle_within(settle)
            })
            .await;
        shutdown.cancel();
        task.await??;
        anyhow::ensure!(settled, "the controllers did not settle on the copy");
        Ok(fresh)
    }

    /// The slices the controllers write for the Service as it is stored now, from scratch.
    pub async fn planned_slices(
        &self,
        ns: &str,
        service: &str,
        max_endpoints_per_slice: u32,
    ) -> anyhow::Result<Vec<EndpointSlice>> {
        self.rerun_from_scratch(max_endpoints_per_slice)
            .await?
            .managed_slices(ns, service)
            .await
    }

    /// The Endpoints object the controllers write for the Service as stored now, from scratch.
    pub async fn planned_endpoints(&self, ns: &str, service: &str) -> anyhow::Result<Endpoints> {
        self.rerun_from_scratch(100)
            .await?
            .get_endpoints(ns, service)
            .await?
            .ok_or_else(|| anyhow::anyhow!("no Endpoints {ns}/{service} from scratch"))
    }

    /// Waits until the managed slices of `service` equal, modulo [`comparable_slices`],
    /// what `plan_slices` computes for the stored objects from scratch.
    pub async fn wait_for_planned_slices(&self, ns: &str, service: &str) {
        self.wait_for_planned_slices_with(ns, service, 100).await;
    }

    /// [`Self::wait_for_planned_slices`] for a controller run with another
    /// `--max-endpoints-per-slice`.
    pub async fn wait_for_planned_slices_with(
        &self,
        ns: &str,
        service: &str,
        max_endpoints_per_slice: u32,
    ) {
        let what = format!("slices of {ns}/{service} to equal the plan from scratch");
        eventually(&what, || async move {
            let planned = self
                .planned_slices(ns, service, max_endpoints_per_slice)
                .await
                .map_err(|e| e.to_string())?;
            let live = self
                .managed_slices(ns, service)
                .await
                .map_err(|e| e.to_string())?;
            let uid = self
                .services(ns)
                .get(service)
                .await
                .map_err(|e| e.to_string())?
                .metadata
                .uid;
            if let Some(foreign) = live.iter().find(|s| {
                !s.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| Some(&o.uid) == uid.as_ref())
            }) {
                return Err(format!(
                    "slice {:?} is not owned by the Service's uid {uid:?}",
                    foreign.metadata.name
                ));
            }
            let (planned, live) = (comparable_slices(&planned), comparable_slices(&live));
            if planned == live {
                Ok(())
            } else {
                Err(format!(
                    "planned:\n{}\nlive:\n{}",
                    pretty(&planned),
                    pretty(&live)
                ))
            }
        })
        .await;
    }

    /// Waits until the Endpoints object of `service` equals, modulo [`comparable_endpoints`],
    /// what `plan_endpoints` computes for the stored objects from scratch.
    pub async fn wait_for_planned_endpoints(&self, ns: &str, service: &str) {
        let what = format!("Endpoints {ns}/{service} to equal the plan from scratch");
        eventually(&what, || async move {
            let planned = self
                .planned_endpoints(ns, service)
                .await
                .map_err(|e| e.to_string())?;
            let live = self
                .get_endpoints(ns, service)
                .await
                .map_err(|e| e.to_string())?;
            let planned = comparable_endpoints(&planned);
            let live = live.as_ref().map(comparable_endpoints);
            if Some(&planned) == live.as_ref() {
                Ok(())
            } else {
                Err(format!(
                    "planned:\n{}\nlive:\n{}",
                    pretty(&planned),
                    pretty(&live)
                ))
            }
        })
        .await;
    }
}

/// The annotation that records when the change behind a write happened; it differs between
/// a live sync and a plan from scratch by construction.
use reconcile::trigger_time::ANNOTATION as TRIGGER_TIME;

/// Slices reduced to what must match between the live controller and a plan from scratch:
/// names, uids, resourceVersions, generations, timestamps, the trigger-time annotation,
/// hints and the order of endpoints are left out; the result is sorted.
pub fn comparable_slices(slices: &[EndpointSlice]) -> Vec<EndpointSlice> {
    let mut out: Vec<EndpointSlice> = slices
        .iter()
        .map(|slice| {
            let mut slice = slice.clone();
            let meta = &mut slice.metadata;
            *meta = kube::api::ObjectMeta {
                namespace: meta.namespace.take(),
                labels: meta.labels.take(),
                annotations: meta
                    .annotations
                    .take()
                    .map(|mut a| {
                        a.remove(TRIGGER_TIME);
                        a
                    })
                    .filter(|a| !a.is_empty()),
                // The copy run from scratch assigned its own uids; ownership by the live
                // Service is checked on its own (`wait_for_planned_slices_with`).
                owner_references: meta.owner_references.take().map(|mut owners| {
                    owners.iter_mut().for_each(|o| o.uid.clear());
                    owners
                }),
                ..Default::default()
            };
            for endpoint in &mut slice.endpoints {
                endpoint.hints = None;
                if let Some(target) = &mut endpoint.target_ref {
                    target.uid = None;
                    target.resource_version = None;
                }
            }
            slice
                .endpoints
                .sort_by_key(|e| serde_json::to_string(e).unwrap_or_default());
            slice
        })
        .collect();
    out.sort_by_key(|s| serde_json::to_string(s).unwrap_or_default());
    out
}

/// An Endpoints object reduced to its namespace, name, labels, annotations other than the
/// trigger time, and subsets.
pub fn comparable_endpoints(endpoints: &Endpoints) -> Endpoints {
    let meta = &endpoints.metadata;
    Endpoints {
        metadata: kube::api::ObjectMeta {
            namespace: meta.namespace.clone(),
            name: meta.name.clone(),
            labels: meta.labels.clone(),
            annotations: meta
                .annotations
                .clone()
                .map(|mut a| {
                    a.remove(TRIGGER_TIME);
                    a
                })
                .filter(|a| !a.is_empty()),
            ..Default::default()
        },
        subsets: endpoints
            .subsets
            .clone()
            .filter(|s| !s.is_empty())
            .map(|mut subsets| {
                // The copy run from scratch assigned its own pod uids.
                for subset in &mut subsets {
                    for address in subset
                        .addresses
                        .iter_mut()
                        .flatten()
                        .chain(subset.not_ready_addresses.iter_mut().flatten())
                    {
                        if let Some(target) = &mut address.target_ref {
                            target.uid = None;
                            target.resource_version = None;
                        }
                    }
                }
                subsets
            }),
    }
}

/// Every object `api` lists, as JSON.
async fn values_of<K>(api: Api<K>) -> anyhow::Result<Vec<Value>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + Debug,
{
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?)
}

/// Pretty JSON for failure messages.
pub fn pretty<T: serde::Serialize + Debug>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| format!("{value:?}"))
}

// ---- reading slices ----

/// Every endpoint of the slices, with the pod it points at.
pub fn endpoints_by_pod(slices: &[EndpointSlice]) -> BTreeMap<String, Endpoint> {
    slices
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter_map(|e| {
            let pod = e.target_ref.as_ref()?.name.clone()?;
            Some((pod, e.clone()))
        })
        .collect()
}

/// The names of the pods the slices point at, sorted.
pub fn pod_names(slices: &[EndpointSlice]) -> Vec<String> {
    endpoints_by_pod(slices).into_keys().collect()
}

/// The endpoint of `pod` in the slices, if any.
pub fn endpoint_of(slices: &[EndpointSlice], pod: &str) -> Option<Endpoint> {
    endpoints_by_pod(slices).remove(pod)
}

/// An endpoint's (ready, serving, terminating) conditions.
pub fn conditions(endpoint: &Endpoint) -> (Option<bool>, Option<bool>, Option<bool>) {
    let c = endpoint.conditions.clone().unwrap_or_default();
    (c.ready, c.serving, c.terminating)
}

/// The (name, port, protocol) of each port of a slice.
pub fn ports(slice: &EndpointSlice) -> Vec<(String, i32, String)> {
    slice
        .ports
        .iter()
        .flatten()
        .map(|p| {
            (
                p.name.clone().unwrap_or_default(),
                p.port.unwrap_or_default(),
                p.protocol.clone().unwrap_or_default(),
            )
        })
        .collect()
}

// ---- reading Endpoints ----

/// The IPs of the ready and of the not-ready addresses, each sorted.
pub fn addresses(endpoints: Option<&Endpoints>) -> (Vec<String>, Vec<String>) {
    let mut ready = Vec::new();
    let mut not_ready = Vec::new();
    for subset in endpoints
        .and_then(|e| e.subsets.as_ref())
        .into_iter()
        .flatten()
    {
        ready.extend(subset.addresses.iter().flatten().map(|a| a.ip.clone()));
        not_ready.extend(
            subset
                .not_ready_addresses
                .iter()
                .flatten()
                .map(|a| a.ip.clone()),
        );
    }
    ready.sort();
    not_ready.sort();
    (ready, not_ready)
}

/// The (name, port) of every port of every subset.
pub fn endpoints_ports(endpoints: Option<&Endpoints>) -> Vec<(String, i32)> {
    endpoints
        .and_then(|e| e.subsets.as_ref())
        .into_iter()
        .flatten()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| (p.name.clone().unwrap_or_default(), p.port))
        .collect()
}

/// Owned strings from literals.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// ---- builders ----

/// The trigger-time annotation parsed, if present.
pub fn trigger_time(meta: &kube::api::ObjectMeta) -> Option<k8s_openapi::jiff::Timestamp> {
    meta.annotations.as_ref()?.get(TRIGGER_TIME)?.parse().ok()
}

/// The lastTransitionTime of a stored pod's Ready condition.
pub fn ready_transition(pod: &Pod) -> Option<k8s_openapi::jiff::Timestamp> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

/// A Pod's Ready condition, stamped now.
fn ready_condition(ready: bool) -> Value {
    json!({
        "type": "Ready",
        "status": if ready { "True" } else { "False" },
        "lastTransitionTime": k8s_openapi::jiff::Timestamp::now().to_string(),
    })
}

/// Starts a ClusterIP Service in `default` without selector or ports.
pub fn service(name: &str) -> ServiceBuilder {
    ServiceBuilder {
        namespace: "default".into(),
        name: name.into(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        selector: BTreeMap::new(),
        ports: Vec::new(),
        spec: serde_json::Map::new(),
        finalizers: Vec::new(),
    }
}

/// Builds a Service.
#[derive(Debug, Clone)]
pub struct ServiceBuilder {
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    selector: BTreeMap<String, String>,
    ports: Vec<Value>,
    /// Other spec fields.
    spec: serde_json::Map<String, Value>,
    finalizers: Vec<String>,
}

impl ServiceBuilder {
    /// Sets the namespace.
    pub fn ns(mut self, ns: &str) -> Self {
        self.namespace = ns.into();
        self
    }
    /// Adds a selector pair.
    pub fn selector(mut self, key: &str, value: &str) -> Self {
        self.selector.insert(key.into(), value.into());
        self
    }
    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }
    /// Adds an annotation.
    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }
    /// Adds a TCP port with a numeric targetPort.
    pub fn port(mut self, name: &str, port: i32, target: i32) -> Self {
        self.ports
            .push(json!({"name": name, "port": port, "targetPort": target}));
        self
    }
    /// Adds a TCP port whose targetPort names a container port.
    pub fn named_port(mut self, name: &str, port: i32, target: &str) -> Self {
        self.ports
            .push(json!({"name": name, "port": port, "targetPort": target}));
        self
    }
    /// Makes the Service headless (`clusterIP: None`).
    pub fn headless(mut self) -> Self {
        self.spec.insert("clusterIP".into(), json!("None"));
        self
    }
    /// Sets `publishNotReadyAddresses`.
    pub fn publish_not_ready_addresses(mut self) -> Self {
        self.spec
            .insert("publishNotReadyAddresses".into(), json!(true));
        self
    }
    /// Asks for both IP families, IPv4 first (`RequireDualStack`).
    pub fn dual_stack(mut self) -> Self {
        self.spec
            .insert("ipFamilyPolicy".into(), json!("RequireDualStack"));
        self.spec
            .insert("ipFamilies".into(), json!(["IPv4", "IPv6"]));
        self
    }
    /// Makes it an ExternalName Service pointing at `host`.
    pub fn external_name(mut self, host: &str) -> Self {
        self.spec.insert("type".into(), json!("ExternalName"));
        self.spec.insert("externalName".into(), json!(host));
        self
    }
    /// The object as JSON.
    pub fn to_json(&self) -> Value {
        let mut spec = self.spec.clone();
        spec.insert("selector".into(), json!(self.selector));
        spec.insert("ports".into(), json!(self.ports));
        json!({
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": self.labels,
                "annotations": self.annotations,
                "finalizers": self.finalizers,
            },
            "spec": spec,
        })
    }
    /// Adds a finalizer, so that a delete leaves the Service terminating.
    pub fn finalizer(mut self, finalizer: &str) -> Self {
        self.finalizers.push(finalizer.into());
        self
    }
}

/// Starts a running pod in `default`, on [`DEFAULT_NODE`], without IP, not ready.
pub fn pod(name: &str) -> PodBuilder {
    PodBuilder {
        namespace: "default".into(),
        name: name.into(),
        labels: BTreeMap::new(),
        node: Some(DEFAULT_NODE.into()),
        ips: Vec::new(),
        ready: false,
        container_ports: Vec::new(),
        finalizers: Vec::new(),
        phase: "Running".into(),
    }
}

/// Builds a Pod and its status.
#[derive(Debug, Clone)]
pub struct PodBuilder {
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
    node: Option<String>,
    ips: Vec<String>,
    ready: bool,
    container_ports: Vec<Value>,
    finalizers: Vec<String>,
    phase: String,
}

impl PodBuilder {
    /// Sets the namespace.
    pub fn ns(mut self, ns: &str) -> Self {
        self.namespace = ns.into();
        self
    }
    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }
    /// Schedules the pod on a node.
    pub fn node(mut self, node: &str) -> Self {
        self.node = Some(node.into());
        self
    }
    /// Appends a pod IP (the first is also `podIP`).
    pub fn ip(mut self, ip: &str) -> Self {
        self.ips.push(ip.into());
        self
    }
    /// Sets the Ready condition.
    pub fn ready(mut self, ready: bool) -> Self {
        self.ready = ready;
        self
    }
    /// Adds a named TCP container port.
    pub fn container_port(mut self, name: &str, port: i32) -> Self {
        self.container_ports
            .push(json!({"name": name, "containerPort": port}));
        self
    }
    /// Adds a finalizer, so that a delete leaves the pod terminating.
    pub fn finalizer(mut self, finalizer: &str) -> Self {
        self.finalizers.push(finalizer.into());
        self
    }
    /// Sets the phase (`Running` by default).
    pub fn phase(mut self, phase: &str) -> Self {
        self.phase = phase.into();
        self
    }
    /// The object as JSON, without status.
    pub fn to_json(&self) -> Value {
        let mut spec = json!({"containers": [{
            "name": "app", "image": "nginx", "ports": self.container_ports,
        }]});
        if let Some(node) = &self.node {
            spec["nodeName"] = json!(node);
        }
        json!({
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": self.labels,
                "finalizers": self.finalizers,
            },
            "spec": spec,
        })
    }
    /// The status a kubelet would write.
    pub fn status_json(&self) -> Value {
        let mut status = json!({
            "phase": self.phase,
            "conditions": [ready_condition(self.ready)],
        });
        if let Some(first) = self.ips.first() {
            status["podIP"] = json!(first);
            status["podIPs"] = json!(self
                .ips
                .iter()
                .map(|ip| json!({"ip": ip}))
                .collect::<Vec<_>>());
        }
        status
    }
}

/// Starts a ready node with 4 CPUs and no labels.
pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder {
        name: name.into(),
        labels: BTreeMap::new(),
        cpu: "4".into(),
    }
}

/// Builds a Node.
#[derive(Debug, Clone)]
pub struct NodeBuilder {
    name: String,
    labels: BTreeMap<String, String>,
    cpu: String,
}

impl NodeBuilder {
    /// Sets the `topology.kubernetes.io/zone` label.
    pub fn zone(mut self, zone: &str) -> Self {
        self.labels.insert(ZONE_LABEL.into(), zone.into());
        self
    }
}
