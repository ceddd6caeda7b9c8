use super::*;
use crate::resources::{find, namespaces};
use prost::Message as _;
use serde_json::json;

/// The protobuf body of `raw` in an envelope, as k8s-pb (prost) would write it for kubectl.
fn envelope_of(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [MAGIC, &unknown.encode_to_vec()].concat()
}

fn round_trip(api_version: &str, kind: &str, object: &Value) -> Value {
    let body = encode_object(api_version, kind, object).unwrap();
    decode_object(&body).unwrap()
}

#[test]
fn a_protobuf_namespace_from_kubectl_decodes_to_its_json() {
    let ns = k8s_pb::api::core::v1::Namespace {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("x".to_owned()),
            ..Default::default()
        }),
        spec: Some(Default::default()),
        status: Some(Default::default()),
    };
    let body = envelope_of("v1", "Namespace", ns.encode_to_vec());
    let json = decode_body(namespaces(), &body).unwrap();
    assert_eq!(
        json,
        json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "x"}, "spec": {}, "status": {}})
    );
}

#[test]
fn service_ports_keep_numeric_and_named_target_ports() {
    use k8s_pb::api::core::v1::{Service, ServicePort, ServiceSpec};
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    let svc = Service {
        spec: Some(ServiceSpec {
            r#type: Some("ClusterIP".to_owned()),
            selector: [("app".to_owned(), "s".to_owned())].into(),
            ports: vec![
                ServicePort {
                    name: Some("80-8080".to_owned()),
                    protocol: Some("TCP".to_owned()),
                    port: Some(80),
                    target_port: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(8080),
                        str_val: Some(String::new()),
                    }),
                    ..Default::default()
                },
                ServicePort {
                    port: Some(443),
                    target_port: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: Some("https".to_owned()),
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }),
        ..Default::default()
    };
    let services = find("", "v1", "services").unwrap();
    let body = envelope_of("v1", "Service", svc.encode_to_vec());
    assert_eq!(
        decode_body(services, &body).unwrap(),
        json!({"apiVersion": "v1", "kind": "Service",
            "spec": {"type": "ClusterIP", "selector": {"app": "s"}, "ports": [
            {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
            {"port": 443, "targetPort": "https"},
        ]}})
    );
}

#[test]
fn a_body_of_another_kind_or_garbage_is_refused() {
    let pods = find("", "v1", "pods").unwrap();
    let err = decode_body(namespaces(), &envelope_of("v1", "Pod", Vec::new())).unwrap_err();
    assert_eq!(err.code(), 400);
    assert!(decode_body(pods, &envelope_of("v1", "Pod", Vec::new())).is_ok());
    assert_eq!(decode_body(pods, b"k8s\0\xff\xff").unwrap_err().code(), 400);
    assert_eq!(decode_body(pods, b"{}").unwrap_err().code(), 400);
    assert!(payload(b"{\"kind\": \"Pod\"}").is_none());
}

#[test]
fn kinds_map_to_their_messages() {
    assert_eq!(message_name("v1", "Pod"), Some("k8s.io.api.core.v1.Pod"));
    assert_eq!(
        message_name("discovery.k8s.io/v1", "EndpointSliceList"),
        Some("k8s.io.api.discovery.v1.EndpointSliceList")
    );
    assert_eq!(
        message_name("v1", "Status"),
        Some("k8s.io.apimachinery.pkg.apis.meta.v1.Status")
    );
    assert_eq!(
        message_name("coordination.k8s.io/v1", "DeleteOptions"),
        Some("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions")
    );
    assert_eq!(message_name("example.com/v1", "Pod"), None, "custom group");
    assert_eq!(
        message_name("discovery.example.com/v1", "EndpointSlice"),
        None
    );
    assert_eq!(message_name("v1", "Widget"), None);
    for resource in crate::resources::RESOURCES {
        assert!(supports(resource), "{}", resource.qualified_name());
    }
}

#[test]
fn plain_fields_are_written_even_when_zero_and_read_back_as_go_prints_them() {
    // An Endpoints whose ports leave out name and protocol; ready stays false.
    let endpoints = json!({
        "metadata": {"name": "e", "namespace": "d"},
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
    });
    let raw = encode_message("k8s.io.api.core.v1.Endpoints", &endpoints).unwrap();
    // ObjectMeta: name "e", generateName "", namespace "d", selfLink "", uid "",
    // resourceVersion "", generation 0, then an empty creationTimestamp.
    let meta = b"\x0a\x01e\x12\x00\x1a\x01d\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00";
    assert!(raw.starts_with(&[&[0x0a, meta.len() as u8][..], meta].concat()));
    let back = decode_message("k8s.io.api.core.v1.Endpoints", &raw).unwrap();
    // The port's protocol and name are plain strings with omitempty: left out again; the
    // address's hostname is plain too.
    assert_eq!(back, endpoints);

    let status = json!({"name": "c", "ready": false, "restartCount": 0, "image": "", "imageID": "",
        "state": {}, "lastState": {}, "started": false});
    let raw = encode_message("k8s.io.api.core.v1.ContainerStatus", &status).unwrap();
    assert_eq!(
        decode_message("k8s.io.api.core.v1.ContainerStatus", &raw).unwrap(),
        status,
        "ready, restartCount, image and imageID have no omitempty; started is a pointer"
    );
    // Absent plain fields without omitempty read back as Go's zero values.
    let raw = encode_message("k8s.io.api.core.v1.ContainerStatus", &json!({"name": "c"})).unwrap();
    assert_eq!(
        decode_message("k8s.io.api.core.v1.ContainerStatus", &raw).unwrap(),
        json!({"name": "c", "ready": false, "restartCount": 0, "image": "", "imageID": ""})
    );
}

#[test]
fn pointer_fields_keep_zero_values_and_absence() {
    let slice = json!({
        "metadata": {"name": "s", "namespace": "d", "generation": 2},
        "addressType": "IPv4",
        "endpoints": [
            {"addresses": ["10.0.0.1"], "conditions": {"ready": false, "serving": true},
             "hostname": "", "nodeName": "n1"},
            {"addresses": ["10.0.0.2"], "conditions": {}},
        ],
        "ports": [{"name": "", "port": 80, "protocol": "TCP"}],
    });
    assert_eq!(
        round_trip("discovery.k8s.io/v1", "EndpointSlice", &slice),
        {
            let mut expected = slice.clone();
            expected["apiVersion"] = json!("discovery.k8s.io/v1");
            expected["kind"] = json!("EndpointSlice");
            expected
        }
    );
    // Nil slices without omitempty are null, as kube-apiserver writes them.
    let empty = json!({"metadata": {"name": "s"}, "addressType": "IPv4"});
    let back = round_trip("discovery.k8s.io/v1", "EndpointSlice", &empty);
    assert_eq!(back["endpoints"], Value::Null);
    assert!(back.as_object().unwrap().contains_key("endpoints"));
    assert_eq!(back["ports"], Value::Null);
}

#[test]
fn special_values_take_their_kubernetes_json_forms() {
    let pod = json!({
        "metadata": {"name": "p", "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"b": "2", "a": "1"},
            "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                "time": "2024-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}}]},
        "spec": {
            "containers": [{"name": "c", "image": "i",
                "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
                "livenessProbe": {"tcpSocket": {"port": 8080}}}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Mi"}}],
            "terminationGracePeriodSeconds": 30,
            "hostNetwork": true,
            "nodeSelector": {"zone": "a"},
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
            "lastProbeTime": null, "lastTransitionTime": "2024-01-02T03:04:06Z"}],
            "startTime": "2024-01-02T03:04:05Z"},
    });
    let back = round_trip("v1", "Pod", &pod);
    let mut expected = pod.clone();
    expected["apiVersion"] = json!("v1");
    expected["kind"] = json!("Pod");
    assert_eq!(back, expected);

    let event = json!({"metadata": {"name": "e"}, "eventTime": "2024-01-02T03:04:05.123456Z",
        "reportingController": "c", "reportingInstance": "i", "action": "a", "reason": "r",
        "regarding": {"kind": "Pod", "name": "p"}, "type": "Normal",
        "series": {"count": 2, "lastObservedTime": "2024-01-02T03:04:06.000001Z"}});
    let back = round_trip("events.k8s.io/v1", "Event", &event);
    assert_eq!(back["eventTime"], "2024-01-02T03:04:05.123456Z");
    assert_eq!(back["series"], event["series"]);
    assert_eq!(back["regarding"], event["regarding"]);
    assert!(
        back["deprecatedFirstTimestamp"].is_null(),
        "a plain Time left out reads back as null, as kube-apiserver prints it"
    );
}

