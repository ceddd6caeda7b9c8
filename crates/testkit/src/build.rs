//! Builders for the objects the controllers read, with named setters.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};

/// The node label that carries its zone.
pub use reconcile::projection::ZONE_LABEL;

/// The node [`crate::TestCluster::start`] creates and [`pod`] schedules on.
pub const DEFAULT_NODE: &str = "node-1";

/// A Pod's Ready condition, stamped now.
pub(crate) fn ready_condition(ready: bool) -> Value {
    json!({
        "type": "Ready",
        "status": if ready { "True" } else { "False" },
        "lastTransitionTime": k8s_openapi::jiff::Timestamp::now().to_string(),
    })
}

/// The metadata every namespaced builder sets: where the object lives, its labels and
/// finalizers.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) finalizers: Vec<String>,
}

impl Meta {
    /// `name` in `default`, without labels or finalizers.
    fn named(name: &str) -> Self {
        Self {
            namespace: "default".into(),
            name: name.into(),
            labels: BTreeMap::new(),
            finalizers: Vec::new(),
        }
    }

    /// The metadata as JSON.
    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "namespace": self.namespace,
            "labels": self.labels,
            "finalizers": self.finalizers,
        })
    }
}

/// The setters of [`Meta`], for a builder that keeps it in a `meta` field.
macro_rules! meta_setters {
    () => {
        /// Sets the namespace.
        pub fn ns(mut self, ns: &str) -> Self {
            self.meta.namespace = ns.into();
            self
        }
        /// Adds a label.
        pub fn label(mut self, key: &str, value: &str) -> Self {
            self.meta.labels.insert(key.into(), value.into());
            self
        }
        /// Adds a finalizer, so that a delete leaves the object terminating.
        pub fn finalizer(mut self, finalizer: &str) -> Self {
            self.meta.finalizers.push(finalizer.into());
            self
        }
    };
}

/// The Service most tests use: `web` in `default`, selecting `app=web`, port `http` 80 to
/// 8080.
pub fn web() -> ServiceBuilder {
    service("web").selector("app", "web").port("http", 80, 8080)
}

/// A ready pod of [`web`] with one IP.
pub fn web_pod(name: &str, ip: &str) -> PodBuilder {
    pod(name).label("app", "web").ip(ip).ready(true)
}

/// `count` ready pods of [`web`], `web-<i>` with the IP `10.0.0.<i + 1>`.
pub fn web_pods(count: usize) -> impl Iterator<Item = PodBuilder> {
    (0..count).map(|i| web_pod(&format!("web-{i}"), &format!("10.0.0.{}", i + 1)))
}

/// A succeeded and a failed pod of [`web`], ready, with the IP 10.0.0.9: pods that have run
/// to the end, which no controller publishes.
pub fn finished_web_pods() -> [PodBuilder; 2] {
    ["Succeeded", "Failed"].map(|phase| web_pod(&phase.to_lowercase(), "10.0.0.9").phase(phase))
}

/// Starts a ClusterIP Service in `default` without selector or ports.
pub fn service(name: &str) -> ServiceBuilder {
    ServiceBuilder {
        meta: Meta::named(name),
        annotations: BTreeMap::new(),
        selector: BTreeMap::new(),
        ports: Vec::new(),
        spec: serde_json::Map::new(),
    }
}

/// Builds a Service.
#[derive(Debug, Clone)]
pub struct ServiceBuilder {
    pub(crate) meta: Meta,
    pub(crate) annotations: BTreeMap<String, String>,
    pub(crate) selector: BTreeMap<String, String>,
    pub(crate) ports: Vec<Value>,
    /// Other spec fields.
    pub(crate) spec: serde_json::Map<String, Value>,
}

