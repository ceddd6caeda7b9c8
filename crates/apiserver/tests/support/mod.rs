//! Shared pieces of the kube-client tests; each test starts its own server with these.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use apiserver::{ApiServer, Config};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use serde_json::json;
use std::future::Future;
use std::time::Duration;

/// A server with the default config and an in-process client for it.
pub fn start() -> (ApiServer, Client) {
    start_with(Config::default())
}

/// A server with `config` and an in-process client for it.
pub fn start_with(config: Config) -> (ApiServer, Client) {
    let server = ApiServer::new(config);
    let client = Client::new(server.service(), "default");
    (server, client)
}

/// Fails a test that hangs instead of letting it run forever; never a timing assertion.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(20), fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// A pod labelled `app=web` with one container exposing port 80.
pub fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]},
    }))
    .unwrap()
}

/// The Status of an API error; fails the test on any other error.
pub fn api_status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Sends one raw request to the server's router and returns the status code and the JSON
/// body (`Null` when the body is not JSON). For requests a typed client cannot make, such as
/// a PUT of `{"metadata": null}`.
pub async fn send(
    server: &ApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: impl Into<axum::body::Body>,
) -> (u16, serde_json::Value) {
    use tower::ServiceExt;
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(body.into())
        .unwrap();
    let response = server.service().oneshot(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (code, serde_json::from_slice(&bytes).unwrap_or_default())
}

/// [`send`] with a JSON body.
pub async fn send_json(
    server: &ApiServer,
    method: &str,
    path: &str,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    send(server, method, path, content_type, body.to_string()).await
}
