//! The form `explain` prints by default: the Service in a few lines, then one line per pod.
//!
//! A Service of hundreds of pods gave hundreds of paragraphs in the text form, and the one
//! pod that is not ready was hard to find. The table follows kubectl: a header in caps,
//! columns aligned as `kubectl get` aligns them, one pod per line sorted by name (the pods
//! the selector nearly matches after the ones it matches), and `-o wide` adding columns. What
//! concerns the whole Service is said once, before the table (what it selects, whether
//! anything is ready, hints, mirroring, truncation); what the controllers record, and how the
//! cluster compares, come after it, where `kubectl describe` puts events.

use super::columns::align;
use super::row::PodRow;
use super::{Explanation, Verdict};

/// Renders `e` as a table; `wide` adds the columns of `-o wide`.
pub fn render_table(e: &Explanation, wide: bool) -> String {
    let mut out = String::new();
    for refused in &e.refused {
        out.push_str(&format!(
            "warning: left out, the API server refuses it: {refused}\n"
        ));
    }
    // Both blocks share one layout, so their values line up.
    let before = about_the_service(e);
    let after = after_the_pods(e);
    let fields = align(&[before.clone(), after.clone()].concat());
    let (before, after) = fields.split_at(line_end(&fields, before.len()));
    let sections = [before.to_owned(), pods(e, wide), after.to_owned()];
    let sections: Vec<&String> = sections.iter().filter(|s| !s.is_empty()).collect();
    for (i, section) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(section);
    }
    out
}

/// The byte offset just past the first `lines` lines of `text`.
fn line_end(text: &str, lines: usize) -> usize {
    text.split_inclusive('\n').take(lines).map(str::len).sum()
}

/// A `Label:  value` line, as `kubectl describe` prints them; an empty label continues the
/// value above.
fn field(label: &str, value: impl Into<String>) -> Vec<String> {
    let label = if label.is_empty() {
        String::new()
    } else {
        format!("{label}:")
    };
    let value: String = value.into();
    vec![
        label,
        value.split_whitespace().collect::<Vec<_>>().join(" "),
    ]
}

fn about_the_service(e: &Explanation) -> Vec<Vec<String>> {
    let mut rows = vec![field("Service", e.service.as_str())];
    if !e.selector.is_empty() {
        rows.push(field("Selector", e.selector.as_str()));
    }
    // Said only when it is not the usual: the two controllers writing from the selector.
    let management = &e.management;
    if !management.selector_controllers || management.summary.starts_with("being deleted") {
        rows.push(field("Controllers", management.summary.as_str()));
    }
    rows.push(match &e.likely_cause {
        Some(cause) => field(
            "Ready endpoints",
            format!("none. Most likely cause: {cause}"),
        ),
        None => field("Ready endpoints", e.ready_endpoints.to_string()),
    });
    if let Some(m) = &e.mirroring {
        let value = match (&m.reason, m.mirrored) {
            (_, true) => format!(
                "{} of {} address(es) mirrored into EndpointSlices",
                m.mirrored_addresses, m.addresses
            ),
            (Some(reason), false) => format!("not mirrored: {reason}"),
            (None, false) => "not mirrored".to_owned(),
        };
        rows.push(field("Mirroring", value));
        if m.mirrored && !m.not_mirrored.is_empty() {
            rows.push(field(
                "",
                format!(
                    "not mirrored (over --mirroring-max-endpoints-per-subset, or not an IP): {}",
                    m.not_mirrored.join(", ")
                ),
            ));
        }
    }
    if let Some(h) = &e.hints {
        let written = if h.written { "written" } else { "not written" };
        rows.push(field(
            "Hints",
            format!("{}, {written}: {}", h.mode, h.reason),
        ));
        for z in &h.zones {
            let zone = if z.zone.is_empty() {
                "(no zone)"
            } else {
                &z.zone
            };
            let mut value = format!(
                "{zone}: {} ready, {} hinted",
                z.ready_endpoints, z.hinted_endpoints
            );
            if let Some(share) = z.cpu_share {
                value.push_str(&format!(", {:.1}% of the CPU", share * 100.0));
            }
            if let Some(allowed) = z.allowed {
                value.push_str(&format!(
                    ", allowed {}..={}",
                    allowed.minimum, allowed.maximum
                ));
            }
            rows.push(field("", value));
        }
    }
    if let Some(t) = &e.truncation {
        // The pods dropped say so on their line (and `-o wide` marks them `truncated`).
        rows.push(field(
            "Truncated",
            format!(
                "the Endpoints object keeps {} of {} address(es), {} dropped",
                t.kept,
                t.offered,
                t.dropped.len()
            ),
        ));
    }
    rows
}

fn after_the_pods(e: &Explanation) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (i, event) in e.events.iter().enumerate() {
        rows.push(field(
            if i == 0 { "Events" } else { "" },
            format!("{} {}: {}", event.type_, event.reason, event.message),
        ));
    }
    match e.as_written {
        Some(true) => rows.push(field(
            "Compared",
            "the cluster holds what the controllers would write",
        )),
        Some(false) => {
            rows.push(field(
                "Compared",
                "the cluster differs from what the controllers would write:",
            ));
            rows.extend(e.differences.iter().map(|d| field("", d.as_str())));
        }
        None => rows.push(field(
            "Compared",
            "the manifests hold none of its Endpoints or EndpointSlices",
        )),
    }
    rows
}

fn pods(e: &Explanation, wide: bool) -> String {
    if e.pods.is_empty() {
        return if e.selector.is_empty() {
            // A Service without a selector has no pods; its mirroring is said above.
            String::new()
        } else {
            "No pod in the namespace matches or nearly matches the selector.\n".to_owned()
        };
    }
    let hints = e.hints.is_some();
    let mut header = vec!["NAME", "IP", "NODE", "ENDPOINT"];
    if wide {
        header.extend(["SLICE", "ENDPOINTS", "ZONE"]);
        if hints {
            header.push("HINTS");
        }
    }
    // The reason is free text of any length: last, so that it pads no column after it.
    header.push("REASON");
    let mut rows = vec![header.into_iter().map(str::to_owned).collect::<Vec<_>>()];
    // The Service's own pods first, by name; then the pods it nearly selects, which a
    // one-label selector finds in every pod carrying that label with another value.
    let (selected, near): (Vec<_>, Vec<_>) = e
        .pods
        .iter()
        .partition(|p| p.verdict != Verdict::SelectorMismatch);
    for pod in selected.into_iter().chain(near) {
        let row = PodRow::of(e, pod);
        let mut cells = vec![row.name, row.ip, row.node, row.endpoint.as_str().to_owned()];
        if wide {
            cells.extend([row.slice, row.endpoints, row.zone]);
            if hints {
                cells.push(row.hints);
            }
        }
        cells.push(row.reason);
        rows.push(cells);
    }
    align(&rows)
}

#[cfg(test)]
mod tests;
