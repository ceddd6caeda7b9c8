//! The kinds the controllers read and write, decoded from (and encoded to) protobuf.
//!
//! Each read kind names the message it is decoded from. For pods, Services and Nodes that is
//! a `PartialObject` (in `partial.rs`) of messages of our own declaring only the fields the
//! projections read, with Kubernetes' field numbers: the decoder skips every other field's
//! bytes without building anything.
//! EndpointSlices and Endpoints are kept whole (the controllers compare and rewrite them),
//! so they are decoded from `k8s-pb`'s complete messages and converted field by field.
//!
//! The API server's protobuf differs from its JSON in how it says "nothing": Go writes a
//! plain (non-pointer) string, number or time field even when it is empty or zero, where
//! the JSON leaves it out (`omitempty`), while pointer fields are written only when set,
//! and then even when empty. The conversions follow the Go field each one comes from, so a
//! decoded object equals the one decoded from the same object's JSON: `plain` for the
//! first, the value as decoded for the second.

mod discovery;
mod endpoints;
mod lease;
pub(crate) mod meta;
mod node;
mod partial;
mod pod;
mod service;

use super::envelope::{Enveloped, WireError};
use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prost::Message;

/// A kind read off the wire in protobuf.
pub trait WireKind: k8s_openapi::Resource + Sized {
    /// The message decoded: Kubernetes' own, or one declaring only the fields read.
    type Message: Message + Default;

    /// The object the message holds.
    fn from_message(message: Self::Message) -> Self;

    /// Decodes an enveloped object of this kind.
    fn from_enveloped(object: Enveloped) -> Result<Self, WireError> {
        let raw = object.expect_kind(Self::KIND)?;
        Self::from_raw(raw)
    }

    /// Decodes the object's own message (the envelope's `raw`).
    fn from_raw(raw: Bytes) -> Result<Self, WireError> {
        Ok(Self::from_message(Self::Message::decode(raw)?))
    }
}

/// A kind the controllers write in protobuf.
pub trait WriteKind: WireKind {
    /// Kubernetes' complete message of the kind.
    type Full: Message;

    /// The object as that message.
    fn to_message(&self) -> Self::Full;

    /// The request body: the message in its envelope.
    fn to_body(&self) -> Vec<u8> {
        super::envelope::seal(Self::API_VERSION, Self::KIND, &self.to_message())
    }

    /// The object as a watch decodes it once the server has stored it, with `metadata` (the
    /// server's) in place of its own: through the message and back, so that whatever the
    /// decoder reads as absent (an empty list, an empty plain string) is absent here too.
    fn as_stored(&self, metadata: ObjectMeta) -> Self
    where
        Self:
            WireKind<Message = <Self as WriteKind>::Full> + k8s_openapi::Metadata<Ty = ObjectMeta>,
    {
        let mut stored = Self::from_message(self.to_message());
        *stored.metadata_mut() = metadata;
        stored
    }
}

/// A plain Go field's value: empty reads as absent, as its JSON leaves it out.
pub(crate) fn plain(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// A plain Go number: zero reads as absent.
pub(crate) fn plain_number<N: Default + PartialEq>(value: Option<N>) -> Option<N> {
    value.filter(|v| *v != N::default())
}

/// A list: empty reads as absent, as Go's nil slice does.
pub(crate) fn list<T>(items: Vec<T>) -> Option<Vec<T>> {
    (!items.is_empty()).then_some(items)
}

/// A map: empty reads as absent.
pub(crate) fn map<K, V>(
    entries: std::collections::BTreeMap<K, V>,
) -> Option<std::collections::BTreeMap<K, V>> {
    (!entries.is_empty()).then_some(entries)
}

/// A list to encode: absent and empty are the same on the wire.
pub(crate) fn repeated<T, U>(items: Option<&Vec<T>>, each: impl FnMut(&T) -> U) -> Vec<U> {
    items
        .map(|items| items.iter().map(each).collect())
        .unwrap_or_default()
}
