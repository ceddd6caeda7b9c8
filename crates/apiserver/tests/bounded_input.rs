//! What the server does with hostile request bodies: oversized ones get kube-apiserver's 413,
//! deeply nested ones a 400 before any parser runs, and nothing panics.

mod support;

use apiserver::limits::{MAX_BODY_BYTES, MAX_NESTING};
use apiserver::{ApiServer, Config};
use serde_json::json;
use support::{send, within};

const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn body_over_3_mib_is_refused_with_413() {
    let server = ApiServer::new(Config::default());
    let pod = json!({
        "metadata": {"name": "big", "annotations": {"filler": "x".repeat(MAX_BODY_BYTES)}},
    });
    let (code, status) = within(
        "the create",
        send(&server, "POST", PODS, "application/json", pod.to_string()),
    )
    .await;
    assert_eq!(code, 413, "{status}");
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    assert_eq!(
        status["message"],
        "Request entity too large: limit is 3145728"
    );
}

#[tokio::test]
async fn body_nested_200000_levels_deep_is_refused_before_parsing() {
    let server = ApiServer::new(Config::default());
    let depth = 200_000;
    let json_body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let yaml_body = format!("metadata: {}{}", "[".repeat(depth), "]".repeat(depth));
    let started = std::time::Instant::now();
    let (code, status) = within(
        "the create",
        send(&server, "POST", PODS, "application/json", json_body),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        format!("the request body is nested deeper than {MAX_NESTING} levels (at line 1)")
    );
    let (code, status) = within(
        "the apply",
        send(
            &server,
            "PATCH",
            &format!("{PODS}/deep"),
            "application/apply-patch+yaml",
            yaml_body,
        ),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    println!(
        "two bodies nested {depth} deep refused in {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn body_nested_within_the_limit_is_parsed() {
    let server = ApiServer::new(Config::default());
    // Annotations hold strings only, so a nested value there is a decoding error (400 from the
    // typed check), not a nesting one: the point is that the text reached the parser.
    let nested = format!("{}1{}", "[".repeat(50), "]".repeat(50));
    let body = format!(r#"{{"metadata": {{"name": "p", "annotations": {{"a": {nested}}}}}}}"#);
    let (code, status) = send(&server, "POST", PODS, "application/json", body).await;
    assert_eq!(code, 400, "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(!message.contains("nested deeper"), "{message}");
}
