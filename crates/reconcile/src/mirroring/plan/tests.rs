use super::*;
use crate::endpoints::LEADER_ANNOTATION;
use crate::event::EventType;
use crate::kube_version::{KubeVersion, VersionRules};
use crate::labels::{LAST_APPLIED_CONFIG, SKIP_MIRROR};
use crate::mirroring::CleanupReason;
use crate::projection::ServiceInfo;
use crate::testing::{endpoints, service, subset, EndpointsBuilder};
use crate::trigger_time::ANNOTATION as TRIGGER_TIME;
use k8s_openapi::api::discovery::v1::{EndpointConditions, EndpointPort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

fn selectorless() -> ServiceInfo {
    service("ext").no_selector().build()
}

fn plan_with(
    svc: Option<&ServiceInfo>,
    ep: Option<&Endpoints>,
    existing: &[Arc<EndpointSlice>],
    max: usize,
) -> MirroringPlan {
    plan_mirroring(&MirroringInput {
        service: svc,
        endpoints: ep,
        existing,
        max_endpoints_per_subset: max,
        rules: VersionRules::default(),
    })
}

fn plan(ep: &Endpoints, existing: &[Arc<EndpointSlice>]) -> MirroringPlan {
    plan_with(Some(&selectorless()), Some(ep), existing, 1000)
}

/// The slice as the API server stores it after the create: with a name.
fn stored(mut slice: EndpointSlice, name: &str) -> Arc<EndpointSlice> {
    slice.metadata.name = Some(name.into());
    Arc::new(slice)
}

/// Mirrors `ep` from scratch and stores the result under `ext-1`, `ext-2`, ...
fn mirrored(ep: &Endpoints) -> Vec<Arc<EndpointSlice>> {
    let p = plan(ep, &[]);
    assert!(p.update.is_empty() && p.delete.is_empty());
    p.create
        .into_iter()
        .enumerate()
        .map(|(i, s)| stored(s, &format!("ext-{}", i + 1)))
        .collect()
}

fn ips(slice: &EndpointSlice) -> Vec<&str> {
    slice
        .endpoints
        .iter()
        .map(|e| e.addresses[0].as_str())
        .collect()
}

fn names(slices: &[Arc<EndpointSlice>]) -> Vec<&str> {
    slices
        .iter()
        .filter_map(|s| s.metadata.name.as_deref())
        .collect()
}

fn db(ips_ready: &[&str], ips_not_ready: &[&str]) -> EndpointsBuilder {
    db_on_port(8080, ips_ready, ips_not_ready)
}

/// Endpoints `ext` labelled `team=db`, one subset of these addresses on port `http`.
fn db_on_port(port: i32, ips_ready: &[&str], ips_not_ready: &[&str]) -> EndpointsBuilder {
    let mut s = subset().port("http", port);
    for ip in ips_ready {
        s = s.ready(ip);
    }
    for ip in ips_not_ready {
        s = s.not_ready(ip);
    }
    endpoints("ext").label("team", "db").subset(s)
}

/// Endpoints `ext` with a subset on `http` (port 80) and one on `dns` (port 53).
fn http_and_dns(http_ip: &str, dns_ip: &str) -> Endpoints {
    endpoints("ext")
        .subset(subset().ready(http_ip).port("http", 80))
        .subset(subset().ready(dns_ip).port("dns", 53))
        .build()
}

/// The plan's one write, an update of the slice `ext-1`.
fn only_update_of_ext_1(p: &MirroringPlan) -> &EndpointSlice {
    assert!(p.create.is_empty() && p.delete.is_empty());
    assert_eq!(p.update.len(), 1);
    let slice = &p.update[0];
    assert_eq!(slice.metadata.name.as_deref(), Some("ext-1"));
    slice
}

#[test]
fn new_endpoints_are_mirrored_into_one_slice_owned_by_the_endpoints() {
    let ep = db(&["192.168.0.10"], &["192.168.0.99"]).build();
    let p = plan(&ep, &[]);
    assert_eq!(p.action, MirroringAction::Mirror);
    let ready = |r: bool| {
        Some(EndpointConditions {
            ready: Some(r),
            serving: None,
            terminating: None,
        })
    };
    let want = EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some("ext-".into()),
            namespace: Some("default".into()),
            labels: Some(
                [
                    ("team", "db"),
                    ("kubernetes.io/service-name", "ext"),
                    (
                        "endpointslice.kubernetes.io/managed-by",
                        "endpointslicemirroring-controller.k8s.io",
                    ),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            ),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Endpoints".into(),
                name: "ext".into(),
                uid: "uid-ep-ext".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints: vec![
            Endpoint {
                addresses: vec!["192.168.0.10".into()],
                conditions: ready(true),
                ..Default::default()
            },
            Endpoint {
                addresses: vec!["192.168.0.99".into()],
                conditions: ready(false),
                ..Default::default()
            },
        ],
        ports: Some(vec![EndpointPort {
            name: Some("http".into()),
            port: Some(8080),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }]),
    };
    assert_eq!(p.create, vec![want]);
    assert!(p.update.is_empty() && p.delete.is_empty() && p.events.is_empty());
    let figures = p.figures.unwrap();
    assert_eq!(
        (
            figures.endpoints_added,
            figures.endpoints_updated,
            figures.endpoints_removed
        ),
        (2, 0, 0)
    );
    assert_eq!(
        figures
            .groups
            .values()
            .map(|g| (g.endpoints, g.slices))
            .collect::<Vec<_>>(),
        vec![(2, 1), (0, 0)],
        "the subset's empty IPv6 group is reported too"
    );
}

#[test]
fn address_types_come_from_each_ip_and_get_a_slice_each() {
    let ep = endpoints("ext")
        .subset(subset().ready("10.0.0.1").ready("fd00::1").port("http", 80))
        .build();
    let p = plan(&ep, &[]);
    let types: Vec<(&str, Vec<&str>)> = p
        .create
        .iter()
        .map(|s| (s.address_type.as_str(), ips(s)))
        .collect();
    assert_eq!(
        types,
        vec![("IPv4", vec!["10.0.0.1"]), ("IPv6", vec!["fd00::1"])]
    );
}

#[test]
fn each_subset_with_its_own_ports_gets_its_own_slice() {
    let p = plan(&http_and_dns("10.0.0.1", "10.0.0.2"), &[]);
    let mut got: Vec<(Option<String>, Vec<&str>)> = p
        .create
        .iter()
        .map(|s| (s.ports.as_ref().unwrap()[0].name.clone(), ips(s)))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (Some("dns".into()), vec!["10.0.0.2"]),
            (Some("http".into()), vec!["10.0.0.1"]),
        ]
    );
}

