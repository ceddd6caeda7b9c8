//! The API server comes back with fresh state (a restarted dev server; on a real cluster, an
//! etcd restore): resourceVersions go backwards and every Endpoints and EndpointSlice the
//! controllers wrote is gone. The controllers must notice, re-list, and write them all again,
//! and `/readyz` must say they are not ready while their watches fail.

mod support;

use apiserver::{ApiServer, ApiServerHandle, Config};
use support::*;

/// The objects the test creates on each server: two Services of two ready pods each.
async fn populate(cluster: &TestCluster) -> anyhow::Result<()> {
    cluster.create_node(&node(DEFAULT_NODE)).await?;
    for (name, ips) in [
        ("web", ["10.0.0.1", "10.0.0.2"]),
        ("api", ["10.0.1.1", "10.0.1.2"]),
    ] {
        cluster
            .create_service(&service(name).selector("app", name).port("http", 80, 8080))
            .await?;
        for (i, ip) in ips.iter().enumerate() {
            cluster
                .create_pod(
                    &pod(&format!("{name}-{i}"))
                        .label("app", name)
                        .ip(ip)
                        .ready(true),
                )
                .await?;
        }
    }
    Ok(())
}

/// The cluster view of a server listening on TCP: objects are created in process, the
/// controllers reach it over the network, as `run` does.
fn cluster_of(handle: &ApiServerHandle) -> TestCluster {
    let server: ApiServer = handle.server().clone();
    let client = kube::Client::new(server.service(), "default");
    TestCluster { server, client }
}

async fn wait_for_everything(cluster: &TestCluster) {
    for service in ["web", "api"] {
        cluster
            .wait_for_slices("default", service, "both pods", |s| pod_names(s).len() == 2)
            .await;
        cluster
            .wait_for_endpoints("default", service, "both pods", |e| {
                addresses(e).0.len() == 2
            })
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_is_written_again_after_the_server_restarts_with_fresh_state(
) -> anyhow::Result<()> {
    let first = ApiServer::start(Config {
        bind: "127.0.0.1:0".parse()?,
        ..Config::default()
    })
    .await?;
    let addr = first.addr();
    let cluster = cluster_of(&first);
    populate(&cluster).await?;
    // Writes enough that the first server's resourceVersion stays ahead of the second's.
    for i in 0..20 {
        cluster.create_namespace(&format!("filler-{i}")).await?;
    }
    let client = kube::Client::try_from(kube::Config::new(first.url().parse()?))?;
    let controllers = cluster.run_controllers_with(options(), client.into()).await;
    wait_for_everything(&cluster).await;
    let old_version = first.server().resource_version();

    first.shutdown().await?;
    eventually("/readyz to fail while the server is down", || {
        let ready = controllers.readiness.is_ready();
        async move { (!ready).then_some(()).ok_or("still ready".to_owned()) }
    })
    .await;

    let second = ApiServer::start(Config {
        bind: addr,
        ..Config::default()
    })
    .await?;
    let cluster = cluster_of(&second);
    populate(&cluster).await?;
    assert!(second.server().resource_version() < old_version);

    wait_for_everything(&cluster).await;
    eventually("/readyz to pass again", || {
        let ready = controllers.readiness.is_ready();
        async move { ready.then_some(()).ok_or("not ready".to_owned()) }
    })
    .await;
    assert!(
        controllers.metric("informer_watch_failures_total", &[]) > 0.0,
        "the failed watches are counted"
    );
    controllers.stop().await;
    second.shutdown().await?;
    Ok(())
}
