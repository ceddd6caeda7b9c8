//! Endpoints (`core/v1`), whole, both ways.
//!
//! An address's `ip` and `hostname` and a port's `name` and `protocol` are plain Go fields
//! (empty reads as absent); `nodeName`, `targetRef` and `appProtocol` are pointers.

use super::meta::{
    canonicalise_reference, object_meta, object_meta_to_pb, object_reference,
    object_reference_to_pb,
};
use super::{list, make_list, make_plain, plain, repeated, WireKind, WriteKind};
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};
use k8s_pb::api::core::v1 as pb;

impl WireKind for Endpoints {
    type Message = pb::Endpoints;

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

    /// Encoded from the object itself, without the copy `to_message` makes (see `body`).
    fn encode_message(&self) -> Vec<u8> {
        super::body::endpoints(self)
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

    /// `from_message`'s rules, in place.
    fn canonicalise_body(&mut self) {
        make_list(&mut self.subsets);
        for subset in self.subsets.iter_mut().flatten() {
            make_list(&mut subset.addresses);
            make_list(&mut subset.not_ready_addresses);
            make_list(&mut subset.ports);
            let addresses = subset.addresses.iter_mut().flatten();
            for a in addresses.chain(subset.not_ready_addresses.iter_mut().flatten()) {
                make_plain(&mut a.hostname);
                if let Some(target) = &mut a.target_ref {
                    canonicalise_reference(target);
                }
            }
            for p in subset.ports.iter_mut().flatten() {
                make_plain(&mut p.name);
                make_plain(&mut p.protocol);
            }
        }
    }
}
