//! Nodes, decoded into the fields [`NodeInfo`](reconcile::projection::NodeInfo) reads:
//! name, labels, the Ready condition and allocatable CPU. A Node's images, addresses,
//! daemon endpoints, system info and managedFields are skipped by the decoder.

use super::{map, plain, WireKind};
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prost::Message;
use std::collections::BTreeMap;

/// `core.v1.Node`: metadata and status.
#[derive(Clone, PartialEq, Message)]
pub struct NodeMessage {
    #[prost(message, optional, tag = "1")]
    metadata: Option<NodeMeta>,
    #[prost(message, optional, tag = "3")]
    status: Option<Status>,
}

/// `ObjectMeta`: name, resourceVersion, labels.
#[derive(Clone, PartialEq, Message)]
struct NodeMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
}

/// `NodeStatus`: allocatable and conditions.
#[derive(Clone, PartialEq, Message)]
struct Status {
    #[prost(btree_map = "string, message", tag = "2")]
    allocatable: BTreeMap<String, QuantityMessage>,
    #[prost(message, repeated, tag = "4")]
    conditions: Vec<Condition>,
}

/// `api.resource.Quantity`: its string form.
#[derive(Clone, PartialEq, Message)]
struct QuantityMessage {
    #[prost(string, optional, tag = "1")]
    string: Option<String>,
}

/// `NodeCondition`: type and status.
#[derive(Clone, PartialEq, Message)]
struct Condition {
    #[prost(string, optional, tag = "1")]
    r#type: Option<String>,
    #[prost(string, optional, tag = "2")]
    status: Option<String>,
}

impl WireKind for Node {
    type Message = NodeMessage;

    fn from_message(node: NodeMessage) -> Self {
        let meta = node.metadata.unwrap_or_default();
        Node {
            metadata: ObjectMeta {
                name: plain(meta.name),
                resource_version: plain(meta.resource_version),
                labels: map(meta.labels),
                ..ObjectMeta::default()
            },
            spec: None,
            status: node.status.map(|status| NodeStatus {
                allocatable: map(status
                    .allocatable
                    .into_iter()
                    .map(|(k, q)| (k, Quantity(q.string.unwrap_or_default())))
                    .collect()),
                conditions: super::list(
                    status
                        .conditions
                        .into_iter()
                        .map(|c| NodeCondition {
                            type_: c.r#type.unwrap_or_default(),
                            status: c.status.unwrap_or_default(),
                            ..NodeCondition::default()
                        })
                        .collect(),
                ),
                ..NodeStatus::default()
            }),
        }
    }
}
