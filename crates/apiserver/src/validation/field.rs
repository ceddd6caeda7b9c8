//! Field errors as kube-apiserver reports them: a path such as `spec.ports[0].port`, a type
//! (`FieldValueInvalid`, ...) and a body such as `Invalid value: 70000: must be between 1 and
//! 65535, inclusive`.
//!
//! Clients read the causes of a 422 (`kubectl` prints them, tests match on `field`), so the
//! wording follows apimachinery's `field.Error` closely: the same type names, the same way of
//! quoting the bad value, the same aggregation into one message.

use crate::resources::Resource;
use crate::status::ApiError;
use serde_json::json;
use std::fmt;

/// A path to a field, printed as `metadata.labels` or `spec.ports[1].name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    /// A path starting at a top-level field.
    pub fn new(root: &str) -> Self {
        Self(root.to_owned())
    }

    /// The path of a child field.
    pub fn child(&self, name: &str) -> Self {
        Self(format!("{}.{name}", self.0))
    }

    /// The path of a list element.
    pub fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The value a field error shows, printed the way Go's `field.Error` prints it.
#[derive(Debug, Clone)]
pub(crate) enum BadValue {
    /// A string, printed quoted.
    Str(String),
    /// A number, printed bare.
    Int(i64),
    /// Any other value, already in the printed form (Go prints these with `%#v`).
    Printed(String),
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // JSON string quoting agrees with Go's %q for everything printable.
            Self::Str(s) => write!(f, "{}", json!(s)),
            Self::Int(i) => write!(f, "{i}"),
            Self::Printed(s) => f.write_str(s),
        }
    }
}

impl From<&str> for BadValue {
    fn from(s: &str) -> Self {
        Self::Str(s.to_owned())
    }
}

impl From<i64> for BadValue {
    fn from(i: i64) -> Self {
        Self::Int(i)
    }
}

impl From<i32> for BadValue {
    fn from(i: i32) -> Self {
        Self::Int(i64::from(i))
    }
}

impl From<usize> for BadValue {
    fn from(i: usize) -> Self {
        Self::Int(i64::try_from(i).unwrap_or(i64::MAX))
    }
}

/// Go's `%#v` of a `[]string`, as kube-apiserver shows a bad list value.
pub(crate) fn go_string_list(items: &[String]) -> BadValue {
    let quoted: Vec<String> = items.iter().map(|s| json!(s).to_string()).collect();
    BadValue::Printed(format!("[]string{{{}}}", quoted.join(", ")))
}

/// One problem with one field.
#[derive(Debug, Clone)]
pub(crate) struct FieldError {
    reason: &'static str,
    field: Path,
    body: String,
}

impl FieldError {
    fn with_value(
        reason: &'static str,
        title: &str,
        field: &Path,
        value: BadValue,
        detail: &str,
    ) -> Self {
        let mut body = format!("{title}: {value}");
        if !detail.is_empty() {
            body.push_str(": ");
            body.push_str(detail);
        }
        Self {
            reason,
            field: field.clone(),
            body,
        }
    }

    fn without_value(reason: &'static str, title: &str, field: &Path, detail: &str) -> Self {
        let body = if detail.is_empty() {
            title.to_owned()
        } else {
            format!("{title}: {detail}")
        };
        Self {
            reason,
            field: field.clone(),
            body,
        }
    }

    /// A malformed value.
    pub fn invalid(field: &Path, value: impl Into<BadValue>, detail: &str) -> Self {
        Self::with_value(
            "FieldValueInvalid",
            "Invalid value",
            field,
            value.into(),
            detail,
        )
    }

    /// A value that must be given.
    pub fn required(field: &Path, detail: &str) -> Self {
        Self::without_value("FieldValueRequired", "Required value", field, detail)
    }

