//! `explain`: why a pod is, or is not, an endpoint of a Service.
//!
//! The answer comes from the controllers themselves, not from a second set of rules:
//! - the controllers run on a copy of the cluster state (the path `plan` and `audit` take),
//!   and where each pod's endpoint lands, with which conditions, is read from what they wrote;
//! - a pod they left out is explained by the very functions their planners call to leave it
//!   out ([`reconcile::pod_rules::endpoint_exclusion`], [`reconcile::slice::endpoint::endpoint_zone`],
//!   [`reconcile::slice::endpoint::pod_to_endpoint`], [`reconcile::find_port::find_port`],
//!   [`reconcile::mirroring::selection::mirror_target`]);
//! - the hints' reason is the event the slice controller recorded, with the zone figures the
//!   topology cache computes.
//!
//! Nothing is ever written to the cluster: a live explain sends get and list requests only.

mod columns;
pub mod corpus;
mod hints;
mod output;
mod pods;
mod render;
mod row;
mod table;

pub use output::{render, Output};
pub use render::render_text;
pub use table::render_table;

use crate::plan::{plan, Outcome, PlanSettings, RecordedEvent};
use crate::snapshot::Snapshot;
use anyhow::{bail, Context, Result};
use k8s_openapi::api::core::v1::{EndpointAddress, Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube_endpoints::flags::OutputFlags;
use reconcile::compare;
use reconcile::endpoints::OVER_CAPACITY;
use reconcile::labels::{MIRRORING_CONTROLLER_NAME, SERVICE_NAME, SLICE_MANAGED_BY};
use reconcile::mirroring::selection::mirror_target;
use reconcile::mirroring::CleanupReason;
use reconcile::projection::ServiceInfo;
use serde::Serialize;

pub use hints::{HintBounds, HintsExplanation, ZoneFigures};
pub use pods::{
    LabelDifference, Placement, PodExplanation, ReadyCondition, SliceConditions, UnresolvedPort,
    Verdict,
};

/// Which controllers write for the Service, or why none does.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Management {
    /// The Endpoints and EndpointSlice controllers write for it.
    pub selector_controllers: bool,
    /// The mirroring controller copies its hand-written Endpoints into slices.
    pub mirrored: bool,
    /// One sentence: who writes what, or why nobody does.
    pub summary: String,
}

/// The mirroring controller's part, for a Service without a selector.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MirroringExplanation {
    /// Whether its Endpoints object is mirrored.
    pub mirrored: bool,
    /// Why not, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Addresses in the hand-written Endpoints object.
    pub addresses: usize,
    /// Addresses in the mirrored slices.
    pub mirrored_addresses: usize,
    /// Addresses of the Endpoints object that are in no mirrored slice: over
    /// `--mirroring-max-endpoints-per-subset`, or not a valid IP.
    pub not_mirrored: Vec<String>,
}

/// The Endpoints object over its capacity.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// Addresses the pods offer.
    pub offered: usize,
    /// Addresses kept.
    pub kept: usize,
    /// The addresses dropped, as `IP (pod)`.
    pub dropped: Vec<String>,
}

/// An event the controllers record for the Service when they sync it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventNote {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub type_: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
}

impl From<&RecordedEvent> for EventNote {
    fn from(e: &RecordedEvent) -> Self {
        Self {
            type_: e.type_.clone(),
            reason: e.reason.clone(),
            message: e.message.clone(),
        }
    }
}

/// Everything `explain` says about one Service.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// `namespace/name`.
    pub service: String,
    /// The selector, as `key=value,...` (empty without one).
    pub selector: String,
    /// Who writes its endpoints.
    pub management: Management,
    /// Ready endpoints in the slices the controllers write for it that take traffic: a pod
    /// with an address of each family counts once, and an endpoint none of the Service's
    /// ports resolves on does not count.
    pub ready_endpoints: usize,
    /// When there is no ready endpoint: the most likely cause, in one sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub likely_cause: Option<String>,
    /// Every pod the selector matches, and every pod it nearly matches, by name.
    pub pods: Vec<PodExplanation>,
    /// Hints, for topology mode Auto or a trafficDistribution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<HintsExplanation>,
    /// The Endpoints object's truncation, when it is over capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Truncation>,
    /// The mirroring controller's part, for a Service without a selector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirroring: Option<MirroringExplanation>,
    /// Events the controllers record when they sync the Service.
    pub events: Vec<EventNote>,
    /// Input objects the API server refused (for instance a namespace that does not exist),
    /// with why: the controllers ran without them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// Whether the cluster holds what the controllers would write for it; absent when the
    /// manifests explained hold none of its Endpoints or EndpointSlices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_written: Option<bool>,
    /// Each difference between what the cluster holds ("now") and what the controllers
    /// would write ("would write"), in the form `audit` prints.
    pub differences: Vec<String>,
}

