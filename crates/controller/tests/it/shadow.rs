//! Shadow mode end to end: one set of controllers writes, a shadow set watches the same
//! server with writes off, and reports only the differences the writer did not repair.

use controller::shadow::Shadow;
use controller::Options;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::scenario::Scenario;
use testkit::{eventually, options, web_pod, web_pods, Controllers, TestCluster};

const NS: &str = "default";

/// Requests the shadow's own client sent, by HTTP method.
type Sent = Arc<Mutex<BTreeMap<String, u64>>>;

/// Shadow controllers: every controller planning with writes off, through a client of their
/// own that counts what it sends.
struct ShadowRun {
    shadow: Arc<Shadow>,
    sent: Sent,
    controllers: Controllers,
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
        let shadow = Arc::new(Shadow::new(grace, None, &prometheus::Registry::new()).unwrap());
        let options = Options {
            shadow: Some(shadow.clone()),
            ..options()
        };
        let controllers = cluster.run_controllers_with(options, client.into()).await;
        Self {
            shadow,
            sent,
            controllers,
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_agrees_with_the_writer_through_churn_and_writes_nothing() -> anyhow::Result<()> {
    let mut writer = Scenario::web(web_pods(4)).start(options()).run().await?;
    let shadow = ShadowRun::start(&writer.cluster, Duration::from_millis(500)).await;

    // Churn: scale up and down, flap readiness, relabel a pod out of the Service.
    let churn = Scenario::new()
        .create(web_pod("web-9", "10.0.0.9").ready(false))
        .pod_not_ready("web-0")
        .delete_pod("web-1")
        .pod_ready("web-0")
        .patch_pod("web-2", json!({"metadata": {"labels": {"app": "other"}}}))
        .planned_slices("web")
        .planned_endpoints("web");
    writer.resume(churn).await?;

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
    shadow.controllers.stop().await;
    writer.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_reports_a_foreign_edit_the_writer_cannot_repair() -> anyhow::Result<()> {
    let writer = Scenario::web(web_pods(3))
        .start(options())
        .planned_slices("web")
        .run()
        .await?;
    let cluster = &writer.cluster;
    let shadow = ShadowRun::start(cluster, Duration::from_millis(300)).await;

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
    shadow.controllers.stop().await;
    writer.stop().await;
    Ok(())
}