    /// A value outside an enumeration; `supported` is listed sorted, as upstream does.
    pub fn not_supported(field: &Path, value: &str, supported: &[&str]) -> Self {
        let mut sorted = supported.to_vec();
        sorted.sort_unstable();
        let quoted: Vec<String> = sorted.iter().map(|s| json!(s).to_string()).collect();
        let detail = format!("supported values: {}", quoted.join(", "));
        Self::with_value(
            "FieldValueNotSupported",
            "Unsupported value",
            field,
            value.into(),
            &detail,
        )
    }

    /// A value that must be unique but is not.
    pub fn duplicate(field: &Path, value: impl Into<BadValue>) -> Self {
        Self::with_value(
            "FieldValueDuplicate",
            "Duplicate value",
            field,
            value.into(),
            "",
        )
    }

    /// A list with more items than allowed.
    pub fn too_many(field: &Path, actual: usize, max: usize) -> Self {
        Self::with_value(
            "FieldValueTooMany",
            "Too many",
            field,
            actual.into(),
            &format!("must have at most {max} items"),
        )
    }

    /// A value that is well formed but not allowed here.
    pub fn forbidden(field: &Path, detail: &str) -> Self {
        Self::without_value("FieldValueForbidden", "Forbidden", field, detail)
    }

    /// The field path, e.g. `spec.ports[0].port`.
    pub fn field(&self) -> String {
        self.field.to_string()
    }

    /// The message without the field, e.g. `Invalid value: 0: must be ...`.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The error type, e.g. `FieldValueInvalid`.
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body)
    }
}

/// Adds one error per message, each reporting `value` as invalid at `field`.
pub(crate) fn invalid_each(
    errors: &mut Vec<FieldError>,
    field: &Path,
    value: &str,
    messages: Vec<String>,
) {
    errors.extend(
        messages
            .iter()
            .map(|m| FieldError::invalid(field, value, m)),
    );
}

/// Reports the list at `field` when its `len` items are more than `max`; returns whether it
/// is within the limit.
pub(crate) fn at_most(errors: &mut Vec<FieldError>, field: &Path, len: usize, max: usize) -> bool {
    if len > max {
        errors.push(FieldError::too_many(field, len, max));
    }
    len <= max
}

/// The 422 kube-apiserver answers for an object with field errors: the message lists every
/// distinct error (in brackets when there are several), and each becomes a cause.
pub(crate) fn into_api_error(resource: &Resource, name: &str, errors: &[FieldError]) -> ApiError {
    let (summary, causes) = summary_and_causes(errors);
    ApiError::invalid_fields(resource, name, &summary, causes)
}

/// [`into_api_error`] for a kind that is not a stored resource (a TokenRequest), named by its
/// group and kind.
pub(crate) fn into_kind_error(
    group: &str,
    kind: &str,
    name: &str,
    errors: &[FieldError],
) -> ApiError {
    let (summary, causes) = summary_and_causes(errors);
    ApiError::invalid_kind(group, kind, name, &summary, causes)
}

fn summary_and_causes(errors: &[FieldError]) -> (String, Vec<serde_json::Value>) {
    let mut seen: Vec<String> = Vec::new();
    for error in errors {
        let text = error.to_string();
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    let summary = match seen.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let causes = errors
        .iter()
        .map(|e| json!({"reason": e.reason(), "message": e.body(), "field": e.field()}))
        .collect();
    (summary, causes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_quote_strings_and_print_numbers_bare() {
        let port = Path::new("spec").child("ports").index(0).child("port");
        assert_eq!(
            FieldError::invalid(&port, 70000_i64, "must be between 1 and 65535, inclusive")
                .to_string(),
            "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"
        );
        let kind = Path::new("addressType");
        assert_eq!(
            FieldError::not_supported(&kind, "bogus", &["IPv6", "FQDN", "IPv4"]).to_string(),
            "addressType: Unsupported value: \"bogus\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""
        );
        assert_eq!(
            FieldError::required(&Path::new("spec").child("ports"), "").to_string(),
            "spec.ports: Required value"
        );
        assert_eq!(
            FieldError::too_many(&Path::new("endpoints"), 1001, 1000).to_string(),
            "endpoints: Too many: 1001: must have at most 1000 items"
        );
    }
}