#[test]
fn corpus_case_adding_an_address_updates_the_one_mirrored_slice() {
    // public-dyn-mirroring: the Endpoints gains 192.168.0.50; upstream wrote one update.
    let before = db(
        &[
            "192.168.0.10",
            "192.168.0.11",
            "192.168.0.12",
            "192.168.0.13",
        ],
        &["192.168.0.99"],
    )
    .build();
    let existing = mirrored(&before);
    let after = db(
        &[
            "192.168.0.10",
            "192.168.0.11",
            "192.168.0.12",
            "192.168.0.13",
            "192.168.0.50",
        ],
        &["192.168.0.99"],
    )
    .build();
    let p = plan(&after, &existing);
    let slice = only_update_of_ext_1(&p);
    assert_eq!(slice.endpoints.len(), 6);
    assert!(ips(slice).contains(&"192.168.0.50"));
    let figures = p.figures.unwrap();
    assert_eq!(
        (
            figures.endpoints_added,
            figures.endpoints_updated,
            figures.endpoints_removed
        ),
        (1, 0, 0)
    );
}

#[test]
fn unchanged_endpoints_write_nothing() {
    let ep = db(&["10.0.0.1", "fd00::1"], &["10.0.0.2"])
        .annotation("owner", "team-db")
        .build();
    let existing = mirrored(&ep);
    assert_eq!(existing.len(), 2);
    let p = plan(&ep, &existing);
    assert_eq!(p.write_count(), 0);
    assert!(p.events.is_empty());
}

#[test]
fn changed_readiness_updates_the_slice_and_counts_updated_endpoints() {
    let existing = mirrored(&db(&["10.0.0.1", "10.0.0.2"], &[]).build());
    let p = plan(&db(&["10.0.0.1"], &["10.0.0.2"]).build(), &existing);
    assert_eq!(p.update.len(), 1);
    let figures = p.figures.unwrap();
    assert_eq!(
        (
            figures.endpoints_added,
            figures.endpoints_updated,
            figures.endpoints_removed
        ),
        (0, 1, 0)
    );
}

