//! Authentication and authorization calls through kube's client: TokenReview and
//! SubjectAccessReview, as a component delegating its own authentication and authorization
//! sends them, and the TokenRequests whose ServiceAccount tokens authenticate requests, as
//! controllers run with `--use-service-account-credentials` send them.

use apiserver::{
    ApiServer, Config, NonResourceGrant, RequestRecord, Reviews, TokenUser, API_AUDIENCE,
};
use k8s_openapi::api::authentication::v1::{
    TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec,
};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use serde_json::{json, Value};
use std::time::Duration;
use testkit::server::api_status;
use testkit::server::send_json;
use tower::ServiceExt;

/// A server recording requests, with a token and a grant for `prometheus` to review.
fn config() -> Config {
    Config {
        record_requests: true,
        reviews: Reviews::default()
            .with_token("t-allowed", TokenUser::new("prometheus", &["monitoring"]))
            .with_grant(NonResourceGrant::user_get("prometheus", &["/metrics"])),
        ..Config::default()
    }
}

/// A server with [`config`] and an in-process client for it.
fn start() -> (ApiServer, Client) {
    testkit::server::start_with(config())
}

/// [`start`], with the `endpoint-controller` ServiceAccount created.
async fn start_with_account() -> (ApiServer, Client) {
    let (server, client) = start();
    create_account(&client).await;
    (server, client)
}

async fn token_review(client: &Client, token: &str) -> TokenReview {
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_owned()),
            ..TokenReviewSpec::default()
        },
        ..TokenReview::default()
    };
    Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap()
}

async fn may_get(client: &Client, user: &str, path: &str) -> bool {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_owned()),
                verb: Some("get".to_owned()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    answer.status.unwrap().allowed
}

#[tokio::test]
async fn token_reviews_answer_from_the_configured_tokens() {
    let (_server, client) = start();
    let known = token_review(&client, "t-allowed").await.status.unwrap();
    assert_eq!(known.authenticated, Some(true));
    assert_eq!(known.user.unwrap().username.as_deref(), Some("prometheus"));
    let unknown = token_review(&client, "nope").await.status.unwrap();
    assert_eq!(unknown.authenticated, Some(false));
}

#[tokio::test]
async fn subject_access_reviews_answer_from_the_configured_grants() {
    let (server, client) = start();
    assert!(may_get(&client, "prometheus", "/metrics").await);
    assert!(!may_get(&client, "prometheus", "/debug").await);
    assert!(!may_get(&client, "someone", "/metrics").await);

    server.set_reviews(
        Reviews::default().with_grant(NonResourceGrant::user_get("someone", &["/metrics"])),
    );
    assert!(may_get(&client, "someone", "/metrics").await);
    assert!(!may_get(&client, "prometheus", "/metrics").await);
}

#[tokio::test]
async fn reviews_are_counted_and_recorded_as_cluster_scoped_creates() {
    let (server, client) = start();
    token_review(&client, "t-allowed").await;
    may_get(&client, "prometheus", "/metrics").await;
    let log: Vec<_> = server
        .request_log()
        .into_iter()
        .map(|r| (r.verb, r.group, r.resource, r.namespace, r.code))
        .collect();
    assert_eq!(
        log,
        [
            (
                "create".to_owned(),
                "authentication.k8s.io".to_owned(),
                "tokenreviews".to_owned(),
                None,
                201
            ),
            (
                "create".to_owned(),
                "authorization.k8s.io".to_owned(),
                "subjectaccessreviews".to_owned(),
                None,
                201
            ),
        ]
    );
    let counts = server.request_counts();
    assert_eq!(
        counts.get(&("create".to_owned(), "tokenreviews".to_owned())),
        Some(&1)
    );
}

#[tokio::test]
async fn discovery_lists_the_review_resources_as_create_only() {
    let (_server, client) = start();
    let discovery = kube::discovery::Discovery::new(client).run().await.unwrap();
    for (group, plural) in [
        ("authentication.k8s.io", "tokenreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
    ] {
        let group = discovery
            .groups()
            .find(|g| g.name() == group)
            .unwrap_or_else(|| panic!("{group} is discovered"));
        let (_, capabilities) = group
            .recommended_resources()
            .into_iter()
            .find(|(r, _)| r.plural == plural)
            .unwrap_or_else(|| panic!("{plural} is discovered"));
        assert_eq!(capabilities.scope, kube::discovery::Scope::Cluster);
        assert_eq!(capabilities.operations, ["create"]);
    }
}

#[tokio::test]
async fn a_review_that_is_not_a_post_is_refused() {
    use tower::ServiceExt;
    let response = ApiServer::new(config())
        .service()
        .oneshot(
            http::Request::get("/apis/authentication.k8s.io/v1/tokenreviews")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), http::StatusCode::METHOD_NOT_ALLOWED);
}

const NAMESPACE: &str = "kube-system";
const ACCOUNT: &str = "endpoint-controller";
const USER: &str = "system:serviceaccount:kube-system:endpoint-controller";
const TOKEN_PATH: &str = "/api/v1/namespaces/kube-system/serviceaccounts/endpoint-controller/token";

