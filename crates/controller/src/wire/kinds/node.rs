//! Nodes, decoded into the fields [`NodeInfo`](reconcile::projection::NodeInfo) reads:
//! name, labels, the Ready condition and allocatable CPU. A Node's images, addresses,
//! daemon endpoints, system info and managedFields are skipped by the decoder.

use super::partial::{conditions, Condition, PartialObject, Unread};
use super::{map, WireKind};
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use prost::Message;
use std::collections::BTreeMap;

impl WireKind for Node {
    type Message = PartialObject<Unread, Unread, Status>;

    fn from_message(node: Self::Message) -> Self {
        Node {
            metadata: node.metadata.unwrap_or_default().into(),
            spec: None,
            status: node.status.map(Into::into),
        }
    }
}

/// `NodeStatus`: allocatable and conditions.
#[derive(Clone, PartialEq, Message)]
pub struct Status {
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

impl From<Status> for NodeStatus {
    fn from(status: Status) -> Self {
        NodeStatus {
            allocatable: map(status
                .allocatable
                .into_iter()
                .map(|(k, q)| (k, Quantity(q.string.unwrap_or_default())))
                .collect()),
            // The Ready condition's status is all the projection reads.
            conditions: conditions(status.conditions, |type_, status, _| NodeCondition {
                type_,
                status,
                ..NodeCondition::default()
            }),
            ..NodeStatus::default()
        }
    }
}
