//! The facts two sides disagree on, each shown as one line that names both sides.

use super::facts::{Fact, Facts, Item, Share};
use super::Sides;
use std::collections::BTreeSet;
use std::fmt;

/// One fact the two sides disagree on. Shown (`Display`) as one line:
/// `shop/web EndpointSlices IPv4 ports=[…] endpoints: only ours […]; only upstream […]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `namespace/name` of what it is about: the Service (for its slices and hints), the
    /// Endpoints object, or the object events are about.
    pub subject: String,
    /// Which part of it: `Endpoints subsets`, `EndpointSlices IPv4 ports=[…] sizes`,
    /// `mirrored EndpointSlices IPv4 hint values`, `events`, …
    pub what: String,
    /// How the two sides differ there.
    pub gap: Gap,
    /// What the two sides are called.
    pub sides: Sides,
}

/// How two sides differ on one fact. Values are their JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gap {
    /// Only the first side has the fact (e.g. a Service's slices of a port list).
    OnlyOurs(String),
    /// Only the second side has it.
    OnlyTheirs(String),
    /// Both have it, with these values.
    Values {
        /// The first side's.
        ours: String,
        /// The second side's.
        theirs: String,
    },
    /// Both have a list; these elements are in one side's more often than in the other's.
    Elements {
        /// In the first side's only.
        ours: Vec<String>,
        /// In the second side's only.
        theirs: Vec<String>,
    },
}

/// A value longer than this is cut when shown.
const SHOWN_CHARS: usize = 400;
/// Elements shown of a list, before `and N more`.
const SHOWN_ELEMENTS: usize = 5;

fn short(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}… ({} chars)", &text[..cut], text.chars().count()),
        None => text.to_owned(),
    }
}

fn elements(list: &[String]) -> String {
    let shown: Vec<String> = list.iter().take(SHOWN_ELEMENTS).map(|v| short(v)).collect();
    let more = match list.len().checked_sub(SHOWN_ELEMENTS) {
        Some(n) if n > 0 => format!(" and {n} more"),
        _ => String::new(),
    };
    format!("[{}]{more}", shown.join(", "))
}

impl Difference {
    /// What the difference is, in a few words, before the objects: `2 endpoints only in
    /// the plan`, `endpoint 10.0.0.1: conditions.ready true in the plan, false in the
    /// cluster`, `Endpoints labels differ`.
    pub fn summary(&self) -> String {
        let Sides { ours, theirs } = self.sides;
        match &self.gap {
            Gap::OnlyOurs(_) => format!("{} only in the {ours}", self.what),
            Gap::OnlyTheirs(_) => format!("{} only in the {theirs}", self.what),
            Gap::Values { .. } => format!("{} differ", self.what),
            Gap::Elements { ours: a, theirs: b } => elements_summary(&self.what, a, b, self.sides),
        }
    }
}

/// A list's difference in words: elements that are the same endpoint (by addresses, or IP)
/// on both sides are paired and their differing fields named; the rest are counted.
fn elements_summary(what: &str, ours: &[String], theirs: &[String], sides: Sides) -> String {
    use serde_json::Value;
    let identity = |text: &String| -> (Option<String>, Value) {
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let id = value
            .get("addresses")
            .or_else(|| value.get("ip"))
            .map(|v| match v {
                Value::Array(a) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
                other => other.as_str().unwrap_or_default().to_owned(),
            })
            .filter(|id| !id.is_empty());
        (id, value)
    };
    let ours: Vec<(Option<String>, Value)> = ours.iter().map(identity).collect();
    let mut theirs: Vec<(Option<String>, Value)> = theirs.iter().map(identity).collect();
    let mut parts = Vec::new();
    let mut only_ours = 0;
    for (id, value) in &ours {
        let paired = id
            .as_ref()
            .and_then(|id| theirs.iter().position(|(t, _)| t.as_ref() == Some(id)));
        match (id, paired) {
            (Some(id), Some(i)) => {
                let (_, other) = theirs.remove(i);
                let mut fields = Vec::new();
                changed_fields("", value, &other, &mut fields);
                let shown: Vec<String> = fields
                    .iter()
                    .take(3)
                    .map(|(field, a, b)| {
                        format!(
                            "{field} {a} in the {}, {b} in the {}",
                            sides.ours, sides.theirs
                        )
                    })
                    .collect();
                parts.push(format!("{id}: {}", shown.join(", ")));
            }
            _ => only_ours += 1,
        }
    }
    let noun = if what.contains("ndpoints") && what.contains("Slices") {
        "endpoints"
    } else {
        "elements"
    };
    if only_ours > 0 {
        parts.insert(0, format!("{only_ours} {noun} only in the {}", sides.ours));
    }
    if !theirs.is_empty() {
        parts.insert(
            0,
            format!("{} {noun} only in the {}", theirs.len(), sides.theirs),
        );
    }
    format!("{what}: {}", parts.join("; "))
}

