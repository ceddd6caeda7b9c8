//! Hints from `spec.trafficDistribution`: PreferClose and PreferSameZone hint each ready
//! endpoint's own zone, PreferSameNode also its own node. Any other value removes hints.
//! PreferSameZone and PreferSameNode count only where the followed version's
//! `PreferSameTrafficDistribution` gate is on ([`acts_on`]).

use crate::kube_version::VersionRules;
use crate::slice::{endpoint_ready, SliceSets};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointHints, ForNode, ForZone};

/// `PreferClose`: the original name of PreferSameZone.
pub const PREFER_CLOSE: &str = "PreferClose";
/// `PreferSameZone`.
pub const PREFER_SAME_ZONE: &str = "PreferSameZone";
/// `PreferSameNode`.
pub const PREFER_SAME_NODE: &str = "PreferSameNode";

/// True when the value is one the controller acts on under `rules`: PreferClose always,
/// PreferSameZone and PreferSameNode with the `PreferSameTrafficDistribution` gate on.
pub fn acts_on(value: Option<&str>, rules: &VersionRules) -> bool {
    match value {
        Some(PREFER_CLOSE) => true,
        Some(PREFER_SAME_ZONE | PREFER_SAME_NODE) => rules.prefer_same_traffic_distribution,
        _ => false,
    }
}

/// True for the values that hint endpoints close to their clients (whatever the gate: the
/// caller decides first whether the value counts).
fn hints_close(value: Option<&str>) -> bool {
    matches!(
        value,
        Some(PREFER_CLOSE | PREFER_SAME_ZONE | PREFER_SAME_NODE)
    )
}

/// The hints an endpoint should carry under a trafficDistribution value (`None` when it
/// should carry none). Endpoints that are not ready are left as they are by the caller.
fn wanted_hints(endpoint: &Endpoint, node_hints: bool) -> Option<EndpointHints> {
    let for_zones = endpoint
        .zone
        .as_ref()
        .map(|z| vec![ForZone { name: z.clone() }]);
    let for_nodes = endpoint
        .node_name
        .as_ref()
        .filter(|_| node_hints)
        .map(|n| vec![ForNode { name: n.clone() }]);
    (for_zones.is_some() || for_nodes.is_some()).then_some(EndpointHints {
        for_zones,
        for_nodes,
    })
}

