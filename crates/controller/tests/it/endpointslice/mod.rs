//! The live EndpointSlice controller against the embedded API server, through the real kube
//! client: slices follow Services, Pods and Nodes, repair edits made behind the controller's
//! back, and converge to what `reconcile::plan_slices` computes from scratch.
//!
//! Each test starts its own server and controllers; waits wake on the server's writes, with a
//! deadline.

mod pods;
mod repair;
mod services;
mod topology;

use std::collections::BTreeMap;

use kube::ResourceExt;
use testkit::scenario::{pods_are, Scenario};
use testkit::{
    conditions, endpoint_of, node, pod, ports, service, slices_only, web, web_pod, ServiceBuilder,
};

pub(super) const NS: &str = "default";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_and_pods_become_a_slice_with_endpoints_ports_labels_and_owner(
) -> anyhow::Result<()> {
    let on_node_a = |p: testkit::PodBuilder| p.node("node-a");
    let run = Scenario::new()
        .create(node("node-a").zone("zone-a"))
        .create(
            service("web")
                .selector("app", "web")
                .label("team", "blue")
                .port("http", 80, 8080),
        )
        .create(on_node_a(web_pod("web-1", "10.0.0.1")))
        .create(on_node_a(web_pod("web-2", "10.0.0.2").ready(false)))
        .create(on_node_a(pod("db-1").label("app", "db").ip("10.0.0.3")))
        .start(slices_only())
        .slices("web", "two endpoints", pods_are(&["web-1", "web-2"]))
        .planned_slices("web")
        .run()
        .await?;

    let slices = run.slices("two endpoints");
    assert_eq!(slices.len(), 1);
    let slice = &slices[0];
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(ports(slice), [("http".to_owned(), 8080, "TCP".to_owned())]);
    assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));
    assert_eq!(
        slice.labels(),
        &[
            (
                "endpointslice.kubernetes.io/managed-by",
                "endpointslice-controller.k8s.io"
            ),
            ("kubernetes.io/service-name", "web"),
            ("team", "blue"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect::<BTreeMap<_, _>>()
    );
    let svc = run.cluster.services(NS).get("web").await?;
    let owners = slice.owner_references();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(
        (
            owners[0].api_version.as_str(),
            owners[0].kind.as_str(),
            owners[0].name.as_str(),
            Some(owners[0].uid.as_str()),
            owners[0].controller,
            owners[0].block_owner_deletion,
        ),
        (
            "v1",
            "Service",
            "web",
            svc.metadata.uid.as_deref(),
            Some(true),
            Some(true)
        )
    );

    let web_1 = run.cluster.pods(NS).get("web-1").await?;
    let ready = endpoint_of(slices, "web-1").expect("web-1 has an endpoint");
    assert_eq!(ready.addresses, ["10.0.0.1"]);
    assert_eq!(conditions(&ready), (Some(true), Some(true), Some(false)));
    assert_eq!(ready.node_name.as_deref(), Some("node-a"));
    assert_eq!(ready.zone.as_deref(), Some("zone-a"));
    let target = ready.target_ref.clone().expect("a targetRef");
    assert_eq!(
        (
            target.kind.as_deref(),
            target.namespace.as_deref(),
            target.uid.as_deref()
        ),
        (Some("Pod"), Some(NS), web_1.metadata.uid.as_deref())
    );
    let not_ready = endpoint_of(slices, "web-2").expect("web-2 has an endpoint");
    assert_eq!(
        conditions(&not_ready),
        (Some(false), Some(false), Some(false))
    );
    Ok(())
}

/// The value of a slice's label `key`, if it has one.
pub(super) fn label<'a>(
    slice: &'a k8s_openapi::api::discovery::v1::EndpointSlice,
    key: &str,
) -> Option<&'a str> {
    slice.labels().get(key).map(String::as_str)
}

/// [`testkit::web`] and its pod `web-1`, until the EndpointSlice controller has written the
/// pod's endpoint; the slices are kept under "web-1".
pub(super) fn web_1_in_a_slice() -> Scenario {
    web_1_in_a_slice_of(web())
}

/// [`web_1_in_a_slice`] with another Service `web` selecting the pod.
pub(super) fn web_1_in_a_slice_of(web: ServiceBuilder) -> Scenario {
    Scenario::new()
        .create(web)
        .create(web_pod("web-1", "10.0.0.1"))
        .start(slices_only())
        .slices("web", "web-1", pods_are(&["web-1"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_stop_cleanly_when_shut_down() -> anyhow::Result<()> {
    let run = Scenario::web([])
        .start(testkit::options())
        .check(|run| assert!(run.controllers().readiness.is_ready()))
        .slices("web", "a placeholder", |s| s.len() == 1)
        .run()
        .await?;
    let readiness = run.controllers().readiness.clone();
    run.stop().await;
    assert!(!readiness.is_ready(), "not ready once stopped");
    Ok(())
}
