//! The test cluster: one embedded API server per test, an in-process kube client, the
//! controllers running in a task, typed access to the objects, and waits on what they hold.

mod plan;
mod read;

use std::fmt::Debug;

use apiserver::{ApiServer, Faults};
use controller::config::Settings;
use controller::health::Readiness;
use controller::Options;
use k8s_openapi::api::core::v1::{Endpoints, Event, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use prometheus::proto::MetricType;
use prometheus::Registry;
use reconcile::labels::{MIRRORING_CONTROLLER_NAME, SLICE_CONTROLLER_NAME};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::build::{node, ready_condition, NodeBuilder, PodBuilder, ServiceBuilder, DEFAULT_NODE};
use crate::wait::{init_logs, until, within};

/// Where `run` keeps its leader-election Lease by default.
const LEASE_NAMESPACE: &str = "kube-system";
const LEASE_NAME: &str = "kube-endpoints";

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

/// The controller whose managed-by label a slice carries.
#[derive(Debug, Clone, Copy)]
pub enum Manager {
    /// The EndpointSlice controller, for Services with a selector.
    EndpointSlice,
    /// The EndpointSlice mirroring controller, for hand-written Endpoints.
    Mirroring,
}

impl Manager {
    /// The value of the managed-by label.
    fn name(self) -> &'static str {
        match self {
            Manager::EndpointSlice => SLICE_CONTROLLER_NAME,
            Manager::Mirroring => MIRRORING_CONTROLLER_NAME,
        }
    }

    /// The controller's counter of the slices it wrote, by `operation`.
    pub fn changes_metric(self) -> &'static str {
        match self {
            Manager::EndpointSlice => "endpoint_slice_controller_changes",
            Manager::Mirroring => "endpoint_slice_mirroring_controller_changes",
        }
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

    /// The sample count and sum of a histogram's series whose labels include `labels`.
    pub fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> (u64, f64) {
        histogram(&self.registry, name, labels)
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

/// [`controller::run`] owning what it borrows, so that it can be spawned as a task.
async fn run_owning(
    clients: controller::Clients,
    options: Options,
    registry: Registry,
    readiness: Readiness,
    shutdown: CancellationToken,
) -> Result<(), controller::RunError> {
    let activity = controller::Activity::new();
    controller::run(clients, &options, &registry, readiness, activity, shutdown).await
}

/// The sum of the series of a counter or gauge in `registry` whose labels include `labels`.
pub fn metric(registry: &Registry, name: &str, labels: &[(&str, &str)]) -> f64 {
    series(registry, name, labels)
        .iter()
        .map(|(kind, m)| match kind {
            MetricType::COUNTER => m.get_counter().get_value(),
            MetricType::GAUGE => m.get_gauge().get_value(),
            _ => 0.0,
        })
        .sum()
}

/// The sample count and sum of the series of a histogram in `registry` whose labels include
/// `labels`, added up.
pub fn histogram(registry: &Registry, name: &str, labels: &[(&str, &str)]) -> (u64, f64) {
    series(registry, name, labels)
        .iter()
        .filter(|(kind, _)| *kind == MetricType::HISTOGRAM)
        .map(|(_, m)| m.get_histogram())
        .fold((0, 0.0), |(count, sum), h| {
            (count + h.get_sample_count(), sum + h.get_sample_sum())
        })
}

/// The series of `name` in `registry` whose labels include `labels`, with the metric's type
/// (none when no such series exists yet).
pub fn series(
    registry: &Registry,
    name: &str,
    labels: &[(&str, &str)],
) -> Vec<(MetricType, prometheus::proto::Metric)> {
    registry
        .gather()
        .iter()
        .filter(|family| family.name() == name)
        .flat_map(|family| {
            let kind = family.get_field_type();
            family.get_metric().iter().map(move |m| (kind, m.clone()))
        })
        .filter(|(_, m)| {
            labels.iter().all(|(k, v)| {
                m.get_label()
                    .iter()
                    .any(|pair| pair.name() == *k && pair.value() == *v)
            })
        })
        .collect()
}

impl TestCluster {
    /// A fresh server with the initial namespaces and one ready node, [`DEFAULT_NODE`]
    /// (no zone), where [`pod`](crate::pod) schedules pods unless told otherwise.
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
        let (server, client) = crate::server::start();
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
        let task = tokio::spawn(run_owning(
            clients,
            options,
            registry.clone(),
            readiness.clone(),
            shutdown.clone(),
        ));
        until("the informers to sync", || readiness.is_ready()).await;
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
            .services(&service.meta.namespace)
            .create(&PostParams::default(), &object)
            .await?)
    }

    /// Creates the [`crate::web`] Service and `pods`; returns the Service.
    pub async fn create_web(&self, pods: &[PodBuilder]) -> anyhow::Result<Service> {
        let service = self.create_service(&crate::web()).await?;
        for pod in pods {
            self.create_pod(pod).await?;
        }
        Ok(service)
    }

    /// Creates a Pod, then writes its status (IPs, phase, readiness) through the status
    /// subresource, as a kubelet would.
    pub async fn create_pod(&self, pod: &PodBuilder) -> anyhow::Result<Pod> {
        let api = self.pods(&pod.meta.namespace);
        let object: Pod = serde_json::from_value(pod.to_json())?;
        api.create(&PostParams::default(), &object).await?;
        let status = json!({"status": pod.status_json()});
        Ok(api
            .patch_status(
                &pod.meta.name,
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
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
}
