//! The readable form of an explanation: pods grouped by verdict, the most likely cause first
//! when the Service has no ready endpoint.

use super::{Explanation, PodExplanation, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Pods shown per verdict in the text form.
const PODS_PER_VERDICT: usize = 50;

/// Renders one explanation as text.
pub fn render_text(e: &Explanation) -> String {
    let mut out = String::new();
    let _ = render(e, &mut out);
    out
}

fn render(e: &Explanation, out: &mut String) -> std::fmt::Result {
    for refused in &e.refused {
        writeln!(
            out,
            "warning: left out, the API server refuses it: {refused}"
        )?;
    }
    writeln!(out, "Service {}", e.service)?;
    if !e.selector.is_empty() {
        writeln!(out, "  selector: {}", e.selector)?;
    }
    writeln!(out, "  {}", e.management.summary)?;
    match &e.likely_cause {
        Some(cause) => writeln!(out, "  NO READY ENDPOINTS. Most likely cause: {cause}")?,
        None => writeln!(out, "  ready endpoints: {}", e.ready_endpoints)?,
    }

    let mut groups: BTreeMap<Verdict, Vec<&PodExplanation>> = BTreeMap::new();
    for pod in &e.pods {
        groups.entry(pod.verdict).or_default().push(pod);
    }
    if e.pods.is_empty() && e.selector.is_empty() {
        // Selector-less Services have no pods to show.
    } else if e.pods.is_empty() {
        writeln!(
            out,
            "\nNo pod in the namespace matches or nearly matches the selector."
        )?;
    }
    for (verdict, pods) in &groups {
        writeln!(out, "\n{} ({}):", verdict.phrase(), pods.len())?;
        for pod in pods.iter().take(PODS_PER_VERDICT) {
            render_pod(pod, out)?;
        }
        if pods.len() > PODS_PER_VERDICT {
            writeln!(
                out,
                "  ... and {} more (-o json lists every pod)",
                pods.len() - PODS_PER_VERDICT
            )?;
        }
    }

    if let Some(m) = &e.mirroring {
        writeln!(out, "\nMirroring:")?;
        if m.mirrored {
            writeln!(
                out,
                "  {} of {} address(es) mirrored into EndpointSlices",
                m.mirrored_addresses, m.addresses
            )?;
        } else if let Some(reason) = &m.reason {
            writeln!(out, "  not mirrored: {reason}")?;
        }
        if m.mirrored && !m.not_mirrored.is_empty() {
            writeln!(
                out,
                "  not mirrored (over --mirroring-max-endpoints-per-subset, or not an IP): {}",
                m.not_mirrored.join(", ")
            )?;
        }
    }
    if let Some(h) = &e.hints {
        writeln!(
            out,
            "\nHints ({}): {}",
            h.mode,
            if h.written { "written" } else { "not written" }
        )?;
        writeln!(out, "  {}", h.reason)?;
        if let Some(event) = &h.event {
            writeln!(
                out,
                "  event: {} {}: {}",
                event.type_, event.reason, event.message
            )?;
        }
        for z in &h.zones {
            let zone = if z.zone.is_empty() {
                "(no zone)"
            } else {
                &z.zone
            };
            write!(
                out,
                "  zone {zone}: {} ready endpoint(s), {} hinted",
                z.ready_endpoints, z.hinted_endpoints
            )?;
            if let Some(share) = z.cpu_share {
                write!(out, ", {:.1}% of the CPU", share * 100.0)?;
            }
            if let Some(allowed) = z.allowed {
                write!(out, ", allowed {}..={}", allowed.minimum, allowed.maximum)?;
            }
            writeln!(out)?;
        }
    }
    if let Some(t) = &e.truncation {
        writeln!(
            out,
            "\nEndpoints truncated: {} of {} address(es) kept; dropped: {}",
            t.kept,
            t.offered,
            t.dropped.join(", ")
        )?;
    }
    if !e.events.is_empty() {
        writeln!(out, "\nEvents the controllers record:")?;
        for event in &e.events {
            writeln!(out, "  {} {}: {}", event.type_, event.reason, event.message)?;
        }
    }
    match e.as_written {
        Some(true) => writeln!(out, "\nThe cluster holds what the controllers would write.")?,
        Some(false) => {
            writeln!(
                out,
                "\nThe cluster differs from what the controllers would write:"
            )?;
            for d in &e.differences {
                writeln!(out, "  {d}")?;
            }
        }
        None => writeln!(
            out,
            "\nThe manifests hold none of its Endpoints or EndpointSlices to compare with."
        )?,
    }
    Ok(())
}

fn render_pod(pod: &PodExplanation, out: &mut String) -> std::fmt::Result {
    let ips = if pod.ips.is_empty() {
        "no IP".to_owned()
    } else {
        pod.ips.join(",")
    };
    writeln!(
        out,
        "  {}  {}  node {}",
        pod.name,
        ips,
        if pod.node.is_empty() { "-" } else { &pod.node }
    )?;
    writeln!(out, "    {}", pod.reason)?;
    if pod.verdict.in_slices() || pod.endpoints != "none" {
        let endpoints = match pod.endpoints {
            "addresses" => "in the Endpoints object's addresses".to_owned(),
            "notReadyAddresses" => "in the Endpoints object's notReadyAddresses".to_owned(),
            _ => format!(
                "not in the Endpoints object: {}",
                pod.endpoints_note.as_deref().unwrap_or("-")
            ),
        };
        writeln!(out, "    {endpoints}")?;
    }
    for p in &pod.unresolved_ports {
        if pod.verdict != Verdict::PortUnresolved {
            writeln!(
                out,
                "    Service port {:?} (targetPort {}) does not resolve: container ports [{}]",
                p.service_port,
                p.target_port,
                p.container_ports.join(", ")
            )?;
        }
    }
    if let Some(now) = &pod.now {
        if !now.slices.is_empty() {
            writeln!(out, "    now in slice {}", now.slices.join(", "))?;
        }
        if pod.as_written == Some(false) {
            writeln!(
                out,
                "    now: {}, Endpoints {}; the controllers would write: {}, Endpoints {}",
                slice_text(now),
                now.endpoints,
                slice_text(&pod.would_write),
                pod.would_write.endpoints
            )?;
        }
    }
    Ok(())
}

fn slice_text(p: &super::Placement) -> String {
    match p.ready {
        None => "in no slice".to_owned(),
        Some(true) => "ready in a slice".to_owned(),
        Some(false) => "not ready in a slice".to_owned(),
    }
}
