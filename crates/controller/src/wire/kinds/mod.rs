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

mod body;
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

    /// The bytes of the object's message. Kinds written on every sync encode them straight
    /// from the object (see `body.rs`), without building the message.
    fn encode_message(&self) -> Vec<u8> {
        self.to_message().encode_to_vec()
    }

    /// The request body: the message in its envelope.
    fn to_body(&self) -> Vec<u8> {
        super::envelope::seal(Self::API_VERSION, Self::KIND, self.encode_message())
    }

    /// Makes everything but the metadata what decoding the object's own message gives: what
    /// the decoder reads as absent (an empty list, an empty plain string) is made absent.
    /// This is the rule; kinds written often apply the same rules in place, without the
    /// copies, and their tests check them against it.
    fn canonicalise_body(&mut self)
    where
        Self:
            WireKind<Message = <Self as WriteKind>::Full> + k8s_openapi::Metadata<Ty = ObjectMeta>,
    {
        let metadata = std::mem::take(self.metadata_mut());
        *self = through_message(self);
        *self.metadata_mut() = metadata;
    }
}

/// The object as decoding its own message gives it: the rule
/// [`canonicalise_body`](WriteKind::canonicalise_body) follows.
pub(crate) fn through_message<K>(object: &K) -> K
where
    K: WriteKind + WireKind<Message = <K as WriteKind>::Full>,
{
    K::from_message(object.to_message())
}

/// A plain Go field's value: empty reads as absent, as its JSON leaves it out.
pub(crate) fn plain(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// [`plain`] in place.
pub(crate) fn make_plain(value: &mut Option<String>) {
    if value.as_deref() == Some("") {
        *value = None;
    }
}

/// [`list`] in place.
pub(crate) fn make_list<T>(items: &mut Option<Vec<T>>) {
    if items.as_ref().is_some_and(Vec::is_empty) {
        *items = None;
    }
}

/// [`map`] in place.
pub(crate) fn make_map<K, V>(entries: &mut Option<std::collections::BTreeMap<K, V>>) {
    if entries
        .as_ref()
        .is_some_and(std::collections::BTreeMap::is_empty)
    {
        *entries = None;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference,
    };
    use k8s_openapi::api::discovery::v1::{
        self as discovery, Endpoint, EndpointConditions, EndpointHints, EndpointSlice, ForZone,
    };

    /// The in-place rules must give what the decoder gives, with the metadata left alone.
    fn check<K>(object: K)
    where
        K: WriteKind
            + WireKind<Message = <K as WriteKind>::Full>
            + k8s_openapi::Metadata<Ty = ObjectMeta>
            + Clone
            + PartialEq
            + std::fmt::Debug,
    {
        let mut expected = through_message(&object);
        *expected.metadata_mut() = object.metadata().clone();
        let mut canonical = object;
        canonical.canonicalise_body();
        assert_eq!(canonical, expected);
    }

    fn reference(uid: &str, resource_version: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("shop".into()),
            name: Some("web-1".into()),
            uid: Some(uid.into()),
            resource_version: Some(resource_version.into()),
            field_path: Some(String::new()),
            api_version: None,
        }
    }

    #[test]
    fn slices_are_canonicalised_in_place_as_their_message_decodes() {
        let metadata = ObjectMeta {
            name: Some("web-abc".into()),
            finalizers: Some(Vec::new()),
            ..ObjectMeta::default()
        };
        let emptied = Endpoint {
            addresses: vec!["10.0.0.1".into()],
            conditions: Some(EndpointConditions {
                ready: Some(false),
                serving: None,
                terminating: Some(false),
            }),
            deprecated_topology: Some(Default::default()),
            hints: Some(EndpointHints {
                for_nodes: Some(Vec::new()),
                for_zones: Some(vec![ForZone {
                    name: "zone-a".into(),
                }]),
            }),
            hostname: Some(String::new()),
            node_name: Some("node-1".into()),
            target_ref: Some(reference("", "")),
            zone: None,
        };
        let full = Endpoint {
            addresses: vec!["10.0.0.2".into()],
            deprecated_topology: Some([("zone".to_owned(), "a".to_owned())].into()),
            hints: Some(EndpointHints::default()),
            target_ref: Some(reference("0b0c8e2c", "12")),
            zone: Some("zone-a".into()),
            ..Endpoint::default()
        };
        for ports in [
            None,
            Some(Vec::new()),
            Some(vec![discovery::EndpointPort {
                name: Some(String::new()),
                port: Some(80),
                protocol: Some("TCP".into()),
                app_protocol: None,
            }]),
        ] {
            check(EndpointSlice {
                metadata: metadata.clone(),
                address_type: "IPv4".into(),
                endpoints: vec![emptied.clone(), full.clone()],
                ports,
            });
        }
    }

    #[test]
    fn endpoints_are_canonicalised_in_place_as_their_message_decodes() {
        let address = |hostname: &str, uid: &str| EndpointAddress {
            hostname: Some(hostname.into()),
            ip: "10.0.0.1".into(),
            node_name: Some(String::new()),
            target_ref: Some(reference(uid, "")),
        };
        let port = |name: &str, protocol: &str| EndpointPort {
            name: Some(name.into()),
            port: 80,
            protocol: Some(protocol.into()),
            app_protocol: Some(String::new()),
        };
        let subsets = [
            None,
            Some(Vec::new()),
            Some(vec![
                EndpointSubset {
                    addresses: Some(Vec::new()),
                    not_ready_addresses: Some(vec![address("", "")]),
                    ports: Some(vec![port("", "")]),
                },
                EndpointSubset {
                    addresses: Some(vec![address("web-1", "0b0c8e2c")]),
                    not_ready_addresses: None,
                    ports: Some(Vec::new()),
                },
                EndpointSubset::default(),
            ]),
        ];
        for subsets in subsets {
            check(Endpoints {
                metadata: ObjectMeta {
                    name: Some("web".into()),
                    ..ObjectMeta::default()
                },
                subsets,
            });
        }
    }
}
