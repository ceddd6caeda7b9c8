use super::*;
use crate::kube_version::{KubeVersion, VersionRules};
use crate::testing::{pod, service, service_port, three_port_service, ts, PodBuilder};
use k8s_openapi::api::core::v1::ObjectReference;

fn plan(svc: &ServiceInfo, pods: &[PodInfo], current: Option<&Endpoints>) -> EndpointsPlan {
    plan_following(KubeVersion::NEWEST, svc, pods, current)
}

fn plan_following(
    version: KubeVersion,
    svc: &ServiceInfo,
    pods: &[PodInfo],
    current: Option<&Endpoints>,
) -> EndpointsPlan {
    let pods: Vec<&PodInfo> = pods.iter().collect();
    // Kept as the informer keeps it.
    let current = current.map(|c| StoredEndpoints::new(c.clone()));
    plan_endpoints(&EndpointsInput {
        service: svc,
        pods: &pods,
        current: current.as_ref(),
        trigger_time: Some(ts("2026-01-01T00:00:00Z")),
        rules: VersionRules::of(version),
    })
}

fn object(p: &EndpointsPlan) -> Endpoints {
    match &p.action {
        EndpointsAction::Create(e) | EndpointsAction::Update(e) => e.clone(),
        EndpointsAction::Unchanged => panic!("expected a write"),
    }
}

fn web() -> ServiceInfo {
    service("web")
        .port(service_port("http", 80).target(8080))
        .build()
}

/// Headless Service `web` with port `http` 80.
fn headless_web() -> ServiceInfo {
    service("web")
        .cluster_ip("None")
        .port(service_port("http", 80))
        .build()
}

/// Pods `<prefix>0`, `<prefix>1`, … with IPs from `10.<subnet>.0.0` up, to finish building.
fn numbered_pods(prefix: &str, subnet: usize, n: usize) -> impl Iterator<Item = PodBuilder> + '_ {
    (0..n).map(move |i| {
        pod(&format!("{prefix}{i}")).ip(&format!("10.{subnet}.{}.{}", i / 250, i % 250))
    })
}

#[test]
fn ready_and_not_ready_pods_are_split() {
    let pods = vec![
        pod("a").ip("10.0.0.1").ready(true).build(),
        pod("b").ip("10.0.0.2").build(),
    ];
    let e = object(&plan(&web(), &pods, None));
    let s = &e.subsets.unwrap()[0];
    assert_eq!(s.addresses.as_ref().unwrap()[0].ip, "10.0.0.1");
    assert_eq!(s.not_ready_addresses.as_ref().unwrap()[0].ip, "10.0.0.2");
    assert_eq!(s.ports.as_ref().unwrap()[0].port, 8080);
}

#[test]
fn addresses_carry_node_target_ref_and_hostname() {
    let pods = vec![pod("a")
        .ip("10.0.0.1")
        .ready(true)
        .node("n1")
        .hostname("a", "web")
        .build()];
    let e = object(&plan(&headless_web(), &pods, None));
    let a = &e.subsets.unwrap()[0].addresses.clone().unwrap()[0];
    assert_eq!(a.node_name.as_deref(), Some("n1"));
    assert_eq!(a.hostname.as_deref(), Some("a"));
    assert_eq!(a.target_ref.as_ref().unwrap().name.as_deref(), Some("a"));
}

#[test]
fn terminating_pods_are_left_out_unless_published() {
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).deleting().build()];
    assert_eq!(object(&plan(&web(), &pods, None)).subsets, None);
    let published = service("web")
        .port(service_port("http", 80))
        .publish_not_ready()
        .build();
    let e = object(&plan(&published, &pods, None));
    assert_eq!(e.subsets.unwrap()[0].addresses.as_ref().unwrap().len(), 1);
}

#[test]
fn failed_and_succeeded_pods_are_left_out() {
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).failed().build()];
    assert_eq!(object(&plan(&web(), &pods, None)).subsets, None);
}

#[test]
fn pods_in_other_namespaces_are_the_callers_business_but_hostname_needs_same_namespace() {
    let pods = vec![pod("a")
        .ns("other")
        .ip("10.0.0.1")
        .ready(true)
        .hostname("a", "web")
        .build()];
    let e = object(&plan(&headless_web(), &pods, None));
    assert_eq!(
        e.subsets.unwrap()[0].addresses.clone().unwrap()[0].hostname,
        None
    );
}

#[test]
fn headless_service_with_empty_ports_and_without_ports_is_one_port_less_subset() {
    let svc = service("db").cluster_ip("None").build();
    let pods = vec![
        pod("a").ip("10.0.0.1").ready(true).build(),
        pod("b").ip("10.0.0.2").build(),
    ];
    let e = object(&plan(&svc, &pods, None));
    let subsets = e.subsets.unwrap();
    assert_eq!(subsets.len(), 1);
    assert_eq!(subsets[0].ports, None);
    assert_eq!(
        e.metadata.labels.unwrap()["service.kubernetes.io/headless"],
        ""
    );
}

