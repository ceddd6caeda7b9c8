//! Dynamic conformance cases: cluster changes applied through the API after the controllers
//! settled, and the writes the controllers made in answer.
//!
//! A case with a `steps.yaml` runs live: the embedded API server over TCP, the controllers as
//! [`crate::conformance::run_live`] runs them, each step sent once they have settled (a step
//! marked `settle: false` is followed by the next at once), and a last settle. Writes are
//! counted from the server's request log from the first step on, as upstream's recorder
//! counted watch events (a create is ADDED, an update or patch MODIFIED, a delete DELETED),
//! minus the steps' own writes to Endpoints and EndpointSlices. The step format and the
//! tolerance on writes are the corpus README's.

use crate::settle::{Controllers, Quiet};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// When the controllers count as settled before a step is sent (see [`crate::settle`]):
/// idle, with nothing due within three seconds, what a 1.5 s quiet window with a 1.5 s
/// horizon waited for. Longer than `plan`'s: slice events reach the controllers after a
/// one-second batch delay, and the sync they queue is waited for. One settle may take two
/// minutes before the case fails as not settling.
const STEP_QUIET: Quiet = Quiet::on_writes(Duration::from_millis(1500), Duration::from_secs(120));

/// One change of `steps.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A patch of one object (or of each object a `*slice-of:` name stands for).
    Patch {
        /// The target.
        target: Target,
        /// merge, json or strategic.
        patch_type: PatchType,
        /// `status` for the status subresource.
        status: bool,
        /// The patch document.
        patch: Value,
        /// Whether the controllers settle before the next step.
        settle: bool,
    },
    /// A delete.
    Delete {
        /// The target.
        target: Target,
        /// `gracePeriodSeconds`, when given.
        grace: Option<i64>,
        /// Whether the controllers settle before the next step.
        settle: bool,
    },
    /// A create; a Pod's `status` is written through the status subresource after.
    Create {
        /// The object.
        object: Value,
        /// Whether the controllers settle before the next step.
        settle: bool,
    },
    /// A pause.
    Sleep(Duration),
}

/// The kind, namespace and name a step is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Kind (Pod, Service, Endpoints, EndpointSlice, Node, Namespace).
    pub kind: String,
    /// Namespace (empty for cluster-scoped kinds).
    pub namespace: String,
    /// Name, or `first-slice-of:SVC` / `*slice-of:SVC`.
    pub name: String,
}

/// How a patch document is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// JSON merge patch.
    Merge,
    /// JSON patch (a list of operations).
    Json,
    /// Strategic merge patch.
    Strategic,
}

impl PatchType {
    fn content_type(self) -> &'static str {
        match self {
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Json => "application/json-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
        }
    }
}

/// Reads `steps.yaml`.
pub fn parse_steps(text: &str) -> Result<Vec<Step>> {
    let raw: Vec<Value> = serde_norway::from_str(text).context("steps.yaml is not a list")?;
    raw.iter()
        .enumerate()
        .map(|(i, v)| parse_step(v).with_context(|| format!("step {}", i + 1)))
        .collect()
}

fn parse_step(v: &Value) -> Result<Step> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let settle = v.get("settle").and_then(Value::as_bool).unwrap_or(true);
    let target = || Target {
        kind: s("kind"),
        namespace: s("namespace"),
        name: s("name"),
    };
    Ok(match s("op").as_str() {
        "patch" => Step::Patch {
            target: target(),
            patch_type: match v.get("type").and_then(Value::as_str).unwrap_or("merge") {
                "merge" => PatchType::Merge,
                "json" => PatchType::Json,
                "strategic" => PatchType::Strategic,
                other => bail!("unknown patch type {other}"),
            },
            status: s("sub") == "status",
            patch: v.get("patch").cloned().context("patch without a patch")?,
            settle,
        },
        "delete" => Step::Delete {
            target: target(),
            grace: v.get("grace").and_then(Value::as_i64),
            settle,
        },
        "create" => Step::Create {
            object: v
                .get("object")
                .cloned()
                .context("create without an object")?,
            settle,
        },
        "sleep" => {
            let seconds = v
                .get("seconds")
                .and_then(Value::as_f64)
                .context("sleep without seconds")?;
            if !(0.0..=600.0).contains(&seconds) {
                bail!("sleep of {seconds}s is out of range");
            }
            Step::Sleep(Duration::from_secs_f64(seconds))
        }
        other => bail!("unknown op {other:?}"),
    })
}