fn accounts(client: &Client) -> Api<ServiceAccount> {
    Api::namespaced(client.clone(), NAMESPACE)
}

async fn create_account(client: &Client) -> ServiceAccount {
    let account = serde_json::from_value(json!({"metadata": {"name": ACCOUNT}})).unwrap();
    accounts(client)
        .create(&PostParams::default(), &account)
        .await
        .unwrap()
}

/// A token for `endpoint-controller`, asked for `seconds` (the server's default when `None`).
async fn request_token(client: &Client, seconds: Option<i64>) -> Result<TokenRequest, kube::Error> {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: seconds,
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    accounts(client)
        .create_token_request(ACCOUNT, &PostParams::default(), &request)
        .await
}

async fn issued_token(client: &Client) -> String {
    request_token(client, None)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// An in-process client whose requests carry `Authorization: Bearer <token>`.
fn client_with_token(server: &ApiServer, token: &str) -> Client {
    let value = http::HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    let service =
        server
            .service()
            .map_request(move |mut request: http::Request<kube::client::Body>| {
                request
                    .headers_mut()
                    .insert(http::header::AUTHORIZATION, value.clone());
                request
            });
    Client::new(service, "default")
}

/// The code and JSON body of a GET of `path` with `token` as bearer token.
async fn get_with_token(server: &ApiServer, path: &str, token: &str) -> (u16, Value) {
    let request = http::Request::get(path)
        .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let response = server.service().oneshot(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (code, serde_json::from_slice(&bytes).unwrap_or_default())
}

async fn list_pods(client: &Client) -> Result<Vec<Pod>, kube::Error> {
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    Ok(pods.list(&ListParams::default()).await?.items)
}

/// kube-apiserver's answer to a request whose credentials do not authenticate.
fn unauthorized() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
}

#[tokio::test]
async fn a_token_request_is_answered_with_a_token_for_the_service_account() {
    let (server, client) = start();
    let account = create_account(&client).await;
    let (code, answer) = send_json(&server, "POST", TOKEN_PATH, &json!({"spec": {}})).await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["metadata"]["name"], ACCOUNT);
    assert_eq!(answer["metadata"]["namespace"], NAMESPACE);
    assert_eq!(answer["metadata"]["uid"], json!(account.metadata.uid));
    assert_eq!(answer["spec"]["audiences"], json!([API_AUDIENCE]));
    assert_eq!(
        answer["spec"]["expirationSeconds"], 3600,
        "the default lifetime"
    );
    let token = answer["status"]["token"].as_str().unwrap();
    assert!(token.len() >= 32, "{token}");
    let time = |v: &Value| {
        v.as_str()
            .unwrap()
            .parse::<k8s_openapi::jiff::Timestamp>()
            .unwrap()
    };
    let lifetime = time(&answer["status"]["expirationTimestamp"])
        .duration_since(time(&answer["metadata"]["creationTimestamp"]));
    assert_eq!(lifetime.as_secs(), 3600);

    let again = request_token(&client, Some(7200)).await.unwrap();
    assert_eq!(again.spec.expiration_seconds, Some(7200));
    assert_ne!(again.status.unwrap().token, token, "every token is new");
}

#[tokio::test]
async fn a_token_request_for_a_missing_service_account_is_not_found() {
    let (_server, client) = start();
    let status = api_status(request_token(&client, None).await.unwrap_err());
    assert_eq!(status.code, 404);
    assert_eq!(status.reason, "NotFound");
    assert_eq!(
        status.message,
        "serviceaccounts \"endpoint-controller\" not found"
    );
}

