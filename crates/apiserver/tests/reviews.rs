//! TokenReview and SubjectAccessReview, as a component delegating its authentication and
//! authorization sends them, through kube's client.

use apiserver::{ApiServer, Config, NonResourceGrant, Reviews, TokenUser};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};

fn server() -> ApiServer {
    ApiServer::new(Config {
        record_requests: true,
        reviews: Reviews::default()
            .with_token("t-allowed", TokenUser::new("prometheus", &["monitoring"]))
            .with_grant(NonResourceGrant::user_get("prometheus", &["/metrics"])),
        ..Config::default()
    })
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
    let server = server();
    let client = Client::new(server.service(), "default");
    let known = token_review(&client, "t-allowed").await.status.unwrap();
    assert_eq!(known.authenticated, Some(true));
    assert_eq!(known.user.unwrap().username.as_deref(), Some("prometheus"));
    let unknown = token_review(&client, "nope").await.status.unwrap();
    assert_eq!(unknown.authenticated, Some(false));
}

#[tokio::test]
async fn subject_access_reviews_answer_from_the_configured_grants() {
    let server = server();
    let client = Client::new(server.service(), "default");
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
    let server = server();
    let client = Client::new(server.service(), "default");
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
    let server = server();
    let client = Client::new(server.service(), "default");
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
    let response = server()
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