/// The leaf fields (`conditions.ready`) whose values differ between two JSON objects, with
/// both values (`-` where absent).
fn changed_fields(
    prefix: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
    out: &mut Vec<(String, String, String)>,
) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let field = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                let null = Value::Null;
                changed_fields(
                    &field,
                    x.get(key).unwrap_or(&null),
                    y.get(key).unwrap_or(&null),
                    out,
                );
            }
        }
        _ if a != b => {
            let show = |v: &Value| match v {
                Value::Null => "-".to_owned(),
                other => other.to_string(),
            };
            out.push((prefix.to_owned(), show(a), show(b)));
        }
        _ => {}
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Sides { ours, theirs } = self.sides;
        write!(f, "{} {}: ", self.subject, self.what)?;
        match &self.gap {
            Gap::OnlyOurs(v) => write!(f, "only {ours}: {}", short(v)),
            Gap::OnlyTheirs(v) => write!(f, "only {theirs}: {}", short(v)),
            Gap::Values { ours: a, theirs: b } => {
                write!(f, "{ours} {} {theirs} {}", short(a), short(b))
            }
            Gap::Elements { ours: a, theirs: b } => {
                let mut parts = Vec::new();
                if !a.is_empty() {
                    parts.push(format!("only {ours} {}", elements(a)));
                }
                if !b.is_empty() {
                    parts.push(format!("only {theirs} {}", elements(b)));
                }
                f.write_str(&parts.join("; "))
            }
        }
    }
}

impl Fact {
    /// The fact as a list, when it is one.
    fn as_list(&self) -> Option<Vec<Item>> {
        match self {
            Fact::One(_) => None,
            Fact::List(items) => Some(items.clone()),
            Fact::Truncated(shares) => Some(shares.iter().cloned().map(Item::Share).collect()),
        }
    }

    fn text(&self) -> String {
        match self {
            Fact::One(item) => item.text(),
            Fact::List(_) | Fact::Truncated(_) => list_text(&self.as_list().unwrap_or_default()),
        }
    }
}

fn list_text(items: &[Item]) -> String {
    let texts: Vec<String> = items.iter().map(Item::text).collect();
    format!("[{}]", texts.join(","))
}

/// Truncated Endpoints: the same subsets (by ports) and total, each count within one.
fn truncated_close(a: &[Share], b: &[Share]) -> bool {
    let total = |l: &[Share]| l.iter().map(|s| s.ready + s.not_ready).sum::<usize>();
    if a.len() != b.len() || total(a) != total(b) {
        return false;
    }
    let by_ports = |l: &[Share]| {
        let mut l = l.to_vec();
        l.sort_by_cached_key(|s| serde_json::to_string(&s.ports).unwrap_or_default());
        l
    };
    by_ports(a).iter().zip(by_ports(b).iter()).all(|(x, y)| {
        x.ports == y.ports
            && x.ready.abs_diff(y.ready) <= 1
            && x.not_ready.abs_diff(y.not_ready) <= 1
    })
}

/// The elements each list has more often than the other (as multisets); `None` when they
/// hold the same elements, in another order.
fn elements_apart(ours: &[Item], theirs: &[Item]) -> Option<(Vec<String>, Vec<String>)> {
    let mut extra = Vec::new();
    let mut missing: Vec<&Item> = theirs.iter().collect();
    for v in ours {
        match missing.iter().position(|m| *m == v) {
            Some(i) => {
                missing.remove(i);
            }
            None => extra.push(v.text()),
        }
    }
    if extra.is_empty() && missing.is_empty() {
        return None;
    }
    Some((extra, missing.iter().map(|v| v.text()).collect()))
}

/// What `ours` and `theirs` disagree on, in the order of their keys.
pub(super) fn between(ours: &Facts, theirs: &Facts, sides: Sides) -> Vec<Difference> {
    let keys: BTreeSet<_> = ours.keys().chain(theirs.keys()).collect();
    keys.into_iter()
        .filter_map(|key| {
            let gap = match (ours.get(key), theirs.get(key)) {
                (Some(a), Some(b)) if a == b => return None,
                (Some(Fact::Truncated(a)), Some(Fact::Truncated(b))) if truncated_close(a, b) => {
                    return None
                }
                (Some(a), Some(b)) => match (a.as_list(), b.as_list()) {
                    (Some(x), Some(y)) => match elements_apart(&x, &y) {
                        Some((ours, theirs)) => Gap::Elements { ours, theirs },
                        None => Gap::Values {
                            ours: list_text(&x),
                            theirs: list_text(&y),
                        },
                    },
                    _ => Gap::Values {
                        ours: a.text(),
                        theirs: b.text(),
                    },
                },
                (Some(a), None) => Gap::OnlyOurs(a.text()),
                (None, Some(b)) => Gap::OnlyTheirs(b.text()),
                (None, None) => return None,
            };
            Some(Difference {
                subject: key.subject.clone(),
                what: key.what.clone(),
                gap,
                sides,
            })
        })
        .collect()
}