#[test]
fn invalid_json_is_refused_with_the_path_to_the_value() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": "eighty"}]}]}});
    let err = encode_object("v1", "Pod", &pod).unwrap_err();
    assert_eq!(err.path(), "spec.containers[0].ports[0].containerPort");
    let err = encode_object("v1", "Pod", &json!({"metadata": {"labels": {"a": 1}}})).unwrap_err();
    assert_eq!(err.path(), "metadata.labels.a");
    let err = encode_object(
        "v1",
        "Pod",
        &json!({"spec": {"containers": [{"ports": [
        {"containerPort": 1u64 << 40}]}]}}),
    )
    .unwrap_err();
    assert!(err.message().contains("out of range"), "{err}");
    assert!(encode_object("v1", "Widget", &json!({})).is_err());
    assert!(encode_object("v1", "Pod", &json!([])).is_err());
}

#[test]
fn lists_and_watch_frames_carry_their_envelopes() {
    let items = [
        json!({"metadata": {"name": "a"}}),
        json!({"metadata": {"name": "b"}}),
    ];
    let body = encode_list(
        "coordination.k8s.io/v1",
        "Lease",
        &json!({"resourceVersion": "7", "continue": "x"}),
        &items,
    )
    .unwrap();
    let list = decode_object(&body).unwrap();
    assert_eq!(list["kind"], "LeaseList");
    assert_eq!(list["apiVersion"], "coordination.k8s.io/v1");
    assert_eq!(
        list["metadata"],
        json!({"resourceVersion": "7", "continue": "x"})
    );
    assert_eq!(list["items"][1]["metadata"]["name"], "b");
    assert!(list["items"][1].get("kind").is_none());

    let object = encode_object("coordination.k8s.io/v1", "Lease", &items[0]).unwrap();
    let stream = [
        watch_frame("ADDED", &object),
        watch_frame("DELETED", &object),
    ]
    .concat();
    let events = decode_watch_stream(&stream).unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].0, "DELETED");
    assert_eq!(events[1].1["kind"], "Lease");
    assert_eq!(events[1].1["metadata"]["name"], "a");
    assert!(decode_watch_stream(&stream[..stream.len() - 1]).is_err());
}

