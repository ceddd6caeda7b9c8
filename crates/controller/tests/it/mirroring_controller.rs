//! The live EndpointSlice mirroring controller against the embedded API server: hand-written
//! Endpoints of selector-less Services are mirrored into slices, and the slices go when the
//! Endpoints opts out, becomes a leader-election record, is deleted, or its Service gains a
//! selector. Addresses beyond the per-subset cap are left out and reported on the Endpoints.
//!
//! Each test starts its own server and controllers; waits poll the API with a deadline.

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use reconcile::endpoints::LEADER_ANNOTATION;
use reconcile::labels::{MIRRORING_CONTROLLER_NAME, SERVICE_NAME, SKIP_MIRROR, SLICE_MANAGED_BY};
use serde_json::json;
use testkit::{eventually, mirroring_only, pretty, service, Controllers, TestCluster};

const NS: &str = "default";

/// An Endpoints object `ext` with the given ready and not-ready IPs on port 9000.
fn ext_endpoints(ready: &[&str], not_ready: &[&str]) -> Endpoints {
    let addresses = |ips: &[&str]| ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>();
    serde_json::from_value(json!({
        "metadata": {"name": "ext", "namespace": NS, "labels": {"team": "db"}},
        "subsets": [{
            "addresses": addresses(ready),
            "notReadyAddresses": addresses(not_ready),
            "ports": [{"name": "db", "port": 9000, "protocol": "TCP"}],
        }],
    }))
    .expect("a valid Endpoints object")
}

/// Creates the selector-less Service `ext` and its hand-written Endpoints.
async fn ext(cluster: &TestCluster, endpoints: &Endpoints) -> anyhow::Result<()> {
    cluster
        .create_service(&service("ext").port("db", 9000, 9000))
        .await?;
    cluster
        .endpoints(NS)
        .create(&PostParams::default(), endpoints)
        .await?;
    Ok(())
}

/// The slices mirrored for `name`.
async fn mirrored(cluster: &TestCluster, name: &str) -> anyhow::Result<Vec<EndpointSlice>> {
    let selector = format!("{SERVICE_NAME}={name},{SLICE_MANAGED_BY}={MIRRORING_CONTROLLER_NAME}");
    Ok(cluster
        .slices(NS)
        .list(&ListParams::default().labels(&selector))
        .await?
        .items)
}

/// Waits until the slices mirrored for `name` satisfy `done`, and returns them.
async fn wait_for_mirrored(
    cluster: &TestCluster,
    name: &str,
    what: &str,
    done: impl Fn(&[EndpointSlice]) -> bool,
) -> Vec<EndpointSlice> {
    eventually(&format!("slices mirrored for {name}: {what}"), || {
        let listed = mirrored(cluster, name);
        let done = &done;
        async move {
            let slices = listed.await.map_err(|e| e.to_string())?;
            if done(&slices) {
                Ok(slices)
            } else {
                Err(pretty(&slices))
            }
        }
    })
    .await
}

/// (address, ready) of every endpoint of the slices, sorted.
fn endpoint_ips(slices: &[EndpointSlice]) -> Vec<(String, bool)> {
    let mut ips: Vec<(String, bool)> = slices
        .iter()
        .flat_map(|s| &s.endpoints)
        .flat_map(|e| {
            let ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false);
            e.addresses.iter().map(move |a| (a.clone(), ready))
        })
        .collect();
    ips.sort();
    ips
}

/// Starts the mirroring controller and waits for `ext`'s slice with three endpoints.
async fn mirrored_ext(cluster: &TestCluster) -> anyhow::Result<Controllers> {
    ext(
        cluster,
        &ext_endpoints(&["10.1.0.1", "10.1.0.2"], &["10.1.0.3"]),
    )
    .await?;
    let controllers = cluster.run_controllers(mirroring_only()).await;
    wait_for_mirrored(cluster, "ext", "three endpoints", |s| {
        endpoint_ips(s).len() == 3
    })
    .await;
    Ok(controllers)
}

