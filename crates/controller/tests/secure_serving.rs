//! HTTPS on the secure port, against the embedded API server answering TokenReviews and
//! SubjectAccessReviews: who gets /metrics, who gets the health paths, and how many review
//! calls scrapes cost.

use std::sync::Arc;
use std::time::Duration;

use apiserver::{ApiServer, Config, FaultResponse, NonResourceGrant, Reviews, TokenUser};
use controller::health::{self, Liveness, Readiness};
use controller::secure_serving::{self, Access, CertSource, SecureServingSettings, ServingCert};
use prometheus::Registry;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const ALLOWED: &str = "token-of-prometheus";
const NOT_ALLOWED: &str = "token-of-someone";

fn api_server() -> ApiServer {
    ApiServer::new(Config {
        record_requests: true,
        reviews: Reviews::default()
            .with_token(
                ALLOWED,
                TokenUser::new("system:serviceaccount:monitoring:prometheus", &[]),
            )
            .with_token(NOT_ALLOWED, TokenUser::new("someone", &["devs"]))
            .with_grant(NonResourceGrant::user_get(
                "system:serviceaccount:monitoring:prometheus",
                &["/metrics"],
            )),
        ..Config::default()
    })
}

/// The secure server on 127.0.0.1:0, and what a client needs to reach it.
struct Secure {
    api: ApiServer,
    port: u16,
    ca_pem: String,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Secure {
    async fn start(settings: SecureServingSettings) -> Self {
        let api = api_server();
        let cert = ServingCert::load(&settings.cert).unwrap();
        let ca_pem = cert
            .ca_pem
            .clone()
            .unwrap_or_else(|| std::fs::read_to_string(settings_ca(&settings)).unwrap());
        Self::start_with(api, settings, cert, ca_pem).await
    }

    async fn start_with(
        api: ApiServer,
        settings: SecureServingSettings,
        cert: ServingCert,
        ca_pem: String,
    ) -> Self {
        let tls = cert.server_config().unwrap();
        let client = kube::Client::new(api.service(), "default");
        let access = Access::new(client.clone(), client, &settings);
        let registry = Registry::new();
        let counter = prometheus::IntCounter::new("scraped_test_total", "A test counter.").unwrap();
        registry.register(Box::new(counter.clone())).unwrap();
        counter.inc();
        let readiness = Readiness::new();
        readiness.set(true);
        let router = health::router(registry, readiness, Liveness::new());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let stop = stop.clone();
            async move {
                secure_serving::serve(listener, tls, access, router, async move {
                    stop.cancelled().await
                })
                .await
            }
        });
        Self {
            api,
            port,
            ca_pem,
            stop,
            task,
        }
    }

    /// GET `path` over HTTPS (checking the server's certificate against the CA), with a
    /// bearer token if given; the status code and the body.
    async fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        let mut tls = connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap();
        let authorization = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        tls.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}Connection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        let mut response = Vec::new();
        // A peer that closes without TLS close_notify still sent the whole response.
        if let Err(error) = tls.read_to_end(&mut response).await {
            assert_eq!(error.kind(), std::io::ErrorKind::UnexpectedEof, "{error}");
        }
        let response = String::from_utf8(response).unwrap();
        let code = response
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
        (code, response)
    }

    /// How many TokenReviews and SubjectAccessReviews the API server answered.
    fn review_calls(&self) -> (usize, usize) {
        let log = self.api.request_log();
        let count = |resource: &str| log.iter().filter(|r| r.resource == resource).count();
        (count("tokenreviews"), count("subjectaccessreviews"))
    }

    async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap().unwrap();
    }
}

fn settings_ca(settings: &SecureServingSettings) -> std::path::PathBuf {
    match &settings.cert {
        CertSource::Files { cert, .. } => cert.with_extension("ca"),
        CertSource::SelfSigned { .. } => unreachable!("a generated certificate carries its CA"),
    }
}

