//! NAME SECRETS AGE for service accounts.

use super::{column, name_cell_age, Column, AGE, NAME};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    // Upstream declares the column a string but fills it with a number.
    column(
        "Secrets",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
    ),
    AGE,
];

pub(super) fn cells(account: &ServiceAccount, now: Timestamp) -> Vec<Value> {
    let secrets = account.secrets.as_ref().map_or(0, Vec::len);
    name_cell_age(&account.metadata, secrets, now)
}
