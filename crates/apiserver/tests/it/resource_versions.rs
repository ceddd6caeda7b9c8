//! resourceVersion semantics a client relies on to notice that a server lost its state or
//! compacted its history: a list or watch from a version the server has not reached is
//! refused with kube-apiserver's "Too large resource version" (504 Timeout, cause
//! `ResourceVersionTooLarge`), and one from before the kept history gets a 410.

use apiserver::{ApiServer, Config};
use futures::StreamExt;
use serde_json::{json, Value};
use testkit::server::send;
use testkit::server::send_json;
use testkit::within;

const PODS: &str = "/api/v1/namespaces/default/pods";

async fn server_with_a_pod() -> ApiServer {
    let server = ApiServer::new(Config::default());
    let pod = json!({"metadata": {"name": "web-1"}});
    let (code, _) = send_json(&server, "POST", PODS, &pod).await;
    assert_eq!(code, 201);
    server
}

/// The events of a watch that ends by itself, one JSON value per line.
async fn watch_events(server: &ApiServer, query: &str) -> (u16, Vec<Value>) {
    use tower::ServiceExt;
    let request = http::Request::get(format!("{PODS}?watch=1&{query}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let response = server.service().oneshot(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = within(
        "the watch to end",
        axum::body::to_bytes(response.into_body(), usize::MAX),
    )
    .await
    .unwrap();
    let events = bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    (code, events)
}

fn assert_too_large(status: &Value, requested: u64, current: u64) {
    assert_eq!(status["code"], 504, "{status}");
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(
        status["message"],
        format!("Timeout: Too large resource version: {requested}, current: {current}")
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Too large resource version"
    );
}

#[tokio::test]
async fn watch_from_a_resource_version_the_server_has_not_reached_gets_a_too_large_error() {
    let server = server_with_a_pod().await;
    let current = server.resource_version();
    let requested = current + 100;
    let (code, events) = watch_events(&server, &format!("resourceVersion={requested}")).await;
    // Like kube-apiserver, the watch itself is accepted and its only event is the error.
    assert_eq!(code, 200);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_too_large(&events[0]["object"], requested, current);
}

#[tokio::test]
async fn list_from_a_resource_version_the_server_has_not_reached_is_refused() {
    let server = server_with_a_pod().await;
    let current = server.resource_version();
    let requested = current + 1;
    let path = format!("{PODS}?resourceVersion={requested}&resourceVersionMatch=NotOlderThan");
    let (code, status) = send_json(&server, "GET", &path, &Value::Null).await;
    assert_eq!(code, 504);
    assert_too_large(&status, requested, current);
    // The current version itself, and "any" (0), are fine.
    for rv in [current.to_string(), "0".to_owned()] {
        let path = format!("{PODS}?resourceVersion={rv}");
        let (code, list) = send_json(&server, "GET", &path, &Value::Null).await;
        assert_eq!(code, 200, "{list}");
    }
}

#[tokio::test]
async fn exact_list_from_a_compacted_resource_version_is_gone() {
    let server = server_with_a_pod().await;
    let before = server.resource_version();
    let pod = json!({"metadata": {"name": "web-2"}});
    send_json(&server, "POST", PODS, &pod).await;
    server.compact_history();
    let path = format!("{PODS}?resourceVersion={before}&resourceVersionMatch=Exact");
    let (code, status) = send_json(&server, "GET", &path, &Value::Null).await;
    assert_eq!(code, 410, "{status}");
    assert_eq!(status["reason"], "Expired");
}

#[tokio::test]
async fn watch_with_the_largest_timeout_still_streams() {
    use tower::ServiceExt;
    let server = server_with_a_pod().await;
    // i64::MAX seconds cannot be added to any clock reading; the watch must treat it as "no
    // deadline" instead of panicking before its first event.
    let request = http::Request::get(format!("{PODS}?watch=1&timeoutSeconds=9223372036854775807"))
        .body(axum::body::Body::empty())
        .unwrap();
    let response = server.service().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body().into_data_stream();
    let first = within("the first event", body.next()).await;
    let first = first.expect("the watch ended without an event").unwrap();
    let event: Value = serde_json::from_slice(first.trim_ascii_end()).unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "web-1");
}

#[tokio::test]
async fn watch_with_a_timeout_that_is_not_a_number_is_a_bad_request() {
    let server = server_with_a_pod().await;
    let path = format!("{PODS}?watch=1&timeoutSeconds=-1");
    let (code, status) = send(&server, "GET", &path, "application/json", "").await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
}