impl Explanation {
    /// The exit code `explain` ends with: 0 with a ready endpoint, 3 without.
    pub fn exit_code(&self) -> u8 {
        if self.ready_endpoints > 0 {
            0
        } else {
            3
        }
    }
}

/// Where the cluster state comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A live cluster: what it holds now is always compared.
    Cluster,
    /// Manifests: what they hold is compared only when they hold some of the Service's
    /// Endpoints or EndpointSlices.
    Manifests,
}

/// Explains the Services `keys` (`namespace/name`) of `snapshot`, as the controllers with
/// `flags` would treat them. The controllers run once, on a copy of the whole snapshot.
pub async fn explain(
    snapshot: &Snapshot,
    source: Source,
    keys: &[String],
    flags: &OutputFlags,
) -> Result<Vec<Explanation>> {
    let mut settings = PlanSettings::new(reconcile::Timestamp::now());
    flags.apply(&mut settings.options)?;
    let rules = crate::plan::followed_rules(&settings.options.settings)?;
    let objects = crate::manifests::into_values(snapshot.controller_input())
        .context("encoding the cluster's objects")?;
    let outcome = plan(objects, &settings)
        .await
        .context("running the controllers on a copy of the cluster")?;
    keys.iter()
        .map(|key| explain_one(snapshot, source, &outcome, key, &rules))
        .collect()
}

/// Finds a Service by `namespace/name`; an unknown one is an error listing close names.
pub fn find_service<'a>(snapshot: &'a Snapshot, key: &str) -> Result<&'a Service> {
    if let Some(service) = snapshot.services.iter().find(|s| service_key(s) == key) {
        return Ok(service);
    }
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    let mut close: Vec<(f64, String)> = snapshot
        .services
        .iter()
        .map(|s| {
            let other = service_key(s);
            let other_name = s.metadata.name.as_deref().unwrap_or_default();
            let same_ns = s.metadata.namespace.as_deref() == Some(namespace);
            let score = strsim::jaro_winkler(name, other_name)
                .max(strsim::normalized_damerau_levenshtein(name, other_name))
                + if same_ns { 0.1 } else { 0.0 };
            (score, other)
        })
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let close: Vec<String> = close.into_iter().take(5).map(|(_, k)| k).collect();
    if close.is_empty() {
        bail!("Service {key} not found");
    }
    bail!(
        "Service {key} not found; did you mean {}?",
        close.join(", ")
    )
}

fn service_key(s: &Service) -> String {
    format!(
        "{}/{}",
        s.metadata.namespace.as_deref().unwrap_or_default(),
        s.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The slices `slices` holds for the Service (any manager).
fn slices_of<'a>(
    slices: &'a [EndpointSlice],
    namespace: &str,
    name: &str,
) -> Vec<&'a EndpointSlice> {
    slices
        .iter()
        .filter(|s| {
            s.metadata.namespace.as_deref() == Some(namespace)
                && s.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(SERVICE_NAME))
                    .is_some_and(|n| n == name)
        })
        .collect()
}

fn endpoints_of<'a>(
    endpoints: &'a [Endpoints],
    namespace: &str,
    name: &str,
) -> Option<&'a Endpoints> {
    endpoints.iter().find(|e| {
        e.metadata.namespace.as_deref() == Some(namespace)
            && e.metadata.name.as_deref() == Some(name)
    })
}

