use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;

use super::*;

fn settings() -> LeaderElectionSettings {
    LeaderElectionSettings::default()
}

/// What `election` plans on reading `lease` now.
fn plan_now(election: &mut Election, lease: Option<&LeaseSpec>) -> Step {
    election.plan(lease, Instant::now(), Timestamp::now())
}

fn held_by(holder: &str, transitions: i32) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(holder.to_string()),
        lease_duration_seconds: Some(15),
        acquire_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
        renew_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_missing_lease_is_created_with_us_as_holder() {
    let mut election = Election::new("me".into(), Duration::from_secs(15));
    match plan_now(&mut election, None) {
        Step::Create(spec) => {
            assert_eq!(spec.holder_identity.as_deref(), Some("me"));
            assert_eq!(spec.lease_duration_seconds, Some(15));
            assert_eq!(spec.lease_transitions, Some(0));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_lease_held_by_another_is_taken_only_after_it_stops_changing_for_its_duration() {
    let mut election = Election::new("me".into(), Duration::from_secs(15));
    let other = held_by("other", 3);
    assert_eq!(plan_now(&mut election, Some(&other)), Step::Wait);
    tokio::time::advance(Duration::from_secs(14)).await;
    assert_eq!(plan_now(&mut election, Some(&other)), Step::Wait);
    tokio::time::advance(Duration::from_secs(1)).await;
    match plan_now(&mut election, Some(&other)) {
        Step::Update(spec) => {
            assert_eq!(spec.holder_identity.as_deref(), Some("me"));
            assert_eq!(spec.lease_transitions, Some(4));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_renewed_record_restarts_the_expiry_clock() {
    let mut election = Election::new("me".into(), Duration::from_secs(15));
    plan_now(&mut election, Some(&held_by("other", 0)));
    tokio::time::advance(Duration::from_secs(10)).await;
    let mut renewed = held_by("other", 0);
    renewed.renew_time = Some(MicroTime(Timestamp::now()));
    assert_eq!(plan_now(&mut election, Some(&renewed)), Step::Wait);
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(
        plan_now(&mut election, Some(&renewed)),
        Step::Wait,
        "only 10s since the record last changed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_at_once() {
    let mut election = Election::new("me".into(), Duration::from_secs(15));
    let mut released = held_by("", 2);
    released.lease_duration_seconds = Some(1);
    assert!(matches!(
        plan_now(&mut election, Some(&released)),
        Step::Update(_)
    ));
}

#[tokio::test(start_paused = true)]
async fn renewing_keeps_the_acquire_time_and_transitions() {
    let mut election = Election::new("me".into(), Duration::from_secs(15));
    let ours = held_by("me", 5);
    match plan_now(&mut election, Some(&ours)) {
        Step::Update(spec) => {
            assert_eq!(spec.acquire_time, ours.acquire_time);
            assert_eq!(spec.lease_transitions, Some(5));
            assert_ne!(spec.renew_time, ours.renew_time);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn release_empties_the_holder_and_shortens_the_duration_to_one_second() {
    let mut election = Election::new("me".into(), Duration::from_secs(15));
    assert!(election.release(Timestamp::now()).is_none(), "not leader");
    election.wrote(held_by("me", 2), Instant::now());
    let spec = election.release(Timestamp::now()).unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(2));
}

#[test]
fn default_identity_is_hostname_and_a_random_suffix() {
    let a = default_identity();
    let b = default_identity();
    assert!(a.contains('_'));
    assert_ne!(a, b);
}

/// One Lease behind a tiny fake API: get, create and update with resourceVersion checks.
#[derive(Clone, Default)]
struct FakeLeases {
    lease: Arc<Mutex<Option<Lease>>>,
    failing: Arc<AtomicBool>,
}

impl FakeLeases {
    /// Holds the Lease `kube-endpoints` at `resource_version`, with `spec`.
    fn store(&self, resource_version: &str, spec: LeaseSpec) {
        *self.lease.lock().unwrap() = Some(Lease {
            metadata: ObjectMeta {
                name: Some("kube-endpoints".into()),
                namespace: Some("kube-system".into()),
                resource_version: Some(resource_version.into()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        });
    }

    fn client(&self) -> Client {
        let fake = self.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let fake = fake.clone();
            async move { Ok::<_, Infallible>(fake.handle(request).await) }
        });
        Client::new(service, "default")
    }

    fn spec(&self) -> LeaseSpec {
        self.lease
            .lock()
            .unwrap()
            .as_ref()
            .and_then(|lease| lease.spec.clone())
            .unwrap()
    }

    async fn handle(&self, request: Request<Body>) -> Response<Body> {
        if self.failing.load(Ordering::SeqCst) {
            return status(StatusCode::INTERNAL_SERVER_ERROR, "InternalError");
        }
        let method = request.method().clone();
        // The elector writes protobuf unless told otherwise; the fake answers JSON, which a
        // client asking for protobuf first also accepts.
        let protobuf = crate::wire::is_protobuf(request.headers().get("content-type"));
        let body = request.into_body().collect_bytes().await.unwrap();
        let mut stored = self.lease.lock().unwrap();
        match method {
            Method::GET => match stored.as_ref() {
                Some(lease) => json(StatusCode::OK, lease),
                None => status(StatusCode::NOT_FOUND, "NotFound"),
            },
            Method::POST | Method::PUT => {
                let mut lease: Lease = if protobuf {
                    use crate::wire::WireKind;
                    Lease::from_enveloped(crate::wire::envelope::open(body).unwrap()).unwrap()
                } else {
                    serde_json::from_slice(&body).unwrap()
                };
                let current_version = stored
                    .as_ref()
                    .and_then(|l| l.metadata.resource_version.clone());
                let conflict = if method == Method::POST {
                    stored.is_some()
                } else {
                    current_version != lease.metadata.resource_version
                };
                if conflict {
                    return status(StatusCode::CONFLICT, "Conflict");
                }
                let next: u64 = current_version.map_or(0, |v| v.parse().unwrap()) + 1;
                lease.metadata.resource_version = Some(next.to_string());
                *stored = Some(lease.clone());
                json(StatusCode::OK, &lease)
            }
            _ => status(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed"),
        }
    }
}

fn json(code: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(value).unwrap()))
        .unwrap()
}

fn status(code: StatusCode, reason: &str) -> Response<Body> {
    json(
        code,
        &serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": reason, "reason": reason, "code": code.as_u16(),
        }),
    )
}

#[tokio::test(start_paused = true)]
async fn leader_leads_until_shutdown_then_releases_the_lease() {
    let fake = FakeLeases::default();
    let elector = LeaderElector::new(fake.client(), settings(), "me".into());
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(elector.run(
        |token| async move {
            started_tx.send(()).unwrap();
            token.cancelled().await;
        },
        async {
            let _ = stopped.await;
        },
    ));
    started.await.unwrap();
    assert_eq!(fake.spec().holder_identity.as_deref(), Some("me"));
    // Renewals keep the lease while time passes well beyond its duration.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(fake.spec().holder_identity.as_deref(), Some("me"));

    stop.send(()).unwrap();
    assert_eq!(run.await.unwrap(), LeadershipEnd::ShutDown);
    let released = fake.spec();
    assert_eq!(released.holder_identity.as_deref(), Some(""));
    assert_eq!(released.lease_duration_seconds, Some(1));
}

#[tokio::test(start_paused = true)]
async fn standby_takes_over_a_lease_that_stopped_being_renewed() {
    let fake = FakeLeases::default();
    fake.store("7", held_by("gone", 1));
    let start = Instant::now();
    let elector = LeaderElector::new(fake.client(), settings(), "me".into());
    let end = elector.run(|_token| async {}, std::future::pending()).await;
    assert_eq!(end, LeadershipEnd::Finished);
    assert!(start.elapsed() >= Duration::from_secs(15));
    // Taken over with one more transition, then released when the leading work finished.
    let spec = fake.spec();
    assert_eq!(spec.lease_transitions, Some(2));
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
}

#[tokio::test(start_paused = true)]
async fn leadership_is_lost_when_renewals_fail_past_the_renew_deadline() {
    let fake = FakeLeases::default();
    let elector = LeaderElector::new(fake.client(), settings(), "me".into());
    let failing = Arc::clone(&fake.failing);
    let finished = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    /// Notes that the leading future was dropped.
    struct OnDrop(Arc<AtomicBool>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let end = elector
        .run(
            |token| {
                let finished = Arc::clone(&finished);
                let guard = OnDrop(Arc::clone(&dropped));
                async move {
                    let _guard = guard;
                    failing.store(true, Ordering::SeqCst);
                    token.cancelled().await;
                    // In-flight work would go on here; a lost Lease must not let it.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    finished.store(true, Ordering::SeqCst);
                }
            },
            std::future::pending(),
        )
        .await;
    assert_eq!(end, LeadershipEnd::Lost);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the leading work was not dropped"
    );
    assert!(
        !finished.load(Ordering::SeqCst),
        "the leading work went on after the Lease was lost"
    );
    assert_eq!(
        fake.spec().holder_identity.as_deref(),
        Some("me"),
        "not released"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_before_acquiring_never_runs_the_leader() {
    let fake = FakeLeases::default();
    fake.store("1", held_by("other", 0));
    let elector = LeaderElector::new(fake.client(), settings(), "me".into());
    let end = elector
        .run(
            |_token| async { panic!("must not lead") },
            tokio::time::sleep(Duration::from_secs(5)),
        )
        .await;
    assert_eq!(end, LeadershipEnd::ShutDown);
    assert_eq!(fake.spec().holder_identity.as_deref(), Some("other"));
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_reads_another_holder_stops_at_once_not_at_its_renew_deadline() {
    let fake = FakeLeases::default();
    let elector = LeaderElector::new(fake.client(), settings(), "me".into());
    let taken = Arc::new(Mutex::new(None));
    let end = elector
        .run(
            |token| {
                let (fake, taken) = (fake.clone(), Arc::clone(&taken));
                async move {
                    // A restore brings the Lease back naming another replica, which renews it.
                    fake.store("100", held_by("other", 3));
                    *taken.lock().unwrap() = Some(Instant::now());
                    token.cancelled().await;
                    std::future::pending::<()>().await;
                }
            },
            std::future::pending(),
        )
        .await;
    assert_eq!(end, LeadershipEnd::Lost);
    let after = taken.lock().unwrap().expect("led").elapsed();
    let settings = settings();
    // The next renewal reads the other holder: one retry period, not the renew deadline.
    assert!(
        after <= settings.retry_period + Duration::from_millis(10),
        "stopped {after:?} after the Lease changed hands (retry period {:?}, renew deadline {:?})",
        settings.retry_period,
        settings.renew_deadline
    );
    assert_eq!(fake.spec().holder_identity.as_deref(), Some("other"));
}
