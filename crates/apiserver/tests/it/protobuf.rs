//! The server speaking protobuf over HTTP, as kube-apiserver does for clients that ask for it
//! (`Accept: application/vnd.kubernetes.protobuf, application/json`, client-go's default for
//! built-in kinds): lists, gets, watches, writes and errors.

/// The transcoder against a real kube-apiserver's recorded answers.
mod recordings;

use apiserver::protobuf::{self, decode_object, decode_watch_stream, encode_object};
use apiserver::{ApiServer, Config};
use serde_json::{json, Value};
use tower::ServiceExt;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// client-go's Accept header for built-in kinds.
const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf, application/json";

/// One answer: status code, Content-Type and body.
struct Answer {
    code: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        assert_eq!(self.content_type, "application/json", "a JSON answer");
        serde_json::from_slice(&self.body).unwrap()
    }

    fn protobuf(&self) -> Value {
        assert_eq!(self.content_type, PROTOBUF, "a protobuf answer");
        decode_object(&self.body).unwrap()
    }

    fn watch_events(&self) -> Vec<(String, Value)> {
        assert_eq!(self.content_type, protobuf::WATCH_MEDIA_TYPE);
        decode_watch_stream(&self.body).unwrap()
    }

    fn json_events(&self) -> Vec<(String, Value)> {
        assert_eq!(self.content_type, "application/json");
        serde_json::Deserializer::from_slice(&self.body)
            .into_iter::<Value>()
            .map(|e| {
                let e = e.unwrap();
                (e["type"].as_str().unwrap().to_owned(), e["object"].clone())
            })
            .collect()
    }
}

async fn request(
    server: &ApiServer,
    method: &str,
    path: &str,
    accept: &str,
    body: Option<(&str, Vec<u8>)>,
) -> Answer {
    let mut builder = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::ACCEPT, accept)
        .header(http::header::USER_AGENT, "protobuf-test/1.0");
    let body = match body {
        Some((content_type, bytes)) => {
            builder = builder.header(http::header::CONTENT_TYPE, content_type);
            axum::body::Body::from(bytes)
        }
        None => axum::body::Body::empty(),
    };
    let response = server
        .service()
        .oneshot(builder.body(body).unwrap())
        .await
        .unwrap();
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = testkit::within(
        "the response body",
        axum::body::to_bytes(response.into_body(), usize::MAX),
    )
    .await
    .unwrap()
    .to_vec();
    Answer {
        code,
        content_type,
        body,
    }
}

async fn get(server: &ApiServer, path: &str, accept: &str) -> Answer {
    request(server, "GET", path, accept, None).await
}

/// The collection path, the apiVersion and the kind of every kind the tests cover.
const KINDS: &[(&str, &str, &str)] = &[
    ("/api/v1/namespaces", "v1", "Namespace"),
    ("/api/v1/nodes", "v1", "Node"),
    ("/api/v1/pods", "v1", "Pod"),
    ("/api/v1/services", "v1", "Service"),
    ("/api/v1/endpoints", "v1", "Endpoints"),
    ("/api/v1/events", "v1", "Event"),
    (
        "/apis/discovery.k8s.io/v1/endpointslices",
        "discovery.k8s.io/v1",
        "EndpointSlice",
    ),
    (
        "/apis/coordination.k8s.io/v1/leases",
        "coordination.k8s.io/v1",
        "Lease",
    ),
    ("/apis/events.k8s.io/v1/events", "events.k8s.io/v1", "Event"),
];

