//! The live EndpointSlice mirroring controller against the embedded API server: hand-written
//! Endpoints of selector-less Services are mirrored into slices, and the slices go when the
//! Endpoints opts out, becomes a leader-election record, is deleted, or its Service gains a
//! selector. Addresses beyond the per-subset cap are left out and reported on the Endpoints.
//!
//! Each test is a scenario on its own server and controllers; waits wake on the server's
//! writes, with a deadline.

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use reconcile::endpoints::LEADER_ANNOTATION;
use reconcile::labels::SKIP_MIRROR;
use serde_json::json;
use testkit::scenario::{metric_holds, mirrored, warning, Scenario};
use testkit::{mirroring_only, service, Manager};

/// The slices a test waits for: those mirrored for `ext`.
const EXT: &str = "ext";

/// An Endpoints object `ext` with the given ready and not-ready IPs on port 9000.
fn ext_endpoints(ready: &[&str], not_ready: &[&str]) -> Endpoints {
    let addresses = |ips: &[&str]| ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>();
    serde_json::from_value(json!({
        "metadata": {"name": "ext", "labels": {"team": "db"}},
        "subsets": [{
            "addresses": addresses(ready),
            "notReadyAddresses": addresses(not_ready),
            "ports": [{"name": "db", "port": 9000, "protocol": "TCP"}],
        }],
    }))
    .expect("a valid Endpoints object")
}

/// The selector-less Service `ext` and its hand-written Endpoints.
fn ext(endpoints: Endpoints) -> Scenario {
    Scenario::new()
        .create(service("ext").port("db", 9000, 9000))
        .create(endpoints)
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

/// `ext` with two ready and one not-ready address under the mirroring controller, until its
/// slice holds the three; the slices are kept under "three endpoints".
fn mirrored_ext() -> Scenario {
    ext(ext_endpoints(&["10.1.0.1", "10.1.0.2"], &["10.1.0.3"]))
        .start(mirroring_only())
        .slices(mirrored(EXT), "three endpoints", |s| {
            endpoint_ips(s).len() == 3
        })
}

/// [`mirrored_ext`], then `change`, until `ext` has no mirrored slice left.
fn mirrored_ext_until_unmirrored(
    what: &str,
    change: impl FnOnce(Scenario) -> Scenario,
) -> Scenario {
    change(mirrored_ext()).slices(mirrored(EXT), what, <[EndpointSlice]>::is_empty)
}

/// Runs [`mirrored_ext_until_unmirrored`] and stops the controllers.
async fn unmirrored_after(
    what: &str,
    change: impl FnOnce(Scenario) -> Scenario,
) -> anyhow::Result<()> {
    mirrored_ext_until_unmirrored(what, change)
        .stop()
        .run_to_end()
        .await
}

/// The mirroring controller's gauge of the endpoints it wants mirrored.
const DESIRED: &str = "endpoint_slice_mirroring_controller_endpoints_desired";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_of_a_selectorless_service_are_mirrored_into_a_slice_it_owns(
) -> anyhow::Result<()> {
    let run = mirrored_ext()
        .check(|run| {
            let controllers = run.controllers();
            let changes = Manager::Mirroring.changes_metric();
            assert_eq!(controllers.metric(changes, &[("operation", "create")]), 1.0);
            assert_eq!(controllers.metric(DESIRED, &[]), 3.0);
        })
        .stop()
        .run()
        .await?;
    let slices = run.slices("three endpoints");
    assert_eq!(slices.len(), 1, "{}", testkit::pretty(&slices));
    let slice = &slices[0];
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(
        endpoint_ips(slices),
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
    assert_eq!(slice.labels().get("team").map(String::as_str), Some("db"));
    let owner = slice.owner_references();
    assert_eq!(owner.len(), 1);
    assert_eq!(
        (owner[0].kind.as_str(), owner[0].name.as_str()),
        ("Endpoints", "ext")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_endpoints_object_updates_its_mirrored_slice_in_place() -> anyhow::Result<()> {
    let changed = ext_endpoints(&["10.1.0.1", "10.1.0.4"], &[]);
    let run = mirrored_ext()
        .patch_endpoints("ext", json!({"subsets": changed.subsets}))
        .slices(mirrored(EXT), "10.1.0.1 and 10.1.0.4", |s| {
            endpoint_ips(s) == [("10.1.0.1".to_owned(), true), ("10.1.0.4".to_owned(), true)]
        })
        .stop()
        .run()
        .await?;
    let (before, after) = (
        run.slices("three endpoints"),
        run.slices("10.1.0.1 and 10.1.0.4"),
    );
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].metadata.name, before[0].metadata.name);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_that_opt_out_with_the_skip_mirror_label_lose_their_mirrored_slices(
) -> anyhow::Result<()> {
    let skip = json!({"metadata": {"labels": {SKIP_MIRROR: "true"}}});
    unmirrored_after("none after skip-mirror", |s| s.patch_endpoints("ext", skip)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_turned_into_a_leader_election_record_lose_their_mirrored_slices(
) -> anyhow::Result<()> {
    let record =
        json!({"metadata": {"annotations": {LEADER_ANNOTATION: "{\"holderIdentity\":\"a\"}"}}});
    unmirrored_after("none once a leader record", |s| {
        s.patch_endpoints("ext", record)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_gains_a_selector_loses_its_mirrored_slices() -> anyhow::Result<()> {
    let selector = json!({"spec": {"selector": {"app": "db"}}});
    unmirrored_after("none once the Service selects pods", |s| {
        s.patch_service("ext", selector)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_endpoints_deletes_its_mirrored_slices() -> anyhow::Result<()> {
    mirrored_ext_until_unmirrored("none once the Endpoints is gone", |s| {
        s.delete_endpoints("ext")
    })
    // The garbage collector may remove the slices before the controller's own sync has run;
    // the controller forgets the Endpoints' figures in that sync.
    .until(
        "the desired-endpoints gauge to drop to 0",
        metric_holds(DESIRED, &[], |n| n == 0.0),
    )
    .stop()
    .run_to_end()
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirrored_slice_deleted_by_someone_else_is_written_again() -> anyhow::Result<()> {
    mirrored_ext()
        .slice_written_again(mirrored(EXT), "a new slice with the three endpoints")
        .stop()
        .run_to_end()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addresses_beyond_the_per_subset_cap_are_left_out_and_reported_on_the_endpoints(
) -> anyhow::Result<()> {
    let mut options = mirroring_only();
    options.settings.mirroring_max_endpoints_per_subset = 2;
    let run = ext(ext_endpoints(&["10.1.0.1", "10.1.0.2", "10.1.0.3"], &[]))
        .start(options)
        .slices(mirrored(EXT), "two endpoints", |s| {
            endpoint_ips(s).len() == 2
        })
        .event(
            warning("ext", "TooManyAddressesToMirror")
                .by("endpoint-slice-mirroring-controller")
                .about("Endpoints"),
        )
        .stop()
        .run()
        .await?;
    assert_eq!(run.slices("two endpoints").len(), 1);
    Ok(())
}
