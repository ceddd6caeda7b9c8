//! Comparing what our controllers write with what upstream kube-controller-manager wrote.
//!
//! A case directory holds `input.yaml` (a cluster state), optionally `flags` (extra
//! kube-controller-manager flags) and `upstream.json` (the Endpoints, EndpointSlices and
//! Events upstream wrote once settled). Some of what upstream writes depends on Go map order
//! or on the UIDs its API server assigned, so both sides are normalised first; the rules are
//! in `shared/conformance/README.md` and implemented in [`normalise`].
//!
//! A case with a `steps.yaml` is dynamic: it runs live only ([`run_dynamic`]), changes are
//! applied after the controllers settled, and both the objects left (by the looser dynamic
//! rules, [`Rules::Dynamic`]) and the number of writes ([`crate::dynamic`]) are compared.

use crate::dynamic::{parse_steps, run_steps, Step, Writes};
use crate::manifests::{load_paths, to_values, Object};
use crate::plan::{plan, run_until_settled, PlanSettings};
use anyhow::{bail, Context, Result};
use kube_endpoints::flags::CaseFlags;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use reconcile::endpoints::OVER_CAPACITY;
use reconcile::trigger_time::ANNOTATION as TRIGGER_TIME;

/// One case, loaded.
#[derive(Debug)]
pub struct Case {
    /// The directory name.
    pub name: String,
    /// Objects of `input.yaml`.
    pub objects: Vec<Object>,
    /// The kube-controller-manager flags of `flags` (their defaults when absent).
    pub flags: CaseFlags,
    /// `upstream.json`, if recorded.
    pub upstream: Option<Value>,
    /// `steps.yaml`, for a dynamic case.
    pub steps: Option<Vec<Step>>,
}

/// Which comparison rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// A case settled once on its input.
    Static,
    /// A case with steps: slices compared by total endpoints per port list.
    Dynamic,
    /// A cluster whose API server restarted with lost state (the objects of now or of a
    /// backup, under new uids): its slices came back from there, so how the endpoints are
    /// split among them is history (upstream does not merge two slices that
    /// each keep an endpoint). Compared by the endpoints they hold (a duplicate still shows),
    /// the number of empty slices (a left-over placeholder shows) and the distinct metadata.
    Restored,
}

/// What a controller run wrote, as the API would return it.
#[derive(Debug, Default, Clone)]
pub struct Written {
    /// Endpoints objects.
    pub endpoints: Vec<Value>,
    /// EndpointSlices.
    pub endpoint_slices: Vec<Value>,
    /// Events.
    pub events: Vec<WrittenEvent>,
}

/// An Event, as far as the comparison reads it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WrittenEvent {
    /// The involved object's namespace.
    pub namespace: String,
    /// The involved object's name.
    pub name: String,
    /// Normal or Warning.
    pub type_: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
}

impl Written {
    /// Endpoints and EndpointSlices (a cluster's, or one Service's), without Events.
    pub fn from_objects<'a>(
        endpoints: impl IntoIterator<Item = &'a k8s_openapi::api::core::v1::Endpoints>,
        slices: impl IntoIterator<Item = &'a k8s_openapi::api::discovery::v1::EndpointSlice>,
    ) -> Result<Self> {
        fn values<'a, T: serde::Serialize + 'a>(
            items: impl IntoIterator<Item = &'a T>,
        ) -> Result<Vec<Value>> {
            items
                .into_iter()
                .map(|i| serde_json::to_value(i).context("encoding an object"))
                .collect()
        }
        Ok(Self {
            endpoints: values(endpoints)?,
            endpoint_slices: values(slices)?,
            events: Vec::new(),
        })
    }

    /// What a `plan` run left: its Endpoints, EndpointSlices and Events.
    pub fn from_outcome(outcome: crate::plan::Outcome) -> Result<Self> {
        Ok(Self {
            events: outcome
                .events
                .into_iter()
                .map(|e| WrittenEvent {
                    namespace: e.involved_object.namespace,
                    name: e.involved_object.name,
                    type_: e.type_,
                    reason: e.reason,
                    message: e.message,
                })
                .collect(),
            ..Self::from_objects(&outcome.endpoints, &outcome.slices)?
        })
    }

    /// The same without its Events, for comparisons with a side that has none.
    pub fn without_events(self) -> Self {
        Self {
            events: Vec::new(),
            ..self
        }
    }
}

