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

use testkit::{
    conditions, endpoint_of, node, pod, pod_names, ports, service, slices_only, TestCluster,
};

pub(super) const NS: &str = "default";

pub(super) fn ip(slice_endpoint: &k8s_openapi::api::discovery::v1::Endpoint) -> Vec<String> {
    slice_endpoint.addresses.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_and_pods_become_a_slice_with_endpoints_ports_labels_and_owner(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_node(&node("node-a").zone("zone-a")).await?;
    let svc = cluster
        .create_service(
            &service("web")
                .selector("app", "web")
                .label("team", "blue")
                .port("http", 80, 8080),
        )
        .await?;
    let web_1 = cluster
        .create_pod(
            &pod("web-1")
                .label("app", "web")
                .node("node-a")
                .ip("10.0.0.1")
                .ready(true),
        )
        .await?;
    cluster
        .create_pod(
            &pod("web-2")
                .label("app", "web")
                .node("node-a")
                .ip("10.0.0.2")
                .ready(false),
        )
        .await?;
    cluster
        .create_pod(&pod("db-1").label("app", "db").node("node-a").ip("10.0.0.3"))
        .await?;
    let _controllers = cluster.run_controllers(slices_only()).await;

    let slices = cluster
        .wait_for_slices(NS, "web", "two endpoints", |s| {
            pod_names(s) == ["web-1", "web-2"]
        })
        .await;
    assert_eq!(slices.len(), 1);
    let slice = &slices[0];
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(ports(slice), [("http".to_owned(), 8080, "TCP".to_owned())]);
    assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));
    let labels = slice.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels,
        [
            (
                "endpointslice.kubernetes.io/managed-by",
                "endpointslice-controller.k8s.io"
            ),
            ("kubernetes.io/service-name", "web"),
            ("team", "blue"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    );
    let owners = slice.metadata.owner_references.clone().unwrap_or_default();
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

    let ready = endpoint_of(&slices, "web-1").expect("web-1 has an endpoint");
    assert_eq!(ip(&ready), ["10.0.0.1"]);
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
    let not_ready = endpoint_of(&slices, "web-2").expect("web-2 has an endpoint");
    assert_eq!(
        conditions(&not_ready),
        (Some(false), Some(false), Some(false))
    );
    cluster.wait_for_planned_slices(NS, "web").await;
    Ok(())
}

pub(super) fn label<'a>(
    slice: &'a k8s_openapi::api::discovery::v1::EndpointSlice,
    key: &str,
) -> Option<&'a str> {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_stop_cleanly_when_shut_down() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    let controllers = cluster.run_controllers(testkit::options()).await;
    assert!(controllers.readiness.is_ready());
    cluster
        .wait_for_slices(NS, "web", "a placeholder", |s| s.len() == 1)
        .await;
    let readiness = controllers.readiness.clone();
    controllers.stop().await;
    assert!(!readiness.is_ready(), "not ready once stopped");
    Ok(())
}
