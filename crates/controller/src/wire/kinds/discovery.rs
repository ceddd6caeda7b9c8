//! EndpointSlices, whole, both ways (`discovery.k8s.io/v1`).
//!
//! Every field of an endpoint except `addresses` is a Go pointer, so what is present on the
//! wire is present here, empty or not.

use super::meta::{
    object_meta, object_meta_to_pb, object_reference, object_reference_to_pb, REFERENCE,
};
use super::{list, map, repeated, WireKind, WriteKind};
use crate::wire::canonical::{Rule, Shape};
use crate::wire::envelope::WireError;
use crate::wire::sent::SentCache;
use k8s_openapi::api::discovery::v1::{
    Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForNode, ForZone,
};
use k8s_pb::api::discovery::v1 as pb;
use prost::Message;
use std::sync::LazyLock;

/// A slice's canonical form (see [`crate::wire::canonical`]): everything but the metadata.
/// `addressType` and the fields of a pod reference and of a zone or node hint are plain Go
/// strings, which the API server writes even when empty; everything else in an endpoint is
/// a pointer, kept as written.
static SLICE: Shape = Shape(&[
    (1, Rule::Skip),
    (2, Rule::Message(&ENDPOINT)),
    (4, Rule::Plain),
]);
static ENDPOINT: Shape = Shape(&[(4, Rule::Message(&REFERENCE)), (8, Rule::Message(&HINTS))]);
static HINTS: Shape = Shape(&[(1, Rule::Message(&HINT)), (2, Rule::Message(&HINT))]);
static HINT: Shape = Shape(&[(1, Rule::Plain)]);

/// The slices the controllers wrote, until their echoes come.
static SENT: LazyLock<SentCache<pb::EndpointSlice>> = LazyLock::new(|| SentCache::new(&SLICE));

/// How many slices were recognised as our own writes.
pub(super) fn recognised() -> u64 {
    SENT.recognised()
}

impl WireKind for EndpointSlice {
    type Message = pb::EndpointSlice;

    /// One of our own writes coming back is taken from what was sent; anything else is
    /// decoded.
    fn from_raw(raw: bytes::Bytes) -> Result<Self, WireError> {
        let sent = SENT.recognise(&raw, |slice, metadata| slice.metadata = Some(metadata))?;
        Ok(Self::from_message(match sent {
            Some(slice) => slice,
            None => pb::EndpointSlice::decode(raw)?,
        }))
    }

    fn from_message(slice: pb::EndpointSlice) -> Self {
        EndpointSlice {
            metadata: object_meta(slice.metadata.unwrap_or_default()),
            address_type: slice.address_type.unwrap_or_default(),
            endpoints: slice.endpoints.into_iter().map(endpoint).collect(),
            ports: list(slice.ports.into_iter().map(port).collect()),
        }
    }
}

fn endpoint(e: pb::Endpoint) -> Endpoint {
    Endpoint {
        addresses: e.addresses,
        conditions: e.conditions.map(|c| EndpointConditions {
            ready: c.ready,
            serving: c.serving,
            terminating: c.terminating,
        }),
        deprecated_topology: map(e.deprecated_topology),
        hints: e.hints.map(|h| EndpointHints {
            for_nodes: list(
                h.for_nodes
                    .into_iter()
                    .map(|n| ForNode {
                        name: n.name.unwrap_or_default(),
                    })
                    .collect(),
            ),
            for_zones: list(
                h.for_zones
                    .into_iter()
                    .map(|z| ForZone {
                        name: z.name.unwrap_or_default(),
                    })
                    .collect(),
            ),
        }),
        hostname: e.hostname,
        node_name: e.node_name,
        target_ref: e.target_ref.map(object_reference),
        zone: e.zone,
    }
}

fn port(p: pb::EndpointPort) -> EndpointPort {
    EndpointPort {
        app_protocol: p.app_protocol,
        name: p.name,
        port: p.port,
        protocol: p.protocol,
    }
}

impl WriteKind for EndpointSlice {
    type Full = pb::EndpointSlice;

    const KEEPS_SENT: bool = true;

    fn keep_sent(namespace: &str, name: &str, raw: &[u8], mut message: pb::EndpointSlice) {
        message.metadata = None;
        SENT.keep(namespace, name, raw, message);
    }

    fn forget_sent(namespace: &str, name: &str) {
        SENT.forget(namespace, name);
    }

