//! One verdict per pod: where the controllers put its endpoint, or which of their rules left
//! it out.

use super::{Explanation, Objects};
use crate::snapshot::Snapshot;
use k8s_openapi::api::core::v1::{Endpoints, Pod};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use reconcile::address_family::{endpoints_address, slice_address_types};
use reconcile::endpoints::subsets::addresses_on_ports;
use reconcile::find_port::find_port;
use reconcile::pod_rules::{endpoint_exclusion, Exclusion};
use reconcile::projection::{NodeInfo, PartialPod, PodInfo, ServiceInfo, TargetPort};
use reconcile::slice::endpoint::{endpoint_zone, pod_to_endpoint};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The fixed vocabulary of verdicts, one per pod. The JSON carries the phrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Verdict {
    /// In the slices, ready.
    #[serde(rename = "ready endpoint")]
    Ready,
    /// In the slices, ready, but a Service port does not resolve on it, so that port's
    /// slice lacks it.
    #[serde(rename = "port does not resolve")]
    PortUnresolved,
    /// In the slices, not ready.
    #[serde(rename = "not-ready endpoint")]
    NotReady,
    /// In the slices, serving and terminating (so not ready).
    #[serde(rename = "serving but terminating")]
    ServingTerminating,
    /// In the slices, terminating and not serving.
    #[serde(rename = "terminating, not serving")]
    Terminating,
    /// Left out: phase Failed or Succeeded.
    #[serde(rename = "excluded: pod Failed or Succeeded")]
    PodTerminal,
    /// Left out: no IP.
    #[serde(rename = "excluded: no IP")]
    NoIp,
    /// Left out: no IP of the family the Service's slices need.
    #[serde(rename = "excluded: no IP of the Service's family")]
    NoIpOfFamily,
    /// Left out: its node is not known to the controllers.
    #[serde(rename = "excluded: node unknown")]
    UnknownNode,
    /// The selector does not match (a near match: one label differs or is missing).
    #[serde(rename = "selector does not match")]
    SelectorMismatch,
    /// The controllers do not write endpoints for this Service (ExternalName, or being
    /// deleted).
    #[serde(rename = "Service not managed")]
    NotManaged,
    /// The selector matches and no rule leaves the pod out, yet the controllers did not
    /// write it. Never expected: it means explain's reading of the controllers is wrong.
    #[serde(rename = "not written, for no known reason")]
    Unexplained,
}

impl Verdict {
    /// The phrase, as in the JSON.
    pub fn phrase(self) -> &'static str {
        match self {
            Verdict::Ready => "ready endpoint",
            Verdict::PortUnresolved => "port does not resolve",
            Verdict::NotReady => "not-ready endpoint",
            Verdict::ServingTerminating => "serving but terminating",
            Verdict::Terminating => "terminating, not serving",
            Verdict::PodTerminal => "excluded: pod Failed or Succeeded",
            Verdict::NoIp => "excluded: no IP",
            Verdict::NoIpOfFamily => "excluded: no IP of the Service's family",
            Verdict::UnknownNode => "excluded: node unknown",
            Verdict::SelectorMismatch => "selector does not match",
            Verdict::NotManaged => "Service not managed",
            Verdict::Unexplained => "not written, for no known reason",
        }
    }

    /// True for the verdicts of a pod whose endpoint is in the slices.
    pub fn in_slices(self) -> bool {
        matches!(
            self,
            Verdict::Ready
                | Verdict::PortUnresolved
                | Verdict::NotReady
                | Verdict::ServingTerminating
                | Verdict::Terminating
        )
    }
}

/// A Service port that names a container port the pod does not have.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnresolvedPort {
    /// The Service port's name.
    pub service_port: String,
    /// Its targetPort.
    pub target_port: String,
    /// Its protocol.
    pub protocol: String,
    /// The container ports searched, as `name/protocol:port`, in search order (regular
    /// containers, then sidecars).
    pub container_ports: Vec<String>,
}

