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

/// Endpoints hinted for each zone.
fn hint_counts(sets: &SliceSets) -> BTreeMap<&str, usize> {
    let mut counts = BTreeMap::new();
    for slice in sets.create.iter().chain(sets.update.iter()) {
        for e in &slice.endpoints {
            if let Some(z) = e.hints.as_ref().and_then(|h| h.for_zones.as_ref()) {
                *counts.entry(z[0].name.as_str()).or_default() += 1;
            }
        }
    }
    counts
}

fn key() -> ServiceKey {
    ServiceKey::new("default", "s")
}

/// Hints from a cache of nodes for one slice being created, of ready endpoints in the given
/// zones ("" for none).
struct Case {
    behaviour: &'static str,
    cache: TopologyCache,
    zones: &'static [&'static str],
    address_type: AddressType,
    /// The one event's reason and message.
    event: (&'static str, &'static str),
    hints: &'static [(&'static str, usize)],
}

#[test]
fn hints_follow_each_zones_share_of_cpu_or_are_refused_with_the_reason() {
    let cases = [
        Case {
            behaviour: "three equal zones with every endpoint in one zone share them evenly",
            cache: equal_three_zones(),
            zones: &["za", "za", "za"],
            address_type: AddressType::IPv4,
            event: (
                ENABLED,
                "Topology Aware Hints has been enabled, addressType: IPv4",
            ),
            hints: &[("za", 1), ("zb", 1), ("zc", 1)],
        },
        Case {
            // Each zone's minimum is ceil(1.33/1.2)=2, and 6 > 4.
            behaviour: "four endpoints over three zones get no hints",
            cache: equal_three_zones(),
            zones: &["za", "zb", "zc", "za"],
            address_type: AddressType::IPv4,
            event: (
                DISABLED,
                "Unable to allocate minimum required endpoints to each zone without exceeding \
                 overload threshold (4 endpoints, 3 zones), addressType: IPv4",
            ),
            hints: &[],
        },
        Case {
            behaviour: "uneven CPU shifts hints toward the bigger zone",
            cache: cache(&[("a", "za", 8000), ("b", "zb", 4000), ("c", "zc", 4000)]),
            zones: &["zb", "zb", "zb", "zb", "zc", "zc", "zc", "zc"],
            address_type: AddressType::IPv4,
            event: (
                ENABLED,
                "Topology Aware Hints has been enabled, addressType: IPv4",
            ),
            hints: &[("za", 4), ("zb", 2), ("zc", 2)],
        },
        Case {
            behaviour: "an endpoint without a zone disables hints",
            cache: equal_three_zones(),
            zones: &["za", "zb", "zc", "za", "zb", ""],
            address_type: AddressType::IPv4,
            event: (
                DISABLED,
                "One or more endpoints do not have a zone specified, addressType: IPv4",
            ),
            hints: &[],
        },
        Case {
            behaviour: "too few endpoints are reported with the counts",
            cache: equal_three_zones(),
            zones: &[],
            address_type: AddressType::IPv6,
            event: (
                DISABLED,
                "Insufficient number of endpoints (0 endpoints, 3 zones), addressType: IPv6",
            ),
            hints: &[],
        },
        Case {
            behaviour: "a node without a zone is insufficient node information",
            cache: cache(&[("a", "za", 1000), ("b", "", 1000)]),
            zones: &["za"],
            address_type: AddressType::IPv4,
            event: (
                DISABLED,
                "Insufficient Node information: allocatable CPU or zone not specified on one or \
                 more nodes, addressType: IPv4",
            ),
            hints: &[],
        },
        Case {
            behaviour: "a cache that has seen no node yet has nodes ready in one zone only",
            cache: TopologyCache::default(),
            zones: &["za"],
            address_type: AddressType::IPv4,
            event: (DISABLED, "Nodes only ready in one zone, addressType: IPv4"),
            hints: &[],
        },
    ];
    for mut case in cases {
        let mut s = sets(case.zones);
        let events = case.cache.add_hints(&key(), case.address_type, &mut s);
        let events: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e.reason.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(events, vec![case.event], "{}", case.behaviour);
        let want: BTreeMap<&str, usize> = case.hints.iter().copied().collect();
        assert_eq!(hint_counts(&s), want, "{}", case.behaviour);
    }
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
        BTreeMap::from([("za", 1), ("zb", 1), ("zc", 1)])
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
