//! Request bodies of the kinds written on every sync (EndpointSlices and Endpoints), encoded
//! straight from the objects.
//!
//! `WriteKind::to_message` copies every string of an object into Kubernetes' own protobuf
//! message (an endpoint's addresses, node, zone and the four strings of its pod reference),
//! only for prost to copy them once more into the body and free the message. Here the
//! fields are written from the object as they are, in the order and with the rules prost
//! follows for those messages: fields by ascending number, an optional field whenever it is
//! set (even when empty), a map entry without its key or value when that is empty. The
//! tests hold every body to the bytes of the message path.
//!
//! A nested message is preceded by its length, so each one is measured (a pass that only
//! counts) before it is written.

use super::meta::object_meta_to_pb;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, Endpoints, ObjectReference};
use k8s_openapi::api::discovery::v1::{self as discovery, Endpoint, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prost::encoding::{encoded_len_varint, WireType};
use prost::Message;
use std::collections::BTreeMap;

/// Where fields go: a buffer, or a count of the bytes they would take.
trait Out {
    fn put(&mut self, bytes: &[u8]);
    fn varint(&mut self, value: u64);
    /// A message field: its key, its length, then what `body` writes.
    fn nested(&mut self, tag: u32, body: &dyn Fn(&mut dyn Out));
}

/// Counts what would be written.
struct Count(usize);

impl Out for Count {
    fn put(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }
    fn varint(&mut self, value: u64) {
        self.0 += encoded_len_varint(value);
    }
    fn nested(&mut self, tag: u32, body: &dyn Fn(&mut dyn Out)) {
        let mut inner = Count(0);
        body(&mut inner);
        key(self, tag, WireType::LengthDelimited);
        self.varint(inner.0 as u64);
        self.0 += inner.0;
    }
}

impl Out for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn varint(&mut self, value: u64) {
        prost::encoding::encode_varint(value, self);
    }
    fn nested(&mut self, tag: u32, body: &dyn Fn(&mut dyn Out)) {
        let mut length = Count(0);
        body(&mut length);
        key(self, tag, WireType::LengthDelimited);
        self.varint(length.0 as u64);
        body(self);
    }
}

fn key(out: &mut dyn Out, tag: u32, wire_type: WireType) {
    out.varint(u64::from(tag << 3 | wire_type as u32));
}

fn string(out: &mut dyn Out, tag: u32, value: &str) {
    key(out, tag, WireType::LengthDelimited);
    out.varint(value.len() as u64);
    out.put(value.as_bytes());
}

fn optional_string(out: &mut dyn Out, tag: u32, value: Option<&String>) {
    if let Some(value) = value {
        string(out, tag, value);
    }
}

fn optional_bool(out: &mut dyn Out, tag: u32, value: Option<bool>) {
    if let Some(value) = value {
        key(out, tag, WireType::Varint);
        out.varint(u64::from(value));
    }
}

fn int32(out: &mut dyn Out, tag: u32, value: i32) {
    key(out, tag, WireType::Varint);
    // As prost does: a negative number takes ten bytes, sign-extended.
    out.varint(i64::from(value) as u64);
}

/// A `map<string, string>` field: one entry message per pair, leaving out an empty key or
/// value (their default), as prost's map encoding does.
fn string_map(out: &mut dyn Out, tag: u32, map: &BTreeMap<String, String>) {
    for (k, v) in map {
        out.nested(tag, &|out| {
            if !k.is_empty() {
                string(out, 1, k);
            }
            if !v.is_empty() {
                string(out, 2, v);
            }
        });
    }
}

/// The metadata, through Kubernetes' message (once per object, not per endpoint).
fn metadata(out: &mut Vec<u8>, meta: &ObjectMeta) {
    let encoded = object_meta_to_pb(meta).encode_to_vec();
    out.nested(1, &|out| out.put(&encoded));
}

/// `core/v1` `ObjectReference`.
fn object_reference(out: &mut dyn Out, r: &ObjectReference) {
    optional_string(out, 1, r.kind.as_ref());
    optional_string(out, 2, r.namespace.as_ref());
    optional_string(out, 3, r.name.as_ref());
    optional_string(out, 4, r.uid.as_ref());
    optional_string(out, 5, r.api_version.as_ref());
    optional_string(out, 6, r.resource_version.as_ref());
    optional_string(out, 7, r.field_path.as_ref());
}

