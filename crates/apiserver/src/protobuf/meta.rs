//! `ObjectMeta` from protobuf to JSON: the fields a client may set on create or update.

use super::{map, object, string, strings};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde_json::Value;

fn time(time: &Option<Time>) -> Option<Value> {
    let time = time.as_ref()?;
    let at = k8s_openapi::jiff::Timestamp::new(time.seconds.unwrap_or(0), 0).ok()?;
    serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at)).ok()
}

fn owner_reference(r: &OwnerReference) -> Value {
    object([
        ("apiVersion", string(&r.api_version)),
        ("kind", string(&r.kind)),
        ("name", string(&r.name)),
        ("uid", string(&r.uid)),
        ("controller", r.controller.map(Value::from)),
        (
            "blockOwnerDeletion",
            r.block_owner_deletion.map(Value::from),
        ),
    ])
}

/// The metadata as JSON; server-owned fields a client sends are kept, and admission decides.
pub(super) fn to_json(meta: &ObjectMeta) -> Value {
    let owners: Vec<Value> = meta.owner_references.iter().map(owner_reference).collect();
    object([
        ("name", string(&meta.name)),
        ("generateName", string(&meta.generate_name)),
        ("namespace", string(&meta.namespace)),
        ("uid", string(&meta.uid)),
        ("resourceVersion", string(&meta.resource_version)),
        ("generation", meta.generation.map(Value::from)),
        ("creationTimestamp", time(&meta.creation_timestamp)),
        ("deletionTimestamp", time(&meta.deletion_timestamp)),
        (
            "deletionGracePeriodSeconds",
            meta.deletion_grace_period_seconds.map(Value::from),
        ),
        ("labels", map(&meta.labels)),
        ("annotations", map(&meta.annotations)),
        (
            "ownerReferences",
            (!owners.is_empty()).then(|| Value::from(owners)),
        ),
        ("finalizers", strings(&meta.finalizers)),
    ])
}
