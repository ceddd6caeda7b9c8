//! The embedded API server on its own: a server with a client, raw requests a typed client
//! cannot make, and the Status of an API error.

use apiserver::{ApiServer, Config};
use kube::Client;

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
        .expect("a valid request");
    let response = server
        .service()
        .oneshot(request)
        .await
        .expect("the router answers");
    let code = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a readable body");
    (code, serde_json::from_slice(&bytes).unwrap_or_default())
}

/// [`send`] with a JSON body (a merge patch for `PATCH`).
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