#[test]
fn removed_addresses_are_counted_as_removed() {
    let existing = mirrored(&db(&["10.0.0.1", "10.0.0.2"], &[]).build());
    let p = plan(&db(&["10.0.0.1"], &[]).build(), &existing);
    assert_eq!(ips(&p.update[0]), vec!["10.0.0.1"]);
    assert_eq!(p.figures.unwrap().endpoints_removed, 1);
}

#[test]
fn drifted_labels_or_annotations_update_the_slice() {
    let ep = db(&["10.0.0.1"], &[]).build();
    let existing = mirrored(&ep);

    let relabelled = db(&["10.0.0.1"], &[]).label("team", "web").build();
    let p = plan(&relabelled, &existing);
    assert_eq!(p.update.len(), 1);
    assert_eq!(p.update[0].metadata.labels.as_ref().unwrap()["team"], "web");

    let annotated = db(&["10.0.0.1"], &[]).annotation("owner", "a").build();
    let p = plan(&annotated, &existing);
    assert_eq!(p.update.len(), 1);
    assert_eq!(
        p.update[0].metadata.annotations.as_ref().unwrap()["owner"],
        "a"
    );

    let mut hand_edited = EndpointSlice::clone(&existing[0]);
    hand_edited
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("added".into(), "by-hand".into());
    let p = plan(&ep, &[Arc::new(hand_edited)]);
    assert_eq!(
        p.update.len(),
        1,
        "a label added to the slice by hand is removed"
    );
    assert!(!p.update[0]
        .metadata
        .labels
        .as_ref()
        .unwrap()
        .contains_key("added"));
}

#[test]
fn trigger_time_and_last_applied_annotations_changing_alone_write_nothing() {
    let ep = db(&["10.0.0.1"], &[]).build();
    let existing = mirrored(&ep);
    let touched = db(&["10.0.0.1"], &[])
        .annotation(TRIGGER_TIME, "2026-01-01T00:00:00Z")
        .annotation(LAST_APPLIED_CONFIG, "{}")
        .build();
    assert_eq!(plan(&touched, &existing).write_count(), 0);
}

#[test]
fn extra_slices_of_a_group_are_deleted_and_the_first_by_name_is_kept() {
    let ep = db(&["10.0.0.1"], &[]).build();
    let one = mirrored(&ep).remove(0);
    let existing = vec![
        stored(EndpointSlice::clone(&one), "ext-b"),
        stored(EndpointSlice::clone(&one), "ext-a"),
    ];
    let p = plan(&ep, &existing);
    assert!(p.update.is_empty() && p.create.is_empty());
    assert_eq!(names(&p.delete), vec!["ext-b"]);
}

#[test]
fn changed_ports_recycle_the_old_slice_instead_of_create_and_delete() {
    let existing = mirrored(&db(&["10.0.0.1"], &[]).build());
    let moved = db_on_port(9090, &["10.0.0.1"], &[]).build();
    let p = plan(&moved, &existing);
    let slice = only_update_of_ext_1(&p);
    assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(9090));
}

#[test]
fn slices_are_never_recycled_across_address_types() {
    let existing = mirrored(&db(&["10.0.0.1"], &[]).build());
    let p = plan(&db(&["fd00::1"], &[]).build(), &existing);
    assert_eq!(p.create.len(), 1);
    assert_eq!(p.create[0].address_type, "IPv6");
    assert_eq!(names(&p.delete), vec!["ext-1"]);
    assert_eq!(
        p.figures.unwrap().endpoints_removed,
        1,
        "the emptied IPv4 group of the same ports counts its endpoints as removed"
    );
}

#[test]
fn slices_of_groups_no_longer_wanted_are_deleted_without_counting_removals() {
    let existing = mirrored(&db(&["10.0.0.1"], &[]).build());
    let mut fqdn = EndpointSlice::clone(&existing[0]);
    fqdn.address_type = "FQDN".into();
    let existing = vec![Arc::clone(&existing[0]), stored(fqdn, "ext-fqdn")];
    let p = plan(&db(&["10.0.0.1"], &[]).build(), &existing);
    assert_eq!(names(&p.delete), vec!["ext-fqdn"]);
    assert_eq!(p.figures.unwrap().endpoints_removed, 0);
}