/// The body of an EndpointSlice: the bytes of `WriteKind::to_message`'s message.
pub(super) fn endpoint_slice(slice: &EndpointSlice) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + 256 * slice.endpoints.len());
    metadata(&mut out, &slice.metadata);
    for e in &slice.endpoints {
        out.nested(2, &|out| endpoint(out, e));
    }
    for p in slice.ports.iter().flatten() {
        out.nested(3, &|out| slice_port(out, p));
    }
    string(&mut out, 4, &slice.address_type);
    out
}

fn endpoint(out: &mut dyn Out, e: &Endpoint) {
    for address in &e.addresses {
        string(out, 1, address);
    }
    if let Some(c) = &e.conditions {
        out.nested(2, &|out| {
            optional_bool(out, 1, c.ready);
            optional_bool(out, 2, c.serving);
            optional_bool(out, 3, c.terminating);
        });
    }
    optional_string(out, 3, e.hostname.as_ref());
    if let Some(r) = &e.target_ref {
        out.nested(4, &|out| object_reference(out, r));
    }
    if let Some(topology) = &e.deprecated_topology {
        string_map(out, 5, topology);
    }
    optional_string(out, 6, e.node_name.as_ref());
    optional_string(out, 7, e.zone.as_ref());
    if let Some(h) = &e.hints {
        out.nested(8, &|out| {
            for zone in h.for_zones.iter().flatten() {
                out.nested(1, &|out| string(out, 1, &zone.name));
            }
            for node in h.for_nodes.iter().flatten() {
                out.nested(2, &|out| string(out, 1, &node.name));
            }
        });
    }
}

fn slice_port(out: &mut dyn Out, p: &discovery::EndpointPort) {
    optional_string(out, 1, p.name.as_ref());
    optional_string(out, 2, p.protocol.as_ref());
    if let Some(port) = p.port {
        int32(out, 3, port);
    }
    optional_string(out, 4, p.app_protocol.as_ref());
}

/// The body of an Endpoints object: the bytes of `WriteKind::to_message`'s message.
pub(super) fn endpoints(object: &Endpoints) -> Vec<u8> {
    let addresses = object
        .subsets
        .iter()
        .flatten()
        .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
        .sum::<usize>();
    let mut out = Vec::with_capacity(128 + 160 * addresses);
    metadata(&mut out, &object.metadata);
    for s in object.subsets.iter().flatten() {
        out.nested(2, &|out| {
            for a in s.addresses.iter().flatten() {
                out.nested(1, &|out| address(out, a));
            }
            for a in s.not_ready_addresses.iter().flatten() {
                out.nested(2, &|out| address(out, a));
            }
            for p in s.ports.iter().flatten() {
                out.nested(3, &|out| endpoints_port(out, p));
            }
        });
    }
    out
}

fn address(out: &mut dyn Out, a: &EndpointAddress) {
    string(out, 1, &a.ip);
    if let Some(r) = &a.target_ref {
        out.nested(2, &|out| object_reference(out, r));
    }
    optional_string(out, 3, a.hostname.as_ref());
    optional_string(out, 4, a.node_name.as_ref());
}

fn endpoints_port(out: &mut dyn Out, p: &EndpointPort) {
    optional_string(out, 1, p.name.as_ref());
    int32(out, 2, p.port);
    optional_string(out, 3, p.protocol.as_ref());
    optional_string(out, 4, p.app_protocol.as_ref());
}

#[cfg(test)]
mod tests {
    use super::super::WriteKind;
    use super::*;
    use k8s_openapi::api::core::v1::EndpointSubset;
    use k8s_openapi::api::discovery::v1::{EndpointConditions, EndpointHints, ForNode, ForZone};

