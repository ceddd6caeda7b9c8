//! Endpoints (`core/v1`), whole, both ways.
//!
//! An address's `ip` and `hostname` and a port's `name` and `protocol` are plain Go fields
//! (empty reads as absent); `nodeName`, `targetRef` and `appProtocol` are pointers.

use super::meta::{
    object_meta, object_meta_to_pb, object_reference, object_reference_to_pb, REFERENCE,
};
use super::{list, plain, repeated, WireKind, WriteKind};
use crate::wire::canonical::{Rule, Shape};
use crate::wire::envelope::WireError;
use crate::wire::sent::SentCache;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};
use k8s_pb::api::core::v1 as pb;
use prost::Message;
use std::sync::LazyLock;

/// An Endpoints object's canonical form (see [`crate::wire::canonical`]): everything but the
/// metadata, with the plain fields above (and a port's number, a plain int32) empty read as
/// absent.
static ENDPOINTS: Shape = Shape(&[(1, Rule::Skip), (2, Rule::Message(&SUBSET))]);
static SUBSET: Shape = Shape(&[
    (1, Rule::Message(&ADDRESS)),
    (2, Rule::Message(&ADDRESS)),
    (3, Rule::Message(&PORT)),
]);
static ADDRESS: Shape = Shape(&[
    (1, Rule::Plain),
    (2, Rule::Message(&REFERENCE)),
    (3, Rule::Plain),
]);
static PORT: Shape = Shape(&[(1, Rule::Plain), (2, Rule::Plain), (3, Rule::Plain)]);

/// The Endpoints objects the controllers wrote, until their echoes come.
static SENT: LazyLock<SentCache<pb::Endpoints>> = LazyLock::new(|| SentCache::new(&ENDPOINTS));

/// How many Endpoints objects were recognised as our own writes.
pub(super) fn recognised() -> u64 {
    SENT.recognised()
}

impl WireKind for Endpoints {
    type Message = pb::Endpoints;

    /// One of our own writes coming back is taken from what was sent; anything else is
    /// decoded.
    fn from_raw(raw: bytes::Bytes) -> Result<Self, WireError> {
        let sent = SENT.recognise(&raw, |e, metadata| e.metadata = Some(metadata))?;
        Ok(Self::from_message(match sent {
            Some(endpoints) => endpoints,
            None => pb::Endpoints::decode(raw)?,
        }))
    }

    fn from_message(endpoints: pb::Endpoints) -> Self {
        Endpoints {
            metadata: object_meta(endpoints.metadata.unwrap_or_default()),
            subsets: list(
                endpoints
                    .subsets
                    .into_iter()
                    .map(|s| EndpointSubset {
                        addresses: list(s.addresses.into_iter().map(address).collect()),
                        not_ready_addresses: list(
                            s.not_ready_addresses.into_iter().map(address).collect(),
                        ),
                        ports: list(
                            s.ports
                                .into_iter()
                                .map(|p| EndpointPort {
                                    app_protocol: p.app_protocol,
                                    name: plain(p.name),
                                    port: p.port.unwrap_or_default(),
                                    protocol: plain(p.protocol),
                                })
                                .collect(),
                        ),
                    })
                    .collect(),
            ),
        }
    }
}

fn address(a: pb::EndpointAddress) -> EndpointAddress {
    EndpointAddress {
        hostname: plain(a.hostname),
        ip: a.ip.unwrap_or_default(),
        node_name: a.node_name,
        target_ref: a.target_ref.map(object_reference),
    }
}

fn address_to_pb(a: &EndpointAddress) -> pb::EndpointAddress {
    pb::EndpointAddress {
        ip: Some(a.ip.clone()),
        hostname: a.hostname.clone(),
        node_name: a.node_name.clone(),
        target_ref: a.target_ref.as_ref().map(object_reference_to_pb),
    }
}

impl WriteKind for Endpoints {
    type Full = pb::Endpoints;

    const KEEPS_SENT: bool = true;