#[test]
fn endpoints_with_no_addresses_delete_their_slices() {
    let existing = mirrored(&db(&["10.0.0.1", "10.0.0.2"], &[]).build());
    let emptied = endpoints("ext").label("team", "db").build();
    let p = plan(&emptied, &existing);
    assert_eq!(p.action, MirroringAction::Mirror);
    assert_eq!(names(&p.delete), vec!["ext-1"]);
    assert!(p.create.is_empty() && p.update.is_empty());
}

#[test]
fn endpoints_being_deleted_get_no_new_slices_but_still_updates_and_deletes() {
    let ep = db(&["10.0.0.1"], &[]).deleting().build();
    let p = plan(&ep, &[]);
    assert!(p.create.is_empty());
    assert_eq!(p.figures.unwrap().endpoints_added, 1);

    let existing = mirrored(&db(&["10.0.0.1"], &[]).build());
    let p = plan(&db(&["10.0.0.2"], &[]).deleting().build(), &existing);
    assert_eq!(p.update.len(), 1);
}

#[test]
fn unmirrored_endpoints_have_their_slices_cleaned_up() {
    let existing = mirrored(&db(&["10.0.0.1"], &[]).build());
    let ep = db(&["10.0.0.1"], &[]).build();
    let skipped = db(&["10.0.0.1"], &[]).label(SKIP_MIRROR, "true").build();
    let leader = db(&["10.0.0.1"], &[])
        .annotation(LEADER_ANNOTATION, "{}")
        .build();
    let with_selector = service("ext").build();
    let svc = selectorless();
    let cases = [
        (None, None, CleanupReason::EndpointsMissing),
        (Some(&svc), Some(&skipped), CleanupReason::SkipMirrorLabel),
        (Some(&svc), Some(&leader), CleanupReason::LeaderElection),
        (None, Some(&ep), CleanupReason::ServiceMissing),
        (
            Some(&with_selector),
            Some(&ep),
            CleanupReason::ServiceHasSelector,
        ),
    ];
    for (svc, ep, reason) in cases {
        let p = plan_with(svc, ep, &existing, 1000);
        assert_eq!(p.action, MirroringAction::Cleanup(reason));
        assert_eq!(names(&p.delete), vec!["ext-1"], "{reason:?}");
        assert!(p.create.is_empty() && p.update.is_empty() && p.figures.is_none());
    }
}

#[test]
fn invalid_ip_addresses_are_skipped_with_a_warning_event() {
    let ep = db(&["10.0.0.1", "bogus", "10.0.0.300"], &[]).build();
    let p = plan(&ep, &[]);
    assert_eq!(ips(&p.create[0]), vec!["10.0.0.1"]);
    assert_eq!(
        p.events,
        vec![PlannedEvent::warning(
            "InvalidIPAddress",
            "Skipped 2 invalid IP addresses when mirroring to EndpointSlices"
        )]
    );
    assert_eq!(p.events[0].type_, EventType::Warning);
    assert_eq!(p.figures.unwrap().addresses_skipped, 2);
}

#[test]
fn addresses_beyond_the_per_subset_cap_are_skipped_with_a_warning_event() {
    let ep = db(&["10.0.0.1", "10.0.0.2", "10.0.0.3"], &["10.0.0.4"]).build();
    let p = plan_with(Some(&selectorless()), Some(&ep), &[], 2);
    assert_eq!(ips(&p.create[0]), vec!["10.0.0.1", "10.0.0.2"]);
    assert_eq!(
        p.events,
        vec![PlannedEvent::warning(
            "TooManyAddressesToMirror",
            "A max of 2 addresses can be mirrored to EndpointSlices per Endpoints subset. 2 addresses were skipped"
        )]
    );
    assert_eq!(p.figures.unwrap().addresses_skipped, 2);
}