    fn reference(uid: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("shop".into()),
            name: Some("web-1".into()),
            uid: Some(uid.into()),
            resource_version: None,
            field_path: Some(String::new()),
            api_version: Some("v1".into()),
        }
    }

    fn metadata() -> ObjectMeta {
        ObjectMeta {
            name: Some("web-abc".into()),
            namespace: Some("shop".into()),
            resource_version: Some("42".into()),
            labels: Some([("kubernetes.io/service-name".to_owned(), "web".to_owned())].into()),
            annotations: Some([("a".to_owned(), String::new())].into()),
            ..ObjectMeta::default()
        }
    }

    /// Every field an endpoint has, set, unset and set to empty values, and a port that
    /// makes a ten-byte varint.
    #[test]
    fn slice_bodies_are_the_bytes_of_the_message() {
        let every = Endpoint {
            addresses: vec!["10.0.0.1".into(), String::new(), "fd00::1".into()],
            conditions: Some(EndpointConditions {
                ready: Some(true),
                serving: Some(false),
                terminating: None,
            }),
            deprecated_topology: Some(
                [
                    (String::new(), "v".to_owned()),
                    ("k".to_owned(), String::new()),
                    ("zone".to_owned(), "a".to_owned()),
                ]
                .into(),
            ),
            hints: Some(EndpointHints {
                for_nodes: Some(vec![ForNode {
                    name: "node-1".into(),
                }]),
                for_zones: Some(vec![
                    ForZone {
                        name: "zone-a".into(),
                    },
                    ForZone {
                        name: String::new(),
                    },
                ]),
            }),
            hostname: Some(String::new()),
            node_name: Some("node-1".into()),
            target_ref: Some(reference("0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11")),
            zone: Some("zone-a".into()),
        };
        let empty = Endpoint {
            conditions: Some(EndpointConditions::default()),
            deprecated_topology: Some(BTreeMap::new()),
            hints: Some(EndpointHints::default()),
            target_ref: Some(ObjectReference::default()),
            ..Endpoint::default()
        };
        let ports = [
            None,
            Some(Vec::new()),
            Some(vec![
                discovery::EndpointPort {
                    name: Some(String::new()),
                    port: Some(80),
                    protocol: Some("TCP".into()),
                    app_protocol: Some("h2c".into()),
                },
                discovery::EndpointPort {
                    name: None,
                    port: Some(-1),
                    protocol: None,
                    app_protocol: None,
                },
                discovery::EndpointPort::default(),
            ]),
        ];
        // Enough endpoints that an outer length takes more than one byte.
        let many: Vec<Endpoint> = (0..40).map(|_| every.clone()).collect();
        for ports in ports {
            for endpoints in [
                Vec::new(),
                vec![every.clone(), empty.clone(), Endpoint::default()],
                many.clone(),
            ] {
                for metadata in [ObjectMeta::default(), metadata()] {
                    let slice = EndpointSlice {
                        metadata,
                        address_type: "IPv4".into(),
                        endpoints: endpoints.clone(),
                        ports: ports.clone(),
                    };
                    assert_eq!(
                        endpoint_slice(&slice),
                        slice.to_message().encode_to_vec(),
                        "{slice:?}"
                    );
                }
            }
        }
        let no_type = EndpointSlice::default();
        assert_eq!(
            endpoint_slice(&no_type),
            no_type.to_message().encode_to_vec()
        );
    }

    #[test]
    fn endpoints_bodies_are_the_bytes_of_the_message() {
        let address = |ip: &str, hostname: Option<&str>, node: Option<&str>| EndpointAddress {
            ip: ip.into(),
            hostname: hostname.map(Into::into),
            node_name: node.map(Into::into),
            target_ref: Some(reference("0b0c8e2c")),
        };
        let port = |name: Option<&str>, port: i32, protocol: Option<&str>| EndpointPort {
            name: name.map(Into::into),
            port,
            protocol: protocol.map(Into::into),
            app_protocol: Some("http".into()),
        };
        let full = EndpointSubset {
            addresses: Some(
                (0..30)
                    .map(|i| address(&format!("10.0.0.{i}"), Some("web"), Some("node-1")))
                    .collect(),
            ),
            not_ready_addresses: Some(vec![address("", None, None), EndpointAddress::default()]),
            ports: Some(vec![
                port(Some("http"), 80, Some("TCP")),
                port(None, -5, None),
                EndpointPort::default(),
            ]),
        };
        for subsets in [
            None,
            Some(Vec::new()),
            Some(vec![EndpointSubset::default()]),
            Some(vec![full.clone(), EndpointSubset::default(), full]),
        ] {
            for metadata in [ObjectMeta::default(), metadata()] {
                let object = Endpoints {
                    metadata,
                    subsets: subsets.clone(),
                };
                assert_eq!(
                    endpoints(&object),
                    object.to_message().encode_to_vec(),
                    "{object:?}"
                );
            }
        }
    }
}
