//! NAME STATUS AGE for namespaces.

use super::{column, name_cell_age, Column, AGE, NAME};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

pub(super) const COLUMNS: &[Column] = &[NAME, column("Status", "The status of the namespace"), AGE];

pub(super) fn cells(ns: &Namespace, now: Timestamp) -> Vec<Value> {
    let phase = ns.status.as_ref().and_then(|s| s.phase.as_deref());
    name_cell_age(&ns.metadata, phase.unwrap_or_default(), now)
}
