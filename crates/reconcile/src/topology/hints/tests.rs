use super::*;
use crate::slice::endpoint::pod_to_endpoint;
use crate::slice::fill::new_slice;
use crate::testing::{node, pod, service};

fn cache(nodes: &[(&str, &str, i64)]) -> TopologyCache {
    let mut c = TopologyCache::default();
    let infos: Vec<_> = nodes.iter().map(|(n, z, cpu)| node(n, z, *cpu)).collect();
    c.set_nodes(&infos);
    c
}

fn equal_three_zones() -> TopologyCache {
    cache(&[("a", "za", 4000), ("b", "zb", 4000), ("c", "zc", 4000)])
}

/// One slice to create with ready endpoints in the given zones.
fn sets(zones: &[&str]) -> SliceSets {
    let svc = service("s").build();
    let mut slice = new_slice(&svc, &[], AddressType::IPv4);
    for (i, zone) in zones.iter().enumerate() {
        let p = pod(&format!("p{i}"))
            .ip(&format!("10.0.0.{i}"))
            .ready(true)
            .build();
        slice.endpoints.push(pod_to_endpoint(
            &p,
            (!zone.is_empty()).then_some(*zone),
            &svc,
            AddressType::IPv4,
        ));
    }
    SliceSets {
        create: vec![slice],
        ..Default::default()
    }
}

fn hint_counts(sets: &SliceSets) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for slice in sets.create.iter().chain(sets.update.iter()) {
        for e in &slice.endpoints {
            if let Some(z) = e.hints.as_ref().and_then(|h| h.for_zones.as_ref()) {
                *counts.entry(z[0].name.clone()).or_default() += 1;
            }
        }
    }
    counts
}

fn key() -> ServiceKey {
    ServiceKey::new("default", "s")
}

#[test]
fn three_equal_zones_with_all_endpoints_in_one_zone_redistributes_evenly() {
    let mut c = equal_three_zones();
    let mut s = sets(&["za", "za", "za"]);
    let events = c.add_hints(&key(), AddressType::IPv4, &mut s);
    assert_eq!(events[0].reason, "TopologyAwareHintsEnabled");
    assert_eq!(
        events[0].message,
        "Topology Aware Hints has been enabled, addressType: IPv4"
    );
    assert_eq!(
        hint_counts(&s),
        [("za".into(), 1), ("zb".into(), 1), ("zc".into(), 1)].into()
    );
}

#[test]
fn four_endpoints_over_three_zones_get_no_hints() {
    // 4 endpoints: each zone's minimum is ceil(1.33/1.2)=2, 6 > 4.
    let mut c = equal_three_zones();
    let mut s = sets(&["za", "zb", "zc", "za"]);
    let events = c.add_hints(&key(), AddressType::IPv4, &mut s);
    assert_eq!(events[0].reason, "TopologyAwareHintsDisabled");
    assert!(events[0]
        .message
        .starts_with("Unable to allocate minimum required endpoints"));
    assert!(events[0]
        .message
        .ends_with("(4 endpoints, 3 zones), addressType: IPv4"));
    assert!(hint_counts(&s).is_empty());
}

#[test]
fn uneven_cpu_ratios_shift_hints_toward_the_bigger_zone() {
    let mut c = cache(&[("a", "za", 8000), ("b", "zb", 4000), ("c", "zc", 4000)]);
    let mut s = sets(&["zb", "zb", "zb", "zb", "zc", "zc", "zc", "zc"]);
    c.add_hints(&key(), AddressType::IPv4, &mut s);
    assert_eq!(
        hint_counts(&s),
        [("za".into(), 4), ("zb".into(), 2), ("zc".into(), 2)].into()
    );
}

#[test]
fn endpoint_without_zone_disables_hints() {
    let mut c = equal_three_zones();
    let mut s = sets(&["za", "zb", "zc", "za", "zb", ""]);
    let events = c.add_hints(&key(), AddressType::IPv4, &mut s);
    assert_eq!(
        events[0].message,
        "One or more endpoints do not have a zone specified, addressType: IPv4"
    );
    assert!(hint_counts(&s).is_empty());
}

#[test]
fn too_few_endpoints_reports_the_counts() {
    let mut c = equal_three_zones();
    let mut s = sets(&[]);
    let events = c.add_hints(&key(), AddressType::IPv6, &mut s);
    assert_eq!(
        events[0].message,
        "Insufficient number of endpoints (0 endpoints, 3 zones), addressType: IPv6"
    );
}

#[test]
fn insufficient_node_info_and_single_zone_messages() {
    let mut c = cache(&[("a", "za", 1000), ("b", "", 1000)]);
    let events = c.add_hints(&key(), AddressType::IPv4, &mut sets(&["za"]));
    assert!(events[0]
        .message
        .starts_with("Insufficient Node information"));
    let mut fresh = TopologyCache::default();
    let events = fresh.add_hints(&key(), AddressType::IPv4, &mut sets(&["za"]));
    assert_eq!(
        events[0].message,
        "Nodes only ready in one zone, addressType: IPv4"
    );
}

#[test]
fn enabled_event_is_sent_once() {
    let mut c = equal_three_zones();
    assert_eq!(
        c.add_hints(&key(), AddressType::IPv4, &mut sets(&["za", "zb", "zc"]))
            .len(),
        1
    );
    assert!(c
        .add_hints(&key(), AddressType::IPv4, &mut sets(&["za", "zb", "zc"]))
        .is_empty());
}

#[test]
fn wrong_existing_hints_are_corrected_with_minimal_updates() {
    let mut c = equal_three_zones();
    let mut first = sets(&["za", "zb", "zc"]);
    c.add_hints(&key(), AddressType::IPv4, &mut first);
    // Two existing slices: one correct, one with a hint for an unknown zone.
    let good = std::sync::Arc::new(first.create[0].clone());
    let mut bad_slice = sets(&["za", "zb", "zc"]).create.remove(0);
    for e in &mut bad_slice.endpoints {
        e.hints = zone_hint("nowhere");
    }
    let mut s = SliceSets {
        unchanged: vec![good, std::sync::Arc::new(bad_slice)],
        ..Default::default()
    };
    // Six endpoints, each zone's maximum is 2: the good slice fits, the bad one is rewritten.
    c.add_hints(&key(), AddressType::IPv4, &mut s);
    assert_eq!(s.unchanged.len(), 1);
    assert_eq!(s.update.len(), 1);
    assert_eq!(
        hint_counts(&s),
        [("za".into(), 1), ("zb".into(), 1), ("zc".into(), 1)].into()
    );
}

#[test]
fn overloaded_service_is_reported_after_node_changes() {
    let mut c = equal_three_zones();
    c.add_hints(&key(), AddressType::IPv4, &mut sets(&["za", "zb", "zc"]));
    assert!(c.overloaded_services().is_empty());
    c.set_nodes(&[
        node("a", "za", 4000),
        node("b", "zb", 4000),
        node("c", "zc", 4000),
        node("d", "zd", 4000),
    ]);
    assert_eq!(c.overloaded_services(), vec![key()]);
}
