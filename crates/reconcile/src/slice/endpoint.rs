//! One pod, one address type: the Endpoint it becomes, and how endpoints are matched
//! across syncs.

use crate::address_family::AddressType;
use crate::ip::parse_sloppy;
use crate::pod_rules::{pod_reference, publishes_hostname, same_reference};
use crate::projection::{PodInfo, ServiceInfo, StoredEndpoint};
use crate::slice::{MissingNode, NodeZones};
use compact_str::CompactString;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions};
use std::net::Ipv4Addr;

/// Builds the endpoint for a pod: its addresses of the family in canonical form (sorted),
/// conditions (serving = ready; terminating = being deleted; ready = publishNotReadyAddresses
/// or serving and not terminating), node, zone (when known), published hostname, and a Pod
/// targetRef. The caller drops endpoints without addresses.
pub fn pod_to_endpoint(
    pod: &PodInfo,
    zone: Option<&str>,
    service: &ServiceInfo,
    address_type: AddressType,
) -> Endpoint {
    let want_v6 = address_type == AddressType::IPv6;
    let mut addresses: Vec<String> = pod
        .ips
        .iter()
        .filter_map(|ip| canonical_address(ip, want_v6))
        .collect();
    addresses.sort();
    let serving = pod.ready;
    let terminating = pod.deleting;
    let ready = service.publish_not_ready_addresses || (serving && !terminating);
    Endpoint {
        addresses,
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        node_name: (!pod.node_name.is_empty()).then(|| pod.node_name.as_str().to_owned()),
        zone: zone.filter(|z| !z.is_empty()).map(str::to_owned),
        hostname: publishes_hostname(pod, service).then(|| pod.hostname().to_owned()),
        target_ref: Some(pod_reference(pod)),
        ..Default::default()
    }
}

/// A pod IP in canonical form, when it is of the wanted family. Dotted IPv4 that the strict
/// parser accepts is canonical as it stands (no leading zeros, four octets), so the text is
/// copied rather than formatted again: a sync builds every endpoint of its Service.
fn canonical_address(text: &str, want_v6: bool) -> Option<String> {
    if text.parse::<Ipv4Addr>().is_ok() {
        return (!want_v6).then(|| text.to_owned());
    }
    let ip = parse_sloppy(text)?;
    (ip.is_ipv6() == want_v6).then(|| ip.to_string())
}

/// The zone a pod's endpoint carries, from its node (`None` for a node without one). A pod on
/// a node the cache does not know is left out (its slice is still written, and the sync fails
/// so it is retried): that is the `Err`. With publishNotReadyAddresses the user asked for
/// every pod, so it goes in without a zone.
pub fn endpoint_zone(
    nodes: &dyn NodeZones,
    pod: &PodInfo,
    service: &ServiceInfo,
) -> Result<Option<CompactString>, MissingNode> {
    match nodes.node_zone(&pod.node_name) {
        Some(zone) => Ok(zone),
        None if service.publish_not_ready_addresses => Ok(None),
        None => Err(MissingNode {
            pod: pod.name.to_string(),
            node: pod.node_name.to_string(),
        }),
    }
}

/// An endpoint's identity across syncs: its sorted addresses, hostname and the pod it points
/// at. Everything else (node, zone, conditions, uid) can change in place.
///
/// Every sync keys each endpoint it wants and each one its slices hold; the strings are short
/// enough to sit inside the key, and a pod's endpoint has a single address, so building a key
/// allocates nothing. The order is the sorted address list's, then the other fields'.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EndpointKey {
    /// The smallest address (none for an endpoint without addresses)...
    first_address: Option<CompactString>,
    /// ...and the others, sorted.
    other_addresses: Vec<CompactString>,
    hostname: CompactString,
    namespace: CompactString,
    name: CompactString,
}

impl EndpointKey {
    /// The key of an endpoint (never mutates it: addresses are sorted in a copy).
    pub fn of(endpoint: &Endpoint) -> Self {
        let (first_address, other_addresses) = match endpoint.addresses.as_slice() {
            [] => (None, Vec::new()),
            [only] => (Some(CompactString::from(only.as_str())), Vec::new()),
            many => {
                let mut sorted: Vec<CompactString> = many
                    .iter()
                    .map(|a| CompactString::from(a.as_str()))
                    .collect();
                sorted.sort();
                let first = sorted.remove(0);
                (Some(first), sorted)
            }
        };
        let target = endpoint.target_ref.as_ref();
        let text = |value: Option<&String>| CompactString::from(value.map_or("", String::as_str));
        Self {
            first_address,
            other_addresses,
            hostname: text(endpoint.hostname.as_ref()),
            namespace: text(target.and_then(|t| t.namespace.as_ref())),
            name: text(target.and_then(|t| t.name.as_ref())),
        }
    }
}

