//! One pod on one line: what the table says about a pod, read from its explanation.
//!
//! The table exists so that the one not-ready pod among hundreds can be found at a glance, so
//! each cell is short and a verdict's particulars fit on the pod's line. Nothing here decides
//! anything: every cell is a shorter wording of what [`super::pods`] computed, and the full
//! wording stays in `-o text`, `-o yaml` and `-o json`.

use super::{Explanation, PodExplanation, ReadyCondition, UnresolvedPort, Verdict};

/// kubectl's word for a cell that has no value.
pub(crate) const NONE: &str = "<none>";

/// What the ENDPOINT column says: the pod's endpoint in the slices the controllers write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndpointState {
    /// Ready: takes traffic (unless a port does not resolve, which the reason says).
    Ready,
    /// In the slices, not ready.
    NotReady,
    /// In the slices, being deleted.
    Terminating,
    /// Not an endpoint at all.
    No,
}

impl EndpointState {
    /// The state of a pod with `verdict`.
    pub(crate) fn of(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Ready | Verdict::PortUnresolved => Self::Ready,
            Verdict::NotReady => Self::NotReady,
            Verdict::ServingTerminating | Verdict::Terminating => Self::Terminating,
            Verdict::PodTerminal
            | Verdict::NoIp
            | Verdict::NoIpOfFamily
            | Verdict::UnknownNode
            | Verdict::SelectorMismatch
            | Verdict::NotManaged
            | Verdict::Unexplained => Self::No,
        }
    }

    /// The cell.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::NotReady => "not ready",
            Self::Terminating => "terminating",
            Self::No => "no",
        }
    }
}

/// One pod's cells, the default columns first, then the ones `-o wide` adds.
pub(crate) struct PodRow {
    pub(crate) name: String,
    pub(crate) ip: String,
    pub(crate) node: String,
    pub(crate) endpoint: EndpointState,
    pub(crate) reason: String,
    pub(crate) slice: String,
    pub(crate) endpoints: String,
    pub(crate) zone: String,
    pub(crate) hints: String,
}

impl PodRow {
    /// The row of `pod`, one of `e`'s pods.
    pub(crate) fn of(e: &Explanation, pod: &PodExplanation) -> Self {
        let truncated_out = is_truncated_out(e, pod);
        Self {
            name: pod.name.clone(),
            ip: or_none(pod.ips.join(",")),
            node: or_none(pod.node.clone()),
            endpoint: EndpointState::of(pod.verdict),
            reason: one_line(&reason(pod, truncated_out)),
            slice: slice(pod),
            endpoints: match pod.endpoints {
                "addresses" | "notReadyAddresses" => pod.endpoints.to_owned(),
                _ if truncated_out => "truncated".to_owned(),
                _ => "-".to_owned(),
            },
            zone: or_none(pod.zone.clone().unwrap_or_default()),
            hints: hints(pod),
        }
    }
}

fn or_none(cell: String) -> String {
    if cell.is_empty() {
        NONE.to_owned()
    } else {
        cell
    }
}

/// A cell must not break the line: a condition's message may hold newlines.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The pod was offered to the Endpoints object and dropped because it is over capacity.
fn is_truncated_out(e: &Explanation, pod: &PodExplanation) -> bool {
    let suffix = format!(" ({})", pod.name);
    e.truncation
        .as_ref()
        .is_some_and(|t| t.dropped.iter().any(|d| d.ends_with(&suffix)))
}

