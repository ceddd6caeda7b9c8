//! Our decoder against a real kube-apiserver's protobuf: every recording in
//! `tests/protobuf/` (lists and watch streams from kube-apiserver v1.36.2, copied from the
//! shared recordings) decodes to the same objects as the JSON recorded beside it, in every
//! field the controllers read: whole objects for the kinds kept whole (EndpointSlices,
//! Endpoints, Leases), the projections for the kinds decoded in part (pods, Services,
//! Nodes).

use super::envelope::{self, Frames};
use super::kinds::WireKind;
use super::list;
use bytes::Bytes;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Endpoints, Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use reconcile::projection::{NodeInfo, PartialPod, PodInfo, ServiceInfo};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;

fn recording(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/protobuf")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

#[derive(Deserialize)]
struct JsonList<K> {
    metadata: BTreeMap<String, serde_json::Value>,
    items: Vec<K>,
}

/// Decodes `list-<name>` both ways and compares, by `view`, the objects both hold at the same
/// resourceVersion. Returns how many were compared.
fn compare_list<K, V>(name: &str, view: impl Fn(&K) -> V) -> usize
where
    K: WireKind + kube::Resource + DeserializeOwned,
    V: PartialEq + Debug,
{
    let mut from_protobuf = BTreeMap::new();
    let body = Bytes::from(recording(&format!("list-{name}.pb")));
    let meta = list::decode::<K>(envelope::open(body).unwrap(), |object| {
        from_protobuf.insert(key(object.meta()), object);
    })
    .unwrap();
    let json: JsonList<K> =
        serde_json::from_slice(&recording(&format!("list-{name}.json"))).unwrap();
    assert!(
        !meta.resource_version.is_empty(),
        "{name}: a list's resourceVersion"
    );
    assert!(json.metadata.contains_key("resourceVersion"));
    let mut compared = 0;
    for object in &json.items {
        let Some(decoded) = from_protobuf.get(&key(object.meta())) else {
            continue;
        };
        if decoded.meta().resource_version != object.meta().resource_version {
            continue;
        }
        assert_eq!(
            view(decoded),
            view(object),
            "{name}: {:?}",
            key(object.meta())
        );
        compared += 1;
    }
    // The lists were taken a moment apart; most objects had not changed in between.
    assert!(
        compared * 10 >= json.items.len() * 8 && compared > 0,
        "{name}: only {compared} of {} objects compared",
        json.items.len()
    );
    compared
}

#[test]
fn every_recorded_list_decodes_to_the_objects_of_its_json() {
    let pods = compare_list::<PartialPod, _>("pods", |p| {
        (
            p.clone(),
            PodInfo::from_partial(p).expect("a pod with a name"),
        )
    });
    assert!(pods >= 300, "{pods} pods compared");
    compare_list::<Service, _>("services", |s| {
        ServiceInfo::from_service(s).expect("a Service with a name")
    });
    compare_list::<Node, _>("nodes", |n| {
        NodeInfo::from_node(n).expect("a Node with a name")
    });
    compare_list::<EndpointSlice, _>("endpointslices", Clone::clone);
    compare_list::<Endpoints, _>("endpoints", Clone::clone);
    compare_list::<Lease, _>("leases", Clone::clone);
}

/// Decodes `watch-<name>` both ways and compares the events, in order, by `view`.
fn compare_watch<K, V>(name: &str, view: impl Fn(&K) -> V) -> usize
where
    K: WireKind + DeserializeOwned,
    V: PartialEq + Debug,
{
    let mut frames = Frames::default();
    frames.push(&recording(&format!("watch-{name}.pb")));
    let mut from_protobuf = Vec::new();
    while let Some(frame) = frames.next_frame().unwrap() {
        let event = envelope::event(frame).unwrap();
        if event.kind == "BOOKMARK" {
            continue;
        }
        from_protobuf.push((event.kind, K::from_enveloped(event.object).unwrap()));
    }
    assert!(!frames.has_partial_frame(), "{name}: a frame cut short");
    #[derive(Deserialize)]
    struct JsonEvent<K> {
        #[serde(rename = "type")]
        kind: String,
        object: serde_json::Value,
        #[serde(skip)]
        _k: std::marker::PhantomData<K>,
    }
    let text = String::from_utf8(recording(&format!("watch-{name}.json"))).unwrap();
    let from_json: Vec<(String, K)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<JsonEvent<K>>(l).unwrap())
        .filter(|e| e.kind != "BOOKMARK")
        .map(|e| (e.kind, serde_json::from_value(e.object).unwrap()))
        .collect();
    assert!(!from_json.is_empty(), "{name}: no events recorded");
    let views = |events: &[(String, K)]| {
        events
            .iter()
            .map(|(kind, object)| (kind.clone(), view(object)))
            .collect::<Vec<_>>()
    };
    assert_eq!(views(&from_protobuf), views(&from_json), "{name}");
    from_json.len()
}

#[test]
fn every_recorded_watch_stream_decodes_to_the_events_of_its_json() {
    compare_watch::<PartialPod, _>("pods", |p| {
        (
            p.clone(),
            PodInfo::from_partial(p).expect("a pod with a name"),
        )
    });
    compare_watch::<EndpointSlice, _>("endpointslices", Clone::clone);
    compare_watch::<Endpoints, _>("endpoints", Clone::clone);
}

/// What we write decodes back, through Kubernetes' complete messages, to what we wrote.
#[test]
fn written_objects_decode_back_to_themselves() {
    use super::kinds::WriteKind;
    fn round_trip<K: WriteKind + PartialEq + Debug + DeserializeOwned>(name: &str) -> usize {
        let json: JsonList<K> =
            serde_json::from_slice(&recording(&format!("list-{name}.json"))).unwrap();
        for object in &json.items {
            let body = Bytes::from(object.to_body());
            let decoded = K::from_enveloped(envelope::open(body).unwrap()).unwrap();
            assert_eq!(&decoded, object, "{name}");
        }
        json.items.len()
    }
    assert!(round_trip::<EndpointSlice>("endpointslices") > 0);
    assert!(round_trip::<Endpoints>("endpoints") > 0);
    assert!(round_trip::<Lease>("leases") > 0);
}