#[test]
fn map_keys_are_written_sorted_as_go_does() {
    let a = encode_message(
        "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        &json!({"labels": {"b": "2", "a": "1", "aa": ""}}),
    )
    .unwrap();
    let a_at = a.windows(3).position(|w| w == b"\x0a\x01a").unwrap();
    let aa_at = a.windows(3).position(|w| w == b"\x0a\x02a").unwrap();
    let b_at = a.windows(3).position(|w| w == b"\x0a\x01b").unwrap();
    assert!(a_at < aa_at && aa_at < b_at);
}

#[test]
fn int_or_string_and_quantities_encode_as_go_does() {
    let port = encode_message(
        "k8s.io.api.core.v1.ServicePort",
        &json!({"port": 80, "targetPort": 8080}),
    )
    .unwrap();
    // name "", protocol "", port 80, targetPort {type 0, intVal 8080, strVal ""}, nodePort 0;
    // appProtocol is a pointer and stays out.
    assert_eq!(
        port,
        b"\x0a\x00\x12\x00\x18\x50\x22\x07\x08\x00\x10\x90\x3f\x1a\x00\x28\x00"
    );
    let back = decode_message("k8s.io.api.core.v1.ServicePort", &port).unwrap();
    assert_eq!(back["targetPort"], 8080);
    let quantity = encode_message(
        "k8s.io.api.core.v1.ResourceRequirements",
        &json!({"requests": {"cpu": 1}}),
    )
    .unwrap();
    assert_eq!(
        decode_message("k8s.io.api.core.v1.ResourceRequirements", &quantity).unwrap(),
        json!({"requests": {"cpu": "1"}})
    );
}

#[test]
fn embedded_objects_nest_only_so_deep() {
    // A core v1 List whose one item is a List whose one item is a List...: each level is a
    // RawExtension holding the next envelope.
    let mut body = encode_object("v1", "List", &json!({"metadata": {}})).unwrap();
    for _ in 0..40 {
        let mut raw = Vec::new();
        wire::put_nested::<ProtobufError>(&mut raw, 2, |out| {
            wire::put_bytes(out, 1, &body);
            Ok(())
        })
        .unwrap();
        body = envelope("v1", "List", 0, |out| {
            out.extend_from_slice(&raw);
            Ok(())
        })
        .unwrap();
    }
    let err = decode_object(&body).unwrap_err();
    assert!(err.message().contains("nested"), "{err}");
    // Shallow nesting reads, and the count is back to zero afterwards.
    let inner = encode_object("v1", "List", &json!({"metadata": {}})).unwrap();
    let mut raw = Vec::new();
    wire::put_nested::<ProtobufError>(&mut raw, 2, |out| {
        wire::put_bytes(out, 1, &inner);
        Ok(())
    })
    .unwrap();
    let outer = envelope("v1", "List", 0, |out| {
        out.extend_from_slice(&raw);
        Ok(())
    })
    .unwrap();
    let list = decode_object(&outer).unwrap();
    assert_eq!(list["items"][0]["kind"], "List");
}

#[test]
fn delete_options_bodies_are_read_only_as_delete_options() {
    let options = encode_object(
        "v1",
        "DeleteOptions",
        &json!({"gracePeriodSeconds": 0,
        "preconditions": {"uid": "u"}, "propagationPolicy": "Orphan"}),
    )
    .unwrap();
    assert_eq!(
        decode_delete_options(&options).unwrap(),
        json!({"gracePeriodSeconds": 0, "preconditions": {"uid": "u"},
            "propagationPolicy": "Orphan"})
    );
    let pod = encode_object("v1", "Pod", &json!({"metadata": {"name": "p"}})).unwrap();
    assert_eq!(decode_delete_options(&pod).unwrap_err().code(), 400);
}
