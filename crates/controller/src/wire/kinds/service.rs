//! Services, decoded into the fields [`ServiceInfo`](reconcile::projection::ServiceInfo)
//! reads: the rest of a Service (its status, session affinity, load balancer settings,
//! managedFields) is skipped by the decoder.

use super::partial::{Annotation, PartialObject, Unread};
use super::{list, map, plain, WireKind};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use std::collections::BTreeMap;

impl WireKind for Service {
    type Message = PartialObject<Annotation, Spec, Unread>;

    fn from_message(service: Self::Message) -> Self {
        Service {
            metadata: service.metadata.unwrap_or_default().into(),
            spec: service.spec.map(Into::into),
            status: None,
        }
    }
}

/// `ServiceSpec`: what decides the endpoints.
#[derive(Clone, PartialEq, Message)]
pub struct Spec {
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

impl From<Spec> for ServiceSpec {
    fn from(spec: Spec) -> Self {
        ServiceSpec {
            ports: list(spec.ports.into_iter().map(port).collect()),
            selector: map(spec.selector),
            cluster_ip: plain(spec.cluster_ip),
            type_: plain(spec.r#type),
            publish_not_ready_addresses: spec.publish_not_ready_addresses.filter(|p| *p),
            ip_families: list(spec.ip_families),
            // A pointer field.
            traffic_distribution: spec.traffic_distribution,
            ..ServiceSpec::default()
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