/// Reconciles hints for a trafficDistribution value. Unchanged slices are rewritten only
/// when some ready endpoint's hints are missing or wrong.
pub fn reconcile_hints(value: Option<&str>, sets: &mut SliceSets) {
    if !hints_close(value) {
        sets.promote_unchanged(|slice| slice.endpoints.iter().any(|e| e.hints.is_some()));
        for endpoint in sets.writable_endpoints_mut() {
            endpoint.hints = None;
        }
        return;
    }
    let node_hints = value == Some(PREFER_SAME_NODE);
    let needs_update = |e: &Endpoint| -> bool {
        if !endpoint_ready(e) {
            return false;
        }
        let zones = e
            .hints
            .as_ref()
            .and_then(|h| h.for_zones.as_deref())
            .unwrap_or(&[]);
        let nodes = e
            .hints
            .as_ref()
            .and_then(|h| h.for_nodes.as_deref())
            .unwrap_or(&[]);
        let zone_wrong = match &e.zone {
            Some(zone) => zones.len() != 1 || &zones[0].name != zone,
            None => !zones.is_empty(),
        };
        let node_wrong = match e.node_name.as_ref().filter(|_| node_hints) {
            Some(node) => nodes.len() != 1 || &nodes[0].name != node,
            None => !nodes.is_empty(),
        };
        zone_wrong || node_wrong
    };
    sets.promote_unchanged(|slice| slice.endpoints.iter().any(needs_update));
    for endpoint in sets.writable_endpoints_mut() {
        if endpoint_ready(endpoint) {
            endpoint.hints = wanted_hints(endpoint, node_hints);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address_family::AddressType;
    use crate::slice::endpoint::pod_to_endpoint;
    use crate::slice::fill::new_slice;
    use crate::testing::{pod, service};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use std::sync::Arc;

    fn slice(zone: Option<&str>, ready: bool) -> EndpointSlice {
        let svc = service("s").build();
        let mut s = new_slice(&svc, &[], AddressType::IPv4);
        let p = pod("a").ip("10.0.0.1").node("n1").ready(ready).build();
        s.endpoints
            .push(pod_to_endpoint(&p, zone, &svc, AddressType::IPv4));
        s
    }

    /// These slices being created, their hints reconciled for the trafficDistribution `value`.
    fn hinted_creates(value: Option<&str>, create: Vec<EndpointSlice>) -> SliceSets {
        let mut sets = SliceSets {
            create,
            ..Default::default()
        };
        reconcile_hints(value, &mut sets);
        sets
    }

    #[test]
    fn prefer_close_hints_the_endpoints_zone() {
        let sets = hinted_creates(Some(PREFER_CLOSE), vec![slice(Some("z1"), true)]);
        let hints = sets.create[0].endpoints[0].hints.clone().unwrap();
        assert_eq!(hints.for_zones.unwrap()[0].name, "z1");
        assert_eq!(hints.for_nodes, None);
    }

    #[test]
    fn prefer_same_node_adds_node_hints_with_and_without_zone() {
        let sets = hinted_creates(
            Some(PREFER_SAME_NODE),
            vec![slice(Some("z1"), true), slice(None, true)],
        );
        let with_zone = sets.create[0].endpoints[0].hints.clone().unwrap();
        assert_eq!(with_zone.for_nodes.unwrap()[0].name, "n1");
        let without_zone = sets.create[1].endpoints[0].hints.clone().unwrap();
        assert_eq!(without_zone.for_zones, None);
        assert_eq!(without_zone.for_nodes.unwrap()[0].name, "n1");
    }

    #[test]
    fn not_ready_endpoints_are_left_alone() {
        let sets = hinted_creates(Some(PREFER_CLOSE), vec![slice(Some("z1"), false)]);
        assert_eq!(sets.create[0].endpoints[0].hints, None);
    }

    #[test]
    fn unset_value_removes_hints_and_rewrites_hinted_unchanged_slices() {
        let mut hinted = slice(Some("z1"), true);
        hinted.endpoints[0].hints = wanted_hints(&hinted.endpoints[0], false);
        let mut sets = SliceSets {
            unchanged: vec![Arc::new(hinted), Arc::new(slice(Some("z1"), true))],
            ..Default::default()
        };
        reconcile_hints(None, &mut sets);
        assert_eq!(sets.update.len(), 1);
        assert_eq!(sets.update[0].endpoints[0].hints, None);
        assert_eq!(sets.unchanged.len(), 1);
    }

    #[test]
    fn only_wrong_or_missing_hints_move_unchanged_slices() {
        let mut right = slice(Some("z1"), true);
        right.endpoints[0].hints = wanted_hints(&right.endpoints[0], false);
        let mut wrong = slice(Some("z1"), true);
        wrong.endpoints[0].hints = Some(EndpointHints {
            for_zones: Some(vec![ForZone { name: "z2".into() }]),
            for_nodes: None,
        });
        let mut sets = SliceSets {
            unchanged: vec![
                Arc::new(right),
                Arc::new(wrong),
                Arc::new(slice(Some("z1"), true)),
            ],
            ..Default::default()
        };
        reconcile_hints(Some(PREFER_SAME_ZONE), &mut sets);
        assert_eq!(sets.unchanged.len(), 1);
        assert_eq!(sets.update.len(), 2);
        assert!(sets.update.iter().all(|s| s.endpoints[0]
            .hints
            .as_ref()
            .unwrap()
            .for_zones
            .as_ref()
            .unwrap()[0]
            .name
            == "z1"));
    }
}