#[tokio::test]
async fn metrics_answer_401_without_a_valid_token_403_when_not_allowed_and_200_when_allowed() {
    let secure = Secure::start(SecureServingSettings::default()).await;

    let (code, body) = secure.get("/metrics", None).await;
    assert_eq!(code, 401, "{body}");
    assert!(body.contains(r#""reason":"Unauthorized""#), "{body}");
    assert_eq!(secure.get("/metrics", Some("forged")).await.0, 401);

    let (code, body) = secure.get("/metrics", Some(NOT_ALLOWED)).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"User \"someone\" cannot get path \"/metrics\""#),
        "{body}"
    );

    let (code, body) = secure.get("/metrics", Some(ALLOWED)).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("scraped_test_total 1"), "{body}");
    secure.stop().await;
}

#[tokio::test]
async fn health_paths_need_no_token_but_a_forged_one_is_still_refused() {
    let secure = Secure::start(SecureServingSettings::default()).await;
    for path in ["/healthz", "/readyz", "/livez"] {
        let (code, body) = secure.get(path, None).await;
        assert_eq!(code, 200, "{path}: {body}");
    }
    assert_eq!(secure.get("/healthz", Some("forged")).await.0, 401);
    assert_eq!(secure.get("/healthz", Some(NOT_ALLOWED)).await.0, 200);
    assert_eq!(
        secure.review_calls().1,
        0,
        "always-allowed paths are not reviewed"
    );
    secure.stop().await;
}

#[tokio::test]
async fn a_second_scrape_within_the_cache_ttl_makes_no_review_call() {
    let secure = Secure::start(SecureServingSettings::default()).await;
    assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, 200);
    assert_eq!(secure.review_calls(), (1, 1));
    assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, 200);
    assert_eq!(secure.review_calls(), (1, 1), "both answers were cached");

    // Refusals are cached too, by their own TTLs.
    assert_eq!(secure.get("/metrics", Some(NOT_ALLOWED)).await.0, 403);
    assert_eq!(secure.get("/metrics", Some(NOT_ALLOWED)).await.0, 403);
    assert_eq!(secure.get("/metrics", Some("forged")).await.0, 401);
    assert_eq!(secure.get("/metrics", Some("forged")).await.0, 401);
    assert_eq!(secure.review_calls(), (3, 2));
    secure.stop().await;
}

#[tokio::test]
async fn without_a_cache_ttl_every_scrape_is_reviewed() {
    let secure = Secure::start(SecureServingSettings {
        token_cache_ttl: Duration::ZERO,
        authorized_ttl: Duration::ZERO,
        ..SecureServingSettings::default()
    })
    .await;
    for _ in 0..2 {
        assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, 200);
    }
    assert_eq!(secure.review_calls(), (2, 2));
    secure.stop().await;
}

#[tokio::test]
async fn a_failed_token_review_answers_401_and_is_not_cached() {
    let secure = Secure::start(SecureServingSettings::default()).await;
    secure
        .api
        .faults()
        .fail_next("create", "tokenreviews", 1, FaultResponse::InternalError);
    assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, 401);
    assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, 200);
    assert_eq!(secure.review_calls(), (2, 1));
    secure.stop().await;
}

#[tokio::test]
async fn a_failed_access_review_answers_500_and_is_not_cached() {
    let secure = Secure::start(SecureServingSettings::default()).await;
    secure.api.faults().fail_next(
        "create",
        "subjectaccessreviews",
        1,
        FaultResponse::InternalError,
    );
    assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, 500);
    assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, 200);
    assert_eq!(secure.review_calls(), (1, 2));
    secure.stop().await;
}

#[tokio::test]
async fn a_given_certificate_and_key_are_served() {
    // A CA and a serving certificate it signs, as an operator's PKI would give them.
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::default();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "test operator CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let (cert_file, key_file) = (
        dir.path().join("serving.crt"),
        dir.path().join("serving.key"),
    );
    std::fs::write(&cert_file, leaf.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    std::fs::write(dir.path().join("serving.ca"), ca_cert.pem()).unwrap();

    let secure = Secure::start(SecureServingSettings {
        cert: CertSource::Files {
            cert: cert_file,
            key: key_file,
        },
        ..SecureServingSettings::default()
    })
    .await;
    let (code, body) = secure.get("/metrics", Some(ALLOWED)).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(secure.get("/healthz", None).await.0, 200);
    secure.stop().await;
}
