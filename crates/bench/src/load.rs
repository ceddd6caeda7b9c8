//! The load generator: what kubelets, the scheduler and workload controllers would write,
//! without any of them. Nodes get zones, allocatable CPU and a Ready condition through
//! `nodes/status`; pods are created bound to a node (with a container port the Services
//! target by name), then get their IP, phase Running and Ready condition through
//! `pods/status`. Pods carry a finalizer of ours so that a delete leaves them terminating, as a
//! kubelet would while containers stop, until we remove it.
//!
//! Every change is first recorded in the [tracker](super::converge), then written, then marked
//! written, so that the watches can time when the controller reflects it. Writes in one step
//! go out concurrently but never touch the same pod twice, so the order of our model and the
//! server's agree.

use super::converge::{lock, Shared};
use super::model::{NodeModel, PodModel};
use anyhow::{Context, Result};
use apiserver::SeededRng;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Service};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The finalizer that keeps a deleted pod terminating until the bench lets it go.
pub const FINALIZER: &str = "bench.kube-endpoints.io/terminating";
/// The zone label of nodes (and of endpoints).
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The annotation that turns on topology-aware hints.
pub const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
/// The label selecting a Service's pods.
const APP_LABEL: &str = "app";

/// Sizes and knobs of the load.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Services.
    pub services: usize,
    /// Pods per Service at the start.
    pub pods_per_service: usize,
    /// Nodes.
    pub nodes: usize,
    /// Zones the nodes are spread over.
    pub zones: usize,
    /// Seed of the random picks.
    pub seed: u64,
    /// Writes in flight at once.
    pub concurrency: usize,
    /// What the pods carry besides what the controllers read.
    pub pod_shape: PodShape,
}

/// How much a bench pod carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PodShape {
    /// What the controllers read and little else: one container with one port.
    #[default]
    Minimal,
    /// What a Deployment's pod carries once kubelet reports it: an owner, annotations, a
    /// container with resources, environment, probes and mounts, the service account's
    /// projected volume, default tolerations, and container statuses in every status write
    /// (about 4 KB of JSON before managedFields).
    Deployment,
}

impl PodShape {
    /// Adds the shape's fields to a pod being created.
    fn dress(self, pod: &mut Value, service: &str) {
        if self == Self::Minimal {
            return;
        }
        let extra = json!({
            "metadata": {
                "generateName": format!("{service}-7d4b9c8f6d-"),
                "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T00:00:00Z",
                                "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": format!("{service}-7d4b9c8f6d"), "uid": "0c2a8f3e-5b7d-4e1a-9f6c-2d8b4a7e1c3f",
                    "controller": true, "blockOwnerDeletion": true}]
            },
            "spec": {
                "volumes": [{"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "serviceAccount": "default",
                "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": true,
                "preemptionPolicy": "PreemptLowerPriority",
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
            }
        });
        merge(pod, extra);
        if let Some(container) = pod.pointer_mut("/spec/containers/0") {
            merge(
                container,
                json!({
                    "imagePullPolicy": "IfNotPresent",
                    "args": ["--listen=:8080", "--metrics=:9090", "--log-level=info"],
                    "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                            {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                            {"name": "GOMAXPROCS", "value": "2"}, {"name": "LOG_FORMAT", "value": "json"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                                       "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                                      "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                    "volumeMounts": [{"name": "kube-api-access-x7k2p", "readOnly": true,
                                      "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                    "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
                }),
            );
        }
    }

    /// Adds the shape's fields to a status write.
    fn dress_status(self, status: &mut Value, ready: bool) {
        if self == Self::Minimal {
            return;
        }
        merge(
            status,
            json!({"status": {
                "qosClass": "Burstable",
                "containerStatuses": [{
                    "name": "app", "ready": ready, "started": true, "restartCount": 0,
                    "image": "registry.k8s.io/pause:3.10",
                    "imageID": "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
                    "containerID": "containerd://4f1c2b9e8d7a6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b",
                    "state": {"running": {"startedAt": "2026-11-01T00:00:05Z"}}}]
            }}),
        );
    }
}