fn explain_one(
    snapshot: &Snapshot,
    source: Source,
    outcome: &Outcome,
    key: &str,
    rules: &reconcile::VersionRules,
) -> Result<Explanation> {
    let service = find_service(snapshot, key)?;
    let info = ServiceInfo::from_service(service)
        .with_context(|| format!("Service {key} has no namespace or name"))?;
    let (namespace, name) = (info.namespace.as_str(), info.name.as_str());

    let planned = Objects {
        slices: slices_of(&outcome.slices, namespace, name),
        endpoints: endpoints_of(&outcome.endpoints, namespace, name),
    };
    // For a Service without a selector, the Endpoints object there is the hand-written input.
    let current_endpoints = endpoints_of(&snapshot.endpoints, namespace, name);
    let now = Objects {
        slices: slices_of(&snapshot.slices, namespace, name),
        endpoints: current_endpoints,
    };
    // A selector-less Service's Endpoints object is the input, not something written.
    let now_known = source == Source::Cluster
        || !now.slices.is_empty()
        || (info.selector.is_some() && now.endpoints.is_some());
    let now = now_known.then_some(&now);
    let events: Vec<EventNote> = outcome
        .events
        .iter()
        .filter(|e| {
            e.involved_object.namespace == namespace
                && e.involved_object.name == name
                && e.involved_object.kind == "Service"
        })
        .map(EventNote::from)
        .collect();

    let (management, mirroring) = management(&info, current_endpoints, &planned);
    let pods = pods::explain_pods(&pods::Context {
        service: &info,
        managed: management.selector_controllers && !info.deleting,
        snapshot,
        planned: &planned,
        now,
    });
    // Distinct ready endpoints that take traffic: a dual-stack pod is in a slice of each
    // family, and an endpoint in a slice without ports (none of a ported Service's ports
    // resolved on it) receives nothing.
    let ready_endpoints = planned
        .slices
        .iter()
        .filter(|s| info.ports.is_empty() || s.ports.as_ref().is_some_and(|p| !p.is_empty()))
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
        .map(
            |e| match e.target_ref.as_ref().and_then(|t| t.name.as_deref()) {
                Some(pod) => format!("pod {pod}"),
                None => format!("address {}", e.addresses.join(",")),
            },
        )
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let truncation = truncation(&info, snapshot, &planned);
    let hints = hints::explain_hints(&info, snapshot, &planned, &events, rules);
    let differences = match now {
        Some(now) => differences(key, &planned, now),
        None => Vec::new(),
    };
    let mut explanation = Explanation {
        service: key.to_owned(),
        selector: info
            .selector
            .as_ref()
            .map(|s| {
                s.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
        management,
        ready_endpoints,
        likely_cause: None,
        pods,
        hints,
        truncation,
        mirroring,
        events,
        refused: outcome.refused.clone(),
        as_written: now.map(|_| differences.is_empty()),
        differences,
    };
    explanation.likely_cause = pods::likely_cause(&explanation);
    Ok(explanation)
}

/// One side's objects for a Service: what the controllers would write, or what is there now.
pub(crate) struct Objects<'a> {
    slices: Vec<&'a EndpointSlice>,
    endpoints: Option<&'a Endpoints>,
}

impl<'a> Objects<'a> {
    /// The same objects, as the comparison reads them.
    fn compared(&self) -> compare::Objects<'a> {
        compare::Objects::new(self.endpoints, self.slices.iter().copied())
    }
}

fn management(
    info: &ServiceInfo,
    hand_written: Option<&Endpoints>,
    planned: &Objects<'_>,
) -> (Management, Option<MirroringExplanation>) {
    if info.type_ == "ExternalName" {
        let summary = "type ExternalName: DNS answers with a name, so no controller writes \
                       Endpoints or EndpointSlices for it"
            .to_owned();
        return (
            Management {
                selector_controllers: false,
                mirrored: false,
                summary,
            },
            None,
        );
    }
    if info.selector.is_none() {
        let mirroring = mirroring(info, hand_written, planned);
        let summary = if mirroring.mirrored {
            "no selector: its Endpoints object is written by hand, and the mirroring \
             controller copies it into EndpointSlices"
                .to_owned()
        } else {
            format!(
                "no selector: its Endpoints object is written by hand, and it is not mirrored \
                 into EndpointSlices: {}",
                mirroring.reason.as_deref().unwrap_or_default()
            )
        };
        return (
            Management {
                selector_controllers: false,
                mirrored: mirroring.mirrored,
                summary,
            },
            Some(mirroring),
        );
    }
    let summary = if info.deleting {
        "being deleted: the controllers create nothing more for it, and the garbage collector \
         removes what they wrote"
            .to_owned()
    } else {
        "the Endpoints controller and the EndpointSlice controller write its endpoints from \
         the pods its selector matches"
            .to_owned()
    };
    (
        Management {
            selector_controllers: true,
            mirrored: false,
            summary,
        },
        None,
    )
}

