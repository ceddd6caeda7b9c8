use super::*;
use crate::kube_version::OrderHash;
use crate::testing::{endpoint_address, subset, SubsetBuilder};
use k8s_openapi::api::core::v1::ObjectReference;

fn state(subsets: Vec<SubsetBuilder>, max: usize) -> DesiredState {
    let subsets: Vec<EndpointSubset> = subsets.into_iter().map(SubsetBuilder::build).collect();
    desired_state(&subsets, max, OrderHash::Fnv128a)
}

fn ips(group: &DesiredGroup) -> Vec<String> {
    group
        .endpoints
        .clone()
        .into_vec()
        .into_iter()
        .map(|e| e.addresses[0].clone())
        .collect()
}

fn ready_flags(group: &DesiredGroup) -> Vec<bool> {
    group
        .endpoints
        .clone()
        .into_vec()
        .into_iter()
        .map(|e| e.conditions.unwrap().ready.unwrap())
        .collect()
}

#[test]
fn every_subset_yields_an_ipv4_and_an_ipv6_group_keyed_by_its_ports() {
    let s = state(
        vec![
            subset().ready("10.0.0.1").ready("fd00::1").port("http", 80),
            subset().ready("10.0.0.2").port("dns", 53),
        ],
        1000,
    );
    assert_eq!(s.groups.len(), 4);
    let summary: Vec<(AddressType, Vec<String>)> =
        s.groups.iter().map(|g| (g.address_type, ips(g))).collect();
    assert!(summary.contains(&(AddressType::IPv4, vec!["10.0.0.1".to_owned()])));
    assert!(summary.contains(&(AddressType::IPv6, vec!["fd00::1".to_owned()])));
    assert!(summary.contains(&(AddressType::IPv4, vec!["10.0.0.2".to_owned()])));
    assert!(summary.contains(&(AddressType::IPv6, vec![])));
}

#[test]
fn subsets_with_the_same_ports_are_merged_into_one_group() {
    let s = state(
        vec![
            subset().ready("10.0.0.2").port("http", 80),
            subset().ready("10.0.0.1").port("http", 80),
        ],
        1000,
    );
    let v4: Vec<&DesiredGroup> = s
        .groups
        .iter()
        .filter(|g| g.address_type == AddressType::IPv4)
        .collect();
    assert_eq!(v4.len(), 1);
    // Repacking sorts the addresses by IP.
    assert_eq!(ips(v4[0]), vec!["10.0.0.1", "10.0.0.2"]);
}

#[test]
fn port_order_does_not_split_groups() {
    let a = GroupKey::new(
        AddressType::IPv4,
        &slice_ports(&subset().port("http", 80).port("dns", 53).build_ports()),
    );
    let b = GroupKey::new(
        AddressType::IPv4,
        &slice_ports(&subset().port("dns", 53).port("http", 80).build_ports()),
    );
    assert_eq!(a, b);
    assert_ne!(
        a,
        GroupKey::new(
            AddressType::IPv6,
            &slice_ports(&subset().port("http", 80).port("dns", 53).build_ports())
        )
    );
}

/// What one group holds, in brief: its endpoints (IP and readiness, in order) and the
/// state's counts of invalid and skipped addresses.
#[derive(Debug, Default, PartialEq)]
struct Mirrored {
    endpoints: Vec<(String, bool)>,
    invalid: usize,
    skipped: usize,
}

/// A group of these endpoints, nothing invalid or skipped.
fn mirrored(endpoints: &[(&str, bool)]) -> Mirrored {
    Mirrored {
        endpoints: endpoints
            .iter()
            .map(|(ip, ready)| (ip.to_string(), *ready))
            .collect(),
        ..Mirrored::default()
    }
}

impl Mirrored {
    fn of(state: &DesiredState, group: &DesiredGroup) -> Self {
        Self {
            endpoints: ips(group).into_iter().zip(ready_flags(group)).collect(),
            invalid: state.invalid,
            skipped: state.skipped,
        }
    }

    fn invalid(self, invalid: usize) -> Self {
        Self { invalid, ..self }
    }

    fn skipped(self, skipped: usize) -> Self {
        Self { skipped, ..self }
    }
}

/// One `http` subset, mirrored with room for every address: what its IPv4 group holds.
struct Case {
    behaviour: &'static str,
    subset: SubsetBuilder,
    want: Mirrored,
}

