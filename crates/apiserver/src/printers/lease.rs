//! NAME HOLDER AGE for leases.

use super::{column, name_cell_age, Column, AGE, NAME};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

pub(super) const COLUMNS: &[Column] = &[
    NAME,
    column("Holder", "The identity of the current holder of the lease."),
    AGE,
];

pub(super) fn cells(lease: &Lease, now: Timestamp) -> Vec<Value> {
    let holder = lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref());
    name_cell_age(&lease.metadata, holder.unwrap_or_default(), now)
}