    fn keep_sent(namespace: &str, name: &str, raw: &[u8], mut message: pb::Endpoints) {
        message.metadata = None;
        SENT.keep(namespace, name, raw, message);
    }

    fn forget_sent(namespace: &str, name: &str) {
        SENT.forget(namespace, name);
    }

    fn to_message(&self) -> pb::Endpoints {
        pb::Endpoints {
            metadata: Some(object_meta_to_pb(&self.metadata)),
            subsets: repeated(self.subsets.as_ref(), |s| pb::EndpointSubset {
                addresses: repeated(s.addresses.as_ref(), address_to_pb),
                not_ready_addresses: repeated(s.not_ready_addresses.as_ref(), address_to_pb),
                ports: repeated(s.ports.as_ref(), |p| pb::EndpointPort {
                    name: p.name.clone(),
                    port: Some(p.port),
                    protocol: p.protocol.clone(),
                    app_protocol: p.app_protocol.clone(),
                }),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written() -> Endpoints {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop",
                "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2026-11-29T08:00:00Z"}},
            "subsets": [{
                "addresses": [
                    {"ip": "10.0.0.1", "nodeName": "node-1",
                     "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-0",
                         "uid": "0b0c8e2c-4a43-4b6c-9d5e-2b8f0a6e7d11"}},
                    {"ip": "10.0.0.2", "hostname": "web-1",
                     "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-1", "uid": "u"}}
                ],
                "notReadyAddresses": [{"ip": "10.0.0.3"}],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"},
                          {"port": 53, "protocol": "UDP", "appProtocol": "dns"}]
            }]
        }))
        .unwrap()
    }

    fn stored(mut endpoints: Endpoints) -> Vec<u8> {
        endpoints.metadata.resource_version = Some("812".into());
        endpoints.metadata.uid = Some("5e7ab1f2-0000-4000-8000-000000000001".into());
        let value = serde_json::to_value(&endpoints).unwrap();
        apiserver::protobuf::encode_message("k8s.io.api.core.v1.Endpoints", &value).unwrap()
    }

    fn keep(cache: &SentCache<pb::Endpoints>, endpoints: &Endpoints) {
        let message = endpoints.to_message();
        let mut stripped = message.clone();
        stripped.metadata = None;
        cache.keep("shop", "web", &message.encode_to_vec(), stripped);
    }

    #[test]
    fn our_own_write_coming_back_is_recognised_and_equals_it_decoded() {
        let cache = SentCache::new(&ENDPOINTS);
        let endpoints = written();
        keep(&cache, &endpoints);
        let echo = stored(endpoints);
        let recognised = cache
            .recognise(&echo, |e, m| e.metadata = Some(m))
            .unwrap()
            .expect("recognised");
        let decoded = Endpoints::from_message(pb::Endpoints::decode(&*echo).unwrap());
        assert_eq!(Endpoints::from_message(recognised), decoded);
    }

    #[test]
    fn endpoints_that_differ_from_what_we_sent_are_decoded() {
        let changes: [fn(&mut Endpoints); 4] = [
            |e| {
                e.subsets.as_mut().unwrap()[0]
                    .addresses
                    .as_mut()
                    .unwrap()
                    .pop()
                    .map(drop)
                    .unwrap()
            },
            |e| {
                e.subsets.as_mut().unwrap()[0]
                    .not_ready_addresses
                    .as_mut()
                    .unwrap()[0]
                    .node_name = Some(String::new())
            },
            |e| e.subsets.as_mut().unwrap()[0].ports.as_mut().unwrap()[1].app_protocol = None,
            |e| {
                e.subsets.as_mut().unwrap()[0].addresses.as_mut().unwrap()[0].hostname =
                    Some("x".into())
            },
        ];
        for change in changes {
            let cache = SentCache::new(&ENDPOINTS);
            let endpoints = written();
            keep(&cache, &endpoints);
            let mut other = endpoints.clone();
            change(&mut other);
            assert!(cache
                .recognise(&stored(other), |e, m| e.metadata = Some(m))
                .unwrap()
                .is_none());
        }
    }
}