/// A selector label the pod does not carry as the selector wants it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelDifference {
    /// The label key.
    pub key: String,
    /// The selector's value.
    pub wanted: String,
    /// The pod's value; `None` when the pod lacks the label.
    pub actual: Option<String>,
}

/// The pod's Ready condition.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadyCondition {
    /// True, False or Unknown.
    pub status: String,
    /// Its reason, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When it last changed (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

/// Where a pod's endpoint is, in one side's objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The slices holding its endpoint, by name. Only for objects that exist: the slices the
    /// controllers would write from nothing have no name yet.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<String>,
    /// The ready condition of its endpoint in its slice; `None` in no slice.
    pub ready: Option<bool>,
    /// Its place in the Endpoints object: `addresses`, `notReadyAddresses` or `none`.
    pub endpoints: &'static str,
    /// The index of the Endpoints subset(s) it is in.
    pub subsets: Vec<usize>,
}

/// One pod's explanation.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodExplanation {
    /// The pod's name.
    pub name: String,
    /// The verdict, from the fixed vocabulary.
    pub verdict: Verdict,
    /// The verdict in one sentence with its particulars.
    pub reason: String,
    /// Its endpoint's conditions in the slices the controllers write (`ready`, `serving` and
    /// `terminating` in the JSON).
    #[serde(flatten)]
    pub in_slices: SliceConditions,
    /// Its place in the Endpoints object the controllers write: `addresses`,
    /// `notReadyAddresses` or `none`.
    pub endpoints: &'static str,
    /// Why it is not in the Endpoints object while it is in the slices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints_note: Option<String>,
    /// The pod's IPs.
    pub ips: Vec<String>,
    /// Its node.
    pub node: String,
    /// The zone of its endpoint in the slices the controllers write (its node's zone); absent
    /// in no slice, or on a node without a zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// The zones its endpoint's hints name in those slices.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hinted_zones: Vec<String>,
    /// The nodes its endpoint's hints name (trafficDistribution PreferSameNode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hinted_nodes: Vec<String>,
    /// The pod's Ready condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_condition: Option<ReadyCondition>,
    /// Service ports that do not resolve on it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unresolved_ports: Vec<UnresolvedPort>,
    /// For a near match, the selector labels it does not carry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub label_differences: Vec<LabelDifference>,
    /// Where it is in the cluster's objects now; absent when the manifests explained hold
    /// none of the Service's Endpoints or EndpointSlices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<Placement>,
    /// Where it is in what the controllers would write.
    pub would_write: Placement,
    /// Whether the two agree (absent without `now`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_written: Option<bool>,
}

/// A pod's endpoint's conditions in the slices the controllers write; each `None` for a pod in
/// no slice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SliceConditions {
    /// Ready; an endpoint without the condition counts as ready, as consumers read it.
    pub ready: Option<bool>,
    /// Serving.
    pub serving: Option<bool>,
    /// Terminating.
    pub terminating: Option<bool>,
}

impl SliceConditions {
    /// The conditions of `endpoint`, the pod's endpoint in the slices if it has one.
    fn of(endpoint: Option<&Endpoint>) -> Self {
        let Some(endpoint) = endpoint else {
            return Self::default();
        };
        let conditions = endpoint.conditions.clone().unwrap_or_default();
        Self {
            ready: Some(conditions.ready.unwrap_or(true)),
            serving: conditions.serving,
            terminating: conditions.terminating,
        }
    }
}

/// What a pod's explanation is computed from.
pub(crate) struct Context<'a> {
    pub(crate) service: &'a ServiceInfo,
    /// The Endpoints and EndpointSlice controllers write for the Service.
    pub(crate) managed: bool,
    pub(crate) snapshot: &'a Snapshot,
    pub(crate) planned: &'a Objects<'a>,
    /// The cluster's objects now, when known.
    pub(crate) now: Option<&'a Objects<'a>>,
}

/// The pod as the controllers see it, through the informer's projection.
fn project(pod: &Pod) -> Option<PodInfo> {
    let value = serde_json::to_value(pod).ok()?;
    PodInfo::from_partial(&PartialPod::deserialize(value).ok()?)
}

