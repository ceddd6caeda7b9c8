use super::*;
use crate::kube_version::OrderHash;
use k8s_openapi::api::core::v1::ObjectReference;

fn addr(ip: &str, uid: &str) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        target_ref: Some(ObjectReference {
            uid: Some(uid.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn port(name: &'static str, n: i32) -> Option<PortSpec<'static>> {
    Some(PortSpec {
        name,
        port: n,
        protocol: "TCP",
        app_protocol: None,
    })
}

fn item(ip: &str, uid: &str, p: Option<PortSpec<'static>>, ready: bool) -> AddressOnPort<'static> {
    AddressOnPort {
        address: std::rc::Rc::new(addr(ip, uid)),
        port: p,
        ready,
    }
}

/// A repacked subset in brief: its port names (`None` without ports) and its ready and
/// not-ready IPs, in order.
#[derive(Debug, PartialEq)]
struct Packed<'a> {
    ports: Option<Vec<&'a str>>,
    ready: Vec<&'a str>,
    not_ready: Vec<&'a str>,
}

impl<'a> Packed<'a> {
    fn of(subset: &'a EndpointSubset) -> Self {
        let ips = |list: &'a Option<Vec<EndpointAddress>>| {
            list.iter().flatten().map(|a| a.ip.as_str()).collect()
        };
        Self {
            ports: subset
                .ports
                .as_ref()
                .map(|ports| ports.iter().map(|p| p.name.as_deref().unwrap()).collect()),
            ready: ips(&subset.addresses),
            not_ready: ips(&subset.not_ready_addresses),
        }
    }
}

/// A subset offering the named ports with these ready and not-ready IPs.
fn packed<'a>(ports: &[&'a str], ready: &[&'a str], not_ready: &[&'a str]) -> Packed<'a> {
    Packed {
        ports: Some(ports.to_vec()),
        ready: ready.to_vec(),
        not_ready: not_ready.to_vec(),
    }
}

/// Addresses on one port: IP, pod uid and readiness.
fn on(
    port: Option<PortSpec<'static>>,
    addresses: &[(&str, &str, bool)],
) -> Vec<AddressOnPort<'static>> {
    addresses
        .iter()
        .map(|&(ip, uid, ready)| item(ip, uid, port, ready))
        .collect()
}

/// Addresses on ports, and the subsets they repack into.
struct Case {
    behaviour: &'static str,
    items: Vec<AddressOnPort<'static>>,
    want: Vec<Packed<'static>>,
}

#[test]
fn addresses_repack_into_subsets_as_upstream_lays_them_out() {
    let http = || port("http", 80);
    let cases = [
        Case {
            // MD5 of upstream's debug dump puts metrics:90 (4c9d…) before http:80 (a0af…).
            behaviour: "ports with identical addresses merge into one subset",
            items: [
                on(http(), &[("10.0.0.2", "b", true), ("10.0.0.1", "a", true)]),
                on(
                    port("metrics", 90),
                    &[("10.0.0.1", "a", true), ("10.0.0.2", "b", true)],
                ),
            ]
            .concat(),
            want: vec![packed(&["metrics", "http"], &["10.0.0.1", "10.0.0.2"], &[])],
        },
        Case {
            behaviour: "not ready beats ready for the same port",
            items: on(http(), &[("10.0.0.1", "a", true), ("10.0.0.1", "a", false)]),
            want: vec![packed(&["http"], &[], &["10.0.0.1"])],
        },
        Case {
            behaviour: "duplicate addresses are deduplicated by IP and uid",
            items: on(
                http(),
                &[
                    ("10.0.0.1", "a", true),
                    ("10.0.0.1", "a", true),
                    ("10.0.0.1", "other", true),
                ],
            ),
            want: vec![packed(&["http"], &["10.0.0.1", "10.0.0.1"], &[])],
        },
        Case {
            behaviour: "addresses sort by IP bytes, not numerically",
            items: on(http(), &[("10.0.0.9", "a", true), ("10.0.0.10", "b", true)]),
            want: vec![packed(&["http"], &["10.0.0.10", "10.0.0.9"], &[])],
        },
        Case {
            behaviour: "port-less addresses form one subset without ports",
            items: on(None, &[("10.0.0.2", "b", true), ("10.0.0.1", "a", false)]),
            want: vec![Packed {
                ports: None,
                ready: vec!["10.0.0.2"],
                not_ready: vec!["10.0.0.1"],
            }],
        },
        Case {
            behaviour: "different address sets stay separate",
            items: [
                on(http(), &[("10.0.0.1", "a", true)]),
                on(port("http", 81), &[("10.0.0.2", "b", true)]),
            ]
            .concat(),
            want: vec![
                packed(&["http"], &["10.0.0.1"], &[]),
                packed(&["http"], &["10.0.0.2"], &[]),
            ],
        },
    ];
    for case in cases {
        let subsets = repack(case.items, OrderHash::Fnv128a);
        let layout: Vec<Packed> = subsets.iter().map(Packed::of).collect();
        assert_eq!(layout, case.want, "{}", case.behaviour);
    }
}

#[test]
fn scrambled_subsets_repack_to_the_same_layout() {
    let a = vec![
        item("10.0.0.3", "c", port("http", 80), false),
        item("10.0.0.1", "a", port("http", 80), true),
        item("10.0.0.2", "b", port("metrics", 90), true),
    ];
    let mut b = a.clone();
    b.reverse();
    assert_eq!(repack(a, OrderHash::Fnv128a), repack(b, OrderHash::Fnv128a));
}