#[test]
fn non_headless_service_without_ports_publishes_nothing() {
    let svc = service("web").build();
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    assert_eq!(object(&plan(&svc, &pods, None)).subsets, None);
}

#[test]
fn ipv6_and_dual_stack_pods_publish_the_primary_family() {
    let svc = service("web")
        .families(&["IPv6", "IPv4"])
        .cluster_ip("fd00::10")
        .port(service_port("http", 80))
        .build();
    let pods = vec![
        pod("a").ip("10.0.0.1").ip("fd00::1").ready(true).build(),
        pod("b").ip("10.0.0.2").ready(true).build(),
    ];
    let e = object(&plan(&svc, &pods, None));
    let addrs = e.subsets.unwrap()[0].addresses.clone().unwrap();
    assert_eq!(addrs.len(), 1);
    assert_eq!(addrs[0].ip, "fd00::1");
}

#[test]
fn labels_are_service_labels_plus_managed_by() {
    let svc = service("web")
        .label("team", "x")
        .port(service_port("http", 80))
        .build();
    let e = object(&plan(&svc, &[], None));
    let labels = e.metadata.labels.unwrap();
    assert_eq!(labels["team"], "x");
    assert_eq!(
        labels["endpoints.kubernetes.io/managed-by"],
        "endpoint-controller"
    );
}

#[test]
fn trigger_time_annotation_is_set_on_write() {
    let e = object(&plan(&web(), &[], None));
    assert_eq!(
        e.metadata.annotations.unwrap()[ANNOTATION],
        "2026-01-01T00:00:00Z"
    );
}

#[test]
fn no_write_when_subsets_and_labels_already_match() {
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    let mut existing = object(&plan(&web(), &pods, None));
    existing.metadata.resource_version = Some("7".into());
    // A pod resourceVersion in a targetRef does not count as a difference.
    existing.subsets.as_mut().unwrap()[0]
        .addresses
        .as_mut()
        .unwrap()[0]
        .target_ref
        .as_mut()
        .unwrap()
        .resource_version = Some("99".into());
    assert_eq!(
        plan(&web(), &pods, Some(&existing)).action,
        EndpointsAction::Unchanged
    );
}

fn port_order(e: &Endpoints) -> Vec<String> {
    e.subsets.as_ref().unwrap()[0]
        .ports
        .iter()
        .flatten()
        .map(|p| p.name.clone().unwrap_or_default())
        .collect()
}

/// What `version`'s controller writes for `pods` from scratch, as the API server stores it.
fn written_by(version: KubeVersion, svc: &ServiceInfo, pods: &[PodInfo]) -> Endpoints {
    let mut e = object(&plan_following(version, svc, pods, None));
    e.metadata.resource_version = Some("7".into());
    e
}

#[test]
fn each_version_writes_endpoints_ports_in_its_hash_order() {
    let svc = three_port_service();
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    for (version, order) in [
        (33, ["web", "admin", "stream"]),
        (34, ["web", "admin", "stream"]),
        (35, ["admin", "web", "stream"]),
        (36, ["admin", "web", "stream"]),
    ] {
        let e = written_by(KubeVersion::new(1, version), &svc, &pods);
        assert_eq!(port_order(&e), order, "v1.{version}");
    }
}

#[test]
fn up_to_v1_34_an_object_in_fnv_order_is_rewritten_into_md5_order() {
    let svc = three_port_service();
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    let fnv = written_by(KubeVersion::new(1, 36), &svc, &pods);
    for version in [33, 34] {
        let version = KubeVersion::new(1, version);
        match plan_following(version, &svc, &pods, Some(&fnv)).action {
            EndpointsAction::Update(e) => {
                assert_eq!(port_order(&e), ["web", "admin", "stream"], "{version}");
                assert_eq!(e.metadata.resource_version.as_deref(), Some("7"));
            }
            other => panic!("{version}: expected an update, got {other:?}"),
        }
        // Its own order is left alone.
        let md5 = written_by(version, &svc, &pods);
        assert_eq!(
            plan_following(version, &svc, &pods, Some(&md5)).action,
            EndpointsAction::Unchanged,
            "{version}"
        );
    }
}