/// Objects of every kind, with the fields that take special forms in protobuf: times,
/// micro-times, quantities, int-or-strings, inlined structs, maps, pointers set to zero.
fn objects() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team",
            "labels": {"tier": "b", "env": "a"}}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1",
                "labels": {"topology.kubernetes.io/zone": "z1"}},
            "spec": {"podCIDR": "10.1.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4", "memory": "16Gi"},
                "allocatable": {"cpu": "3500m", "memory": "15Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True",
                    "lastHeartbeatTime": "2024-01-01T00:00:00Z",
                    "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": "192.168.0.1"}],
                "nodeInfo": {"kubeletVersion": "v1.36.2", "machineID": "m", "systemUUID": "s",
                    "bootID": "b", "kernelVersion": "6.1", "osImage": "Debian",
                    "containerRuntimeVersion": "containerd://2.0", "kubeProxyVersion": "",
                    "operatingSystem": "linux", "architecture": "amd64"}}}),
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "team", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30,
                "containers": [{"name": "c", "image": "nginx",
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"},
                        "periodSeconds": 5},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}]},
            "status": {"phase": "Running", "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}],
                "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2024-01-01T00:00:00Z"}],
                "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0,
                    "image": "nginx", "imageID": "", "started": true,
                    "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]}}),
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-2", "namespace": "team", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http"},
                {"name": "alt", "port": 8443, "targetPort": 8443}]}}),
        json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "web", "namespace": "team"},
            "subsets": [{"addresses": [{"ip": "10.1.0.5", "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "name": "web-1", "namespace": "team"}}],
                "notReadyAddresses": [{"ip": "10.1.0.6"}],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}),
        json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "team"},
            "involvedObject": {"kind": "Service", "name": "web", "namespace": "team"},
            "type": "Normal", "reason": "Synced", "message": "hello", "count": 2,
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:01:00Z",
            "eventTime": "2024-01-01T00:00:00.250000Z",
            "source": {"component": "c"}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abcde", "namespace": "team",
                "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.1.0.5"], "conditions": {"ready": true, "serving": true,
                    "terminating": false}, "nodeName": "n1", "zone": "z1",
                    "targetRef": {"kind": "Pod", "name": "web-1", "namespace": "team"}},
                {"addresses": ["10.1.0.6"], "conditions": {"ready": false}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-empty", "namespace": "team",
                "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "endpoints": []}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "lock", "namespace": "team"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                "acquireTime": "2024-01-01T00:00:00.000000Z",
                "renewTime": "2024-01-01T00:00:10.123456Z", "leaseTransitions": 0}}),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "web.2", "namespace": "team"},
            "eventTime": "2024-01-01T00:00:00.000001Z", "reportingController": "c",
            "reportingInstance": "i", "action": "Sync", "type": "Normal", "reason": "Synced",
            "regarding": {"kind": "Service", "name": "web", "namespace": "team"},
            "note": "hello"}),
    ]
}

fn loaded() -> ApiServer {
    let server = ApiServer::new(Config::default());
    server.apply_objects(objects()).unwrap();
    server
}

/// An object as the JSON and protobuf answers can both say it: list items in protobuf carry
/// no apiVersion and kind (kube-apiserver's JSON lists leave them out too), and protobuf
/// cannot tell an empty string or list of a plain Go field from none (this server's JSON
/// writes `[]` where kube-apiserver writes `null`, and leaves out strings kube-apiserver
/// writes as `""`), so those are left out on both sides.
fn comparable(object: &Value) -> Value {
    fn prune(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(_, v)| {
                        !v.is_null()
                            && v.as_array().is_none_or(|a| !a.is_empty())
                            && v.as_str() != Some("")
                    })
                    .map(|(k, v)| (k.clone(), prune(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(prune).collect()),
            other => other.clone(),
        }
    }
    let mut object = prune(object);
    if let Some(map) = object.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    object
}