/// The REASON cell: why the pod is where the ENDPOINT column says, when that needs saying.
fn reason(pod: &PodExplanation, truncated_out: bool) -> String {
    let main = match pod.verdict {
        Verdict::Ready => {
            let published =
                pod.in_slices.serving == Some(false) || pod.in_slices.terminating == Some(true);
            if published {
                "ready because the Service publishes not-ready addresses".to_owned()
            } else if truncated_out {
                "dropped from the Endpoints object: over capacity".to_owned()
            } else if pod.endpoints == "none" {
                // In the slices, yet not in the Endpoints object: the note says why.
                format!(
                    "not in the Endpoints object: {}",
                    pod.endpoints_note.as_deref().unwrap_or("-")
                )
            } else {
                String::new()
            }
        }
        // The ports are named below, with every other in-slice verdict's.
        Verdict::PortUnresolved => String::new(),
        Verdict::NotReady => condition(pod.ready_condition.as_ref()),
        Verdict::ServingTerminating => "being deleted, still serving".to_owned(),
        Verdict::Terminating => "being deleted, not serving".to_owned(),
        Verdict::PodTerminal => "pod has finished (phase Failed or Succeeded)".to_owned(),
        Verdict::NoIp if pod.node.is_empty() => "not scheduled yet".to_owned(),
        Verdict::NoIp => "no IP yet".to_owned(),
        Verdict::UnknownNode => format!("node {} is not a known Node", pod.node),
        Verdict::SelectorMismatch => pod
            .label_differences
            .iter()
            .map(|d| match &d.actual {
                Some(actual) => format!(
                    "label {}={actual} does not match selector {}={}",
                    d.key, d.key, d.wanted
                ),
                None => format!("no label {} (selector {}={})", d.key, d.key, d.wanted),
            })
            .collect::<Vec<_>>()
            .join("; "),
        // Already one short sentence each.
        Verdict::NoIpOfFamily | Verdict::NotManaged | Verdict::Unexplained => pod.reason.clone(),
    };
    // A port that does not resolve matters to every pod in the slices, whatever its state.
    let ports = if pod.verdict.in_slices() {
        pod.unresolved_ports.iter().map(port).collect()
    } else {
        Vec::new()
    };
    let text: Vec<String> = std::iter::once(main)
        .chain(ports)
        .filter(|t| !t.is_empty())
        .collect();
    if text.is_empty() {
        NONE.to_owned()
    } else {
        text.join("; ")
    }
}

/// The pod's Ready condition, as the kubelet set it, and since when.
fn condition(ready: Option<&ReadyCondition>) -> String {
    let Some(c) = ready else {
        return "the pod has no Ready condition".to_owned();
    };
    let mut text = format!("Ready={}", c.status);
    if let Some(reason) = &c.reason {
        text.push_str(&format!(" ({reason})"));
    }
    if let Some(message) = &c.message {
        text.push_str(&format!(": {message}"));
    }
    if let Some(since) = &c.since {
        let comma = if c.reason.is_some() || c.message.is_some() {
            ","
        } else {
            ""
        };
        text.push_str(&format!("{comma} since {since}"));
    }
    text
}

/// A Service port that does not resolve, with the container ports there are instead.
fn port(p: &UnresolvedPort) -> String {
    let name = if p.service_port.is_empty() {
        format!("targetPort {}", p.target_port)
    } else {
        format!("port {}", p.service_port)
    };
    let has = if p.container_ports.is_empty() {
        "none".to_owned()
    } else {
        p.container_ports.join(", ")
    };
    format!(
        "{name} does not resolve: no container port {}/{} (the pod has {has})",
        p.target_port, p.protocol
    )
}

/// The SLICE cell: the slice(s) holding the pod's endpoint now, or `<pending>` when the
/// controllers would write it into a slice the cluster does not show it in. The slices they
/// would create have no name before they are created, so none is made up.
fn slice(pod: &PodExplanation) -> String {
    if let Some(now) = pod.now.as_ref().filter(|now| !now.slices.is_empty()) {
        return now.slices.join(",");
    }
    if pod.verdict.in_slices() {
        "<pending>".to_owned()
    } else {
        NONE.to_owned()
    }
}

/// The HINTS cell: the zones, and nodes, its endpoint's hints name.
fn hints(pod: &PodExplanation) -> String {
    let mut cell = pod.hinted_zones.join(",");
    if !pod.hinted_nodes.is_empty() {
        cell.push_str(&format!(" (node {})", pod.hinted_nodes.join(",")));
    }
    or_none(cell.trim_start().to_owned())
}
