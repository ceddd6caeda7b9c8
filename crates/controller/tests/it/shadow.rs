//! Shadow mode end to end: one set of controllers writes, a shadow set watches the same
//! server with writes off, and reports only the differences the writer did not repair.

use controller::health::Readiness;
use controller::shadow::Shadow;
use controller::Options;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{eventually, options, pod, web, web_pod, TestCluster};
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// Requests the shadow's own client sent, by HTTP method.
type Sent = Arc<Mutex<BTreeMap<String, u64>>>;

struct ShadowRun {
    shadow: Arc<Shadow>,
    sent: Sent,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), controller::RunError>>,
}

impl ShadowRun {
    async fn start(cluster: &TestCluster, grace: Duration) -> Self {
        let sent: Sent = Arc::default();
        let counting = tower::ServiceBuilder::new()
            .map_request({
                let sent = sent.clone();
                move |request: http::Request<kube::client::Body>| {
                    *sent
                        .lock()
                        .unwrap()
                        .entry(request.method().to_string())
                        .or_default() += 1;
                    request
                }
            })
            .service(cluster.server.service());
        let client = kube::Client::new(counting, "default");
        let registry = prometheus::Registry::new();
        let shadow = Arc::new(Shadow::new(grace, None, &registry).unwrap());
        let options = Options {
            shadow: Some(shadow.clone()),
            ..options()
        };
        let shutdown = CancellationToken::new();
        let task = tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                controller::run(
                    client,
                    &options,
                    &registry,
                    Readiness::new(),
                    controller::Activity::new(),
                    shutdown,
                )
                .await
            }
        });
        Self {
            shadow,
            sent,
            shutdown,
            task,
        }
    }

    fn writes(&self) -> u64 {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .filter(|(method, _)| !matches!(method.as_str(), "GET" | "HEAD"))
            .map(|(_, n)| n)
            .sum()
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_agrees_with_the_writer_through_churn_and_writes_nothing() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let web = web();
    cluster.create_service(&web).await?;
    for i in 0..4 {
        cluster
            .create_pod(&web_pod(&format!("web-{i}"), &format!("10.0.0.{i}")))
            .await?;
    }
    let writer = cluster.run_controllers(options()).await;
    let shadow = ShadowRun::start(&cluster, Duration::from_millis(500)).await;

    // Churn: scale up and down, flap readiness, relabel a pod out of the Service.
    cluster
        .create_pod(&pod("web-9").label("app", "web").ip("10.0.0.9").ready(false))
        .await?;
    cluster.set_pod_ready(NS, "web-0", false).await?;
    cluster.delete_pod(NS, "web-1").await?;
    cluster.set_pod_ready(NS, "web-0", true).await?;
    cluster
        .patch_pod(
            NS,
            "web-2",
            json!({"metadata": {"labels": {"app": "other"}}}),
        )
        .await?;
    cluster.wait_for_planned_slices(NS, "web").await;
    cluster.wait_for_planned_endpoints(NS, "web").await;

    // Every shadow check eventually agrees: nothing left pending or divergent.
    eventually("the shadow to agree with the writer", || {
        let divergences = shadow.shadow.divergences();
        async move {
            divergences
                .is_empty()
                .then_some(())
                .ok_or_else(|| format!("{divergences:?}"))
        }
    })
    .await;
    // Past a grace period, still nothing.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(shadow.shadow.divergences(), Vec::new());
    assert_eq!(shadow.writes(), 0, "the shadow sent {:?}", shadow.sent);
    shadow.stop().await;
    writer.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_reports_a_foreign_edit_the_writer_cannot_repair() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    cluster.create_web(&[]).await?;
    for i in 0..3 {
        cluster
            .create_pod(&web_pod(&format!("web-{i}"), &format!("10.0.0.{i}")))
            .await?;
    }
    let writer = cluster.run_controllers(options()).await;
    cluster.wait_for_planned_slices(NS, "web").await;
    let shadow = ShadowRun::start(&cluster, Duration::from_millis(300)).await;

    // The writer can no longer write slices; someone drops an endpoint by hand.
    cluster.faults().fail("update", "endpointslices", 1.0);
    cluster.faults().fail("create", "endpointslices", 1.0);
    let slice = cluster.managed_slices(NS, "web").await?.remove(0);
    let name = slice.metadata.name.clone().unwrap();
    let kept: Vec<_> = slice.endpoints.iter().skip(1).cloned().collect();
    cluster
        .slices(NS)
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"endpoints": kept})),
        )
        .await?;

    eventually("the shadow to report the slice", || {
        let divergences = shadow.shadow.divergences();
        async move {
            match divergences.as_slice() {
                [d] if d.service == "default/web" && d.controller == "EndpointSlice" => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    let divergence = &shadow.shadow.divergences()[0];
    assert!(
        divergence.would_write.iter().any(|w| w.contains(&name)),
        "{divergence:?}"
    );
    assert_eq!(shadow.writes(), 0, "the shadow sent {:?}", shadow.sent);
    cluster.faults().clear();
    shadow.stop().await;
    writer.stop().await;
    Ok(())
}