impl EndpointKey {
    /// The key of an endpoint as a [`StoredSlice`](crate::projection::StoredSlice) in
    /// namespace `home` keeps it: equal to [`EndpointKey::of`] the endpoint it was made from.
    pub fn of_stored(endpoint: &StoredEndpoint, home: Option<&str>) -> Self {
        let (first_address, other_addresses) = match endpoint.addresses() {
            [] => (None, Vec::new()),
            [only] => (Some(only.clone()), Vec::new()),
            many => {
                let mut sorted = many.to_vec();
                sorted.sort();
                let first = sorted.remove(0);
                (Some(first), sorted)
            }
        };
        let target = endpoint.target_ref();
        let text = |value: Option<&str>| CompactString::from(value.unwrap_or_default());
        Self {
            first_address,
            other_addresses,
            hostname: text(endpoint.hostname()),
            namespace: text(target.and_then(|t| t.namespace(home))),
            name: text(target.and_then(|t| t.name())),
        }
    }
}

/// [`equal_beyond_key`] of a wanted endpoint and one a stored slice in namespace `home`
/// keeps, compared in place.
pub fn equal_beyond_key_stored(
    wanted: &Endpoint,
    stored: &StoredEndpoint,
    home: Option<&str>,
) -> bool {
    let conditions = |c: Option<&EndpointConditions>| {
        c.map_or((None, None, None), |c| (c.ready, c.serving, c.terminating))
    };
    wanted.node_name.as_deref() == stored.node_name()
        && wanted.zone.as_deref() == stored.zone()
        && conditions(wanted.conditions.as_ref()) == conditions(stored.conditions())
        && match (wanted.target_ref.as_ref(), stored.target_ref()) {
            (Some(wanted), Some(held)) => held.same_as(home, wanted),
            (wanted, held) => wanted.is_none() && held.is_none(),
        }
}