    fn to_message(&self) -> pb::EndpointSlice {
        pb::EndpointSlice {
            metadata: Some(object_meta_to_pb(&self.metadata)),
            address_type: Some(self.address_type.clone()),
            endpoints: self
                .endpoints
                .iter()
                .map(|e| pb::Endpoint {
                    addresses: e.addresses.clone(),
                    conditions: e.conditions.as_ref().map(|c| pb::EndpointConditions {
                        ready: c.ready,
                        serving: c.serving,
                        terminating: c.terminating,
                    }),
                    hostname: e.hostname.clone(),
                    target_ref: e.target_ref.as_ref().map(object_reference_to_pb),
                    deprecated_topology: e.deprecated_topology.clone().unwrap_or_default(),
                    node_name: e.node_name.clone(),
                    zone: e.zone.clone(),
                    hints: e.hints.as_ref().map(|h| pb::EndpointHints {
                        for_zones: repeated(h.for_zones.as_ref(), |z| pb::ForZone {
                            name: Some(z.name.clone()),
                        }),
                        for_nodes: repeated(h.for_nodes.as_ref(), |n| pb::ForNode {
                            name: Some(n.name.clone()),
                        }),
                    }),
                })
                .collect(),
            ports: repeated(self.ports.as_ref(), |p| pb::EndpointPort {
                name: p.name.clone(),
                protocol: p.protocol.clone(),
                port: p.port,
                app_protocol: p.app_protocol.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A slice as the controller writes it, then as the API server stores it and sends it
    /// back (Go's encoding: fields in number order, plain fields written even when empty).
    fn written() -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"generateName": "web-", "namespace": "shop",
                "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [
                {"addresses": ["10.0.0.1"],
                 "conditions": {"ready": true, "serving": true, "terminating": false},
                 "nodeName": "node-1", "zone": "zone-a",
                 "hints": {"forZones": [{"name": "zone-a"}]},
                 "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-0",
                     "uid": "0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11"}},
                {"addresses": ["10.0.0.2"],
                 "conditions": {"ready": false, "serving": false, "terminating": true},
                 "hostname": "web-1",
                 "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-1", "uid": "u"}}
            ]
        }))
        .unwrap()
    }

    fn stored(mut slice: EndpointSlice) -> Vec<u8> {
        slice.metadata.name = Some("web-abcde".into());
        slice.metadata.resource_version = Some("812".into());
        slice.metadata.uid = Some("5e7ab1f2-0000-4000-8000-000000000001".into());
        slice.metadata.generation = Some(1);
        let value = serde_json::to_value(&slice).unwrap();
        apiserver::protobuf::encode_message("k8s.io.api.discovery.v1.EndpointSlice", &value)
            .unwrap()
    }

    fn decoded(raw: &[u8]) -> EndpointSlice {
        EndpointSlice::from_message(pb::EndpointSlice::decode(raw).unwrap())
    }

    #[test]
    fn our_own_write_coming_back_is_recognised_and_equals_it_decoded() {
        let cache = SentCache::new(&SLICE);
        let slice = written();
        let message = slice.to_message();
        let mut stripped = message.clone();
        stripped.metadata = None;
        cache.keep("shop", "web-abcde", &message.encode_to_vec(), stripped);

        let echo = stored(slice);
        let recognised = cache
            .recognise(&echo, |s, m| s.metadata = Some(m))
            .unwrap()
            .expect("recognised");
        assert_eq!(EndpointSlice::from_message(recognised), decoded(&echo));
        // Taken: a second copy is decoded.
        assert_eq!(cache.len(), 0);
        assert!(cache
            .recognise(&echo, |s, m| s.metadata = Some(m))
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_slice_that_differs_from_what_we_sent_is_decoded() {
        let changes: [fn(&mut EndpointSlice); 4] = [
            |s| s.endpoints[0].conditions.as_mut().unwrap().ready = Some(false),
            |s| s.endpoints[1].hostname = None,
            |s| s.endpoints[0].target_ref.as_mut().unwrap().api_version = Some("v1".into()),
            |s| s.address_type = "IPv6".into(),
        ];
        for change in changes {
            let cache = SentCache::new(&SLICE);
            let slice = written();
            let mut message = slice.to_message();
            message.metadata = None;
            cache.keep(
                "shop",
                "web-abcde",
                &slice.to_message().encode_to_vec(),
                message,
            );
            let mut other = slice.clone();
            change(&mut other);
            let echo = stored(other);
            assert!(cache
                .recognise(&echo, |s, m| s.metadata = Some(m))
                .unwrap()
                .is_none());
        }
    }

    #[test]
    fn another_objects_name_is_not_taken_for_ours() {
        let cache = SentCache::new(&SLICE);
        let slice = written();
        let mut message = slice.to_message();
        message.metadata = None;
        cache.keep(
            "shop",
            "web-fghij",
            &slice.to_message().encode_to_vec(),
            message,
        );
        assert!(cache
            .recognise(&stored(slice), |s, m| s.metadata = Some(m))
            .unwrap()
            .is_none());
        assert_eq!(cache.len(), 1);
    }
}