async fn wait_for_no_mirrored(cluster: &TestCluster, what: &str) {
    wait_for_mirrored(cluster, "ext", what, <[EndpointSlice]>::is_empty).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_of_a_selectorless_service_are_mirrored_into_a_slice_it_owns(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let controllers = mirrored_ext(&cluster).await?;
    let slices = mirrored(&cluster, "ext").await?;
    assert_eq!(slices.len(), 1, "{}", pretty(&slices));
    let slice = &slices[0];
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(
        endpoint_ips(&slices),
        [
            ("10.1.0.1".to_owned(), true),
            ("10.1.0.2".to_owned(), true),
            ("10.1.0.3".to_owned(), false),
        ]
    );
    let ports = slice.ports.clone().unwrap_or_default();
    assert_eq!(ports.len(), 1);
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].port),
        (Some("db"), Some(9000))
    );
    let labels = slice.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("db"));
    let owner = slice.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owner.len(), 1);
    assert_eq!(
        (owner[0].kind.as_str(), owner[0].name.as_str()),
        ("Endpoints", "ext")
    );
    assert_eq!(
        controllers.metric(
            "endpoint_slice_mirroring_controller_changes",
            &[("operation", "create")]
        ),
        1.0
    );
    assert_eq!(
        controllers.metric("endpoint_slice_mirroring_controller_endpoints_desired", &[]),
        3.0
    );
    controllers.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_endpoints_object_updates_its_mirrored_slice_in_place() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let controllers = mirrored_ext(&cluster).await?;
    let before = mirrored(&cluster, "ext").await?;
    let changed = ext_endpoints(&["10.1.0.1", "10.1.0.4"], &[]);
    cluster
        .endpoints(NS)
        .replace("ext", &PostParams::default(), &{
            let current = cluster.endpoints(NS).get("ext").await?;
            Endpoints {
                metadata: current.metadata,
                ..changed
            }
        })
        .await?;
    let after = wait_for_mirrored(&cluster, "ext", "10.1.0.1 and 10.1.0.4", |s| {
        endpoint_ips(s) == [("10.1.0.1".to_owned(), true), ("10.1.0.4".to_owned(), true)]
    })
    .await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].metadata.name, before[0].metadata.name);
    controllers.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_that_opt_out_with_the_skip_mirror_label_lose_their_mirrored_slices(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let controllers = mirrored_ext(&cluster).await?;
    let patch = json!({"metadata": {"labels": {SKIP_MIRROR: "true"}}});
    cluster
        .endpoints(NS)
        .patch("ext", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for_no_mirrored(&cluster, "none after skip-mirror").await;
    controllers.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_turned_into_a_leader_election_record_lose_their_mirrored_slices(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let controllers = mirrored_ext(&cluster).await?;
    let patch =
        json!({"metadata": {"annotations": {LEADER_ANNOTATION: "{\"holderIdentity\":\"a\"}"}}});
    cluster
        .endpoints(NS)
        .patch("ext", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for_no_mirrored(&cluster, "none once a leader record").await;
    controllers.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_gains_a_selector_loses_its_mirrored_slices() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let controllers = mirrored_ext(&cluster).await?;
    cluster
        .patch_service(NS, "ext", json!({"spec": {"selector": {"app": "db"}}}))
        .await?;
    wait_for_no_mirrored(&cluster, "none once the Service selects pods").await;
    controllers.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_endpoints_deletes_its_mirrored_slices() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let controllers = mirrored_ext(&cluster).await?;
    cluster
        .endpoints(NS)
        .delete("ext", &DeleteParams::default())
        .await?;
    wait_for_no_mirrored(&cluster, "none once the Endpoints is gone").await;
    // The garbage collector may remove the slices before the controller's own sync has run;
    // the controller forgets the Endpoints' figures in that sync.
    eventually("the desired-endpoints gauge to drop to 0", || {
        let desired =
            controllers.metric("endpoint_slice_mirroring_controller_endpoints_desired", &[]);
        async move {
            (desired == 0.0)
                .then_some(())
                .ok_or_else(|| format!("still {desired}"))
        }
    })
    .await;
    controllers.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirrored_slice_deleted_by_someone_else_is_written_again() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    let controllers = mirrored_ext(&cluster).await?;
    let first = mirrored(&cluster, "ext").await?;
    let name = first[0].metadata.name.clone().unwrap_or_default();
    // The slice is visible as soon as the server stored it, but only a slice the controller
    // knows it wrote (its tracker learns that when the create answers) is worth replacing;
    // on a busy machine the delete could otherwise come first.
    eventually("the controller to record its create", || {
        let created = controllers.metric(
            "endpoint_slice_mirroring_controller_changes",
            &[("operation", "create")],
        );
        async move {
            (created >= 1.0)
                .then_some(())
                .ok_or(format!("{created} creates"))
        }
    })
    .await;
    cluster
        .slices(NS)
        .delete(&name, &DeleteParams::default())
        .await?;
    wait_for_mirrored(&cluster, "ext", "a new slice with three endpoints", |s| {
        s.len() == 1 && s[0].metadata.name.as_deref() != Some(&name) && endpoint_ips(s).len() == 3
    })
    .await;
    controllers.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addresses_beyond_the_per_subset_cap_are_left_out_and_reported_on_the_endpoints(
) -> anyhow::Result<()> {
    let cluster = TestCluster::start().await;
    ext(
        &cluster,
        &ext_endpoints(&["10.1.0.1", "10.1.0.2", "10.1.0.3"], &[]),
    )
    .await?;
    let mut options = mirroring_only();
    options.settings.mirroring_max_endpoints_per_subset = 2;
    let controllers = cluster.run_controllers(options).await;
    let slices = wait_for_mirrored(&cluster, "ext", "two endpoints", |s| {
        endpoint_ips(s).len() == 2
    })
    .await;
    assert_eq!(slices.len(), 1);
    let event = cluster
        .wait_for_event(NS, "ext", "TooManyAddressesToMirror")
        .await;
    assert_eq!(event.involved_object.kind.as_deref(), Some("Endpoints"));
    assert_eq!(
        event.source.and_then(|s| s.component).as_deref(),
        Some("endpoint-slice-mirroring-controller")
    );
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    controllers.stop().await;
    Ok(())
}