impl Step {
    fn settles(&self) -> bool {
        match self {
            Step::Patch { settle, .. }
            | Step::Delete { settle, .. }
            | Step::Create { settle, .. } => *settle,
            Step::Sleep(_) => false,
        }
    }
}

/// ADDED, MODIFIED and DELETED of one kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EventCounts {
    /// Creates.
    pub added: i64,
    /// Updates and patches.
    pub modified: i64,
    /// Deletes.
    pub deleted: i64,
}

impl EventCounts {
    /// All three together.
    pub fn total(&self) -> i64 {
        self.added + self.modified + self.deleted
    }

    fn count(&mut self, verb: &str, by: i64) {
        match verb {
            "create" => self.added += by,
            "update" | "patch" => self.modified += by,
            "delete" => self.deleted += by,
            _ => {}
        }
    }

    fn from_upstream(v: Option<&Value>) -> Self {
        let n = |k: &str| {
            v.and_then(|v| v.get(k))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        Self {
            added: n("ADDED"),
            modified: n("MODIFIED"),
            deleted: n("DELETED"),
        }
    }
}

impl std::fmt::Display for EventCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (+{} ~{} -{})",
            self.total(),
            self.added,
            self.modified,
            self.deleted
        )
    }
}

/// The controllers' writes during the steps, per kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Writes {
    /// Endpoints.
    pub endpoints: EventCounts,
    /// EndpointSlices.
    pub endpoint_slices: EventCounts,
}

impl Writes {
    /// upstream.json's `writes`, if recorded.
    pub fn from_upstream(upstream: &Value) -> Option<Self> {
        let writes = upstream.get("writes")?;
        Some(Self {
            endpoints: EventCounts::from_upstream(writes.get("endpoints")),
            endpoint_slices: EventCounts::from_upstream(writes.get("endpointslices")),
        })
    }

    fn kind_mut(&mut self, resource: &str) -> Option<&mut EventCounts> {
        match resource {
            "endpoints" => Some(&mut self.endpoints),
            "endpointslices" => Some(&mut self.endpoint_slices),
            _ => None,
        }
    }
}

/// The most writes of one kind allowed against upstream's count: 5% more, at least one more,
/// as upstream's own count varies that much between runs.
pub fn allowed_writes(upstream: i64) -> i64 {
    upstream + ((upstream as f64 * 0.05).ceil() as i64).max(1)
}

/// One line per kind whose writes exceed the tolerance.
pub fn compare_writes(ours: &Writes, upstream: &Writes) -> Vec<String> {
    let mut diffs = Vec::new();
    for (kind, a, b) in [
        ("Endpoints", ours.endpoints, upstream.endpoints),
        (
            "EndpointSlices",
            ours.endpoint_slices,
            upstream.endpoint_slices,
        ),
    ] {
        if a.total() > allowed_writes(b.total()) {
            diffs.push(format!(
                "writes of {kind}: ours {a}, upstream {b}, at most {} allowed",
                allowed_writes(b.total())
            ));
        }
    }
    diffs
}

/// Sends steps to the API server and keeps count of its own writes to the counted kinds.
pub(crate) struct StepRunner<'a> {
    client: &'a kube::Client,
    /// The steps' own accepted writes to Endpoints and EndpointSlices.
    pub own: Writes,
}

fn collection_path(kind: &str, namespace: &str) -> Result<String> {
    let (prefix, plural, namespaced) = match kind {
        "Pod" => ("/api/v1", "pods", true),
        "Service" => ("/api/v1", "services", true),
        "Endpoints" => ("/api/v1", "endpoints", true),
        "EndpointSlice" => ("/apis/discovery.k8s.io/v1", "endpointslices", true),
        "Node" => ("/api/v1", "nodes", false),
        "Namespace" => ("/api/v1", "namespaces", false),
        other => bail!("steps cannot change a {other}"),
    };
    Ok(if namespaced {
        format!("{prefix}/namespaces/{namespace}/{plural}")
    } else {
        format!("{prefix}/{plural}")
    })
}

