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

/// The API server, with the prometheus token allowed `get` on `paths`.
fn api_server_granting(paths: &[&str]) -> ApiServer {
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
                paths,
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
    /// The secure server with `settings`, reviewing through an API server that allows the
    /// prometheus token /metrics.
    async fn start(settings: SecureServingSettings) -> Self {
        Self::start_granting(&["/metrics"], settings).await
    }

    /// The secure server with `settings`, reviewing through an API server that allows the
    /// prometheus token `paths`.
    async fn start_granting(paths: &[&str], settings: SecureServingSettings) -> Self {
        let api = api_server_granting(paths);
        let cert = ServingCert::load(&settings.cert).unwrap();
        let ca_pem = cert
            .ca_pem
            .clone()
            .unwrap_or_else(|| std::fs::read_to_string(settings_ca(&settings)).unwrap());
        let tls = cert.server_config().unwrap();
        let client = kube::Client::new(api.service(), "default");
        let access = Access::new(client.clone(), client, &settings);
        let registry = Registry::new();
        let counter = prometheus::IntCounter::new("scraped_test_total", "A test counter.").unwrap();
        registry.register(Box::new(counter.clone())).unwrap();
        counter.inc();
        let readiness = Readiness::new();
        readiness.set(true);
        let router = health::router(registry, readiness, Liveness::new())
            .merge(controller::profiling::router());
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
        let (code, head, body) = self.get_bytes(path, token).await;
        (
            code,
            format!("{head}\r\n\r\n{}", String::from_utf8_lossy(&body)),
        )
    }

    /// GET `path`: the status code, the head and the body as bytes.
    async fn get_bytes(&self, path: &str, token: Option<&str>) -> (u16, String, Vec<u8>) {
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
        let split = response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no end of head: {}", String::from_utf8_lossy(&response)));
        let head = String::from_utf8(response[..split].to_vec()).unwrap();
        let body = response[split + 4..].to_vec();
        let code = head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {head}"));
        (code, head, body)
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

/// A review call that fails once: the scrape it was for gets `answer`, and the next scrape
/// is reviewed again (the failure was not cached), `calls` review calls in all.
async fn a_failed_review_is_not_cached(review: &str, answer: u16, calls: (usize, usize)) {
    let secure = Secure::start(SecureServingSettings::default()).await;
    secure
        .api
        .faults()
        .fail_next("create", review, 1, FaultResponse::InternalError);
    assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, answer);
    assert_eq!(secure.get("/metrics", Some(ALLOWED)).await.0, 200);
    assert_eq!(secure.review_calls(), calls);
    secure.stop().await;
}

#[tokio::test]
async fn a_failed_token_review_answers_401_and_is_not_cached() {
    a_failed_review_is_not_cached("tokenreviews", 401, (2, 1)).await;
}

#[tokio::test]
async fn a_failed_access_review_answers_500_and_is_not_cached() {
    a_failed_review_is_not_cached("subjectaccessreviews", 500, (1, 2)).await;
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

/// `/debug/pprof/profile` answers as /metrics does to who may not have it, and gives who may
/// a CPU profile that pprof's own reader takes (Go's `go tool pprof`, where Go is installed:
/// scripts/install-test-deps.sh installs Debian's golang-go, and under CI=true it must be
/// there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_profile_needs_a_token_and_an_allowed_path_and_pprof_reads_it() {
    use controller::profiling::{proto::Profile, PROFILE_PATH};
    use prost::Message;
    let path = format!("{PROFILE_PATH}?seconds=2");

    // Allowed /metrics only: the profile is another path.
    let secure = Secure::start(SecureServingSettings::default()).await;
    assert_eq!(secure.get(&path, None).await.0, 401);
    let (code, body) = secure.get(&path, Some(ALLOWED)).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"cannot get path \"/debug/pprof/profile\""#),
        "{body}"
    );
    secure.stop().await;

    let secure = Secure::start_granting(
        &["/metrics", PROFILE_PATH],
        SecureServingSettings::default(),
    )
    .await;
    // Something to sample while the profile runs.
    let busy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let spinner = {
        let busy = busy.clone();
        std::thread::spawn(move || {
            let mut x = 0u64;
            while busy.load(std::sync::atomic::Ordering::Relaxed) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            x
        })
    };
    let (code, head, body) = secure.get_bytes(&path, Some(ALLOWED)).await;
    busy.store(false, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    assert_eq!(code, 200, "{head}");
    assert!(head.contains("application/octet-stream"), "{head}");
    // Gzip'd, as Go serves it.
    assert_eq!(body.get(..2), Some(&[0x1f, 0x8b][..]), "not gzip data");
    let mut encoded = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(body.as_slice()),
        &mut encoded,
    )
    .expect("a whole gzip stream");
    let profile = Profile::decode(encoded.as_slice()).expect("a profile.proto message");
    assert!(
        !profile.sample.is_empty(),
        "no samples in 2s of a busy thread"
    );
    assert!(profile.duration_nanos >= 2_000_000_000);
    secure.stop().await;

    let has_go = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("go").is_file()));
    if !has_go {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "go is missing under CI=true: scripts/install-test-deps.sh installs golang-go"
        );
        println!("skipping go tool pprof: go is not on PATH");
        return;
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &body).unwrap();
    let out = std::process::Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(file.path())
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Samples:") && stdout.contains("samples/count cpu/nanoseconds"),
        "{stdout}"
    );
}
