//! Label and field selectors of list and watch requests.
//!
//! Label selectors follow the Kubernetes string syntax (`a=b`, `a==b`, `a!=b`, `a in (x,y)`,
//! `a notin (x)`, `a`, `!a`). Field selectors accept `=`, `==` and `!=` on any dotted path
//! (`metadata.name`, `spec.nodeName`); the real server allows fewer fields per kind, but
//! accepting more costs nothing here and never changes an answer the real one would give.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum LabelOp {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<(String, LabelOp)>);

/// Splits on commas that are not inside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&s[start..]);
    terms
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn check_key(key: &str, term: &str) -> Result<String, String> {
    let key = key.trim();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(format!("invalid label selector term {term:?}"));
    }
    Ok(key.to_owned())
}

impl LabelSelector {
    /// Parses the `labelSelector` query parameter.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for term in split_terms(s) {
            if let Some(open) = term.find('(') {
                let close = term
                    .rfind(')')
                    .filter(|c| *c > open && term[c + 1..].trim().is_empty())
                    .ok_or_else(|| format!("unbalanced parentheses in {term:?}"))?;
                let mut head = term[..open].split_whitespace();
                let (key, op) = match (head.next(), head.next(), head.next()) {
                    (Some(k), Some(op), None) => (check_key(k, term)?, op),
                    _ => return Err(format!("invalid set-based term {term:?}")),
                };
                let values: Vec<String> = term[open + 1..close]
                    .split(',')
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty())
                    .collect();
                match op {
                    "in" => reqs.push((key, LabelOp::In(values))),
                    "notin" => reqs.push((key, LabelOp::NotIn(values))),
                    _ => return Err(format!("unknown operator {op:?} in {term:?}")),
                }
            } else if let Some((k, v)) = term.split_once("!=") {
                reqs.push((check_key(k, term)?, LabelOp::NotEq(v.trim().to_owned())));
            } else if let Some((k, v)) = term.split_once("==") {
                reqs.push((check_key(k, term)?, LabelOp::Eq(v.trim().to_owned())));
            } else if let Some((k, v)) = term.split_once('=') {
                reqs.push((check_key(k, term)?, LabelOp::Eq(v.trim().to_owned())));
            } else if let Some(k) = term.strip_prefix('!') {
                reqs.push((check_key(k, term)?, LabelOp::NotExists));
            } else {
                reqs.push((check_key(term, term)?, LabelOp::Exists));
            }
        }
        Ok(Self(reqs))
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.get("metadata").and_then(|m| m.get("labels"));
        self.0.iter().all(|(key, op)| {
            let value = labels.and_then(|l| l.get(key)).and_then(Value::as_str);
            match op {
                LabelOp::Eq(want) => value == Some(want.as_str()),
                LabelOp::NotEq(want) => value != Some(want.as_str()),
                LabelOp::In(set) => value.is_some_and(|v| set.iter().any(|s| s == v)),
                LabelOp::NotIn(set) => value.is_none_or(|v| set.iter().all(|s| s != v)),
                LabelOp::Exists => value.is_some(),
                LabelOp::NotExists => value.is_none(),
            }
        })
    }
}

/// A parsed field selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(Vec<String>, bool, String)>);

impl FieldSelector {
    /// Parses the `fieldSelector` query parameter.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for term in split_terms(s) {
            let (path, equal, value) = if let Some((p, v)) = term.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = term.split_once("==") {
                (p, true, v)
            } else if let Some((p, v)) = term.split_once('=') {
                (p, true, v)
            } else {
                return Err(format!("invalid field selector term {term:?}"));
            };
            let path: Vec<String> = path.trim().split('.').map(str::to_owned).collect();
            if path.iter().any(String::is_empty) {
                return Err(format!("invalid field path in {term:?}"));
            }
            reqs.push((path, equal, value.trim().to_owned()));
        }
        Ok(Self(reqs))
    }

    /// Whether the object's fields satisfy every requirement; a missing field reads as "".
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, equal, want)| {
            let mut at = Some(object);
            for part in path {
                at = at.and_then(|v| v.get(part));
            }
            let got = match at {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            (got == *want) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels}, "spec": {"nodeName": "n1"}})
    }

    #[test]
    fn label_selector_operators_match_like_kubernetes() {
        let p = pod(json!({"app": "web", "tier": "front"}));
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("app in (web, db)", true),
            ("app notin (web)", false),
            ("missing notin (web)", true),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("app=web,tier in (back)", false),
            ("app in (db,web),tier=front", true),
        ];
        assert_matches(&cases, |s| LabelSelector::parse(s).unwrap().matches(&p));
    }

    /// Asserts that each selector of `cases` matches as its case says.
    fn assert_matches(cases: &[(&str, bool)], matches: impl Fn(&str) -> bool) {
        for (selector, want) in cases {
            assert_eq!(matches(selector), *want, "{selector}");
        }
    }

    #[test]
    fn malformed_label_selectors_are_rejected() {
        for bad in ["app in web)", "app (a)", "a b=c", "app in (a"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_selector_reads_dotted_paths() {
        let p = pod(json!({}));
        let cases = [
            ("metadata.name=p", true),
            ("metadata.namespace==ns", true),
            ("metadata.name!=p", false),
            ("spec.nodeName=n1,metadata.name=p", true),
            ("spec.missing=", true),
        ];
        assert_matches(&cases, |s| FieldSelector::parse(s).unwrap().matches(&p));
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