impl ServiceBuilder {
    meta_setters!();
    /// Adds a selector pair.
    pub fn selector(mut self, key: &str, value: &str) -> Self {
        self.selector.insert(key.into(), value.into());
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
    /// Adds an unnamed TCP port whose targetPort is the same number (the only port a
    /// Service may leave unnamed).
    pub fn unnamed_port(mut self, port: i32) -> Self {
        self.ports.push(json!({"port": port}));
        self
    }
    /// Sets any other spec field, e.g. `sessionAffinity`.
    pub fn spec(mut self, field: &str, value: Value) -> Self {
        self.spec.insert(field.into(), value);
        self
    }
    /// The object as a manifest for `plan` or `kubectl apply`.
    pub fn manifest(&self) -> Value {
        let mut service = self.to_json();
        service["apiVersion"] = json!("v1");
        service["kind"] = json!("Service");
        service
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
        let mut metadata = self.meta.to_json();
        metadata["annotations"] = json!(self.annotations);
        json!({"metadata": metadata, "spec": spec})
    }
}

/// Starts a running pod in `default`, on [`DEFAULT_NODE`], without IP, not ready.
pub fn pod(name: &str) -> PodBuilder {
    PodBuilder {
        meta: Meta::named(name),
        node: Some(DEFAULT_NODE.into()),
        ips: Vec::new(),
        ready: false,
        container_ports: Vec::new(),
        phase: "Running".into(),
    }
}

/// Builds a Pod and its status.
#[derive(Debug, Clone)]
pub struct PodBuilder {
    pub(crate) meta: Meta,
    pub(crate) node: Option<String>,
    pub(crate) ips: Vec<String>,
    pub(crate) ready: bool,
    pub(crate) container_ports: Vec<Value>,
    pub(crate) phase: String,
}

impl PodBuilder {
    meta_setters!();
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
    /// Sets the phase (`Running` by default).
    pub fn phase(mut self, phase: &str) -> Self {
        self.phase = phase.into();
        self
    }
    /// Leaves the pod unscheduled (no `nodeName`).
    pub fn unscheduled(mut self) -> Self {
        self.node = None;
        self
    }
    /// The pod as a typed object, without status (what a create sends).
    pub fn object(&self) -> Pod {
        serde_json::from_value(self.to_json()).expect("the builder writes a valid Pod")
    }
    /// The object as JSON, without status.
    pub fn to_json(&self) -> Value {
        let mut spec = json!({"containers": [{
            "name": "app", "image": "nginx", "ports": self.container_ports,
        }]});
        if let Some(node) = &self.node {
            spec["nodeName"] = json!(node);
        }
        json!({"metadata": self.meta.to_json(), "spec": spec})
    }
    /// The status a kubelet would write, its Ready condition stamped now.
    pub fn status_json(&self) -> Value {
        self.status(Some(ready_condition(self.ready)))
    }

    fn status(&self, ready: Option<Value>) -> Value {
        let ready = ready.unwrap_or_else(
            || json!({"type": "Ready", "status": if self.ready { "True" } else { "False" }}),
        );
        let mut status = json!({"phase": self.phase, "conditions": [ready]});
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

    /// The whole object as a manifest for `plan` or `kubectl apply`: kind, spec and status,
    /// the Ready condition without a transition time, so the manifest is the same every run.
    pub fn manifest(&self) -> Value {
        let mut pod = self.to_json();
        pod["apiVersion"] = json!("v1");
        pod["kind"] = json!("Pod");
        pod["status"] = self.status(None);
        pod
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
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) cpu: String,
}

impl NodeBuilder {
    /// Sets the `topology.kubernetes.io/zone` label.
    pub fn zone(mut self, zone: &str) -> Self {
        self.labels.insert(ZONE_LABEL.into(), zone.into());
        self
    }

    /// The node as a manifest: labels and the status [`crate::TestCluster::create_node`]
    /// writes (Ready, allocatable CPU).
    pub fn manifest(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": self.labels},
            "status": {
                "allocatable": {"cpu": self.cpu},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        })
    }
}