/// Adds `extra`'s fields to `target`, objects merged key by key.
fn merge(target: &mut Value, extra: Value) {
    match (target, extra) {
        (Value::Object(target), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(target.entry(key).or_insert(Value::Null), value);
            }
        }
        (target, extra) => *target = extra,
    }
}

/// What the progress line shows, updated as the load runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// The current phase.
    pub phase: Mutex<String>,
    /// Pod writes done (create, status, delete, finalizer removal).
    pub pod_writes: AtomicU64,
}

impl Progress {
    /// Sets the phase shown.
    pub fn set_phase(&self, phase: &str) {
        *self.phase.lock().unwrap_or_else(PoisonError::into_inner) = phase.to_owned();
    }

    /// The phase shown.
    pub fn phase(&self) -> String {
        self.phase
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// One write (or a short sequence of writes to one pod or node).
#[derive(Debug)]
enum Op {
    /// Create a pod, then write its status Ready.
    StartPod { name: String, model: PodModel },
    /// Flip a pod's Ready condition.
    SetReady { name: String, ready: bool },
    /// Delete a pod; our finalizer keeps it terminating.
    Terminate { name: String },
    /// Remove the finalizer of a terminating pod, which lets it go.
    Finish { name: String },
    /// Write a node's Ready condition, then (as the node lifecycle controller would) its
    /// pods' Ready conditions.
    NodeReady { node: usize, ready: bool },
    /// Move a node to another zone.
    NodeZone { node: usize, zone: String },
}

impl Op {
    /// The writes that let the terminating pods `names` go.
    fn finish_all(names: impl IntoIterator<Item = String>) -> Vec<Op> {
        names.into_iter().map(|name| Op::Finish { name }).collect()
    }
}

/// The load generator.
pub struct Load {
    client: Client,
    namespace: String,
    tracker: Shared,
    progress: Arc<Progress>,
    options: LoadOptions,
    rng: SeededRng,
    pods_made: u64,
    next_suffix: Vec<u64>,
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn pod_ip(n: u64) -> String {
    // 10.0.0.0/8 holds 16M pods; the size cap keeps us far below.
    format!("10.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255)
}

fn node_ip(n: usize) -> String {
    format!("172.16.{}.{}", (n >> 8) & 255, n & 255)
}

/// Whether an error is worth another try (throttling, server trouble, a dropped connection).
fn transient(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => matches!(status.code, 409 | 429 | 500 | 502 | 503 | 504),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Runs `f` until it succeeds, up to five times on transient errors.
async fn retry<T, F, Fut>(what: &str, mut f: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        match f().await {
            Ok(v) => return Ok(v),
            Err(err) if attempt < 5 && transient(&err) => {
                tracing::debug!(%err, attempt, what, "retrying");
                tokio::time::sleep(Duration::from_millis(50 * attempt)).await;
            }
            Err(err) => return Err(err).with_context(|| what.to_owned()),
        }
    }
}

impl Load {
    /// A generator writing into `namespace` with `client`.
    pub fn new(
        client: Client,
        namespace: &str,
        tracker: Shared,
        progress: Arc<Progress>,
        options: LoadOptions,
    ) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            tracker,
            progress,
            rng: SeededRng::new(options.seed),
            options,
            pods_made: 0,
            next_suffix: Vec::new(),
        }
    }

    /// Shows `phase` on the progress line.
    pub fn set_phase(&self, phase: &str) {
        self.progress.set_phase(phase);
    }

    /// Pod writes so far.
    pub fn pod_writes(&self) -> u64 {
        self.progress.pod_writes.load(Ordering::Relaxed)
    }

    /// Creates the namespace; refuses one that exists, so runs never mix.
    pub async fn create_namespace(&self) -> Result<()> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": self.namespace}}))?;
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => anyhow::bail!(
                "namespace {} exists; delete it or pass another --namespace",
                self.namespace
            ),
            Err(err) => Err(err).context("creating the bench namespace"),
        }
    }

