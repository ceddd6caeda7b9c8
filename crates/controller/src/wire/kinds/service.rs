//! Services, decoded into the fields [`ServiceInfo`](reconcile::projection::ServiceInfo)
//! reads: the rest of a Service (its status, session affinity, load balancer settings,
//! managedFields) is skipped by the decoder.

use super::meta::time;
use super::{list, map, plain, WireKind};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_pb::apimachinery::pkg::apis::meta::v1::Time;
use prost::Message;
use std::collections::BTreeMap;

/// `core.v1.Service`: metadata and spec.
#[derive(Clone, PartialEq, Message)]
pub struct ServiceMessage {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ServiceMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<Spec>,
}

/// `ObjectMeta`: identity, labels, annotations and the two timestamps.
#[derive(Clone, PartialEq, Message)]
struct ServiceMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "5")]
    uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(message, optional, tag = "8")]
    creation_timestamp: Option<Time>,
    #[prost(message, optional, tag = "9")]
    deletion_timestamp: Option<Time>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
}

/// `ServiceSpec`: what decides the endpoints.
#[derive(Clone, PartialEq, Message)]
struct Spec {
    #[prost(message, repeated, tag = "1")]
    ports: Vec<Port>,
    #[prost(btree_map = "string, string", tag = "2")]
    selector: BTreeMap<String, String>,
    #[prost(string, optional, tag = "3")]
    cluster_ip: Option<String>,
    #[prost(string, optional, tag = "4")]
    r#type: Option<String>,
    #[prost(bool, optional, tag = "13")]
    publish_not_ready_addresses: Option<bool>,
    #[prost(string, repeated, tag = "19")]
    ip_families: Vec<String>,
    #[prost(string, optional, tag = "23")]
    traffic_distribution: Option<String>,
}

/// `ServicePort`.
#[derive(Clone, PartialEq, Message)]
struct Port {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    protocol: Option<String>,
    #[prost(int32, optional, tag = "3")]
    port: Option<i32>,
    #[prost(message, optional, tag = "4")]
    target_port: Option<IntOrStr>,
    #[prost(string, optional, tag = "6")]
    app_protocol: Option<String>,
}

/// `util.intstr.IntOrString`: type 0 is a number, 1 a string.
#[derive(Clone, PartialEq, Message)]
struct IntOrStr {
    #[prost(int64, optional, tag = "1")]
    r#type: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    int_val: Option<i32>,
    #[prost(string, optional, tag = "3")]
    str_val: Option<String>,
}

impl WireKind for Service {
    type Message = ServiceMessage;

    fn from_message(service: ServiceMessage) -> Self {
        let meta = service.metadata.unwrap_or_default();
        Service {
            metadata: ObjectMeta {
                name: plain(meta.name),
                namespace: plain(meta.namespace),
                uid: plain(meta.uid),
                resource_version: plain(meta.resource_version),
                creation_timestamp: time(meta.creation_timestamp),
                deletion_timestamp: time(meta.deletion_timestamp),
                labels: map(meta.labels),
                annotations: map(meta.annotations),
                ..ObjectMeta::default()
            },
            spec: service.spec.map(|spec| ServiceSpec {
                ports: list(spec.ports.into_iter().map(port).collect()),
                selector: map(spec.selector),
                cluster_ip: plain(spec.cluster_ip),
                type_: plain(spec.r#type),
                publish_not_ready_addresses: spec.publish_not_ready_addresses.filter(|p| *p),
                ip_families: list(spec.ip_families),
                // A pointer field.
                traffic_distribution: spec.traffic_distribution,
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }
}

fn port(p: Port) -> ServicePort {
    ServicePort {
        name: plain(p.name),
        protocol: plain(p.protocol),
        port: p.port.unwrap_or_default(),
        // A plain field: always written, so always present (the API server defaults it).
        target_port: p.target_port.map(|t| match t.r#type {
            Some(1) => IntOrString::String(t.str_val.unwrap_or_default()),
            _ => IntOrString::Int(t.int_val.unwrap_or_default()),
        }),
        app_protocol: p.app_protocol,
        node_port: None,
    }
}