#[test]
fn addresses_are_mirrored_once_each_with_their_readiness() {
    let cases = [
        Case {
            behaviour: "ready addresses are ready and not-ready addresses are not",
            subset: subset().ready("10.0.0.1").not_ready("10.0.0.2"),
            want: mirrored(&[("10.0.0.1", true), ("10.0.0.2", false)]),
        },
        Case {
            behaviour: "an address both ready and not ready is mirrored not ready",
            subset: subset().ready("10.0.0.1").not_ready("10.0.0.1"),
            want: mirrored(&[("10.0.0.1", false)]),
        },
        Case {
            behaviour: "invalid IPs are skipped and counted",
            subset: subset()
                .ready("10.0.0.1")
                .ready("not-an-ip")
                .not_ready("999.0.0.1"),
            want: mirrored(&[("10.0.0.1", true)]).invalid(2).skipped(2),
        },
        Case {
            behaviour: "the same IP written two ways is one endpoint, and neither is skipped",
            subset: subset().ready("10.0.0.1").ready("010.0.0.1"),
            want: mirrored(&[("10.0.0.1", true)]),
        },
    ];
    for case in cases {
        let s = state(vec![case.subset.port("http", 80)], 1000);
        assert_eq!(
            Mirrored::of(&s, &s.groups[0]),
            case.want,
            "{}",
            case.behaviour
        );
    }
}

#[test]
fn per_subset_cap_keeps_ready_addresses_first_and_counts_the_rest_as_skipped() {
    let s = state(
        vec![
            subset()
                .ready("10.0.0.1")
                .ready("10.0.0.2")
                .not_ready("10.0.0.3")
                .port("http", 80),
            subset().ready("10.0.1.1").ready("10.0.1.2").port("dns", 53),
        ],
        2,
    );
    let v4: Vec<Vec<String>> = s
        .groups
        .iter()
        .filter(|g| g.address_type == AddressType::IPv4)
        .map(ips)
        .collect();
    assert!(v4.contains(&vec!["10.0.0.1".to_owned(), "10.0.0.2".to_owned()]));
    assert!(v4.contains(&vec!["10.0.1.1".to_owned(), "10.0.1.2".to_owned()]));
    assert_eq!((s.invalid, s.skipped), (0, 1));
}

#[test]
fn invalid_addresses_do_not_count_against_the_cap() {
    // Repacking sorts "bad" after the IPs (byte order), so the cap is reached first and the
    // invalid address is skipped as excess, not counted as invalid; "1.bad" sorts first.
    for (bad, invalid) in [("bad", 0), ("1.bad", 1)] {
        let s = state(
            vec![subset()
                .ready(bad)
                .ready("10.0.0.1")
                .ready("10.0.0.2")
                .port("http", 80)],
            2,
        );
        assert_eq!(ips(&s.groups[0]), vec!["10.0.0.1", "10.0.0.2"], "{bad}");
        assert_eq!((s.invalid, s.skipped), (invalid, 1), "{bad}");
    }
}

#[test]
fn subset_without_ports_is_mirrored_with_no_ports() {
    let s = state(vec![subset().ready("10.0.0.1")], 1000);
    assert_eq!(s.groups[0].ports, vec![]);
    assert_eq!(ips(&s.groups[0]), vec!["10.0.0.1"]);
}

#[test]
fn same_ip_for_two_pods_stays_two_endpoints() {
    let pod = |name: &str| {
        let mut a = endpoint_address("10.0.0.1");
        a.target_ref = Some(ObjectReference {
            kind: Some("Pod".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        });
        a
    };
    let s = state(
        vec![subset()
            .ready_address(pod("a"))
            .ready_address(pod("b"))
            .port("http", 80)],
        1000,
    );
    assert_eq!(s.groups[0].endpoints.len(), 2);
}

#[test]
fn app_protocol_is_part_of_the_group_key() {
    let http = |app_protocol: Option<&str>| {
        vec![EndpointPort {
            name: Some("http".into()),
            port: Some(80),
            protocol: Some("TCP".into()),
            app_protocol: app_protocol.map(str::to_owned),
        }]
    };
    assert_ne!(
        GroupKey::new(AddressType::IPv4, &http(None)),
        GroupKey::new(AddressType::IPv4, &http(Some("h2c")))
    );
}
