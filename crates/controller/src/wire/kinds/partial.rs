//! The kinds decoded in part (pods, Services, Nodes): one message shape for all three, whose
//! metadata, spec and status each decode into what the kind reads of them.
//!
//! The metadata is one message too ([`PartialMeta`]), declaring the few fields of
//! `ObjectMeta` the controllers read anywhere, and converted to `ObjectMeta` in one place.

use super::meta::time;
use super::{list, map, plain, plain_number};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb;
use prost::Message;
use std::collections::BTreeMap;

/// `metadata` (1), `spec` (2) and `status` (3), as every core kind has them. A kind that reads
/// nothing of its spec or status names [`Unread`] for it.
#[derive(Clone, PartialEq, Message)]
pub struct PartialObject<A: AnnotationEntry, Spec: Part, Status: Part> {
    #[prost(message, optional, tag = "1")]
    pub(super) metadata: Option<PartialMeta<A>>,
    #[prost(message, optional, tag = "2")]
    pub(super) spec: Option<Spec>,
    #[prost(message, optional, tag = "3")]
    pub(super) status: Option<Status>,
}

/// A message decoded as a spec or a status.
pub trait Part: Message + Default + std::fmt::Debug {}
impl<M: Message + Default + std::fmt::Debug> Part for M {}

/// The fields of `ObjectMeta` that the controllers read of the kinds decoded in part (pods,
/// Services, Nodes), of bookmarks and of their writes' answers, at `ObjectMeta`'s numbers:
/// name, namespace, uid, resourceVersion, generation, the two timestamps, labels and
/// annotations. The decoder steps over every other field's bytes (managedFields, owner
/// references, finalizers) without building anything. `A` is what one annotation decodes
/// into: an [`Annotation`] where they are read, [`Unread`] where they are not (pods), so
/// that their bytes are stepped over too.
#[derive(Clone, PartialEq, Message)]
pub struct PartialMeta<A: AnnotationEntry> {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "5")]
    uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(int64, optional, tag = "7")]
    generation: Option<i64>,
    #[prost(message, optional, tag = "8")]
    creation_timestamp: Option<pb::Time>,
    #[prost(message, optional, tag = "9")]
    deletion_timestamp: Option<pb::Time>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    /// A map on the wire is a repeated message of key (1) and value (2).
    #[prost(message, repeated, tag = "12")]
    annotations: Vec<A>,
}

/// What one entry of `annotations` decodes into.
pub trait AnnotationEntry: Message + Default + std::fmt::Debug {
    /// The annotations as `ObjectMeta` holds them.
    fn collect(entries: Vec<Self>) -> Option<BTreeMap<String, String>>;
}

/// An annotation, read.
#[derive(Clone, PartialEq, Message)]
pub struct Annotation {
    #[prost(string, optional, tag = "1")]
    key: Option<String>,
    #[prost(string, optional, tag = "2")]
    value: Option<String>,
}

impl AnnotationEntry for Annotation {
    fn collect(entries: Vec<Self>) -> Option<BTreeMap<String, String>> {
        map(entries
            .into_iter()
            .map(|a| (a.key.unwrap_or_default(), a.value.unwrap_or_default()))
            .collect())
    }
}

/// A message stepped over: no field is declared, so none of its bytes is kept, and a list
/// of these never allocates. What the kinds do not read of their spec, status or
/// annotations decodes into this.
#[derive(Clone, PartialEq, Message)]
pub struct Unread {}

impl AnnotationEntry for Unread {
    fn collect(_: Vec<Self>) -> Option<BTreeMap<String, String>> {
        None
    }
}

impl<A: AnnotationEntry> From<PartialMeta<A>> for ObjectMeta {
    fn from(m: PartialMeta<A>) -> Self {
        ObjectMeta {
            name: plain(m.name),
            namespace: plain(m.namespace),
            uid: plain(m.uid),
            resource_version: plain(m.resource_version),
            generation: plain_number(m.generation),
            creation_timestamp: time(m.creation_timestamp),
            deletion_timestamp: time(m.deletion_timestamp),
            labels: map(m.labels),
            annotations: A::collect(m.annotations),
            ..ObjectMeta::default()
        }
    }
}

/// A pod's or a Node's condition, as far as it is read: `type` (1), `status` (2) and
/// `lastTransitionTime` (4), the same numbers in both kinds.
#[derive(Clone, PartialEq, Message)]
pub struct Condition {
    #[prost(string, optional, tag = "1")]
    r#type: Option<String>,
    #[prost(string, optional, tag = "2")]
    status: Option<String>,
    #[prost(message, optional, tag = "4")]
    last_transition_time: Option<pb::Time>,
}

/// A kind's conditions, each made by `each` from its type, status and last transition
/// (plain Go fields, so present even when empty).
pub(super) fn conditions<C>(
    conditions: Vec<Condition>,
    mut each: impl FnMut(String, String, Option<Time>) -> C,
) -> Option<Vec<C>> {
    list(
        conditions
            .into_iter()
            .map(|c| {
                each(
                    c.r#type.unwrap_or_default(),
                    c.status.unwrap_or_default(),
                    time(c.last_transition_time),
                )
            })
            .collect(),
    )
}
