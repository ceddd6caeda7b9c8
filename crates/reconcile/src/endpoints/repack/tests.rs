use super::*;
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

fn port(name: &str, n: i32) -> Option<PortSpec> {
    Some(PortSpec {
        name: name.into(),
        port: n,
        protocol: "TCP".into(),
        app_protocol: None,
    })
}

fn item(ip: &str, uid: &str, p: Option<PortSpec>, ready: bool) -> AddressOnPort {
    AddressOnPort {
        address: addr(ip, uid),
        port: p,
        ready,
    }
}

fn ips(list: &Option<Vec<EndpointAddress>>) -> Vec<String> {
    list.iter().flatten().map(|a| a.ip.clone()).collect()
}

#[test]
fn ports_with_identical_addresses_merge_into_one_subset() {
    let subsets = repack(vec![
        item("10.0.0.2", "b", port("http", 80), true),
        item("10.0.0.1", "a", port("http", 80), true),
        item("10.0.0.1", "a", port("metrics", 90), true),
        item("10.0.0.2", "b", port("metrics", 90), true),
    ]);
    assert_eq!(subsets.len(), 1);
    assert_eq!(ips(&subsets[0].addresses), vec!["10.0.0.1", "10.0.0.2"]);
    let names: Vec<_> = subsets[0]
        .ports
        .iter()
        .flatten()
        .map(|p| p.name.clone().unwrap())
        .collect();
    // MD5 of upstream's debug dump puts metrics:90 (4c9d…) before http:80 (a0af…).
    assert_eq!(names, vec!["metrics", "http"]);
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
    assert_eq!(repack(a), repack(b));
}

#[test]
fn not_ready_beats_ready_for_the_same_port() {
    let subsets = repack(vec![
        item("10.0.0.1", "a", port("http", 80), true),
        item("10.0.0.1", "a", port("http", 80), false),
    ]);
    assert_eq!(ips(&subsets[0].addresses), Vec::<String>::new());
    assert_eq!(ips(&subsets[0].not_ready_addresses), vec!["10.0.0.1"]);
}

#[test]
fn duplicate_addresses_are_deduplicated_by_ip_and_uid() {
    let subsets = repack(vec![
        item("10.0.0.1", "a", port("http", 80), true),
        item("10.0.0.1", "a", port("http", 80), true),
        item("10.0.0.1", "other", port("http", 80), true),
    ]);
    assert_eq!(subsets[0].addresses.as_ref().unwrap().len(), 2);
}

#[test]
fn addresses_sort_by_ip_bytes_not_numerically() {
    let subsets = repack(vec![
        item("10.0.0.9", "a", port("http", 80), true),
        item("10.0.0.10", "b", port("http", 80), true),
    ]);
    assert_eq!(ips(&subsets[0].addresses), vec!["10.0.0.10", "10.0.0.9"]);
}

#[test]
fn port_less_addresses_form_one_subset_without_ports() {
    let subsets = repack(vec![
        item("10.0.0.2", "b", None, true),
        item("10.0.0.1", "a", None, false),
    ]);
    assert_eq!(subsets.len(), 1);
    assert_eq!(subsets[0].ports, None);
    assert_eq!(ips(&subsets[0].addresses), vec!["10.0.0.2"]);
    assert_eq!(ips(&subsets[0].not_ready_addresses), vec!["10.0.0.1"]);
}

#[test]
fn different_address_sets_stay_separate() {
    let subsets = repack(vec![
        item("10.0.0.1", "a", port("http", 80), true),
        item("10.0.0.2", "b", port("http", 81), true),
    ]);
    assert_eq!(subsets.len(), 2);
}