/// The selector labels the pod lacks or carries with another value.
fn label_differences(
    selector: &BTreeMap<String, String>,
    labels: Option<&BTreeMap<String, String>>,
) -> Vec<LabelDifference> {
    selector
        .iter()
        .filter_map(|(key, wanted)| {
            let actual = labels.and_then(|l| l.get(key));
            (actual != Some(wanted)).then(|| LabelDifference {
                key: key.clone(),
                wanted: wanted.clone(),
                actual: actual.cloned(),
            })
        })
        .collect()
}

/// The pods of the Service's namespace the selector matches, projected.
fn matching_pods<'a>(
    service: &ServiceInfo,
    snapshot: &'a Snapshot,
) -> Vec<(&'a Pod, PodInfo, Vec<LabelDifference>)> {
    let Some(selector) = service.selector.as_ref() else {
        return Vec::new();
    };
    let mut pods: Vec<_> = snapshot
        .pods
        .iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(service.namespace.as_str()))
        .filter_map(|p| {
            let differences = label_differences(selector, p.metadata.labels.as_ref());
            // A near match has every selector label but one as wanted: that one carries
            // another value, or is missing while some other selector label is there.
            let near = match differences.as_slice() {
                [] => true,
                [d] => d.actual.is_some() || selector.len() > 1,
                _ => false,
            };
            near.then_some(())?;
            Some((p, project(p)?, differences))
        })
        .collect();
    pods.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    pods
}

/// Every address the selected pods offer the Endpoints object, with the pod's name, as the
/// Endpoints controller collects them before truncating.
pub(crate) fn offered_addresses(
    service: &ServiceInfo,
    snapshot: &Snapshot,
) -> Vec<(String, String)> {
    let infos: Vec<PodInfo> = matching_pods(service, snapshot)
        .into_iter()
        .filter(|(_, _, d)| d.is_empty())
        .map(|(_, info, _)| info)
        .collect();
    let refs: Vec<&PodInfo> = infos.iter().collect();
    let mut seen = std::collections::BTreeSet::new();
    addresses_on_ports(service, &refs)
        .into_iter()
        .filter_map(|a| {
            let pod = a
                .address
                .target_ref
                .as_ref()
                .and_then(|t| t.name.clone())
                .unwrap_or_default();
            seen.insert(a.address.ip.clone())
                .then(|| (a.address.ip.clone(), pod))
        })
        .collect()
}

/// Explains every pod the selector matches or nearly matches, by name.
pub(crate) fn explain_pods(cx: &Context<'_>) -> Vec<PodExplanation> {
    let nodes: BTreeMap<String, NodeInfo> = cx
        .snapshot
        .nodes
        .iter()
        .filter_map(NodeInfo::from_node)
        .map(|n| (n.name.clone(), n))
        .collect();
    matching_pods(cx.service, cx.snapshot)
        .into_iter()
        .map(|(pod, info, differences)| explain_pod(cx, &nodes, pod, &info, differences))
        .collect()
}

