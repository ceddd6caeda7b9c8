//! Each controller writes through a client of its own, with its own `--kube-api-qps` and
//! `--kube-api-burst` budget, as in kube-controller-manager: a controller that has spent its
//! budget on a burst of work holds back only its own writes.
//!
//! The budgets are made so small that a spent one refills only after the test is over; which
//! writes went through is then a matter of counting, not of timing.
//!
//! With `--use-service-account-credentials` the clients carry a ServiceAccount's token each,
//! which they renew when the API server stops accepting it.

use std::time::Duration;

use apiserver::{ApiServer, FaultResponse};
use controller::service_accounts::Identity;
use controller::{Clients, Options};
use reconcile::labels::{MIRRORING_CONTROLLER_NAME, SERVICE_NAME, SLICE_CONTROLLER_NAME};
use testkit::mirroring::{hand_written, slices_managed_by};
use testkit::{
    eventually, options, pod_names, pretty, service, web_pod, Controllers, OverTcp, TestCluster,
};

const NS: &str = "default";
/// Services the EndpointSlice controller must write a slice for.
const SERVICES: usize = 20;
/// A token every thousand seconds: once its burst of one is spent, a client is stalled for
/// the rest of the test.
const STALLED_QPS: f64 = 0.001;

/// Waits until `controller` manages exactly `count` slices in the namespace.
async fn wait_for_managed_count(cluster: &TestCluster, controller: &str, count: usize) {
    eventually(&format!("{count} slices managed by {controller}"), || {
        let listed = slices_managed_by(cluster, NS, controller);
        async move {
            let slices = listed.await.map_err(|e| e.to_string())?;
            if slices.len() == count {
                Ok(())
            } else {
                Err(pretty(&slices))
            }
        }
    })
    .await;
}

/// A cluster, its request log on, whose controllers run on clients built as
/// `--use-service-account-credentials=true` builds them and have published the first pod of
/// the `web` Service.
struct ServiceAccountRun {
    cluster: TestCluster,
    /// Never stopped: the test's runtime ends them.
    _controllers: Controllers,
    /// Serves the cluster to the clients until dropped.
    _over_tcp: OverTcp,
}

impl ServiceAccountRun {
    /// `prepare` sets the server up (a token lifetime, faults) before the clients are built.
    async fn start(prepare: impl FnOnce(&ApiServer)) -> anyhow::Result<Self> {
        let cluster = TestCluster::start().await;
        cluster.server.record_requests(true);
        prepare(&cluster.server);
        let (clients, over_tcp) = cluster.service_account_clients().await?;
        let controllers = cluster.run_controllers_with(options(), clients).await;
        cluster.create_web(&[web_pod("web-1", "10.0.0.1")]).await?;
        cluster
            .wait_for_slices(NS, "web", "one pod", |s| pod_names(s) == ["web-1"])
            .await;
        Ok(Self {
            cluster,
            _controllers: controllers,
            _over_tcp: over_tcp,
        })
    }
}

#[tokio::test]
async fn a_controller_that_spent_its_budget_does_not_hold_back_another_controllers_writes(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    for n in 0..SERVICES {
        cluster
            .create_service(
                &service(&format!("web-{n}"))
                    .selector("app", "web")
                    .port("http", 80, 8080),
            )
            .await?;
    }
    let unlimited = cluster.client.clone();
    let clients = Clients {
        informers: unlimited.clone().into(),
        endpoints: unlimited.clone(),
        endpoint_slices: cluster.limited_client(STALLED_QPS, 1),
        mirroring: cluster.limited_client(STALLED_QPS, 1),
        leader_election: unlimited,
        wire: controller::wire::Negotiated::default(),
    };
    let options = Options {
        endpoints: false,
        mirroring: true,
        ..options()
    };
    // The controllers are never stopped: a stop waits for in-flight syncs, and the
    // EndpointSlice controller's stay blocked on its budget; the test's runtime ends them.
    let _controllers = cluster.run_controllers_with(options, clients).await;

    // The EndpointSlice controller writes one slice with its burst; the other nineteen
    // Services' writes wait for tokens that will not come during the test.
    wait_for_managed_count(&cluster, SLICE_CONTROLLER_NAME, 1).await;

    // Now the mirroring controller has work: it spends its own token at once. On a shared
    // budget its write would queue behind the EndpointSlice controller's.
    let ext = hand_written("ext").address("10.1.0.1").port("db", 9000);
    ext.create_service(&cluster).await?;
    ext.create_endpoints(&cluster).await?;
    wait_for_managed_count(&cluster, MIRRORING_CONTROLLER_NAME, 1).await;
    let mirrored = slices_managed_by(&cluster, NS, MIRRORING_CONTROLLER_NAME).await?;
    let labels = mirrored[0].metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get(SERVICE_NAME).map(String::as_str), Some("ext"));

    // ... while the EndpointSlice controller still has all but one of its writes queued.
    let written = slices_managed_by(&cluster, NS, SLICE_CONTROLLER_NAME).await?;
    assert_eq!(written.len(), 1, "{}", pretty(&written));
    Ok(())
}

/// Tokens that expire after two seconds: once they have, the controllers' next requests get
/// 401, their tokens are renewed, and the retried syncs write what the cluster now asks for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_tokens_refused_as_expired_are_renewed_and_the_writes_go_on(
) -> anyhow::Result<()> {
    let run = ServiceAccountRun::start(|server| {
        server.set_token_lifetime_cap(Some(Duration::from_secs(2)));
    })
    .await?;
    let cluster = &run.cluster;
    // Past the tokens' life: the next writes are refused until the tokens are renewed.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    cluster.create_pod(&web_pod("web-2", "10.0.0.2")).await?;
    cluster
        .wait_for_slices(NS, "web", "two pods", |s| {
            pod_names(s) == ["web-1", "web-2"]
        })
        .await;
    cluster.wait_for_planned_endpoints(NS, "web").await;

    let log = cluster.server.request_log();
    let refused = log.iter().filter(|r| r.code == 401).count();
    assert!(
        refused > 0,
        "no request was refused: the tokens did not expire"
    );
    let renewed = |account: &str| {
        log.iter()
            .filter(|r| {
                r.resource == "serviceaccounts"
                    && r.subresource.as_deref() == Some("token")
                    && r.name.as_deref() == Some(account)
                    && r.succeeded()
            })
            .count()
    };
    assert!(
        renewed("endpointslice-controller") >= 2,
        "the EndpointSlice controller's token was not renewed"
    );
    let slice_writer = Some(Identity::EndpointSlices.username());
    assert!(
        log.iter().any(|r| r.resource == "endpointslices"
            && r.verb == "update"
            && r.succeeded()
            && r.user == slice_writer),
        "the slice was not rewritten with the renewed token"
    );
    Ok(())
}

/// A cluster whose RBAC does not let the process's own identity mint tokens (deploy/ rather
/// than the service-account-credentials overlay): the controllers still run, every one as the
/// --kubeconfig identity, rather than not at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_rights_to_mint_tokens_every_controller_acts_as_the_kubeconfig_identity(
) -> anyhow::Result<()> {
    let run = ServiceAccountRun::start(|server| {
        server
            .faults()
            .fail_with("*", "serviceaccounts", 1.0, FaultResponse::Forbidden);
    })
    .await?;
    let cluster = &run.cluster;
    let log = cluster.server.request_log();
    assert!(log
        .iter()
        .any(|r| r.resource == "serviceaccounts" && r.code == 403));
    assert!(log
        .iter()
        .filter(|r| r.resource == "endpointslices" && r.is_write())
        .all(|r| r.user.is_none()));
    Ok(())
}
