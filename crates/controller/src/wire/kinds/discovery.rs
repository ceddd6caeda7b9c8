//! EndpointSlices, whole, both ways (`discovery.k8s.io/v1`).
//!
//! Every field of an endpoint except `addresses` is a Go pointer, so what is present on the
//! wire is present here, empty or not.

use super::meta::{
    canonicalise_reference, object_meta, object_meta_to_pb, object_reference,
    object_reference_to_pb,
};
use super::{list, make_list, make_map, map, repeated, WireKind, WriteKind};
use k8s_openapi::api::discovery::v1::{
    Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForNode, ForZone,
};
use k8s_pb::api::discovery::v1 as pb;

impl WireKind for EndpointSlice {
    type Message = pb::EndpointSlice;

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

    /// Encoded from the slice itself, without the copy `to_message` makes (see `body`).
    fn encode_message(&self) -> Vec<u8> {
        super::body::endpoint_slice(self)
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

    /// `from_message`'s rules, in place.
    fn canonicalise_body(&mut self) {
        for e in &mut self.endpoints {
            make_map(&mut e.deprecated_topology);
            if let Some(hints) = &mut e.hints {
                make_list(&mut hints.for_nodes);
                make_list(&mut hints.for_zones);
            }
            if let Some(target) = &mut e.target_ref {
                canonicalise_reference(target);
            }
        }
        make_list(&mut self.ports);
    }
}
