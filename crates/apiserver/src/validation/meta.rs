//! What every object's metadata must satisfy: a name of the right form for its kind, and
//! labels with valid keys and values.

use super::field::{invalid_each, FieldError, Path};
use super::formats::{
    dns1035_label, dns1123_label, dns1123_subdomain, label_value, qualified_name, Rule,
};
use crate::resources::Resource;
use serde_json::Value;

/// The name rule of a kind: Namespace names are DNS labels (they become part of the DNS names
/// of their Services), Service names RFC 1035 labels (they must not start with a digit), and
/// every other kind served here takes a DNS subdomain.
fn name_rule(resource: &Resource) -> Rule {
    match (resource.group, resource.kind) {
        ("", "Namespace") => dns1123_label,
        ("", "Service") => dns1035_label,
        _ => dns1123_subdomain,
    }
}

/// Checks `metadata.name` and `metadata.labels`.
pub(crate) fn validate(resource: &Resource, object: &Value, errors: &mut Vec<FieldError>) {
    let path = Path::new("metadata");
    let meta = object.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name.is_empty() {
        errors.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        invalid_each(errors, &path.child("name"), name, name_rule(resource)(name));
    }
    if let Some(labels) = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        let pairs = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()));
        validate_labels(pairs, &path.child("labels"), errors);
    }
}

/// Checks a label map (object labels, a Service selector, an endpoint's topology): keys are
/// qualified names, values label values. Both are reported at the map's path, as upstream
/// does.
pub(crate) fn validate_labels<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    for (key, value) in labels {
        invalid_each(errors, path, key, qualified_name(key));
        invalid_each(errors, path, value, label_value(value));
    }
}

/// Checks an optional name-like field (a hostname, a node name) against `rule`; empty or
/// absent is fine.
pub(crate) fn optional_name(
    value: Option<&str>,
    rule: Rule,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        invalid_each(errors, path, value, rule(value));
    }
}