fn explain_pod(
    cx: &Context<'_>,
    nodes: &BTreeMap<String, NodeInfo>,
    pod: &Pod,
    info: &PodInfo,
    label_differences: Vec<LabelDifference>,
) -> PodExplanation {
    let service = cx.service;
    let mut would_write = placement(&cx.planned.slices, cx.planned.endpoints, &info.name);
    would_write.slices.clear();
    let now = cx
        .now
        .map(|now| placement(&now.slices, now.endpoints, &info.name));
    let endpoint = find_endpoint(&cx.planned.slices, &info.name);
    // Ports are only worth naming for a pod the selector matches.
    let unresolved_ports = if label_differences.is_empty() {
        unresolved_ports(service, info)
    } else {
        Vec::new()
    };
    let ready_condition = ready_condition(pod);

    let (verdict, reason) = if !label_differences.is_empty() {
        let text: Vec<String> = label_differences
            .iter()
            .map(|d| match &d.actual {
                Some(actual) => format!(
                    "{}={} wanted, the pod has {}={actual}",
                    d.key, d.wanted, d.key
                ),
                None => format!(
                    "{}={} wanted, the pod has no label {}",
                    d.key, d.wanted, d.key
                ),
            })
            .collect();
        (Verdict::SelectorMismatch, text.join("; "))
    } else if let Some(endpoint) = endpoint {
        in_slice_verdict(
            endpoint,
            &unresolved_ports,
            ready_condition.as_ref(),
            service,
        )
    } else if !cx.managed {
        (
            Verdict::NotManaged,
            "the controllers write no endpoints for this Service".to_owned(),
        )
    } else {
        excluded_verdict(service, nodes, info)
    };

    let endpoints_note = (verdict.in_slices() && would_write.endpoints == "none")
        .then(|| endpoints_note(service, info, &unresolved_ports, cx.planned.endpoints));
    PodExplanation {
        name: info.name.to_string(),
        verdict,
        reason,
        in_slices: SliceConditions::of(endpoint),
        endpoints: would_write.endpoints,
        endpoints_note,
        ips: info.ips.iter().map(|ip| ip.to_string()).collect(),
        node: info.node_name.to_string(),
        zone: endpoint.and_then(|e| e.zone.clone()),
        hinted_zones: endpoint
            .and_then(|e| e.hints.as_ref())
            .into_iter()
            .flat_map(|h| h.for_zones.iter().flatten())
            .map(|z| z.name.clone())
            .collect(),
        hinted_nodes: endpoint
            .and_then(|e| e.hints.as_ref())
            .into_iter()
            .flat_map(|h| h.for_nodes.iter().flatten())
            .map(|n| n.name.clone())
            .collect(),
        ready_condition,
        unresolved_ports,
        label_differences,
        as_written: now.as_ref().map(|now| same_place(now, &would_write)),
        now,
        would_write,
    }
}

/// The two sides agree when the pod is in a slice on both, with the same ready condition,
/// and in the same list of the Endpoints object (slice names and subset numbers depend on
/// the order of past changes).
fn same_place(a: &Placement, b: &Placement) -> bool {
    a.ready == b.ready && a.endpoints == b.endpoints
}

fn in_slice_verdict(
    endpoint: &Endpoint,
    unresolved: &[UnresolvedPort],
    ready_condition: Option<&ReadyCondition>,
    service: &ServiceInfo,
) -> (Verdict, String) {
    let c = endpoint.conditions.clone().unwrap_or_default();
    let (ready, serving, terminating) = (
        c.ready.unwrap_or(true),
        c.serving.unwrap_or(false),
        c.terminating.unwrap_or(false),
    );
    let condition = match ready_condition {
        Some(rc) => {
            let mut text = format!("Ready={}", rc.status);
            if let Some(reason) = &rc.reason {
                text.push_str(&format!(" ({reason})"));
            }
            if let Some(message) = &rc.message {
                text.push_str(&format!(": {message}"));
            }
            if let Some(since) = &rc.since {
                text.push_str(&format!(", since {since}"));
            }
            text
        }
        None => "the pod has no Ready condition".to_owned(),
    };
    if ready {
        if !unresolved.is_empty() {
            let ports: Vec<String> = unresolved.iter().map(port_text).collect();
            return (
                Verdict::PortUnresolved,
                format!("ready, but its slice has no port for {}", ports.join("; ")),
            );
        }
        let why = if service.publish_not_ready_addresses && (terminating || !serving) {
            "ready because the Service publishes not-ready addresses"
        } else {
            "ready"
        };
        return (Verdict::Ready, why.to_owned());
    }
    if terminating {
        if serving {
            return (
                Verdict::ServingTerminating,
                "being deleted and still serving: in the slices with ready=false, serving=true, \
                 terminating=true"
                    .to_owned(),
            );
        }
        return (
            Verdict::Terminating,
            format!("being deleted and not serving ({condition})"),
        );
    }
    (Verdict::NotReady, format!("not ready: {condition}"))
}