#[test]
fn cap_event_counts_invalid_addresses_among_the_skipped_as_upstream_does() {
    let ep = db(&["1.bad", "10.0.0.1", "10.0.0.2", "10.0.0.3"], &[]).build();
    let p = plan_with(Some(&selectorless()), Some(&ep), &[], 2);
    let reasons: Vec<(&str, &str)> = p
        .events
        .iter()
        .map(|e| (e.reason.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(
        reasons,
        vec![
            (
                "InvalidIPAddress",
                "Skipped 1 invalid IP addresses when mirroring to EndpointSlices"
            ),
            (
                "TooManyAddressesToMirror",
                "A max of 2 addresses can be mirrored to EndpointSlices per Endpoints subset. 2 addresses were skipped"
            ),
        ]
    );
}

#[test]
fn writes_are_planned_as_creates_then_updates_then_deletes() {
    // One group updated (http), one created (IPv6 of http), one deleted (dns, whose IPv4 slice
    // is recycled by nothing since no IPv4 slice is created).
    let existing = mirrored(&http_and_dns("10.0.0.1", "10.0.0.9"));
    let after = endpoints("ext")
        .subset(
            subset()
                .ready("10.0.0.1")
                .ready("10.0.0.2")
                .ready("fd00::1")
                .port("http", 80),
        )
        .build();
    let p = plan(&after, &existing);
    assert_eq!(p.create.len(), 1);
    assert_eq!(p.create[0].address_type, "IPv6");
    assert_eq!(p.update.len(), 1);
    assert_eq!(ips(&p.update[0]), vec!["10.0.0.1", "10.0.0.2"]);
    assert_eq!(p.delete.len(), 1);
    assert_eq!(ips(&p.delete[0]), vec!["10.0.0.9"]);
    assert_eq!(p.write_count(), 3);
}

#[test]
fn mirroring_never_modifies_its_inputs() {
    let ep = db(&["10.0.0.2", "10.0.0.1"], &[]).build();
    let copy = ep.clone();
    let existing = mirrored(&db(&["10.0.0.3"], &[]).build());
    let existing_copy: Vec<EndpointSlice> =
        existing.iter().map(|s| EndpointSlice::clone(s)).collect();
    let _ = plan(&ep, &existing);
    assert_eq!(ep, copy);
    let after: Vec<EndpointSlice> = existing.iter().map(|s| EndpointSlice::clone(s)).collect();
    assert_eq!(after, existing_copy);
}

#[test]
fn hand_edited_endpoint_fields_are_put_back() {
    let ep = db(&["10.0.0.1"], &[]).build();
    let original = mirrored(&ep).remove(0);
    type Edit = (&'static str, fn(&mut Endpoint));
    let edits: [Edit; 4] = [
        ("zone added", |e| e.zone = Some("zone-a".into())),
        ("serving added", |e| {
            e.conditions.as_mut().unwrap().serving = Some(true)
        }),
        ("node changed", |e| e.node_name = Some("node-b".into())),
        ("hostname added", |e| e.hostname = Some("h".into())),
    ];
    for (behaviour, edit) in edits {
        let mut slice = EndpointSlice::clone(&original);
        edit(&mut slice.endpoints[0]);
        let p = plan(&ep, &[Arc::new(slice)]);
        assert_eq!(p.update.len(), 1, "{behaviour}");
        assert_eq!(p.update[0].endpoints, original.endpoints, "{behaviour}");
    }
}

/// Two hand-written subsets, one of them on an h2c port: the mirrored slices carry their ports
/// in the slice port hash order of the version followed (upstream's `NewPortMapKey` sorts the
/// list in place and the slice is written with it), not in the repacked subset's order.
#[test]
fn mirrored_ports_follow_the_slice_port_hash_of_each_version() {
    let ep = endpoints("ext")
        .subset(
            subset()
                .ready("10.0.0.1")
                .port("admin", 9000)
                .port("grpc", 9090)
                .app_protocol("kubernetes.io/h2c"),
        )
        .subset(subset().ready("10.0.0.2").port("metrics", 9100))
        .build();
    let svc = selectorless();
    let mut orders = Vec::new();
    for version in KubeVersion::supported() {
        let p = plan_mirroring(&MirroringInput {
            service: Some(&svc),
            endpoints: Some(&ep),
            existing: &[],
            max_endpoints_per_subset: 1000,
            rules: VersionRules::of(version),
        });
        let mut two_ports: Vec<Vec<String>> = p
            .create
            .iter()
            .filter_map(|s| s.ports.as_ref().filter(|p| p.len() == 2))
            .map(|ports| ports.iter().map(|p| p.name.clone().unwrap()).collect())
            .collect();
        assert_eq!(two_ports.len(), 1, "{version}: one two-port slice");
        orders.push((version.minor, two_ports.remove(0)));
    }
    let order = |names: [&str; 2]| names.map(str::to_owned).to_vec();
    assert_eq!(
        orders,
        [
            (33, order(["admin", "grpc"])),
            (34, order(["admin", "grpc"])),
            (35, order(["grpc", "admin"])),
            (36, order(["grpc", "admin"])),
        ]
    );
}