/// Where two JSON values differ, as `path: left != right` lines, for readable failures.
fn differences(left: &Value, right: &Value) -> Vec<String> {
    fn walk(left: Option<&Value>, right: Option<&Value>, path: String, out: &mut Vec<String>) {
        match (left, right) {
            (Some(Value::Object(l)), Some(Value::Object(r))) => {
                let keys: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
                for k in keys {
                    walk(l.get(k), r.get(k), format!("{path}.{k}"), out);
                }
            }
            (Some(Value::Array(l)), Some(Value::Array(r))) if l.len() == r.len() => {
                for (i, (l, r)) in l.iter().zip(r).enumerate() {
                    walk(Some(l), Some(r), format!("{path}[{i}]"), out);
                }
            }
            (l, r) if l != r => out.push(format!("{path}: {l:?} != {r:?}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(Some(left), Some(right), String::new(), &mut out);
    out
}

/// Asserts that two objects are equal, naming the fields that are not.
#[track_caller]
fn assert_same(left: &Value, right: &Value, what: &str) {
    let differences = differences(left, right);
    assert!(
        differences.is_empty(),
        "{what}:\n{}",
        differences.join("\n")
    );
}

#[tokio::test]
async fn lists_in_protobuf_hold_the_objects_of_the_json_lists() {
    let server = loaded();
    for (path, api_version, kind) in KINDS {
        let json = get(&server, path, "application/json").await.json();
        let answer = get(&server, path, CLIENT_GO).await;
        assert_eq!(answer.code, 200, "{path}");
        let pb = answer.protobuf();
        assert_eq!(pb["kind"], format!("{kind}List"), "{path}");
        assert_eq!(pb["apiVersion"], *api_version);
        assert_eq!(pb["metadata"], json["metadata"], "{path}");
        let (pb_items, json_items) = (
            pb["items"].as_array().unwrap(),
            json["items"].as_array().unwrap(),
        );
        assert!(!json_items.is_empty(), "{path} lists something");
        assert_eq!(pb_items.len(), json_items.len(), "{path}");
        for (pb_item, json_item) in pb_items.iter().zip(json_items) {
            assert_same(&comparable(pb_item), &comparable(json_item), path);
        }
    }
}

#[tokio::test]
async fn protobuf_alone_is_enough_for_built_in_kinds() {
    let server = loaded();
    for (path, _, _) in KINDS {
        let answer = get(&server, path, PROTOBUF).await;
        assert_eq!(answer.code, 200, "{path}");
        answer.protobuf();
    }
    // And JSON stays JSON, also when listed first or preferred by q-value.
    let answer = get(
        &server,
        "/api/v1/pods",
        "application/json, application/vnd.kubernetes.protobuf",
    )
    .await;
    answer.json();
    let answer = get(
        &server,
        "/api/v1/pods",
        "application/vnd.kubernetes.protobuf;q=0.5, application/json",
    )
    .await;
    answer.json();
}

#[tokio::test]
async fn get_answers_one_object_in_protobuf() {
    let server = loaded();
    for path in [
        "/api/v1/namespaces/team/pods/web-1",
        "/api/v1/nodes/n1",
        "/apis/coordination.k8s.io/v1/namespaces/team/leases/lock",
        "/apis/events.k8s.io/v1/namespaces/team/events/web.2",
    ] {
        let json = get(&server, path, "application/json").await.json();
        let pb = get(&server, path, CLIENT_GO).await.protobuf();
        assert_eq!(pb, json, "{path}");
    }
}

#[tokio::test]
async fn a_paged_list_in_protobuf_follows_continue_tokens() {
    let server = loaded();
    let whole = get(&server, "/api/v1/pods", "application/json")
        .await
        .json();
    let mut names = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let path = format!("/api/v1/pods?limit=1&continue={token}");
        let page = get(&server, &path, CLIENT_GO).await.protobuf();
        pages += 1;
        assert_eq!(
            page["metadata"]["resourceVersion"],
            whole["metadata"]["resourceVersion"]
        );
        for item in page["items"].as_array().unwrap() {
            names.push(item["metadata"]["name"].clone());
        }
        match page["metadata"]["continue"].as_str() {
            Some(next) => token = next.to_owned(),
            None => break,
        }
        assert!(pages < 10, "the pages end");
    }
    let expected: Vec<Value> = whole["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, expected);
    assert_eq!(pages, expected.len());
}

/// Adds, changes and removes one object of each kind after `rv`, so that a watch from `rv`
/// replays every type of event.
async fn churn(server: &ApiServer) {
    let changes = [
        (
            "PUT",
            "/api/v1/namespaces/team/pods/web-2",
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-2", "namespace": "team", "labels": {"app": "web", "v": "2"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        ),
        ("DELETE", "/api/v1/namespaces/team/pods/web-1", json!({})),
        (
            "PATCH",
            "/apis/coordination.k8s.io/v1/namespaces/team/leases/lock",
            json!({"spec": {"renewTime": "2024-01-01T00:00:20.000002Z", "leaseTransitions": 1}}),
        ),
        (
            "PATCH",
            "/apis/discovery.k8s.io/v1/namespaces/team/endpointslices/web-abcde",
            json!({"endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": false}}]}),
        ),
        (
            "PATCH",
            "/api/v1/nodes/n1",
            json!({"metadata": {"labels": {"x": "y"}}}),
        ),
        (
            "PATCH",
            "/api/v1/namespaces/team",
            json!({"metadata": {"annotations": {"a": "b"}}}),
        ),
        ("DELETE", "/api/v1/namespaces/team/services/web", json!({})),
        ("DELETE", "/api/v1/namespaces/team/endpoints/web", json!({})),
        (
            "PATCH",
            "/api/v1/namespaces/team/events/web.1",
            json!({"count": 3}),
        ),
        (
            "DELETE",
            "/apis/events.k8s.io/v1/namespaces/team/events/web.2",
            json!({}),
        ),
    ];
    for (method, path, body) in changes {
        let content_type = if method == "PATCH" {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        let answer = request(
            server,
            method,
            path,
            "application/json",
            Some((content_type, body.to_string().into_bytes())),
        )
        .await;
        assert!(
            answer.code < 300,
            "{method} {path}: {}",
            String::from_utf8_lossy(&answer.body)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn watches_in_protobuf_send_the_events_of_json_watches() {
    let server = ApiServer::new(Config::default());
    let from = server.resource_version();
    server.apply_objects(objects()).unwrap();
    churn(&server).await;
    for (path, _, _) in KINDS {
        // Replays the history since `from` and ends after the timeout (paused time skips it).
        let watch = format!("{path}?watch=1&resourceVersion={from}&timeoutSeconds=5");
        let json = get(&server, &watch, "application/json").await.json_events();
        let pb = get(&server, &watch, CLIENT_GO).await.watch_events();
        assert!(!json.is_empty(), "{path} has events");
        assert_eq!(pb.len(), json.len(), "{path}");
        for ((pb_type, pb_object), (json_type, json_object)) in pb.iter().zip(&json) {
            assert_eq!(pb_type, json_type, "{path}");
            assert_eq!(pb_object["kind"], json_object["kind"], "{path}");
            assert_eq!(pb_object["apiVersion"], json_object["apiVersion"], "{path}");
            assert_same(&comparable(pb_object), &comparable(json_object), path);
        }
        let types: Vec<&str> = pb.iter().map(|(t, _)| t.as_str()).collect();
        assert!(types.contains(&"ADDED"), "{path}: {types:?}");
        assert!(
            types.contains(&"MODIFIED") || types.contains(&"DELETED"),
            "{path}: {types:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_in_protobuf_ends_its_initial_events_with_a_bookmark() {
    let server = loaded();
    let path = "/api/v1/namespaces/team/pods?watch=1&sendInitialEvents=true\
        &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5";
    let events = get(&server, path, PROTOBUF).await.watch_events();
    let names: Vec<(&str, &str)> = events
        .iter()
        .map(|(t, o)| {
            (
                t.as_str(),
                o["metadata"]["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        names[..3],
        [("ADDED", "web-1"), ("ADDED", "web-2"), ("BOOKMARK", "")]
    );
    let bookmark = &events[2].1;
    assert_eq!(bookmark["kind"], "Pod");
    assert_eq!(bookmark["apiVersion"], "v1");
    assert_eq!(
        bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(
        bookmark["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
}

#[tokio::test]
async fn a_watch_error_in_protobuf_is_a_status_event() {
    let server = loaded();
    let too_new = server.resource_version() + 100;
    let path = format!("/api/v1/pods?watch=1&resourceVersion={too_new}");
    let events = get(&server, &path, CLIENT_GO).await.watch_events();
    assert_eq!(events.len(), 1);
    let (event_type, status) = &events[0];
    assert_eq!(event_type, "ERROR");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["apiVersion"], "v1");
    assert_eq!(status["code"], 504);
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[tokio::test]
async fn protobuf_alone_for_a_table_or_a_document_is_not_acceptable() {
    let server = loaded();
    let table = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io";
    for (path, accept) in [
        ("/api/v1/pods", table),
        ("/api/v1/namespaces/team/pods/web-1", table),
        ("/api/v1", PROTOBUF),
        ("/apis/discovery.k8s.io/v1", PROTOBUF),
        ("/openapi/v3", PROTOBUF),
        ("/openapi/v2", PROTOBUF),
    ] {
        let answer = get(&server, path, accept).await;
        assert_eq!(answer.code, 406, "{path}");
        let status = answer.json();
        assert_eq!(status["reason"], "NotAcceptable", "{path}");
    }
    // A Table is JSON whatever else the client accepts; documents fall back to JSON.
    let kubectl =
        "application/json;as=Table;v=v1;g=meta.k8s.io, application/vnd.kubernetes.protobuf";
    let answer = get(&server, "/api/v1/pods", kubectl).await.json();
    assert_eq!(answer["kind"], "Table");
    for path in ["/api/v1", "/apis", "/openapi/v3"] {
        let answer = get(&server, path, CLIENT_GO).await;
        assert_eq!(answer.code, 200, "{path}");
        answer.json();
    }
}

#[tokio::test]
async fn a_missing_object_with_protobuf_negotiated_is_a_protobuf_status() {
    let server = loaded();
    let answer = get(&server, "/api/v1/namespaces/team/pods/nope", CLIENT_GO).await;
    assert_eq!(answer.code, 404);
    let status = answer.protobuf();
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods \"nope\" not found", "reason": "NotFound",
            "details": {"name": "nope", "kind": "pods"}, "code": 404})
    );
    let answer = get(&server, "/api/v1/widgets", PROTOBUF).await;
    assert_eq!(answer.code, 404);
    assert_eq!(answer.protobuf()["reason"], "NotFound");
    // The same error for a JSON client is JSON.
    let answer = get(
        &server,
        "/api/v1/namespaces/team/pods/nope",
        "application/json",
    )
    .await;
    assert_eq!(answer.json()["code"], 404);
}

/// Two servers that stamp the same uids and times, so that what each stores can be compared.
fn twins() -> (ApiServer, ApiServer) {
    let config = Config {
        fixed_time: Some("2024-01-01T00:00:00Z".parse().unwrap()),
        ..Config::default()
    };
    let twin = |config: Config| {
        let server = ApiServer::new(config);
        server
            .apply_objects(vec![json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team"}})])
            .unwrap();
        server
    };
    (twin(config.clone()), twin(config))
}

/// Writes `object` to `json_server` as JSON and to `pb_server` as protobuf (asking for a
/// protobuf answer), and checks that both stored the same object and that the protobuf
/// answer says it.
async fn write_both(
    (json_server, pb_server): (&ApiServer, &ApiServer),
    method: &str,
    path: &str,
    object: &Value,
) -> Value {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let json_body = ("application/json", object.to_string().into_bytes());
    let pb_body = (PROTOBUF, encode_object(api_version, kind, object).unwrap());
    let json_answer = request(
        json_server,
        method,
        path,
        "application/json",
        Some(json_body),
    )
    .await;
    let pb_answer = request(pb_server, method, path, CLIENT_GO, Some(pb_body)).await;
    assert_eq!(pb_answer.code, json_answer.code, "{method} {path}");
    assert!(
        json_answer.code < 300,
        "{}",
        String::from_utf8_lossy(&json_answer.body)
    );
    let answered = pb_answer.protobuf();
    let name = object["metadata"]["name"].as_str().unwrap();
    let item = format!("{}/{name}", path.trim_end_matches(&format!("/{name}")));
    let stored_json = get(json_server, &item, "application/json").await.json();
    let stored_pb = get(pb_server, &item, "application/json").await.json();
    assert_eq!(
        stored_pb, stored_json,
        "{method} {path}: the stored objects"
    );
    assert_eq!(answered, stored_pb, "{method} {path}: the protobuf answer");
    stored_pb
}

#[tokio::test]
async fn protobuf_creates_and_updates_of_slices_and_leases_store_what_json_would() {
    let (a, b) = twins();
    let servers = (&a, &b);
    let slices = "/apis/discovery.k8s.io/v1/namespaces/team/endpointslices";
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abcde", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": true, "serving": true,
            "terminating": false}, "nodeName": "n1", "zone": "z1"},
            {"addresses": ["10.1.0.6"], "conditions": {"ready": false}, "hostname": "h"}],
        "ports": [{"name": "", "port": 8080, "protocol": "TCP"}]});
    let stored = write_both(servers, "POST", slices, &slice).await;
    assert_eq!(stored["endpoints"][1]["conditions"]["ready"], false);
    assert_eq!(stored["endpoints"][1]["hostname"], "h");
    let mut update = stored.clone();
    update["endpoints"][1]["conditions"]["ready"] = json!(true);
    update["ports"][0]["port"] = json!(9090);
    let updated = write_both(servers, "PUT", &format!("{slices}/web-abcde"), &update).await;
    assert_eq!(updated["ports"][0]["port"], 9090);
    assert_eq!(updated["metadata"]["generation"], 2);

    let leases = "/apis/coordination.k8s.io/v1/namespaces/team/leases";
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lock"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "acquireTime": "2024-01-01T00:00:00.000000Z",
            "renewTime": "2024-01-01T00:00:10.123456Z"}});
    let stored = write_both(servers, "POST", leases, &lease).await;
    assert_eq!(stored["spec"]["renewTime"], "2024-01-01T00:00:10.123456Z");
    assert_eq!(stored["spec"]["leaseTransitions"], 0);
    let mut renew = stored.clone();
    renew["spec"]["renewTime"] = json!("2024-01-01T00:00:20.000001Z");
    let renewed = write_both(servers, "PUT", &format!("{leases}/lock"), &renew).await;
    assert_eq!(renewed["spec"]["renewTime"], "2024-01-01T00:00:20.000001Z");
    // A lease that does not exist yet is created by PUT, in protobuf too.
    let mut other = lease.clone();
    other["metadata"]["name"] = json!("other");
    let created = write_both(servers, "PUT", &format!("{leases}/other"), &other).await;
    assert_eq!(created["spec"]["holderIdentity"], "me");
}

#[tokio::test]
async fn patch_and_delete_answer_in_protobuf() {
    let server = loaded();
    let path = "/api/v1/namespaces/team/pods/web-2";
    let patch = json!({"metadata": {"labels": {"patched": "yes"}}}).to_string();
    let answer = request(
        &server,
        "PATCH",
        path,
        CLIENT_GO,
        Some(("application/merge-patch+json", patch.into_bytes())),
    )
    .await;
    assert_eq!(answer.code, 200);
    let patched = answer.protobuf();
    assert_eq!(patched["metadata"]["labels"]["patched"], "yes");
    assert_same(
        &patched,
        &get(&server, path, "application/json").await.json(),
        path,
    );

    // DeleteOptions sent as protobuf, as client-go does: a stale uid precondition conflicts.
    let options = |uid: &str| {
        let options = json!({"preconditions": {"uid": uid}});
        (
            PROTOBUF,
            encode_object("v1", "DeleteOptions", &options).unwrap(),
        )
    };
    let answer = request(&server, "DELETE", path, CLIENT_GO, Some(options("stale"))).await;
    assert_eq!(answer.code, 409);
    assert_eq!(answer.protobuf()["reason"], "Conflict");
    let uid = patched["metadata"]["uid"].as_str().unwrap();
    let answer = request(&server, "DELETE", path, CLIENT_GO, Some(options(uid))).await;
    assert_eq!(answer.code, 200);
    assert_eq!(answer.protobuf()["metadata"]["name"], "web-2");

    let answer = request(
        &server,
        "DELETE",
        "/apis/discovery.k8s.io/v1/namespaces/team/endpointslices",
        CLIENT_GO,
        None,
    )
    .await;
    let deleted = answer.protobuf();
    assert_eq!(deleted["kind"], "EndpointSliceList");
    assert_eq!(deleted["items"].as_array().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_request_log_records_the_encoding_of_each_answer() {
    let server = loaded();
    server.record_requests(true);
    get(&server, "/api/v1/pods", CLIENT_GO).await;
    get(&server, "/api/v1/pods", "application/json").await;
    get(&server, "/api/v1/pods?watch=1&timeoutSeconds=1", CLIENT_GO).await;
    get(&server, "/api/v1/pods/nope", PROTOBUF).await;
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "new"}, "spec": {"holderIdentity": "me"}});
    let body = encode_object("coordination.k8s.io/v1", "Lease", &lease).unwrap();
    request(
        &server,
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/team/leases",
        CLIENT_GO,
        Some((PROTOBUF, body)),
    )
    .await;
    let log = server.request_log();
    let seen: Vec<(&str, Option<&str>)> = log
        .iter()
        .map(|r| (r.verb.as_str(), r.content_type.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("list", Some(PROTOBUF)),
            ("list", Some("application/json")),
            ("watch", Some(protobuf::WATCH_MEDIA_TYPE)),
            ("create", Some(PROTOBUF)),
        ],
        "the 404 of a path that names no resource is not a request on a resource"
    );
    // A write answered in protobuf keeps its object in the log as JSON all the same.
    let created = log[3].parsed_object().unwrap();
    assert_eq!(created["spec"]["holderIdentity"], "me");
    assert_eq!(log[3].name.as_deref(), Some("new"));
}