/// True when two endpoints with the same key need no update: same node, zone, conditions
/// and targetRef (ignoring its resourceVersion). Hints are not compared here.
pub fn equal_beyond_key(a: &Endpoint, b: &Endpoint) -> bool {
    let conditions = |e: &Endpoint| {
        e.conditions
            .as_ref()
            .map_or((None, None, None), |c| (c.ready, c.serving, c.terminating))
    };
    a.node_name == b.node_name
        && a.zone == b.zone
        && conditions(a) == conditions(b)
        && same_reference(a.target_ref.as_ref(), b.target_ref.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{pod, service};

    #[test]
    fn terminating_pods_are_serving_but_not_ready() {
        let p = pod("a").ip("10.0.0.1").ready(true).deleting().build();
        let ep = pod_to_endpoint(&p, None, &service("s").build(), AddressType::IPv4);
        let c = ep.conditions.unwrap();
        assert_eq!(
            (c.ready, c.serving, c.terminating),
            (Some(false), Some(true), Some(true))
        );
    }

    #[test]
    fn publish_not_ready_addresses_makes_every_endpoint_ready() {
        let p = pod("a").ip("10.0.0.1").deleting().build();
        let svc = service("s").publish_not_ready().build();
        let c = pod_to_endpoint(&p, None, &svc, AddressType::IPv4)
            .conditions
            .unwrap();
        assert_eq!(
            (c.ready, c.serving, c.terminating),
            (Some(true), Some(false), Some(true))
        );
    }

    #[test]
    fn addresses_are_filtered_by_family_and_canonical() {
        let p = pod("a").ip("10.0.0.1").ip("FD00:0:0::0001").build();
        let sloppy = pod("b").ip("010.000.000.001").ip("::ffff:10.0.0.2").build();
        let svc = service("s").build();
        assert_eq!(
            pod_to_endpoint(&sloppy, None, &svc, AddressType::IPv4).addresses,
            vec!["10.0.0.1", "10.0.0.2"]
        );
        assert!(pod_to_endpoint(&sloppy, None, &svc, AddressType::IPv6)
            .addresses
            .is_empty());
        assert_eq!(
            pod_to_endpoint(&p, None, &svc, AddressType::IPv6).addresses,
            vec!["fd00::1"]
        );
        assert_eq!(
            pod_to_endpoint(&p, None, &svc, AddressType::IPv4).addresses,
            vec!["10.0.0.1"]
        );
    }

    #[test]
    fn zone_node_hostname_and_target_ref_are_set() {
        let p = pod("a")
            .ip("10.0.0.1")
            .node("n1")
            .hostname("a", "s")
            .build();
        let ep = pod_to_endpoint(&p, Some("z1"), &service("s").build(), AddressType::IPv4);
        assert_eq!(ep.node_name.as_deref(), Some("n1"));
        assert_eq!(ep.zone.as_deref(), Some("z1"));
        assert_eq!(ep.hostname.as_deref(), Some("a"));
        let t = ep.target_ref.unwrap();
        assert_eq!(
            (t.kind.as_deref(), t.name.as_deref(), t.uid.as_deref()),
            (Some("Pod"), Some("a"), Some("uid-a"))
        );
    }

    #[test]
    fn identity_ignores_conditions_but_not_hostname() {
        let svc = service("s").build();
        let a = pod_to_endpoint(
            &pod("a").ip("10.0.0.1").build(),
            None,
            &svc,
            AddressType::IPv4,
        );
        let b = pod_to_endpoint(
            &pod("a").ip("10.0.0.1").ready(true).build(),
            None,
            &svc,
            AddressType::IPv4,
        );
        assert_eq!(EndpointKey::of(&a), EndpointKey::of(&b));
        assert!(!equal_beyond_key(&a, &b));
        let mut c = a.clone();
        c.hostname = Some("x".into());
        assert_ne!(EndpointKey::of(&a), EndpointKey::of(&c));
    }

    #[test]
    fn stored_endpoints_key_and_compare_as_the_endpoints_they_were_made_from() {
        use crate::projection::StoredSlice;
        use k8s_openapi::api::core::v1::ObjectReference;
        use k8s_openapi::api::discovery::v1::EndpointSlice;
        let svc = service("s").build();
        let base = pod_to_endpoint(
            &pod("a").ip("10.0.0.1").node("n1").ready(true).build(),
            Some("z1"),
            &svc,
            AddressType::IPv4,
        );
        let with = |change: &dyn Fn(&mut Endpoint)| {
            let mut e = base.clone();
            change(&mut e);
            e
        };
        let endpoints = vec![
            base.clone(),
            with(&|e| e.addresses = vec!["10.0.0.3".into(), "10.0.0.2".into()]),
            with(&|e| e.addresses.clear()),
            with(&|e| e.hostname = Some("h".into())),
            with(&|e| e.node_name = None),
            with(&|e| e.zone = Some("z2".into())),
            with(&|e| e.conditions = None),
            with(&|e| e.conditions.as_mut().unwrap().serving = None),
            with(&|e| e.target_ref = None),
            with(&|e| e.target_ref.as_mut().unwrap().namespace = Some("other".into())),
            with(&|e| e.target_ref.as_mut().unwrap().uid = Some("uid-b".into())),
            with(&|e| e.target_ref.as_mut().unwrap().resource_version = Some("3".into())),
            with(&|e| {
                e.target_ref = Some(ObjectReference {
                    kind: Some("Node".into()),
                    name: Some("n1".into()),
                    ..ObjectReference::default()
                })
            }),
        ];
        for home in [Some("default"), Some("other"), None] {
            let slice = EndpointSlice {
                metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    namespace: home.map(str::to_owned),
                    ..Default::default()
                },
                endpoints: endpoints.clone(),
                ..Default::default()
            };
            let stored = StoredSlice::new(slice);
            for (held, kept) in endpoints.iter().zip(stored.endpoints()) {
                assert_eq!(EndpointKey::of_stored(kept, home), EndpointKey::of(held));
                for wanted in &endpoints {
                    assert_eq!(
                        equal_beyond_key_stored(wanted, kept, home),
                        equal_beyond_key(wanted, held),
                        "{wanted:?} against {held:?} in {home:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn keys_order_as_sorted_address_lists_then_hostname_then_pod() {
        use k8s_openapi::api::core::v1::ObjectReference;
        let endpoint = |addresses: &[&str], hostname: Option<&str>, name: &str| Endpoint {
            addresses: addresses.iter().map(|a| (*a).to_owned()).collect(),
            hostname: hostname.map(str::to_owned),
            target_ref: Some(ObjectReference {
                namespace: Some("shop".into()),
                name: Some(name.into()),
                ..ObjectReference::default()
            }),
            ..Endpoint::default()
        };
        let endpoints = [
            endpoint(&["10.0.0.2"], None, "b"),
            endpoint(&["10.0.0.2", "10.0.0.1"], None, "a"),
            endpoint(&[], Some("h"), "c"),
            endpoint(&["10.0.0.1"], Some("h"), "a"),
            endpoint(&["10.0.0.1"], None, "z"),
            endpoint(&["10.0.0.1", "10.0.0.3"], None, "a"),
            endpoint(&["10.0.0.10"], None, "a"),
        ];
        // The order of the plain tuple: sorted addresses, hostname, namespace, name.
        let plain = |e: &Endpoint| {
            let mut addresses = e.addresses.clone();
            addresses.sort();
            let name = e.target_ref.as_ref().and_then(|t| t.name.clone());
            (addresses, e.hostname.clone().unwrap_or_default(), name)
        };
        let mut by_key: Vec<&Endpoint> = endpoints.iter().collect();
        by_key.sort_by_key(|e| EndpointKey::of(e));
        let mut by_plain: Vec<&Endpoint> = endpoints.iter().collect();
        by_plain.sort_by_key(|e| plain(e));
        assert_eq!(by_key, by_plain);
        assert_eq!(
            EndpointKey::of(&endpoint(&["10.0.0.2", "10.0.0.1"], None, "a")),
            EndpointKey::of(&endpoint(&["10.0.0.1", "10.0.0.2"], None, "a"))
        );
    }
}
