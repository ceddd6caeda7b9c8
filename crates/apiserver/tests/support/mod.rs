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
