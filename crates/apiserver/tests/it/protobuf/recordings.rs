//! The protobuf transcoder against what a real kube-apiserver v1.36.2 sent: the recordings
//! in `tests/protobuf/` (copied from the shared recordings, see its README.md) hold each list
//! and watch response both as protobuf and as JSON.

use apiserver::protobuf::{
    decode_message, decode_object, decode_watch_stream, encode_message, encode_object,
    message_name, watch_frames,
};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn recordings() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/protobuf");
    assert!(
        dir.join("README.md").is_file(),
        "the protobuf recordings are missing: expected them at {}",
        dir.display()
    );
    dir
}

fn read(name: &str) -> Vec<u8> {
    let path = recordings().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn key(object: &Value) -> (String, String, String) {
    let meta = |k: &str| {
        object["metadata"][k]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    (meta("namespace"), meta("name"), meta("resourceVersion"))
}

/// Reads a varint from the front of `bytes`.
fn varint(bytes: &mut &[u8]) -> u64 {
    let mut value = 0;
    for shift in (0..64).step_by(7) {
        let (byte, rest) = bytes.split_first().expect("a truncated varint");
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    value
}

/// The length-delimited fields of a message, by number, in order (all the fields of the
/// envelopes and lists read here are length-delimited).
fn fields(mut bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let key = varint(&mut bytes);
        assert_eq!(key & 7, 2, "a length-delimited field");
        let len = varint(&mut bytes) as usize;
        out.push((key >> 3, &bytes[..len]));
        bytes = &bytes[len..];
    }
    out
}

/// The raw message inside a protobuf body's envelope.
fn raw(body: &[u8]) -> &[u8] {
    let envelope = body.strip_prefix(b"k8s\0").expect("the protobuf magic");
    fields(envelope)
        .into_iter()
        .find(|(n, _)| *n == 2)
        .expect("an envelope with raw bytes")
        .1
}

/// Checks one recorded list: decoding the protobuf list gives every object of the JSON
/// list that has the same resourceVersion, whole; encoding those JSON objects reads back
/// to them and gives kube-apiserver's bytes. Returns how many objects were compared.
fn check_list(name: &str, api_version: &str, kind: &str) -> usize {
    let pb = read(&format!("list-{name}.pb"));
    let json: Value = serde_json::from_slice(&read(&format!("list-{name}.json"))).unwrap();
    let decoded = decode_object(&pb).unwrap_or_else(|e| panic!("decoding list-{name}.pb: {e}"));
    assert_eq!(decoded["kind"], format!("{kind}List"));
    assert_eq!(decoded["apiVersion"], api_version);
    assert!(decoded["metadata"]["resourceVersion"].is_string());

    let item_message = message_name(api_version, kind).unwrap();
    let item_bytes: Vec<&[u8]> = fields(raw(&pb))
        .into_iter()
        .filter(|(n, _)| *n == 2)
        .map(|(_, b)| b)
        .collect();
    let pb_items = decoded["items"].as_array().unwrap();
    assert_eq!(pb_items.len(), item_bytes.len());
    let by_key: HashMap<_, _> = pb_items
        .iter()
        .zip(&item_bytes)
        .map(|(item, bytes)| (key(item), (item, *bytes)))
        .collect();

    let mut compared = 0;
    let mut same_bytes = 0;
    for item in json["items"].as_array().unwrap() {
        // Encoding the JSON and reading it back gives the JSON again, recorded or not.
        let encoded = encode_message(item_message, item)
            .unwrap_or_else(|e| panic!("encoding {:?}: {e}", key(item)));
        let back = decode_message(item_message, &encoded).unwrap();
        assert_eq!(&back, item, "round trip of {:?} in list-{name}", key(item));

        let Some((pb_item, recorded)) = by_key.get(&key(item)) else {
            continue;
        };
        assert_eq!(*pb_item, item, "{:?} in list-{name}.pb", key(item));
        compared += 1;
        if encoded == *recorded {
            same_bytes += 1;
        }
    }
    assert!(
        compared * 2 >= pb_items.len().max(1),
        "only {compared} of {} objects of list-{name} could be compared",
        pb_items.len()
    );
    assert_eq!(
        same_bytes, compared,
        "objects of list-{name} whose encoding differs from kube-apiserver's bytes"
    );
    compared
}

#[test]
fn recorded_pod_list_decodes_to_the_recorded_json_and_back() {
    assert!(check_list("pods", "v1", "Pod") > 100);
}

/// One test per recorded list: the test, then the resource, apiVersion and kind of the list.
macro_rules! recorded_lists {
    ($($test:ident: $resource:literal, $api_version:literal, $kind:literal;)*) => {$(
        #[test]
        fn $test() {
            check_list($resource, $api_version, $kind);
        }
    )*};
}

recorded_lists! {
    recorded_service_list_decodes_to_the_recorded_json_and_back: "services", "v1", "Service";
    recorded_node_list_decodes_to_the_recorded_json_and_back: "nodes", "v1", "Node";
    recorded_endpoints_list_decodes_to_the_recorded_json_and_back: "endpoints", "v1", "Endpoints";
    recorded_endpoint_slice_list_decodes_to_the_recorded_json_and_back:
        "endpointslices", "discovery.k8s.io/v1", "EndpointSlice";
    recorded_lease_list_decodes_to_the_recorded_json_and_back:
        "leases", "coordination.k8s.io/v1", "Lease";
}

/// Checks one recorded watch stream against the JSON stream recorded beside it: the same
/// events, in order, with the same objects; and each event's object encodes to the bytes the
/// server sent for it.
fn check_watch(name: &str) {
    let pb = read(&format!("watch-{name}.pb"));
    let json = read(&format!("watch-{name}.json"));
    let events =
        decode_watch_stream(&pb).unwrap_or_else(|e| panic!("decoding watch-{name}.pb: {e}"));
    let recorded: Vec<Value> = serde_json::Deserializer::from_slice(&json)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap();
    // The two streams were opened side by side; the bookmarks may fall differently.
    let changes = |events: Vec<(String, Value)>| -> Vec<(String, Value)> {
        events
            .into_iter()
            .filter(|(t, _)| t != "BOOKMARK")
            .collect()
    };
    let json_events = changes(
        recorded
            .iter()
            .map(|e| (e["type"].as_str().unwrap().to_owned(), e["object"].clone()))
            .collect(),
    );
    let pb_events = changes(events.clone());
    assert!(!pb_events.is_empty(), "watch-{name} holds changes");
    assert_eq!(pb_events, json_events, "watch-{name}");

    // Each frame's object is the object's own envelope; encoding the decoded JSON gives it.
    for (frame, (event_type, object)) in watch_frames(&pb).unwrap().into_iter().zip(events) {
        let parts = fields(frame);
        assert_eq!(parts[0], (1, event_type.as_bytes()));
        let raw_extension = fields(parts[1].1);
        let envelope = raw_extension[0].1;
        let api_version = object["apiVersion"].as_str().unwrap();
        let kind = object["kind"].as_str().unwrap();
        let encoded = encode_object(api_version, kind, &object).unwrap();
        assert_eq!(
            encoded, envelope,
            "the {event_type} object of watch-{name} encodes to other bytes"
        );
    }
}

#[test]
fn recorded_pod_watch_decodes_to_the_recorded_json_events() {
    check_watch("pods");
}

#[test]
fn recorded_endpoint_slice_watch_decodes_to_the_recorded_json_events() {
    check_watch("endpointslices");
}

#[test]
fn recorded_endpoints_watch_decodes_to_the_recorded_json_events() {
    check_watch("endpoints");
}
