//! Loading manifests with `ApiServer::apply_objects`, as `-f` and the conformance loader do.

use crate::get;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;
use testkit::server::start;

#[tokio::test]
async fn loaded_references_follow_the_uids_the_server_assigns() {
    let (server, client) = start();
    let owner = |kind: &str, name: &str, uid: &str| {
        json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": uid,
               "controller": true, "blockOwnerDeletion": true})
    };
    // The slice comes first, so its references point forward; the Endpoints' point back.
    let objects = vec![
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abcde", "namespace": "default", "uid": "slice-in",
                "labels": {"kubernetes.io/service-name": "web"},
                "ownerReferences": [owner("Service", "web", "svc-in")]},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"],
                "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "pod-in"}}],
            "ports": [{"name": "", "port": 80, "protocol": "TCP"}]}),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default", "uid": "svc-in"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "default", "uid": "pod-in", "labels": {"app": "web"},
                "ownerReferences": [owner("ReplicaSet", "web-rs", "rs-not-loaded")]},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}}),
        json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "web", "namespace": "default", "uid": "ep-in"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1",
                "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "pod-in"}}],
                "ports": [{"port": 80}]}]}),
    ];
    server.apply_objects(objects).unwrap();

    let svc: Service = get(&client, "web").await;
    let pod: Pod = get(&client, "web-1").await;
    let slice: EndpointSlice = get(&client, "web-abcde").await;
    let endpoints: Endpoints = get(&client, "web").await;
    let svc_uid = svc.metadata.uid.unwrap();
    let pod_uid = pod.metadata.uid.clone().unwrap();
    assert_ne!(svc_uid, "svc-in");

    let owners = slice.metadata.owner_references.unwrap();
    assert_eq!(
        owners[0].uid, svc_uid,
        "the slice stays owned by its Service"
    );
    assert_eq!(
        slice.endpoints[0]
            .target_ref
            .as_ref()
            .unwrap()
            .uid
            .as_deref(),
        Some(pod_uid.as_str())
    );
    assert_eq!(
        slice.metadata.generation,
        Some(1),
        "rewriting references is not a change"
    );
    let subsets = endpoints.subsets.unwrap();
    let address = &subsets[0].addresses.as_ref().unwrap()[0];
    assert_eq!(
        address.target_ref.as_ref().unwrap().uid.as_deref(),
        Some(pod_uid.as_str())
    );
    assert_eq!(
        pod.metadata.owner_references.unwrap()[0].uid,
        "rs-not-loaded",
        "references to objects that were not loaded are kept"
    );
}