    /// Creates the nodes, spread round-robin over the zones, all Ready.
    pub async fn create_nodes(&mut self) -> Result<()> {
        self.progress.set_phase("nodes");
        {
            let mut t = lock(&self.tracker);
            for n in 0..self.options.nodes {
                t.nodes.push(NodeModel {
                    name: format!("bench-node-{n:04}"),
                    zone: format!("bench-zone-{}", n % self.options.zones.max(1)),
                    ready: true,
                    zone_changed: false,
                });
            }
        }
        let api: Api<Node> = Api::all(self.client.clone());
        let nodes = lock(&self.tracker).nodes.clone();
        futures::stream::iter(nodes.into_iter().enumerate().map(Ok))
            .try_for_each_concurrent(self.options.concurrency, |(n, node)| {
                let api = api.clone();
                async move {
                    let object: Node = serde_json::from_value(json!({
                        "metadata": {"name": node.name, "labels": {
                            "kubernetes.io/hostname": node.name, ZONE_LABEL: node.zone}},
                        "spec": {}
                    }))?;
                    let post = PostParams::default();
                    retry("creating a node", || api.create(&post, &object)).await?;
                    let status = node_status(n, true);
                    let (params, patch) = (PatchParams::default(), Patch::Merge(&status));
                    retry("writing node status", || {
                        api.patch_status(&node.name, &params, &patch)
                    })
                    .await?;
                    Ok(())
                }
            })
            .await
    }