impl WrittenEvent {
    /// Upstream's Warnings for a write that lost a race with its own informer: it synced the
    /// Service again before its cache had seen its last write. The corpus leaves them out of
    /// the comparison; a controller that never loses that race is better, not different.
    pub fn lost_a_race(&self) -> bool {
        self.type_ == "Warning"
            && match self.reason.as_str() {
                "FailedToCreateEndpoint" => self.message.contains("already exists"),
                "FailedToUpdateEndpoint" | "FailedToUpdateEndpointSlices" => {
                    self.message.contains("the object has been modified")
                }
                _ => false,
            }
    }
}

/// Loads a case directory.
pub fn load_case(dir: &Path) -> Result<Case> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("case")
        .to_owned();
    let loaded = load_paths(&[dir.join("input.yaml")]).with_context(|| format!("case {name}"))?;
    let flags = match std::fs::read_to_string(dir.join("flags")) {
        Ok(text) => CaseFlags::from_text(&text)
            .with_context(|| format!("case {name}: {}", dir.join("flags").display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => CaseFlags::default(),
        Err(e) => {
            return Err(e)
                .with_context(|| format!("case {name}: reading {}", dir.join("flags").display()))
        }
    };
    let upstream = match std::fs::read_to_string(dir.join("upstream.json")) {
        Ok(text) => Some(
            serde_json::from_str(&text).with_context(|| format!("case {name}: upstream.json"))?,
        ),
        Err(_) => None,
    };
    let steps = match std::fs::read_to_string(dir.join("steps.yaml")) {
        Ok(text) => Some(parse_steps(&text).with_context(|| format!("case {name}: steps.yaml"))?),
        Err(_) => None,
    };
    Ok(Case {
        name,
        objects: loaded.objects,
        flags,
        upstream,
        steps,
    })
}

/// The case directories under `root` (a directory holding an `input.yaml` is itself a case).
pub fn find_cases(root: &Path) -> Result<Vec<PathBuf>> {
    if root.join("input.yaml").is_file() {
        return Ok(vec![root.to_owned()]);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .with_context(|| format!("reading {}", root.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("input.yaml").is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        bail!(
            "{}: no case directories (with an input.yaml) found",
            root.display()
        );
    }
    Ok(dirs)
}

/// Runs a case through the path `plan` uses: the controllers on an in-process API server,
/// one worker each.
pub async fn run_offline(case: &Case) -> Result<Written> {
    let mut settings = PlanSettings::new(reconcile::Timestamp::now());
    case.flags
        .offline(&mut settings.options)
        .with_context(|| format!("case {}: flags", case.name))?;
    let outcome = plan(to_values(&case.objects)?, &settings)
        .await
        .with_context(|| format!("case {}", case.name))?;
    Written::from_outcome(outcome)
}

/// Reads the upstream recording into the same shape.
pub fn upstream_written(upstream: &Value) -> Written {
    let list = |k: &str| {
        upstream
            .get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    Written {
        endpoints: list("endpoints"),
        endpoint_slices: list("endpointslices"),
        events: list("events")
            .iter()
            .filter(|e| {
                matches!(
                    e.pointer("/source/component").and_then(Value::as_str),
                    Some(
                        "endpoint-slice-controller"
                            | "endpoint-controller"
                            | reconcile::mirroring::EVENT_COMPONENT
                    ) | None
                )
            })
            .map(|e| {
                let s = |p: &str| {
                    e.pointer(p)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                WrittenEvent {
                    namespace: s("/involvedObject/namespace"),
                    name: s("/involvedObject/name"),
                    type_: s("/type"),
                    reason: s("/reason"),
                    message: s("/message"),
                }
            })
            .collect(),
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn is_excluded(namespace: &str, name: &str) -> bool {
    namespace == "default" && name == "kubernetes"
}

/// Normalised form of a run, keyed for comparison. Each entry is a (what, value) pair where
/// `what` says which service/object/field it describes.
pub fn normalise(written: &Written) -> BTreeMap<String, Value> {
    normalise_by(written, Rules::Static)
}

/// [`normalise`] under the given rules.
pub fn normalise_by(written: &Written, rules: Rules) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for ep in &written.endpoints {
        let (ns, name) = (
            str_at(ep, "/metadata/namespace"),
            str_at(ep, "/metadata/name"),
        );
        if is_excluded(ns, name) {
            continue;
        }
        let prefix = format!("{ns}/{name} Endpoints");
        out.insert(
            format!("{prefix} labels"),
            ep.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
        );
        let mut annotations = ep
            .pointer("/metadata/annotations")
            .cloned()
            .unwrap_or(json!({}));
        // Whether upstream's last write carried the trigger time depends on how often it
        // synced the Service: the corpus ignores it.
        if let Some(map) = annotations.as_object_mut() {
            map.remove(TRIGGER_TIME);
        }
        let truncated = annotations.get(OVER_CAPACITY).is_some();
        out.insert(format!("{prefix} annotations"), annotations);
        let subsets = ep
            .get("subsets")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if truncated {
            // The share each subset keeps follows a UID-dependent order: compare the total
            // exactly and each subset's count (keyed by its ports) within one.
            let mut counts: Vec<Value> = subsets
                .iter()
                .map(|s| {
                    let n = |k: &str| s.get(k).and_then(Value::as_array).map_or(0, Vec::len);
                    json!({"ports": s.get("ports").cloned().unwrap_or(Value::Null), "ready": n("addresses"), "notReady": n("notReadyAddresses")})
                })
                .collect();
            counts.sort_by_key(|v| v.to_string());
            out.insert(format!("{prefix} truncated subsets"), Value::Array(counts));
        } else {
            let mut normalised: Vec<String> = subsets
                .iter()
                .map(|s| normalise_subset(s).to_string())
                .collect();
            normalised.sort();
            out.insert(format!("{prefix} subsets"), json!(normalised));
        }
    }

    // Slices grouped by service, address type and port list.
    let mut groups: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for slice in &written.endpoint_slices {
        let ns = str_at(slice, "/metadata/namespace");
        let service = str_at(slice, "/metadata/labels/kubernetes.io~1service-name");
        let managed_by = str_at(
            slice,
            "/metadata/labels/endpointslice.kubernetes.io~1managed-by",
        );
        // Mirrored slices follow the same rules, grouped apart from the controller's own.
        let owner = match managed_by {
            reconcile::labels::SLICE_CONTROLLER_NAME => "EndpointSlices",
            reconcile::labels::MIRRORING_CONTROLLER_NAME => "mirrored EndpointSlices",
            _ => continue,
        };
        if is_excluded(ns, service) {
            continue;
        }
        let ports = match slice.get("ports") {
            Some(Value::Array(p)) if !p.is_empty() => Value::Array(p.clone()),
            _ => json!([]),
        };
        let key = format!(
            "{ns}/{service} {owner} {} ports={}",
            str_at(slice, "/addressType"),
            ports
        );
        groups.entry(key).or_default().push(slice);
    }
    let mut hints: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (key, slices) in groups {
        let mut sizes: Vec<usize> = slices
            .iter()
            .map(|s| {
                s.get("endpoints")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            })
            .collect();
        sizes.sort();
        match rules {
            Rules::Static => out.insert(format!("{key} sizes"), json!(sizes)),
            Rules::Dynamic => out.insert(
                format!("{key} total endpoints"),
                json!(sizes.iter().sum::<usize>()),
            ),
            Rules::Restored => out.insert(
                format!("{key} empty slices"),
                json!(sizes.iter().filter(|n| **n == 0).count()),
            ),
        };
        let mut endpoints = Vec::new();
        let mut metas = Vec::new();
        let hint_key = key.split(" ports=").next().unwrap_or(&key).to_owned();
        for slice in slices {
            for e in slice
                .get("endpoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut e = e.clone();
                if let Some(h) = e.as_object_mut().and_then(|m| m.remove("hints")) {
                    *hints
                        .entry(hint_key.clone())
                        .or_default()
                        .entry(h.to_string())
                        .or_default() += 1;
                }
                strip_target_ref(&mut e);
                endpoints.push(e.to_string());
            }
            let mut annotations = slice
                .pointer("/metadata/annotations")
                .cloned()
                .unwrap_or(json!({}));
            if let Some(map) = annotations.as_object_mut() {
                map.remove(TRIGGER_TIME);
            }
            let mut owners = slice
                .pointer("/metadata/ownerReferences")
                .cloned()
                .unwrap_or(json!([]));
            for o in owners.as_array_mut().into_iter().flatten() {
                if let Some(m) = o.as_object_mut() {
                    m.remove("uid");
                }
            }
            metas.push(
                json!({
                    "labels": slice.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                    "annotations": annotations,
                    "ownerReferences": owners,
                })
                .to_string(),
            );
        }
        endpoints.sort();
        metas.sort();
        if rules == Rules::Restored {
            metas.dedup();
        }
        out.insert(format!("{key} endpoints"), json!(endpoints));
        out.insert(format!("{key} metadata"), json!(metas));
    }
    for (key, counts) in hints {
        let values: BTreeSet<&String> = counts.keys().collect();
        let mut n: Vec<usize> = counts.values().copied().collect();
        n.sort();
        out.insert(format!("{key} hint values"), json!(values));
        out.insert(format!("{key} hint counts"), json!(n));
    }

    let mut events: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in &written.events {
        if !is_excluded(&e.namespace, &e.name) && !e.lost_a_race() {
            events
                .entry(format!("{}/{} events", e.namespace, e.name))
                .or_default()
                .insert(format!("{} {}", e.type_, e.reason));
        }
    }
    for (k, v) in events {
        out.insert(k, json!(v));
    }
    out
}

fn strip_target_ref(v: &mut Value) {
    if let Some(t) = v.get_mut("targetRef").and_then(Value::as_object_mut) {
        t.remove("uid");
        t.remove("resourceVersion");
    }
}

fn normalise_subset(s: &Value) -> Value {
    let addrs = |k: &str| {
        let mut list = s
            .get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for a in &mut list {
            strip_target_ref(a);
        }
        Value::Array(list)
    };
    json!({
        "addresses": addrs("addresses"),
        "notReadyAddresses": addrs("notReadyAddresses"),
        "ports": s.get("ports").cloned().unwrap_or(json!([])),
    })
}

/// Differences between our normalised run and upstream's, one readable line each.
pub fn compare(ours: &Written, upstream: &Written) -> Vec<String> {
    compare_by(ours, upstream, Rules::Static)
}

/// What each side of a comparison is called in its difference lines.
#[derive(Debug, Clone, Copy)]
pub struct Sides {
    /// The first side ("ours" against the corpus).
    pub ours: &'static str,
    /// The second side ("upstream" against the corpus).
    pub theirs: &'static str,
}

impl Sides {
    /// Our controllers against upstream's recording.
    pub const UPSTREAM: Sides = Sides {
        ours: "ours",
        theirs: "upstream",
    };
}

/// [`compare`] under the given rules.
pub fn compare_by(ours: &Written, upstream: &Written, rules: Rules) -> Vec<String> {
    compare_sides(ours, upstream, rules, Sides::UPSTREAM)
}

/// [`compare_by`], each side named as `sides` says.
pub fn compare_sides(ours: &Written, theirs: &Written, rules: Rules, sides: Sides) -> Vec<String> {
    let a = normalise_by(ours, rules);
    let b = normalise_by(theirs, rules);
    let Sides {
        ours: ours_name,
        theirs: theirs_name,
    } = sides;
    let mut diffs = Vec::new();
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for key in keys {
        match (a.get(key), b.get(key)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(x), Some(y)) if key.ends_with("truncated subsets") && truncated_close(x, y) => {}
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                diffs.push(format!("{key}: {}", list_difference(x, y, sides)))
            }
            (Some(x), Some(y)) => diffs.push(format!(
                "{key}: {ours_name} {} {theirs_name} {}",
                short(x),
                short(y)
            )),
            (Some(x), None) => diffs.push(format!("{key}: only {ours_name}: {}", short(x))),
            (None, Some(y)) => diffs.push(format!("{key}: only {theirs_name}: {}", short(y))),
            (None, None) => {}
        }
    }
    diffs
}

/// Truncated Endpoints: same subsets (by ports) and totals, each count within one.
fn truncated_close(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_array(), b.as_array()) else {
        return false;
    };
    if a.len() != b.len() {
        return false;
    }
    let total = |l: &Vec<Value>| {
        l.iter()
            .map(|s| s["ready"].as_u64().unwrap_or(0) + s["notReady"].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    if total(a) != total(b) {
        return false;
    }
    let mut a = a.clone();
    let mut b = b.clone();
    let by_ports = |v: &Value| v["ports"].to_string();
    a.sort_by_key(by_ports);
    b.sort_by_key(by_ports);
    a.iter().zip(b.iter()).all(|(x, y)| {
        x["ports"] == y["ports"]
            && x["ready"]
                .as_u64()
                .unwrap_or(0)
                .abs_diff(y["ready"].as_u64().unwrap_or(0))
                <= 1
            && x["notReady"]
                .as_u64()
                .unwrap_or(0)
                .abs_diff(y["notReady"].as_u64().unwrap_or(0))
                <= 1
    })
}

/// The elements one list has and the other lacks (as multisets), or both lists when they
/// hold the same elements in another order.
fn list_difference(ours: &[Value], upstream: &[Value], sides: Sides) -> String {
    let mut extra: Vec<&Value> = Vec::new();
    let mut missing: Vec<&Value> = upstream.iter().collect();
    for v in ours {
        match missing.iter().position(|m| *m == v) {
            Some(i) => {
                missing.remove(i);
            }
            None => extra.push(v),
        }
    }
    if extra.is_empty() && missing.is_empty() {
        return format!(
            "{} {} {} {}",
            sides.ours,
            short(&Value::Array(ours.to_vec())),
            sides.theirs,
            short(&Value::Array(upstream.to_vec()))
        );
    }
    let render = |l: &[&Value]| {
        let items: Vec<String> = l.iter().take(5).map(|v| short(v)).collect();
        let more = if l.len() > 5 {
            format!(" and {} more", l.len() - 5)
        } else {
            String::new()
        };
        format!("[{}]{more}", items.join(", "))
    };
    let mut parts = Vec::new();
    if !extra.is_empty() {
        parts.push(format!("only {} {}", sides.ours, render(&extra)));
    }
    if !missing.is_empty() {
        parts.push(format!("only {} {}", sides.theirs, render(&missing)));
    }
    parts.join("; ")
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 400 {
        format!("{}… ({} chars)", &s[..400], s.len())
    } else {
        s
    }
}

/// The embedded API server over TCP, loaded with a case's input the way the corpus was
/// recorded, and how to reach it.
struct LiveServer {
    handle: apiserver::ApiServerHandle,
    /// The server's client configuration.
    config: kube::config::Config,
    /// An unthrottled client, for the steps and for reading back.
    client: kube::Client,
}

impl LiveServer {
    async fn start(case: &Case, config: apiserver::Config) -> Result<Self> {
        let handle = apiserver::ApiServer::start(config)
            .await
            .context("starting the embedded API server")?;
        handle
            .apply_objects(to_values(&case.objects)?)
            .with_context(|| format!("case {}: loading input", case.name))?;
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&handle.kubeconfig())
            .context("reading the server's kubeconfig")?;
        let config = kube::config::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .context("configuring the client")?;
        let client = kube::Client::try_from(config.clone()).context("building the client")?;
        Ok(Self {
            handle,
            config,
            client,
        })
    }

    /// The controllers' clients as `run` builds them: one per controller, each with the
    /// `--kube-api-qps`/`--kube-api-burst` budget kube-controller-manager gives it. A burst
    /// of changes is then throttled as upstream's recorder saw it throttled.
    fn controller_clients(&self, options: &controller::Options) -> Result<controller::Clients> {
        let mut clients = controller::Clients::try_from_fn(|| {
            controller::client::client_from_config(self.config.clone(), &options.settings.client)
        })
        .context("building the controllers' clients")?;
        clients.wire = controller::wire::Negotiated::new(options.settings.client.encoding);
        Ok(clients)
    }
}

/// The three controllers with the case's flags and kube-controller-manager's defaults for
/// the rest.
fn live_options(case: &Case) -> Result<controller::Options> {
    let mut options = controller::Options {
        settings: controller::config::Settings::default(),
        endpoints: true,
        endpoint_slices: true,
        mirroring: true,
        shadow: None,
    };
    case.flags
        .live(&mut options)
        .with_context(|| format!("case {}: flags", case.name))?;
    Ok(options)
}

/// Runs a case through the live controllers as `dev` runs them: the embedded API server
/// over TCP, loaded the way the corpus was recorded (objects, then status through the status
/// subresource, terminating pods held by a finalizer and deleted), the controllers with the
/// case's flags and kube-controller-manager's default worker counts, until the cluster is
/// quiet; what they wrote is read back through the API.
pub async fn run_live(case: &Case) -> Result<Written> {
    run_live_in(case, controller::wire::Encoding::default()).await
}

/// [`run_live`], the controllers speaking `encoding` (`--kube-api-content-type`).
pub async fn run_live_in(case: &Case, encoding: controller::wire::Encoding) -> Result<Written> {
    let server = LiveServer::start(case, apiserver::Config::default()).await?;
    let mut options = live_options(case)?;
    options.settings.client.encoding = encoding;
    let clients = server.controller_clients(&options)?;
    let wire = clients.wire.clone();
    run_until_settled(server.handle.server(), clients, &options)
        .await
        .with_context(|| format!("case {}", case.name))?;
    // The server speaks both encodings: a fall back to JSON would be a bug on one side.
    anyhow::ensure!(
        wire.current() == encoding,
        "case {}: the controllers were to speak {encoding:?} but ended in {:?}",
        case.name,
        wire.current()
    );
    let written = read_written(&server.client).await?;
    server
        .handle
        .shutdown()
        .await
        .context("stopping the embedded API server")?;
    Ok(written)
}

/// Runs a dynamic case live: the controllers settle on the input, each step is applied, and
/// what they wrote during the steps is counted. Returns the objects left and the writes.
pub async fn run_dynamic(case: &Case) -> Result<(Written, Writes)> {
    let steps = case.steps.as_deref().unwrap_or_default();
    let config = apiserver::Config {
        record_requests: true,
        ..apiserver::Config::default()
    };
    let server = LiveServer::start(case, config).await?;
    let (handle, client) = (&server.handle, &server.client);
    let registry = prometheus::Registry::new();
    let readiness = controller::health::Readiness::new();
    let activity = controller::Activity::new();
    let token = tokio_util::sync::CancellationToken::new();
    let options = live_options(case)?;
    let task = {
        let (clients, readiness, activity, token) = (
            server.controller_clients(&options)?,
            readiness.clone(),
            activity.clone(),
            token.clone(),
        );
        tokio::spawn(async move {
            controller::run(clients, &options, &registry, readiness, activity, token).await
        })
    };
    let result = async {
        crate::dynamic::settle(handle.server(), &readiness, &activity).await?;
        run_steps(handle.server(), client, &readiness, &activity, steps).await
    }
    .await
    .with_context(|| format!("case {}", case.name));
    token.cancel();
    match task.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => bail!("case {}: the controllers failed: {e}", case.name),
        Err(e) => bail!("case {}: the controllers' task failed: {e}", case.name),
    }
    let writes = result?;
    let written = read_written(client).await?;
    server
        .handle
        .shutdown()
        .await
        .context("stopping the embedded API server")?;
    Ok((written, writes))
}

/// Every Endpoints, EndpointSlice and Event, read through the API.
async fn read_written(client: &kube::Client) -> Result<Written> {
    use k8s_openapi::api::core::v1::{Endpoints, Event};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let lp = kube::api::ListParams::default();
    let endpoints = kube::Api::<Endpoints>::all(client.clone())
        .list(&lp)
        .await?;
    let slices = kube::Api::<EndpointSlice>::all(client.clone())
        .list(&lp)
        .await?;
    let events = kube::Api::<Event>::all(client.clone()).list(&lp).await?;
    Ok(Written {
        endpoints: endpoints
            .items
            .iter()
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect(),
        endpoint_slices: slices
            .items
            .iter()
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect(),
        events: events
            .items
            .iter()
            .map(|e| {
                let o = &e.involved_object;
                WrittenEvent {
                    namespace: o.namespace.clone().unwrap_or_default(),
                    name: o.name.clone().unwrap_or_default(),
                    type_: e.type_.clone().unwrap_or_default(),
                    reason: e.reason.clone().unwrap_or_default(),
                    message: e.message.clone().unwrap_or_default(),
                }
            })
            .collect(),
    })
}