fn port_text(p: &UnresolvedPort) -> String {
    format!(
        "Service port {:?} (targetPort {} {}): no container port of that name and protocol among [{}]",
        p.service_port,
        p.target_port,
        p.protocol,
        p.container_ports.join(", ")
    )
}

/// A pod the selector matches and the controllers did not write: which of their rules left
/// it out, asked in the order their planner applies them.
fn excluded_verdict(
    service: &ServiceInfo,
    nodes: &BTreeMap<String, NodeInfo>,
    info: &PodInfo,
) -> (Verdict, String) {
    match endpoint_exclusion(info, true) {
        Some(Exclusion::Terminal) => {
            return (
                Verdict::PodTerminal,
                "its phase is Failed or Succeeded: it will never serve again".to_owned(),
            )
        }
        Some(Exclusion::NoIp) => {
            let why = if info.node_name.is_empty() {
                "it has no IP: it is not scheduled yet"
            } else {
                "it has no IP yet"
            };
            return (Verdict::NoIp, why.to_owned());
        }
        Some(Exclusion::Terminating) | None => {}
    }
    let zone = match endpoint_zone(nodes, info, service) {
        Ok(zone) => zone,
        Err(missing) => {
            return (
                Verdict::UnknownNode,
                format!(
                    "its node {:?} is not a Node the controllers know; the sync fails and is \
                     retried until it appears",
                    missing.node
                ),
            )
        }
    };
    let families = slice_address_types(service);
    if families.iter().all(|&t| {
        pod_to_endpoint(info, zone.as_deref(), service, t)
            .addresses
            .is_empty()
    }) {
        let wanted: Vec<&str> = families.iter().map(|t| t.as_str()).collect();
        return (
            Verdict::NoIpOfFamily,
            format!(
                "its IPs [{}] are not of the Service's address type ({})",
                info.ips.join(", "),
                wanted.join(", ")
            ),
        );
    }
    (
        Verdict::Unexplained,
        "the controllers did not write it, and none of their rules says why".to_owned(),
    )
}

/// Why a pod in the slices is not in the Endpoints object.
fn endpoints_note(
    service: &ServiceInfo,
    info: &PodInfo,
    unresolved: &[UnresolvedPort],
    planned: Option<&Endpoints>,
) -> String {
    if endpoint_exclusion(info, service.publish_not_ready_addresses) == Some(Exclusion::Terminating)
    {
        return "terminating pods stay out of the Endpoints object unless the Service publishes \
                not-ready addresses"
            .to_owned();
    }
    if endpoints_address(service, info).is_none() {
        return "no IP of the Service's primary family".to_owned();
    }
    if !service.ports.is_empty() && unresolved.len() == service.ports.len() {
        return "none of the Service's ports resolves on it".to_owned();
    }
    if service.ports.is_empty() && service.cluster_ip != "None" {
        return "a Service without ports gets addresses only when it is headless".to_owned();
    }
    let truncated = planned
        .and_then(|e| e.metadata.annotations.as_ref())
        .is_some_and(|a| a.contains_key(reconcile::endpoints::OVER_CAPACITY));
    if truncated {
        return format!(
            "dropped: the Endpoints object is truncated to {} addresses",
            reconcile::endpoints::MAX_ADDRESSES
        );
    }
    "not in the Endpoints object".to_owned()
}

fn unresolved_ports(service: &ServiceInfo, info: &PodInfo) -> Vec<UnresolvedPort> {
    service
        .ports
        .iter()
        .filter(|sp| find_port(info, sp).is_none())
        .map(|sp| UnresolvedPort {
            service_port: sp.name.clone(),
            target_port: match &sp.target_port {
                TargetPort::Number(n) => n.to_string(),
                TargetPort::Name(name) => name.clone(),
            },
            protocol: sp.protocol.clone(),
            container_ports: info
                .ports
                .iter()
                .map(|p| format!("{}/{}:{}", p.name, p.protocol, p.port))
                .collect(),
        })
        .collect()
}