    /// Creates every Service (with `topology-mode: Auto` when `topology_auto`).
    pub async fn create_services(&mut self, topology_auto: bool) -> Result<()> {
        self.progress.set_phase("services");
        let names: Vec<String> = (0..self.options.services)
            .map(|s| format!("svc-{s:05}"))
            .collect();
        {
            let mut t = lock(&self.tracker);
            for name in &names {
                t.add_service(name, topology_auto);
            }
        }
        self.next_suffix = vec![0; names.len()];
        let api: Api<Service> = Api::namespaced(self.client.clone(), &self.namespace);
        futures::stream::iter(names.into_iter().map(Ok))
            .try_for_each_concurrent(self.options.concurrency, |name| {
                let api = api.clone();
                async move {
                    let annotations = if topology_auto {
                        json!({TOPOLOGY_MODE: "Auto"})
                    } else {
                        json!({})
                    };
                    let object: Service = serde_json::from_value(json!({
                        "metadata": {"name": name, "annotations": annotations},
                        "spec": {"selector": {APP_LABEL: name}, "ports": [
                            {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}
                    }))?;
                    let post = PostParams::default();
                    retry("creating a service", || api.create(&post, &object)).await?;
                    Ok(())
                }
            })
            .await
    }

    /// Gives every Service its pods, all becoming Ready.
    pub async fn fill_services(&mut self) -> Result<()> {
        self.progress.set_phase("pods");
        let mut ops = Vec::new();
        for s in 0..self.options.services {
            for _ in 0..self.options.pods_per_service {
                ops.push(self.new_pod(s));
            }
        }
        self.run(ops).await
    }

    /// Replaces every pod, `batch` per Service at a time, like a Deployment rollout with
    /// maxSurge `batch` and maxUnavailable 0: new pods start and become Ready, then as many
    /// old ones are deleted (terminating), and the previous step's terminating pods go.
    pub async fn rolling(&mut self, batch: usize) -> Result<()> {
        self.progress.set_phase("rolling");
        let batch = batch.max(1);
        let old: Vec<Vec<String>> = (0..self.options.services)
            .map(|s| self.live_pods(s))
            .collect();
        let steps = old.iter().map(Vec::len).max().unwrap_or(0).div_ceil(batch);
        let mut terminating: Vec<String> = Vec::new();
        for step in 0..steps {
            let mut starts = Vec::new();
            let mut stops = Vec::new();
            for (s, pods) in old.iter().enumerate() {
                let from = (step * batch).min(pods.len());
                let to = ((step + 1) * batch).min(pods.len());
                for _ in from..to {
                    starts.push(self.new_pod(s));
                }
                for name in &pods[from..to] {
                    stops.push(Op::Terminate { name: name.clone() });
                }
            }
            self.run(starts).await?;
            stops.extend(Op::finish_all(terminating.drain(..)));
            for op in &stops {
                if let Op::Terminate { name } = op {
                    terminating.push(name.clone());
                }
            }
            self.run(stops).await?;
        }
        self.run(Op::finish_all(terminating)).await
    }

    /// Flips the readiness of `churn` random pods, up to 32 distinct pods per step.
    pub async fn flap(&mut self, churn: usize) -> Result<()> {
        self.progress.set_phase("flap");
        let mut left = churn;
        while left > 0 {
            let mut picked = BTreeSet::new();
            let mut ops = Vec::new();
            for _ in 0..left.min(32) {
                ops.extend(self.flip_random_pod(&mut picked));
            }
            left = left.saturating_sub(ops.len().max(1));
            self.run(ops).await?;
        }
        Ok(())
    }

    /// A readiness flip of a random live pod of a random Service, unless that Service has none
    /// or the pod is already in `picked` (one change per pod per step).
    fn flip_random_pod(&mut self, picked: &mut BTreeSet<String>) -> Option<Op> {
        let s = self.rng.below(self.options.services);
        let pods = self.live_pods(s);
        if pods.is_empty() {
            return None;
        }
        let name = pods[self.rng.below(pods.len())].clone();
        if !picked.insert(name.clone()) {
            return None;
        }
        let ready = lock(&self.tracker).pods.get(&name).is_some_and(|p| p.ready);
        Some(Op::SetReady {
            name,
            ready: !ready,
        })
    }

    /// Flips the readiness of `rate` random pods a second (the fraction carried over) for
    /// `duration`, calling `sample` at the start, every `every`, and at the end; returns the
    /// samples (seconds since the start, and the sampler's answer) and the flips made.
    pub async fn soak(
        &mut self,
        rate: f64,
        duration: Duration,
        every: Duration,
        mut sample: impl FnMut() -> Option<u64>,
    ) -> Result<(Vec<(f64, u64)>, u64)> {
        self.progress.set_phase("soak");
        let start = tokio::time::Instant::now();
        let mut samples = Vec::new();
        let mut take = |samples: &mut Vec<(f64, u64)>| {
            if let Some(value) = sample() {
                samples.push((start.elapsed().as_secs_f64(), value));
            }
        };
        take(&mut samples);
        let mut next_sample = start + every;
        let mut owed = 0.0;
        let mut flips = 0u64;
        let mut tick = start;
        while tick.duration_since(start) < duration {
            tick += Duration::from_secs(1);
            owed += rate;
            let mut ops = Vec::new();
            let mut picked = BTreeSet::new();
            while owed >= 1.0 {
                owed -= 1.0;
                ops.extend(self.flip_random_pod(&mut picked));
            }
            flips += ops.len() as u64;
            self.run(ops).await?;
            tokio::time::sleep_until(tick).await;
            if tokio::time::Instant::now() >= next_sample {
                take(&mut samples);
                next_sample += every;
            }
        }
        // The end, unless the last tick's sample was just taken.
        if samples
            .last()
            .is_none_or(|(at, _)| start.elapsed().as_secs_f64() - at > 0.5)
        {
            take(&mut samples);
        }
        Ok((samples, flips))
    }

    /// Scales random Services up and down `churn` times (four Services per step); pods
    /// scaled away terminate in one step and go in the next.
    pub async fn scale(&mut self, churn: usize) -> Result<()> {
        self.progress.set_phase("scale");
        let m = self.options.pods_per_service.max(1);
        let mut terminating: Vec<String> = Vec::new();
        let mut left = churn;
        while left > 0 {
            let mut ops = Op::finish_all(terminating.drain(..));
            let mut picked = BTreeSet::new();
            for _ in 0..left.min(4) {
                left -= 1;
                let s = self.rng.below(self.options.services);
                if !picked.insert(s) {
                    continue;
                }
                let live = self.live_pods(s);
                if self.rng.coin() && live.len() > 1 {
                    let down = 1 + self.rng.below((live.len() / 2).max(1));
                    for name in live.iter().rev().take(down) {
                        terminating.push(name.clone());
                        ops.push(Op::Terminate { name: name.clone() });
                    }
                } else {
                    let up = (1 + self.rng.below((m / 2).max(1)))
                        .min((2 * m).saturating_sub(live.len()));
                    for _ in 0..up {
                        ops.push(self.new_pod(s));
                    }
                }
            }
            self.run(ops).await?;
        }
        self.run(Op::finish_all(terminating)).await
    }

    /// `churn` node events: a node goes NotReady (and its pods unready) or comes back, or
    /// moves to another zone.
    pub async fn node_churn(&mut self, churn: usize) -> Result<()> {
        self.progress.set_phase("nodes");
        let zones = self.options.zones.max(1);
        for _ in 0..churn {
            let (count, op) = {
                let t = lock(&self.tracker);
                let count = t.nodes.len();
                let node = self.rng.below(count);
                let op = match (self.rng.below(3), t.nodes.get(node)) {
                    (2, Some(n)) => {
                        let current: usize = n
                            .zone
                            .rsplit('-')
                            .next()
                            .and_then(|z| z.parse().ok())
                            .unwrap_or(0);
                        Op::NodeZone {
                            node,
                            zone: format!("bench-zone-{}", (current + 1) % zones),
                        }
                    }
                    (_, Some(n)) => Op::NodeReady {
                        node,
                        ready: !n.ready,
                    },
                    (_, None) => continue,
                };
                (count, op)
            };
            if count == 0 {
                break;
            }
            self.run(vec![op]).await?;
        }
        Ok(())
    }

    /// Removes our finalizer from every pod left (so a real cluster can delete the namespace).
    pub async fn release_all(&self) -> Result<()> {
        let names: Vec<String> = lock(&self.tracker).pods.keys().cloned().collect();
        self.run(Op::finish_all(names)).await
    }

    /// Deletes the namespace (after [`Self::release_all`]).
    pub async fn delete_namespace(&self) -> Result<()> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        api.delete(&self.namespace, &DeleteParams::default())
            .await
            .context("deleting the bench namespace")?;
        Ok(())
    }

    /// Names of the Service's pods that are not terminating, oldest first.
    fn live_pods(&self, service: usize) -> Vec<String> {
        let t = lock(&self.tracker);
        t.services
            .get(service)
            .map(|s| {
                s.pods
                    .iter()
                    .filter(|p| t.pods.get(*p).is_some_and(|m| !m.terminating))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    fn new_pod(&mut self, service: usize) -> Op {
        let suffix = self.next_suffix.get(service).copied().unwrap_or(0);
        if let Some(n) = self.next_suffix.get_mut(service) {
            *n += 1;
        }
        self.pods_made += 1;
        let node = (self.pods_made as usize) % self.options.nodes.max(1);
        let name = format!("svc-{service:05}-{suffix:05}");
        Op::StartPod {
            name,
            model: PodModel {
                service,
                node,
                ip: Some(pod_ip(self.pods_made)),
                ready: true,
                terminating: false,
            },
        }
    }

    async fn run(&self, ops: Vec<Op>) -> Result<()> {
        futures::stream::iter(ops.into_iter().map(Ok))
            .try_for_each_concurrent(self.options.concurrency, |op| self.apply(op))
            .await
    }

    async fn apply(&self, op: Op) -> Result<()> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        match op {
            Op::StartPod { name, model } => {
                let (service_name, node) = {
                    let t = lock(&self.tracker);
                    let service = t.services.get(model.service).map(|s| s.name.clone());
                    let node = t.nodes.get(model.node).map(|n| n.name.clone());
                    (service, node)
                };
                let service_name = service_name.context("pod of an unknown service")?;
                let node = node.context("pod on an unknown node")?;
                let mut object = json!({
                    "metadata": {"name": name, "labels": {APP_LABEL: service_name},
                                 "finalizers": [FINALIZER]},
                    "spec": {"nodeName": node, "containers": [{
                        "name": "app", "image": "registry.k8s.io/pause:3.10",
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]}
                });
                self.options.pod_shape.dress(&mut object, &service_name);
                let object: Pod = serde_json::from_value(object)?;
                let created = PodModel {
                    ip: None,
                    ready: false,
                    ..model.clone()
                };
                lock(&self.tracker).set_pod(&name, Some(created), Instant::now());
                let post = PostParams::default();
                retry("creating a pod", || pods.create(&post, &object)).await?;
                self.progress.pod_writes.fetch_add(1, Ordering::Relaxed);
                let ip = model.ip.clone().unwrap_or_default();
                let mut status = pod_status(&ip, &node_ip(model.node), model.ready);
                self.options
                    .pod_shape
                    .dress_status(&mut status, model.ready);
                self.write_pod_status(&pods, &name, model, &status).await
            }
            Op::SetReady { name, ready } => {
                let Some(mut model) = lock(&self.tracker).pods.get(&name).cloned() else {
                    return Ok(());
                };
                model.ready = ready;
                let ip = model.ip.clone().unwrap_or_default();
                let mut status = pod_status(&ip, &node_ip(model.node), ready);
                self.options.pod_shape.dress_status(&mut status, ready);
                self.write_pod_status(&pods, &name, model, &status).await
            }
            Op::Terminate { name } => {
                let Some(mut model) = lock(&self.tracker).pods.get(&name).cloned() else {
                    return Ok(());
                };
                model.terminating = true;
                lock(&self.tracker).set_pod(&name, Some(model), Instant::now());
                let params = DeleteParams {
                    grace_period_seconds: Some(0),
                    ..DeleteParams::default()
                };
                retry("deleting a pod", || pods.delete(&name, &params)).await?;
                self.done(&name);
                Ok(())
            }
            Op::Finish { name } => {
                if !lock(&self.tracker).pods.contains_key(&name) {
                    return Ok(());
                }
                lock(&self.tracker).set_pod(&name, None, Instant::now());
                let patch = json!({"metadata": {"finalizers": null}});
                match pods
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {}
                    // Gone already (a real cluster may have finished the delete itself).
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(err) => return Err(err).context("removing a pod's finalizer"),
                }
                self.done(&name);
                Ok(())
            }
            Op::NodeReady { node, ready } => {
                let name = {
                    let mut t = lock(&self.tracker);
                    let Some(n) = t.nodes.get_mut(node) else {
                        return Ok(());
                    };
                    n.ready = ready;
                    n.name.clone()
                };
                let api: Api<Node> = Api::all(self.client.clone());
                let status = node_status(node, ready);
                let (params, patch) = (PatchParams::default(), Patch::Merge(&status));
                retry("writing node status", || {
                    api.patch_status(&name, &params, &patch)
                })
                .await?;
                let on_node: Vec<String> = {
                    let t = lock(&self.tracker);
                    t.pods
                        .iter()
                        .filter(|(_, p)| p.node == node && !p.terminating && p.ready != ready)
                        .map(|(n, _)| n.clone())
                        .collect()
                };
                futures::stream::iter(on_node)
                    .map(|name| Ok(Op::SetReady { name, ready }))
                    .try_for_each_concurrent(self.options.concurrency, |op| self.apply_pod(op))
                    .await
            }
            Op::NodeZone { node, zone } => {
                let Some(name) = lock(&self.tracker).nodes.get(node).map(|n| n.name.clone()) else {
                    return Ok(());
                };
                lock(&self.tracker).set_node_zone(node, &zone, Instant::now());
                let api: Api<Node> = Api::all(self.client.clone());
                let labels = json!({"metadata": {"labels": {ZONE_LABEL: zone}}});
                let (params, patch) = (PatchParams::default(), Patch::Merge(&labels));
                retry("relabelling a node", || api.patch(&name, &params, &patch)).await?;
                Ok(())
            }
        }
    }

    /// [`Self::apply`] for the pod ops a node op fans out to (boxed: `apply` is recursive).
    fn apply_pod(&self, op: Op) -> futures::future::BoxFuture<'_, Result<()>> {
        Box::pin(self.apply(op))
    }

    async fn write_pod_status(
        &self,
        pods: &Api<Pod>,
        name: &str,
        model: PodModel,
        status: &Value,
    ) -> Result<()> {
        lock(&self.tracker).set_pod(name, Some(model), Instant::now());
        let (params, patch) = (PatchParams::default(), Patch::Merge(status));
        retry("writing pod status", || {
            pods.patch_status(name, &params, &patch)
        })
        .await?;
        self.done(name);
        Ok(())
    }

    fn done(&self, pod: &str) {
        lock(&self.tracker).written(pod, Instant::now());
        self.progress.pod_writes.fetch_add(1, Ordering::Relaxed);
    }
}

fn pod_status(ip: &str, host_ip: &str, ready: bool) -> Value {
    let now = now_rfc3339();
    let ready = if ready { "True" } else { "False" };
    json!({"status": {
        "phase": "Running",
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": ready, "lastTransitionTime": now},
            {"type": "Ready", "status": ready, "lastTransitionTime": now}
        ]
    }})
}

fn node_status(n: usize, ready: bool) -> Value {
    let now = now_rfc3339();
    let resources = json!({"cpu": "4", "memory": "16Gi", "pods": "110"});
    json!({"status": {
        "capacity": resources,
        "allocatable": resources,
        "addresses": [{"type": "InternalIP", "address": node_ip(n)}],
        "conditions": [{
            "type": "Ready",
            "status": if ready { "True" } else { "False" },
            "reason": if ready { "KubeletReady" } else { "NodeStatusUnknown" },
            "lastHeartbeatTime": now,
            "lastTransitionTime": now
        }]
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_shaped_pod_keeps_what_the_controllers_read_and_adds_the_rest() {
        let minimal = json!({
            "metadata": {"name": "web-1", "labels": {APP_LABEL: "web"}},
            "spec": {"nodeName": "node-0", "containers": [{"name": "app", "image": "pause",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]}
        });
        let mut dressed = minimal.clone();
        PodShape::Deployment.dress(&mut dressed, "web");
        let pod: Pod = serde_json::from_value(dressed.clone()).unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("web-1"));
        assert_eq!(dressed["spec"]["nodeName"], "node-0");
        assert_eq!(
            dressed["spec"]["containers"][0]["ports"],
            minimal["spec"]["containers"][0]["ports"]
        );
        assert_eq!(pod.metadata.owner_references.unwrap()[0].kind, "ReplicaSet");
        assert!(dressed.to_string().len() > 3 * minimal.to_string().len());

        let mut status = pod_status("10.0.0.1", "10.1.0.1", true);
        PodShape::Deployment.dress_status(&mut status, true);
        assert_eq!(status["status"]["podIP"], "10.0.0.1");
        assert_eq!(status["status"]["containerStatuses"][0]["ready"], true);

        let mut untouched = minimal.clone();
        PodShape::Minimal.dress(&mut untouched, "web");
        assert_eq!(untouched, minimal);
    }
}
