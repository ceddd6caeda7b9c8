//! `ObjectMeta` and the small types every kind shares, both ways.

use super::partial::{Annotation, PartialMeta};
use super::{list, make_plain, map, plain, plain_number, repeated};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, MicroTime, ObjectMeta, OwnerReference, Time,
};
use k8s_openapi::jiff::Timestamp;
use k8s_pb::api::core::v1 as pb_core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb;

/// A time from its seconds and nanoseconds; `None` for Go's zero time (what a plain `Time`
/// field holds when unset, and its JSON writes as `null`).
fn timestamp(seconds: Option<i64>, nanos: Option<i32>) -> Option<Timestamp> {
    let (seconds, nanos) = (seconds.unwrap_or(0), nanos.unwrap_or(0));
    if seconds == 0 && nanos == 0 {
        return None;
    }
    Timestamp::new(seconds, nanos).ok()
}

/// `meta.v1.Time`.
pub(crate) fn time(t: Option<pb::Time>) -> Option<Time> {
    t.and_then(|t| timestamp(t.seconds, t.nanos)).map(Time)
}

/// `meta.v1.MicroTime`.
pub(crate) fn micro_time(t: Option<pb::MicroTime>) -> Option<MicroTime> {
    t.and_then(|t| timestamp(t.seconds, t.nanos)).map(MicroTime)
}

fn time_to_pb(t: &Time) -> pb::Time {
    pb::Time {
        seconds: Some(t.0.as_second()),
        // `Time` travels in whole seconds (its JSON has no fraction either).
        nanos: Some(0),
    }
}

fn micro_time_to_pb(t: &MicroTime) -> pb::MicroTime {
    pb::MicroTime {
        seconds: Some(t.0.as_second()),
        nanos: Some(t.0.subsec_nanosecond() / 1000 * 1000),
    }
}

/// `ObjectMeta`, every field.
pub(crate) fn object_meta(m: pb::ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        annotations: map(m.annotations),
        creation_timestamp: time(m.creation_timestamp),
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        deletion_timestamp: time(m.deletion_timestamp),
        finalizers: list(m.finalizers),
        generate_name: plain(m.generate_name),
        generation: plain_number(m.generation),
        labels: map(m.labels),
        managed_fields: list(
            m.managed_fields
                .into_iter()
                .map(managed_fields_entry)
                .collect(),
        ),
        name: plain(m.name),
        namespace: plain(m.namespace),
        owner_references: list(
            m.owner_references
                .into_iter()
                .map(owner_reference)
                .collect(),
        ),
        resource_version: plain(m.resource_version),
        self_link: plain(m.self_link),
        uid: plain(m.uid),
    }
}

fn owner_reference(r: pb::OwnerReference) -> OwnerReference {
    OwnerReference {
        api_version: r.api_version.unwrap_or_default(),
        block_owner_deletion: r.block_owner_deletion,
        controller: r.controller,
        kind: r.kind.unwrap_or_default(),
        name: r.name.unwrap_or_default(),
        uid: r.uid.unwrap_or_default(),
    }
}

fn managed_fields_entry(e: pb::ManagedFieldsEntry) -> ManagedFieldsEntry {
    ManagedFieldsEntry {
        api_version: plain(e.api_version),
        fields_type: plain(e.fields_type),
        // The raw bytes are the fieldset's JSON.
        fields_v1: e
            .fields_v1
            .and_then(|f| f.raw)
            .and_then(|raw| serde_json::from_slice(&raw).ok())
            .map(FieldsV1),
        manager: plain(e.manager),
        operation: plain(e.operation),
        subresource: plain(e.subresource),
        time: time(e.time),
    }
}

/// `ObjectMeta` as we write it.
pub(crate) fn object_meta_to_pb(m: &ObjectMeta) -> pb::ObjectMeta {
    pb::ObjectMeta {
        name: m.name.clone(),
        generate_name: m.generate_name.clone(),
        namespace: m.namespace.clone(),
        self_link: m.self_link.clone(),
        uid: m.uid.clone(),
        resource_version: m.resource_version.clone(),
        generation: m.generation,
        creation_timestamp: m.creation_timestamp.as_ref().map(time_to_pb),
        deletion_timestamp: m.deletion_timestamp.as_ref().map(time_to_pb),
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        labels: m.labels.clone().unwrap_or_default(),
        annotations: m.annotations.clone().unwrap_or_default(),
        owner_references: repeated(m.owner_references.as_ref(), |r| pb::OwnerReference {
            kind: Some(r.kind.clone()),
            name: Some(r.name.clone()),
            uid: Some(r.uid.clone()),
            api_version: Some(r.api_version.clone()),
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        }),
        finalizers: m.finalizers.clone().unwrap_or_default(),
        managed_fields: repeated(m.managed_fields.as_ref(), |e| pb::ManagedFieldsEntry {
            manager: e.manager.clone(),
            operation: e.operation.clone(),
            api_version: e.api_version.clone(),
            time: e.time.as_ref().map(time_to_pb),
            fields_type: e.fields_type.clone(),
            fields_v1: e.fields_v1.as_ref().map(|f| pb::FieldsV1 {
                raw: serde_json::to_vec(&f.0).ok(),
            }),
            subresource: e.subresource.clone(),
        }),
    }
}

/// `core.v1.ObjectReference` (an endpoint's `targetRef`): plain strings throughout.
pub(crate) fn object_reference(r: pb_core::ObjectReference) -> ObjectReference {
    ObjectReference {
        api_version: plain(r.api_version),
        field_path: plain(r.field_path),
        kind: plain(r.kind),
        name: plain(r.name),
        namespace: plain(r.namespace),
        resource_version: plain(r.resource_version),
        uid: plain(r.uid),
    }
}

/// What [`object_reference`] makes of a reference, in place.
pub(crate) fn canonicalise_reference(r: &mut ObjectReference) {
    for field in [
        &mut r.api_version,
        &mut r.field_path,
        &mut r.kind,
        &mut r.name,
        &mut r.namespace,
        &mut r.resource_version,
        &mut r.uid,
    ] {
        make_plain(field);
    }
}

pub(crate) fn object_reference_to_pb(r: &ObjectReference) -> pb_core::ObjectReference {
    pb_core::ObjectReference {
        kind: r.kind.clone(),
        namespace: r.namespace.clone(),
        name: r.name.clone(),
        uid: r.uid.clone(),
        api_version: r.api_version.clone(),
        resource_version: r.resource_version.clone(),
        field_path: r.field_path.clone(),
    }
}

pub(crate) fn micro_time_option_to_pb(t: Option<&MicroTime>) -> Option<pb::MicroTime> {
    t.map(micro_time_to_pb)
}

/// The metadata a bookmark carries, and what we read back from a write: a message with the
/// fields of `ObjectMeta` we use, at `ObjectMeta`'s numbers, at every kind's field 1.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct MetadataOnly {
    /// `metadata`.
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<PartialMeta<Annotation>>,
}