fn ready_condition(pod: &Pod) -> Option<ReadyCondition> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some(ReadyCondition {
        status: condition.status.clone(),
        reason: condition.reason.clone(),
        message: condition.message.clone(),
        since: condition
            .last_transition_time
            .as_ref()
            .map(|t| t.0.to_string()),
    })
}

fn targets(e: &Endpoint, pod: &str) -> bool {
    e.target_ref.as_ref().is_some_and(|t| {
        t.kind.as_deref().unwrap_or("Pod") == "Pod" && t.name.as_deref() == Some(pod)
    })
}

fn find_endpoint<'a>(slices: &[&'a EndpointSlice], pod: &str) -> Option<&'a Endpoint> {
    slices
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .find(|e| targets(e, pod))
}

fn placement(slices: &[&EndpointSlice], endpoints: Option<&Endpoints>, pod: &str) -> Placement {
    let mut place = Placement {
        endpoints: "none",
        ..Placement::default()
    };
    for slice in slices {
        if let Some(e) = slice.endpoints.iter().find(|e| targets(e, pod)) {
            place
                .slices
                .push(slice.metadata.name.clone().unwrap_or_default());
            place.ready = place.ready.or(Some(
                e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true),
            ));
        }
    }
    let names_pod = |a: &k8s_openapi::api::core::v1::EndpointAddress| {
        a.target_ref.as_ref().and_then(|t| t.name.as_deref()) == Some(pod)
    };
    for (i, subset) in endpoints
        .into_iter()
        .flat_map(|e| e.subsets.iter().flatten())
        .enumerate()
    {
        if subset.addresses.iter().flatten().any(names_pod) {
            place.endpoints = "addresses";
            place.subsets.push(i);
        } else if subset.not_ready_addresses.iter().flatten().any(names_pod) {
            if place.endpoints == "none" {
                place.endpoints = "notReadyAddresses";
            }
            place.subsets.push(i);
        }
    }
    place
}

/// The most likely reason a Service has no ready endpoint, in one sentence.
pub(crate) fn likely_cause(explanation: &Explanation) -> Option<String> {
    if explanation.ready_endpoints > 0 {
        return None;
    }
    let management = &explanation.management;
    if !management.selector_controllers {
        if let Some(m) = &explanation.mirroring {
            if m.mirrored {
                return Some(
                    "its hand-written Endpoints object has no ready address to mirror".to_owned(),
                );
            }
        }
        return Some(format!("the Service has {}", management.summary));
    }
    if explanation.management.summary.starts_with("being deleted") {
        return Some(format!("the Service is {}", management.summary));
    }
    let matched: Vec<&super::PodExplanation> = explanation
        .pods
        .iter()
        .filter(|p| p.verdict != Verdict::SelectorMismatch)
        .collect();
    if matched.is_empty() {
        let near: Vec<String> = explanation
            .pods
            .iter()
            .map(|p| format!("{} ({})", p.name, p.reason))
            .collect();
        let shown = near.len().min(3);
        let more = if near.len() > shown {
            format!("; and {} more", near.len() - shown)
        } else {
            String::new()
        };
        if near.is_empty() {
            return Some(format!(
                "no pod in namespace {} has the labels {}",
                explanation.service.split('/').next().unwrap_or_default(),
                explanation.selector
            ));
        }
        return Some(format!(
            "no pod matches the selector {}; {} nearly match: {}{more}",
            explanation.selector,
            near.len(),
            near[..shown].join("; ")
        ));
    }
    let mut by_verdict: BTreeMap<Verdict, Vec<&super::PodExplanation>> = BTreeMap::new();
    for p in &matched {
        by_verdict.entry(p.verdict).or_default().push(p);
    }
    let (verdict, pods) = by_verdict
        .iter()
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)))?;
    let first = pods[0];
    Some(format!(
        "{} of the {} pod(s) the selector matches: {}; e.g. {}: {}",
        pods.len(),
        matched.len(),
        verdict.phrase(),
        first.name,
        first.reason
    ))
}