#[test]
fn from_v1_35_an_object_in_md5_order_is_left_alone_until_something_changes() {
    let svc = three_port_service();
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    let md5 = written_by(KubeVersion::new(1, 34), &svc, &pods);
    for version in [35, 36] {
        let version = KubeVersion::new(1, version);
        assert_eq!(
            plan_following(version, &svc, &pods, Some(&md5)).action,
            EndpointsAction::Unchanged,
            "{version}"
        );
        // Any real change is still written, and then in the version's order.
        let more = vec![
            pod("a").ip("10.0.0.1").ready(true).build(),
            pod("b").ip("10.0.0.2").ready(true).build(),
        ];
        let e = object(&plan_following(version, &svc, &more, Some(&md5)));
        assert_eq!(port_order(&e), ["admin", "web", "stream"], "{version}");
    }
}

#[test]
fn from_v1_35_an_object_laid_out_another_way_is_left_alone() {
    let svc = three_port_service();
    let pods = vec![
        pod("a").ip("10.0.0.1").ready(true).build(),
        pod("b").ip("10.0.0.2").ready(true).build(),
        pod("c").ip("10.0.0.3").build(),
    ];
    let canonical = written_by(KubeVersion::new(1, 36), &svc, &pods);
    // The same addresses on the same ports, a subset per port, addresses in reverse order.
    let subset = &canonical.subsets.as_ref().unwrap()[0];
    let mut scrambled = canonical.clone();
    scrambled.subsets = Some(
        subset
            .ports
            .iter()
            .flatten()
            .rev()
            .map(|port| EndpointSubset {
                addresses: subset.addresses.clone().map(|mut a| {
                    a.reverse();
                    a
                }),
                not_ready_addresses: subset.not_ready_addresses.clone(),
                ports: Some(vec![port.clone()]),
            })
            .collect(),
    );
    assert_ne!(scrambled, canonical);
    for version in [35, 36] {
        let version = KubeVersion::new(1, version);
        assert_eq!(
            plan_following(version, &svc, &pods, Some(&scrambled)).action,
            EndpointsAction::Unchanged,
            "{version}"
        );
    }
    let before = plan_following(KubeVersion::new(1, 34), &svc, &pods, Some(&scrambled));
    assert!(matches!(before.action, EndpointsAction::Update(_)));
    // One port offered on another address is a difference in any layout.
    let mut moved = scrambled.clone();
    moved.subsets.as_mut().unwrap()[0]
        .addresses
        .as_mut()
        .unwrap()[0]
        .ip = "10.0.0.9".into();
    let after = plan_following(KubeVersion::new(1, 36), &svc, &pods, Some(&moved));
    assert!(matches!(after.action, EndpointsAction::Update(_)));
}

#[test]
fn changes_update_the_existing_object_keeping_its_resource_version() {
    let mut existing = object(&plan(&web(), &[], None));
    existing.metadata.resource_version = Some("7".into());
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    match plan(&web(), &pods, Some(&existing)).action {
        EndpointsAction::Update(e) => assert_eq!(e.metadata.resource_version.as_deref(), Some("7")),
        other => panic!("expected update, got {other:?}"),
    }
}

#[test]
fn over_capacity_is_truncated_and_annotated_then_cleared() {
    let pods: Vec<PodInfo> = numbered_pods("p", 1, 1100)
        .enumerate()
        .map(|(i, p)| p.ready(i % 2 == 0).build())
        .collect();
    let e = object(&plan(&web(), &pods, None));
    assert_eq!(
        e.metadata.annotations.as_ref().unwrap()[OVER_CAPACITY],
        "truncated"
    );
    let s = &e.subsets.as_ref().unwrap()[0];
    assert_eq!(s.addresses.as_ref().unwrap().len(), 550);
    assert_eq!(s.not_ready_addresses.as_ref().unwrap().len(), 450);
    let mut existing = e.clone();
    existing.metadata.resource_version = Some("3".into());
    let fewer = object(&plan(&web(), &pods[..10], Some(&existing)));
    assert!(!fewer
        .metadata
        .annotations
        .unwrap()
        .contains_key(OVER_CAPACITY));
}

#[test]
fn truncation_over_several_subsets_uses_proportional_shares() {
    // Two port groups (8080 and 8081 pods), all not ready: 700 + 400 not-ready addresses.
    let svc = service("web")
        .port(service_port("http", 80).named("http"))
        .build();
    let pods: Vec<PodInfo> = numbered_pods("a", 1, 700)
        .map(|p| p.port("http", "TCP", 8080).build())
        .chain(numbered_pods("b", 2, 400).map(|p| p.port("http", "TCP", 8081).build()))
        .collect();
    let e = object(&plan(&svc, &pods, None));
    let mut counts: Vec<usize> = e
        .subsets
        .unwrap()
        .iter()
        .map(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len))
        .collect();
    counts.sort();
    // ceil(700/1100*1000)=637 and ceil(400/1100*1000)=364, capped at what is left.
    assert_eq!(counts.iter().sum::<usize>(), 1000);
    assert!(counts == vec![363, 637] || counts == vec![364, 636]);
}

