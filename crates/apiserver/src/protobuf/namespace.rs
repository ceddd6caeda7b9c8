//! `Namespace` from protobuf to JSON, for `kubectl create namespace`.

use super::{meta, object, string, strings};
use k8s_pb::api::core::v1::Namespace;
use serde_json::Value;

pub(super) fn to_json(ns: &Namespace) -> Value {
    object([
        ("metadata", ns.metadata.as_ref().map(meta::to_json)),
        (
            "spec",
            ns.spec
                .as_ref()
                .map(|s| object([("finalizers", strings(&s.finalizers))])),
        ),
        // Conditions are the namespace controller's; only the phase is accepted from clients.
        (
            "status",
            ns.status
                .as_ref()
                .map(|s| object([("phase", string(&s.phase))])),
        ),
    ])
}