#[tokio::test]
async fn a_token_request_for_less_than_ten_minutes_or_more_than_2_32_seconds_is_invalid() {
    let (_server, client) = start_with_account().await;
    let status = api_status(request_token(&client, Some(599)).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: \
         Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let status = api_status(
        request_token(&client, Some((1 << 32) + 1))
            .await
            .unwrap_err(),
    );
    assert!(
        status
            .message
            .ends_with("may not specify a duration larger than 2^32 seconds"),
        "{}",
        status.message
    );
    assert_eq!(
        request_token(&client, Some(600))
            .await
            .unwrap()
            .spec
            .expiration_seconds,
        Some(600)
    );
}

#[tokio::test]
async fn requests_with_an_issued_token_are_recorded_as_its_service_account() {
    let (server, client) = start_with_account().await;
    let token = issued_token(&client).await;
    server.clear_request_log();

    list_pods(&client_with_token(&server, &token))
        .await
        .unwrap();
    list_pods(&client).await.unwrap();
    let log: Vec<_> = server
        .request_log()
        .into_iter()
        .map(|r| (r.verb, r.resource, r.code, r.user))
        .collect();
    let list = |user: Option<&str>| {
        (
            "list".to_owned(),
            "pods".to_owned(),
            200,
            user.map(str::to_owned),
        )
    };
    assert_eq!(log, [list(Some(USER)), list(None)]);
}

#[tokio::test]
async fn a_token_request_is_recorded_as_a_create_of_the_token_subresource() {
    let (server, client) = start_with_account().await;
    server.clear_request_log();
    issued_token(&client).await;
    let log = server.request_log();
    let RequestRecord {
        verb,
        resource,
        subresource,
        namespace,
        name,
        code,
        object,
        ..
    } = &log[0];
    assert_eq!(
        (
            verb.as_str(),
            resource.as_str(),
            subresource.as_deref(),
            namespace.as_deref(),
            name.as_deref(),
            *code,
        ),
        (
            "create",
            "serviceaccounts",
            Some("token"),
            Some(NAMESPACE),
            Some(ACCOUNT),
            201
        )
    );
    assert!(object.is_none(), "the token is not kept in the log");
    assert_eq!(
        server
            .request_counts()
            .get(&("create".to_owned(), "serviceaccounts/token".to_owned())),
        Some(&1)
    );
}

#[tokio::test(start_paused = true)]
async fn an_expired_token_is_refused_with_kube_apiserver_s_401() {
    let server = ApiServer::new(Config {
        record_requests: true,
        token_lifetime_cap: Some(Duration::from_millis(1500)),
        ..Config::default()
    });
    let client = Client::new(server.service(), "default");
    create_account(&client).await;
    let answer = request_token(&client, None).await.unwrap();
    assert_eq!(answer.spec.expiration_seconds, Some(2), "1.5s rounds up");
    let token = answer.status.unwrap().token;
    list_pods(&client_with_token(&server, &token))
        .await
        .unwrap();

    // The paused clock moves at once; the server measures expiry on tokio's clock.
    tokio::time::advance(Duration::from_millis(1500)).await;
    server.clear_request_log();
    let path = "/api/v1/namespaces/default/pods";
    assert_eq!(
        get_with_token(&server, path, &token).await,
        (401, unauthorized())
    );
    let status = api_status(
        list_pods(&client_with_token(&server, &token))
            .await
            .unwrap_err(),
    );
    assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
    let log: Vec<_> = server
        .request_log()
        .into_iter()
        .map(|r| (r.verb, r.resource, r.code, r.user))
        .collect();
    let refused = ("list".to_owned(), "pods".to_owned(), 401, None);
    assert_eq!(log, [refused.clone(), refused]);
    assert!(
        server
            .request_counts()
            .get(&("list".to_owned(), "pods".to_owned()))
            == Some(&1),
        "refused requests are not served, so not counted"
    );
    // Discovery and the other routes are refused alike.
    assert_eq!(get_with_token(&server, "/api/v1", &token).await.0, 401);

    server.set_token_lifetime_cap(None);
    let fresh = request_token(&client, None).await.unwrap();
    assert_eq!(fresh.spec.expiration_seconds, Some(3600));
    list_pods(&client_with_token(&server, &fresh.status.unwrap().token))
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_the_service_account_revokes_its_tokens() {
    let (server, client) = start_with_account().await;
    let token = issued_token(&client).await;
    accounts(&client)
        .delete(ACCOUNT, &DeleteParams::default())
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/pods";
    assert_eq!(
        get_with_token(&server, path, &token).await,
        (401, unauthorized())
    );

    // A token is bound to the uid: a new account of the same name does not revive it.
    create_account(&client).await;
    assert_eq!(get_with_token(&server, path, &token).await.0, 401);
    let fresh = issued_token(&client).await;
    assert_eq!(get_with_token(&server, path, &fresh).await.0, 200);
}

#[tokio::test]
async fn a_bearer_token_the_server_did_not_issue_is_served_as_before() {
    let (server, _client) = start_with_account().await;
    // A made-up token, a token of the review table and one another server issued.
    let other = server_with_account().await;
    let foreign = issued_token(&Client::new(other.service(), "default")).await;
    for token in ["made-up", "t-allowed", foreign.as_str()] {
        server.clear_request_log();
        list_pods(&client_with_token(&server, token)).await.unwrap();
        let log = server.request_log();
        assert_eq!(
            (log[0].code, log[0].user.as_deref()),
            (200, None),
            "{token}"
        );
    }
}

async fn server_with_account() -> ApiServer {
    let other = ApiServer::new(Config::default());
    create_account(&Client::new(other.service(), "default")).await;
    other
}

#[tokio::test]
async fn token_reviews_authenticate_the_tokens_the_server_issued() {
    let (_server, client) = start();
    let account = create_account(&client).await;
    let token = issued_token(&client).await;
    let status = token_review(&client, &token).await.status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    assert_eq!(status.audiences, Some(vec![API_AUDIENCE.to_owned()]));
    let user = status.user.unwrap();
    assert_eq!(user.username.as_deref(), Some(USER));
    assert_eq!(user.uid, account.metadata.uid);
    assert_eq!(
        user.groups.unwrap(),
        [
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated"
        ]
    );

    accounts(&client)
        .delete(ACCOUNT, &DeleteParams::default())
        .await
        .unwrap();
    let revoked = token_review(&client, &token).await.status.unwrap();
    assert_eq!(revoked.authenticated, Some(false));
    assert!(revoked.error.is_some());
}