#[test]
fn an_object_lacking_only_the_controllers_own_labels_is_left_alone() {
    let pods = vec![pod("a").ip("10.0.0.1").ready(true).build()];
    let mut existing = object(&plan(&web(), &pods, None));
    existing.metadata.resource_version = Some("7".into());
    existing.metadata.labels = Some(Default::default());
    assert_eq!(
        plan(&web(), &pods, Some(&existing)).action,
        EndpointsAction::Unchanged
    );
    // A Service label that the object lacks is a difference.
    let labelled = service("web")
        .label("team", "x")
        .port(service_port("http", 80).target(8080))
        .build();
    assert!(matches!(
        plan(&labelled, &pods, Some(&existing)).action,
        EndpointsAction::Update(_)
    ));
}

/// The rule `subsets_equal` implements, written the slow and obvious way: each subset
/// rendered as JSON with resourceVersions dropped and absent lists as empty ones, compared as
/// sorted lists.
fn subsets_equal_by_rendering(a: &[EndpointSubset], b: &[EndpointSubset]) -> bool {
    let render = |list: &[EndpointSubset]| {
        let mut out: Vec<String> = list
            .iter()
            .map(|s| {
                let strip = |addrs: &Option<Vec<EndpointAddress>>| {
                    let mut addrs = addrs.clone().unwrap_or_default();
                    for a in &mut addrs {
                        if let Some(t) = a.target_ref.as_mut() {
                            t.resource_version = None;
                        }
                    }
                    addrs
                };
                serde_json::json!({
                    "a": strip(&s.addresses),
                    "n": strip(&s.not_ready_addresses),
                    "p": s.ports.clone().unwrap_or_default(),
                })
                .to_string()
            })
            .collect();
        out.sort();
        out
    };
    a.len() == b.len() && render(a) == render(b)
}

#[test]
fn subsets_compare_as_their_rendering_does() {
    use k8s_openapi::api::core::v1::EndpointPort;
    // Small variations of one subset: each field of an address and of its targetRef, the
    // resourceVersion (ignored), absent versus empty lists, duplicates and order.
    let address = |ip: &str, variant: u32| EndpointAddress {
        ip: ip.into(),
        hostname: (variant == 1).then(|| "h".into()),
        node_name: Some(if variant == 2 { "n2" } else { "n1" }.into()),
        target_ref: (variant != 3).then(|| ObjectReference {
            kind: Some("Pod".into()),
            name: Some(if variant == 4 { "other" } else { "p" }.into()),
            namespace: Some("default".into()),
            uid: Some(if variant == 5 { "u2" } else { "u1" }.into()),
            resource_version: Some(format!("{}", variant * 7)),
            ..Default::default()
        }),
    };
    let mut subsets: Vec<EndpointSubset> = Vec::new();
    for variant in 0..7 {
        for ports in [
            None,
            Some(vec![]),
            Some(vec![EndpointPort {
                port: 80,
                ..Default::default()
            }]),
        ] {
            subsets.push(EndpointSubset {
                addresses: Some(vec![address("10.0.0.1", variant)]),
                not_ready_addresses: (variant == 6).then(Vec::new),
                ports,
            });
        }
    }
    subsets.push(EndpointSubset::default());
    subsets.push(EndpointSubset {
        addresses: Some(vec![address("10.0.0.1", 0), address("10.0.0.2", 0)]),
        ..Default::default()
    });
    subsets.push(EndpointSubset {
        addresses: Some(vec![address("10.0.0.2", 0), address("10.0.0.1", 0)]),
        ..Default::default()
    });
    subsets.push(EndpointSubset {
        not_ready_addresses: Some(vec![address("10.0.0.1", 0)]),
        ..Default::default()
    });
    // Lists of up to two subsets, in both orders, with repeats.
    let mut lists: Vec<Vec<EndpointSubset>> = vec![vec![]];
    for x in &subsets {
        lists.push(vec![x.clone()]);
        for y in subsets.iter().step_by(3) {
            lists.push(vec![x.clone(), y.clone()]);
        }
    }
    let mut equal_pairs = 0;
    for a in &lists {
        for b in &lists {
            let expected = subsets_equal_by_rendering(a, b);
            // The current side as the informer keeps it.
            let stored = StoredEndpoints::new(Endpoints {
                metadata: ObjectMeta {
                    namespace: Some("default".into()),
                    ..ObjectMeta::default()
                },
                subsets: Some(a.clone()),
            });
            assert_eq!(
                subsets_equal(&held_subsets(&stored), b),
                expected,
                "{a:?}\n{b:?}"
            );
            equal_pairs += usize::from(expected);
        }
    }
    // Equal pairs beyond the diagonal: resourceVersions, absent lists and order do not count.
    assert!(equal_pairs > lists.len(), "{equal_pairs}");
}
