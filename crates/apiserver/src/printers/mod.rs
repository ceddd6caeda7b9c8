//! kube-apiserver's table printers for the kinds the server serves.
//!
//! kubectl asks the server for a `Table` and prints its cells as they come, so the columns,
//! their `-o wide` priorities and the cell formats must be the ones kube-apiserver produces
//! (upstream `pkg/printers/internalversion`). Every row carries all columns; kubectl hides
//! those with a priority above zero unless asked for wide output.

mod age;
mod endpoint_slice;
mod endpoints;
mod event;
mod lease;
mod namespace;
mod node;
mod pod;
mod service;
mod service_account;

use crate::resources::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

pub(crate) use age::now;
pub(crate) use k8s_openapi::jiff::Timestamp;

/// One column of a table.
#[derive(Debug)]
pub(crate) struct Column {
    /// The header, which kubectl prints upper-cased.
    pub name: &'static str,
    /// The OpenAPI type of the cells: `string` or `integer`.
    pub cell_type: &'static str,
    /// `name` for the column holding the object's name, empty otherwise.
    pub format: &'static str,
    /// What the column shows.
    pub description: &'static str,
    /// 0 for the default columns, 1 for those `-o wide` adds.
    pub priority: u8,
}

const fn column(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        cell_type: "string",
        format: "",
        description,
        priority: 0,
    }
}

const fn wide(name: &'static str, description: &'static str) -> Column {
    Column {
        priority: 1,
        ..column(name, description)
    }
}

const NAME: Column = Column {
    format: "name",
    ..column(
        "Name",
        "Name must be unique within a namespace; it is the object's name.",
    )
};

const AGE: Column = column(
    "Age",
    "CreationTimestamp is the time the server created the object, shown as the time since.",
);

/// The columns and the cells of one row for objects of `resource`.
pub(crate) fn columns(resource: &Resource) -> &'static [Column] {
    match (resource.group, resource.kind) {
        ("", "Namespace") => namespace::COLUMNS,
        ("", "Node") => node::COLUMNS,
        ("", "Pod") => pod::COLUMNS,
        ("", "Service") => service::COLUMNS,
        ("", "Endpoints") => endpoints::COLUMNS,
        ("", "ServiceAccount") => service_account::COLUMNS,
        ("discovery.k8s.io", _) => endpoint_slice::COLUMNS,
        ("coordination.k8s.io", _) => lease::COLUMNS,
        // Core and events.k8s.io events share kube-apiserver's internal type and its printer.
        (_, "Event") => event::COLUMNS,
        _ => &[NAME, AGE],
    }
}

/// The cells of one row, in the order of [`columns`]. An object that does not decode as its
/// kind (which admission prevents) still gets a row, with its name and age only filled.
pub(crate) fn cells(resource: &Resource, object: &Value, now: Timestamp) -> Vec<Value> {
    let row = match (resource.group, resource.kind) {
        ("", "Namespace") => typed(object, |o| namespace::cells(o, now)),
        ("", "Node") => typed(object, |o| node::cells(o, now)),
        ("", "Pod") => typed(object, |o| pod::cells(o, now)),
        ("", "Service") => typed(object, |o| service::cells(o, now)),
        ("", "Endpoints") => typed(object, |o| endpoints::cells(o, now)),
        ("", "ServiceAccount") => typed(object, |o| service_account::cells(o, now)),
        ("discovery.k8s.io", _) => typed(object, |o| endpoint_slice::cells(o, now)),
        ("coordination.k8s.io", _) => typed(object, |o| lease::cells(o, now)),
        ("", "Event") => typed(object, |o| event::core_cells(o, now)),
        ("events.k8s.io", _) => typed(object, |o| event::events_v1_cells(o, now)),
        _ => None,
    };
    row.unwrap_or_else(|| fallback_cells(resource, object, now))
}

/// Row conditions: kubectl marks finished pods with them.
pub(crate) fn row_conditions(resource: &Resource, object: &Value) -> Option<Value> {
    if (resource.group, resource.kind) != ("", "Pod") {
        return None;
    }
    typed(object, |p| {
        pod::conditions(p).into_iter().collect::<Vec<_>>()
    })
    .and_then(|mut c| c.pop())
}

fn typed<T: DeserializeOwned>(
    object: &Value,
    f: impl FnOnce(&T) -> Vec<Value>,
) -> Option<Vec<Value>> {
    T::deserialize(object).ok().map(|typed| f(&typed))
}

fn fallback_cells(resource: &Resource, object: &Value, now: Timestamp) -> Vec<Value> {
    let meta: ObjectMeta = object
        .get("metadata")
        .and_then(|m| ObjectMeta::deserialize(m).ok())
        .unwrap_or_default();
    columns(resource)
        .iter()
        .map(|c| match c.name {
            "Name" => Value::from(meta.name.clone().unwrap_or_default()),
            "Age" => Value::from(created(&meta, now)),
            _ => Value::from(""),
        })
        .collect()
}

/// The AGE cell of an object.
fn created(meta: &ObjectMeta, now: Timestamp) -> String {
    age::since(meta.creation_timestamp.as_ref().map(|t| t.0), now)
}

/// The name cell of an object.
fn name(meta: &ObjectMeta) -> Value {
    Value::from(meta.name.clone().unwrap_or_default())
}

/// The row of a kind printed as NAME, one column of its own, AGE.
fn name_cell_age(meta: &ObjectMeta, cell: impl Into<Value>, now: Timestamp) -> Vec<Value> {
    vec![name(meta), cell.into(), Value::from(created(meta, now))]
}

/// The row `printer` gives the object `json` describes, as JSON (for comparing whole rows).
#[cfg(test)]
fn printed<T: DeserializeOwned>(printer: fn(&T, Timestamp) -> Vec<Value>, json: Value) -> Value {
    let object = T::deserialize(json).unwrap();
    Value::from(printer(&object, now()))
}

/// Joins up to three items with commas and counts the rest as ` + N more...`, as upstream
/// does for endpoint addresses and slice ports; `empty` stands for no items at all.
fn list_with_more(items: impl Iterator<Item = String>, empty: &str) -> String {
    const SHOWN: usize = 3;
    let mut shown = Vec::with_capacity(SHOWN);
    let mut count = 0;
    for item in items {
        if shown.len() < SHOWN {
            shown.push(item);
        }
        count += 1;
    }
    if count > SHOWN {
        return format!("{} + {} more...", shown.join(","), count - SHOWN);
    }
    if shown.is_empty() {
        return empty.to_owned();
    }
    shown.join(",")
}

/// `k=v,k2=v2` in key order, or `<none>`, as `labels.FormatLabels` prints a selector.
fn format_labels(labels: Option<&std::collections::BTreeMap<String, String>>) -> String {
    match labels {
        Some(labels) if !labels.is_empty() => labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<none>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_show_three_items_then_count_the_rest() {
        let items = |n: usize| (1..=n).map(|i| i.to_string());
        assert_eq!(list_with_more(items(0), "<unset>"), "<unset>");
        assert_eq!(list_with_more(items(3), "<unset>"), "1,2,3");
        assert_eq!(list_with_more(items(5), "<unset>"), "1,2,3 + 2 more...");
    }

    #[test]
    fn every_served_kind_has_a_row_as_wide_as_its_columns() {
        let now = now();
        for resource in crate::resources::RESOURCES {
            let object = serde_json::json!({"metadata": {"name": "x", "namespace": "d"}});
            let object = resource.normalize(object).unwrap();
            assert_eq!(
                cells(resource, &object, now).len(),
                columns(resource).len(),
                "{}",
                resource.plural
            );
        }
    }
}