fn resource_of(kind: &str) -> &'static str {
    match kind {
        "Endpoints" => "endpoints",
        "EndpointSlice" => "endpointslices",
        _ => "",
    }
}

impl<'a> StepRunner<'a> {
    pub(crate) fn new(client: &'a kube::Client) -> Self {
        Self {
            client,
            own: Writes::default(),
        }
    }

    /// The names a target stands for: itself, or the slices of a Service by name.
    async fn names(&self, target: &Target) -> Result<Vec<String>> {
        let (first, service) = if let Some(svc) = target.name.strip_prefix("first-slice-of:") {
            (true, svc)
        } else if let Some(svc) = target.name.strip_prefix("*slice-of:") {
            (false, svc)
        } else {
            return Ok(vec![target.name.clone()]);
        };
        let api: kube::Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
            kube::Api::namespaced(self.client.clone(), &target.namespace);
        let lp = kube::api::ListParams::default()
            .labels(&format!("{}={service}", reconcile::labels::SERVICE_NAME));
        let mut names: Vec<String> = api
            .list(&lp)
            .await?
            .items
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect();
        names.sort();
        if first {
            names.truncate(1);
        }
        if names.is_empty() {
            bail!("no EndpointSlice of {service} to stand for {}", target.name);
        }
        Ok(names)
    }

    async fn send(
        &mut self,
        kind: &str,
        verb: &str,
        request: http::Request<Vec<u8>>,
    ) -> Result<()> {
        let what = format!("{verb} {} {}", kind, request.uri());
        self.client
            .request_text(request)
            .await
            .with_context(|| what)?;
        if let Some(counts) = self.own.kind_mut(resource_of(kind)) {
            counts.count(verb, 1);
        }
        Ok(())
    }