fn mirroring(
    info: &ServiceInfo,
    hand_written: Option<&Endpoints>,
    planned: &Objects<'_>,
) -> MirroringExplanation {
    let addresses: Vec<String> = hand_written
        .into_iter()
        .flat_map(every_address)
        .map(|a| a.ip.clone())
        .collect();
    let mirrored: Vec<&str> = planned
        .slices
        .iter()
        .filter(|s| {
            s.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SLICE_MANAGED_BY))
                .is_some_and(|m| m == MIRRORING_CONTROLLER_NAME)
        })
        .flat_map(|s| s.endpoints.iter())
        .flat_map(|e| e.addresses.iter().map(String::as_str))
        .collect();
    match mirror_target(Some(info), hand_written) {
        Ok(_) => {
            let mut not_mirrored: Vec<String> = addresses
                .iter()
                .filter(|a| {
                    let canonical = reconcile::ip::parse_sloppy(a).map(|ip| ip.to_string());
                    !mirrored
                        .iter()
                        .any(|m| Some(*m) == canonical.as_deref() || *m == a.as_str())
                })
                .cloned()
                .collect();
            not_mirrored.dedup();
            MirroringExplanation {
                mirrored: true,
                reason: None,
                addresses: addresses.len(),
                mirrored_addresses: mirrored.len(),
                not_mirrored,
            }
        }
        Err(reason) => MirroringExplanation {
            mirrored: false,
            reason: Some(cleanup_reason_text(reason).to_owned()),
            addresses: addresses.len(),
            mirrored_addresses: 0,
            not_mirrored: addresses,
        },
    }
}

/// Every address of an Endpoints object, ready or not, subset by subset.
fn every_address(endpoints: &Endpoints) -> impl Iterator<Item = &EndpointAddress> {
    endpoints.subsets.iter().flatten().flat_map(|s| {
        s.addresses
            .iter()
            .flatten()
            .chain(s.not_ready_addresses.iter().flatten())
    })
}

fn cleanup_reason_text(reason: CleanupReason) -> &'static str {
    match reason {
        CleanupReason::EndpointsMissing => "there is no Endpoints object of its name",
        CleanupReason::SkipMirrorLabel => {
            "its Endpoints object carries the label endpointslice.kubernetes.io/skip-mirror=true"
        }
        CleanupReason::LeaderElection => {
            "its Endpoints object is a leader-election record (annotation \
             control-plane.alpha.kubernetes.io/leader)"
        }
        CleanupReason::ServiceMissing => "the Service does not exist",
        CleanupReason::ServiceHasSelector => "the Service has a selector",
    }
}

fn truncation(
    info: &ServiceInfo,
    snapshot: &Snapshot,
    planned: &Objects<'_>,
) -> Option<Truncation> {
    let endpoints = planned.endpoints?;
    endpoints
        .metadata
        .annotations
        .as_ref()?
        .get(OVER_CAPACITY)?;
    let kept: std::collections::BTreeSet<&str> =
        every_address(endpoints).map(|a| a.ip.as_str()).collect();
    let offered = pods::offered_addresses(info, snapshot);
    let dropped: Vec<String> = offered
        .iter()
        .filter(|(ip, _)| !kept.contains(ip.as_str()))
        .map(|(ip, pod)| format!("{ip} ({pod})"))
        .collect();
    Some(Truncation {
        offered: offered.len(),
        kept: kept.len(),
        dropped,
    })
}

fn differences(key: &str, planned: &Objects<'_>, now: &Objects<'_>) -> Vec<String> {
    // A cluster has been through changes: compare as `audit` does, by the endpoints of each
    // port list rather than slice by slice.
    compare::differences(
        &planned.compared(),
        &now.compared(),
        compare::Rules::Dynamic,
        crate::audit::SIDES,
    )
    .iter()
    .filter(|d| d.subject == key)
    .map(ToString::to_string)
    .collect()
}

#[cfg(test)]
mod tests;
