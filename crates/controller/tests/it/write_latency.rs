//! The latency SLI against the embedded API server: each controller times a change from its
//! informer, and from the change's trigger time, to the acknowledged write that carries it,
//! and the samples fit inside what a client outside the controllers measured.

use controller::write_latency::{INFORMER_TO_WRITE, TRIGGER_TO_WRITE};
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use serde_json::json;
use std::time::Instant;
use testkit::{
    addresses, conditions, endpoint_of, mirroring_only, options, service, web_pod, Controllers,
    Manager, TestCluster,
};

const NS: &str = "default";

/// The sample count and sum of both histograms of `controller`.
fn samples(controllers: &Controllers, controller: &str) -> [(u64, f64); 2] {
    let labels = [("controller", controller)];
    [
        controllers.histogram(INFORMER_TO_WRITE, &labels),
        controllers.histogram(TRIGGER_TO_WRITE, &labels),
    ]
}

/// A whole-second wall-clock time `seconds` ago, as a pod condition stores one.
fn seconds_ago(seconds: i64) -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second() - seconds).expect("a valid time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readiness_flip_is_timed_once_by_each_service_controller_within_what_a_client_saw() {
    let cluster = TestCluster::start().await;
    cluster
        .create_web(&[web_pod("web-1", "10.0.0.1")])
        .await
        .unwrap();
    // Ready for a while already: the flip below is the later transition the trigger time
    // tracker counts as a change.
    cluster
        .set_pod_ready_since(NS, "web-1", true, seconds_ago(10))
        .await
        .unwrap();
    let controllers = cluster.run_controllers(options()).await;
    cluster
        .wait_for_slices(NS, "web", "web-1 ready", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(true))
        })
        .await;
    cluster
        .wait_for_endpoints(NS, "web", "web-1 ready", |e| addresses(e).0 == ["10.0.0.1"])
        .await;
    // The first sync's writes are timed too: their changes are the informers' first list.
    for controller in ["endpointslice-controller", "endpoints-controller"] {
        testkit::until(&format!("{controller} timed its first writes"), || {
            samples(&controllers, controller)[0].0 >= 1
        })
        .await;
    }
    let before = ["endpointslice-controller", "endpoints-controller"]
        .map(|controller| samples(&controllers, controller));

    // The pod turns not ready two seconds before the client tells the API server.
    let trigger = seconds_ago(2);
    let sent = Instant::now();
    cluster
        .set_pod_ready_since(NS, "web-1", false, trigger)
        .await
        .unwrap();
    cluster
        .wait_for_slices(NS, "web", "web-1 not ready", |s| {
            endpoint_of(s, "web-1").is_some_and(|e| conditions(&e).0 == Some(false))
        })
        .await;
    cluster
        .wait_for_endpoints(NS, "web", "web-1 not ready", |e| {
            addresses(e).1 == ["10.0.0.1"]
        })
        .await;

    for (controller, before) in ["endpointslice-controller", "endpoints-controller"]
        .into_iter()
        .zip(before)
    {
        // The sample is taken just after the write's answer, which may come after a watcher
        // saw the write: wait for it.
        testkit::until(&format!("{controller} timed the flip"), || {
            samples(&controllers, controller)[0].0 > before[0].0
        })
        .await;
        let seen = sent.elapsed().as_secs_f64();
        let now = samples(&controllers, controller);
        let informer = (now[0].0 - before[0].0, now[0].1 - before[0].1);
        let triggered = (now[1].0 - before[1].0, now[1].1 - before[1].1);
        assert_eq!(informer.0, 1, "{controller}: one write carried the flip");
        // Our informer got the change after the client sent it, and the write was answered
        // before the sample was taken: the sample fits in the client's span.
        assert!(
            informer.1 > 0.0 && informer.1 <= seen,
            "{controller}: informer to write {}s, client saw {seen}s",
            informer.1
        );
        // From the condition's time: at least the two seconds before the client sent it.
        assert_eq!(
            triggered.0, 1,
            "{controller}: the write carried a trigger time"
        );
        let upper = Timestamp::now().duration_since(trigger).as_secs_f64();
        assert!(
            triggered.1 >= 2.0 && triggered.1 <= upper,
            "{controller}: trigger to write {}s, expected 2s..{upper}s",
            triggered.1
        );
    }
    controllers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirroring_times_its_writes_from_the_endpoints_trigger_time() {
    let cluster = TestCluster::start().await;
    let services: kube::Api<Service> = cluster.services(NS);
    services
        .create(
            &PostParams::default(),
            &serde_json::from_value(service("ext").port("db", 9000, 9000).manifest()).unwrap(),
        )
        .await
        .unwrap();
    let controllers = cluster.run_controllers(mirroring_only()).await;
    let trigger = seconds_ago(3);
    let endpoints: Endpoints = serde_json::from_value(json!({
        "metadata": {
            "name": "ext",
            "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": trigger.to_string()},
        },
        "subsets": [{"addresses": [{"ip": "10.1.0.1"}], "ports": [{"name": "db", "port": 9000}]}],
    }))
    .unwrap();
    let sent = Instant::now();
    cluster
        .endpoints(NS)
        .create(&PostParams::default(), &endpoints)
        .await
        .unwrap();
    cluster
        .wait_for_slices_by(Manager::Mirroring, NS, "ext", "mirrored", |s| !s.is_empty())
        .await;
    let controller = "endpointslice-mirroring-controller";
    testkit::until("mirroring timed its write", || {
        samples(&controllers, controller)[0].0 >= 1
    })
    .await;
    let [informer, triggered] = samples(&controllers, controller);
    assert_eq!(informer.0, 1);
    assert!(informer.1 > 0.0 && informer.1 <= sent.elapsed().as_secs_f64());
    assert_eq!(triggered.0, 1);
    let upper = Timestamp::now().duration_since(trigger).as_secs_f64();
    assert!(
        triggered.1 >= 3.0 && triggered.1 <= upper,
        "trigger to write {}s, expected 3s..{upper}s",
        triggered.1
    );
    controllers.stop().await;
}