    /// Sends one step.
    pub(crate) async fn apply(&mut self, step: &Step) -> Result<()> {
        match step {
            Step::Sleep(d) => tokio::time::sleep(*d).await,
            Step::Patch {
                target,
                patch_type,
                status,
                patch,
                ..
            } => {
                for name in self.names(target).await? {
                    let mut uri = format!(
                        "{}/{name}",
                        collection_path(&target.kind, &target.namespace)?
                    );
                    if *status {
                        uri.push_str("/status");
                    }
                    let request = http::Request::patch(uri)
                        .header(http::header::CONTENT_TYPE, patch_type.content_type())
                        .body(serde_json::to_vec(patch)?)?;
                    let verb = if *status { "patch-status" } else { "patch" };
                    self.send(&target.kind, verb, request).await?;
                }
            }
            Step::Delete { target, grace, .. } => {
                for name in self.names(target).await? {
                    let uri = format!(
                        "{}/{name}",
                        collection_path(&target.kind, &target.namespace)?
                    );
                    let body = match grace {
                        Some(g) => {
                            json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": g})
                        }
                        None => json!({"kind": "DeleteOptions", "apiVersion": "v1"}),
                    };
                    let request = http::Request::delete(uri)
                        .header(http::header::CONTENT_TYPE, "application/json")
                        .body(serde_json::to_vec(&body)?)?;
                    self.send(&target.kind, "delete", request).await?;
                }
            }
            Step::Create { object, .. } => {
                let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
                let meta = object.get("metadata");
                let namespace = meta
                    .and_then(|m| m.get("namespace"))
                    .and_then(Value::as_str)
                    .unwrap_or("default");
                let name = meta
                    .and_then(|m| m.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let path = collection_path(kind, namespace)?;
                let request = http::Request::post(path.clone())
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(serde_json::to_vec(object)?)?;
                self.send(kind, "create", request).await?;
                if let (true, Some(status)) = (kind == "Pod", object.get("status")) {
                    let request = http::Request::patch(format!("{path}/{name}/status"))
                        .header(http::header::CONTENT_TYPE, PatchType::Merge.content_type())
                        .body(serde_json::to_vec(&json!({ "status": status }))?)?;
                    self.send(kind, "patch-status", request).await?;
                }
            }
        }
        Ok(())
    }
}

/// Waits until the controllers have settled as [`STEP_QUIET`] says.
pub(crate) async fn settle_step(
    server: &apiserver::ApiServer,
    readiness: &controller::health::Readiness,
    activity: &controller::Activity,
) -> Result<()> {
    let controllers = Controllers::InProcess {
        readiness,
        activity,
    };
    if !crate::settle::settle(server, &controllers, &STEP_QUIET).await {
        bail!(
            "the controllers did not settle within {}s",
            STEP_QUIET.deadline.as_secs()
        );
    }
    Ok(())
}

/// Sends every step, settling after those that ask for it and after the last (once).
pub(crate) async fn run_steps(
    server: &apiserver::ApiServer,
    client: &kube::Client,
    readiness: &controller::health::Readiness,
    activity: &controller::Activity,
    steps: &[Step],
) -> Result<Writes> {
    let start = server.request_log_len();
    let mut runner = StepRunner::new(client);
    for (i, step) in steps.iter().enumerate() {
        runner
            .apply(step)
            .await
            .with_context(|| format!("step {}", i + 1))?;
        if step.settles() {
            settle_step(server, readiness, activity).await?;
        }
    }
    if !steps.last().is_some_and(Step::settles) {
        settle_step(server, readiness, activity).await?;
    }
    let mut writes = Writes::default();
    for record in server.request_log().iter().skip(start) {
        if !record.is_write() || !record.succeeded() || record.subresource.is_some() {
            continue;
        }
        if let Some(counts) = writes.kind_mut(&record.resource) {
            counts.count(&record.verb, 1);
        }
    }
    for (ours, own) in [
        (&mut writes.endpoints, runner.own.endpoints),
        (&mut writes.endpoint_slices, runner.own.endpoint_slices),
    ] {
        ours.added -= own.added;
        ours.modified -= own.modified;
        ours.deleted -= own.deleted;
    }
    Ok(writes)
}

/// Per kind, a readable comparison of our writes with upstream's.
pub fn describe_writes(ours: &Writes, upstream: &Writes) -> String {
    let kinds: BTreeMap<&str, (EventCounts, EventCounts)> = [
        ("Endpoints", (ours.endpoints, upstream.endpoints)),
        (
            "EndpointSlices",
            (ours.endpoint_slices, upstream.endpoint_slices),
        ),
    ]
    .into();
    kinds
        .iter()
        .map(|(kind, (a, b))| format!("{kind} {a} vs upstream {b}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_read_with_their_defaults() {
        let steps = parse_steps(
            "- op: patch\n  kind: Service\n  namespace: default\n  name: web\n  patch: {spec: {publishNotReadyAddresses: true}}\n\
             - op: delete\n  kind: Pod\n  namespace: default\n  name: web-1\n  grace: 0\n  settle: false\n\
             - op: sleep\n  seconds: 0.5\n",
        )
        .unwrap();
        assert_eq!(steps.len(), 3);
        assert!(matches!(
            &steps[0],
            Step::Patch {
                patch_type: PatchType::Merge,
                status: false,
                settle: true,
                ..
            }
        ));
        assert!(matches!(
            &steps[1],
            Step::Delete {
                grace: Some(0),
                settle: false,
                ..
            }
        ));
        assert_eq!(steps[2], Step::Sleep(Duration::from_millis(500)));
        assert!(parse_steps("- op: explode\n").is_err());
    }

    #[test]
    fn writes_may_exceed_upstream_by_five_percent_or_at_least_one() {
        assert_eq!(allowed_writes(0), 1);
        assert_eq!(allowed_writes(10), 11);
        assert_eq!(allowed_writes(200), 210);
        let upstream = Writes {
            endpoint_slices: EventCounts {
                modified: 20,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut ours = upstream;
        ours.endpoint_slices.added = 1;
        assert!(compare_writes(&ours, &upstream).is_empty());
        ours.endpoint_slices.added = 2;
        assert_eq!(compare_writes(&ours, &upstream).len(), 1);
    }
}
