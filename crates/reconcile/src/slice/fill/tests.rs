use super::*;
use crate::slice::endpoint::pod_to_endpoint;
use crate::testing::{pod, service};

fn desired(names: std::ops::Range<usize>) -> DesiredEndpoints {
    let svc = service("s").build();
    names
        .map(|i| {
            let p = pod(&format!("p{i:04}"))
                .ip(&format!("10.0.{}.{}", i / 250, i % 250))
                .build();
            let ep = pod_to_endpoint(&p, None, &svc, AddressType::IPv4);
            (EndpointKey::of(&ep), ep)
        })
        .collect()
}

fn existing_slice(name: &str, endpoints: DesiredEndpoints) -> Arc<EndpointSlice> {
    let mut slice = new_slice(&service("s").build(), &[], AddressType::IPv4);
    slice.metadata.name = Some(name.into());
    slice.endpoints = endpoints.into_values().collect();
    Arc::new(slice)
}

fn sizes(slices: &[EndpointSlice]) -> Vec<usize> {
    let mut s: Vec<usize> = slices.iter().map(|s| s.endpoints.len()).collect();
    s.sort();
    s
}

#[test]
fn two_hundred_fifty_endpoints_make_slices_of_100_100_50() {
    let out = fill_port_group(
        &service("s").build(),
        &[],
        desired(0..250),
        &[],
        AddressType::IPv4,
        100,
    );
    assert_eq!(sizes(&out.create), vec![50, 100, 100]);
    assert_eq!(out.added, 250);
}

#[test]
fn unchanged_slices_stay_unwritten() {
    let existing = vec![
        existing_slice("a", desired(0..100)),
        existing_slice("b", desired(100..150)),
    ];
    let out = fill_port_group(
        &service("s").build(),
        &existing,
        desired(0..150),
        &[],
        AddressType::IPv4,
        100,
    );
    assert!(out.create.is_empty() && out.update.is_empty() && out.delete.is_empty());
}

#[test]
fn removed_endpoints_update_their_slice_and_empty_slices_are_deleted() {
    let existing = vec![
        existing_slice("a", desired(0..10)),
        existing_slice("b", desired(10..20)),
    ];
    let out = fill_port_group(
        &service("s").build(),
        &existing,
        desired(0..5),
        &[],
        AddressType::IPv4,
        100,
    );
    assert_eq!(out.update.len(), 1);
    assert_eq!(out.update[0].endpoints.len(), 5);
    assert_eq!(out.delete.len(), 1);
    assert_eq!(out.removed, 15);
}

#[test]
fn new_endpoints_top_up_slices_already_being_updated() {
    // Slice a loses one endpoint (so it is updated); the new endpoints go there first.
    let existing = vec![
        existing_slice("a", desired(0..50)),
        existing_slice("b", desired(50..60)),
    ];
    let mut want = desired(1..60);
    want.extend(desired(60..70));
    let out = fill_port_group(
        &service("s").build(),
        &existing,
        want,
        &[],
        AddressType::IPv4,
        100,
    );
    assert!(out.create.is_empty());
    assert_eq!(out.update.len(), 1);
    assert_eq!(out.update[0].endpoints.len(), 59);
}

#[test]
fn leftovers_go_to_the_unchanged_slice_that_ends_closest_to_full() {
    let existing = vec![
        existing_slice("a", desired(0..30)),
        existing_slice("b", desired(30..90)),
    ];
    let out = fill_port_group(
        &service("s").build(),
        &existing,
        desired(0..95),
        &[],
        AddressType::IPv4,
        100,
    );
    assert!(out.create.is_empty());
    assert_eq!(out.update.len(), 1);
    assert_eq!(out.update[0].metadata.name.as_deref(), Some("b"));
    assert_eq!(out.update[0].endpoints.len(), 65);
}

#[test]
fn a_full_slices_worth_of_leftovers_gets_a_new_slice() {
    let existing = vec![existing_slice("a", desired(0..10))];
    let out = fill_port_group(
        &service("s").build(),
        &existing,
        desired(0..110),
        &[],
        AddressType::IPv4,
        100,
    );
    assert_eq!(sizes(&out.create), vec![100]);
    assert!(out.update.is_empty());
}

#[test]
fn changed_endpoint_conditions_update_in_place() {
    let existing = vec![existing_slice("a", desired(0..3))];
    let mut want = desired(0..3);
    for ep in want.values_mut() {
        ep.conditions.as_mut().unwrap().ready = Some(true);
    }
    let out = fill_port_group(
        &service("s").build(),
        &existing,
        want,
        &[],
        AddressType::IPv4,
        100,
    );
    assert_eq!(out.update.len(), 1);
    assert_eq!(out.added, 0);
    assert_eq!(out.removed, 0);
}

#[test]
fn label_drift_updates_an_otherwise_unchanged_slice() {
    let existing = vec![existing_slice("a", desired(0..3))];
    let svc = service("s").label("team", "x").build();
    let out = fill_port_group(&svc, &existing, desired(0..3), &[], AddressType::IPv4, 100);
    assert_eq!(out.update.len(), 1);
    assert_eq!(
        out.update[0]
            .metadata
            .labels
            .as_ref()
            .unwrap()
            .get("team")
            .map(String::as_str),
        Some("x")
    );
}

#[test]
fn new_slices_have_generate_name_and_a_controller_owner() {
    let s = new_slice(&service("web").build(), &[], AddressType::IPv4);
    assert_eq!(s.metadata.generate_name.as_deref(), Some("web-"));
    let owner = &s.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.api_version.as_str(),
            owner.uid.as_str()
        ),
        ("Service", "v1", "uid-web")
    );
}
