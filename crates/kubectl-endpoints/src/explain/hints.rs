//! Why hints were, or were not, written: the slice controller's event and the figures the
//! topology cache decides from.

use super::{EventNote, Objects};
use crate::snapshot::Snapshot;
use reconcile::projection::{NodeInfo, ServiceInfo};
use reconcile::topology::allocation::allocate;
use reconcile::topology::{hints_enabled, TopologyCache};
use reconcile::traffic_distribution;
use serde::Serialize;
use std::collections::BTreeMap;

/// One zone's figures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneFigures {
    /// The zone (`""` for endpoints without one).
    pub zone: String,
    /// Ready endpoints in the zone.
    pub ready_endpoints: usize,
    /// Ready endpoints whose hints name this zone.
    pub hinted_endpoints: usize,
    /// The zone's share of the allocatable CPU of ready, non-control-plane nodes, when the
    /// node information suffices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
    /// Topology mode Auto: how many endpoints the zone may be hinted without overload, when
    /// the zones' shares allow an allocation (`minimum` and `maximum` in the JSON).
    #[serde(flatten)]
    pub allowed: Option<HintBounds>,
}

/// The bounds an allocation sets on one zone's hinted endpoints: always both, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HintBounds {
    /// The fewest endpoints the zone may be hinted without overload.
    pub minimum: usize,
    /// The most.
    pub maximum: usize,
}

/// The hints part of an explanation.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HintsExplanation {
    /// `topology-mode Auto` or `trafficDistribution VALUE`.
    pub mode: String,
    /// Whether the slices the controllers write carry hints.
    pub written: bool,
    /// Why, in upstream's words where upstream has them.
    pub reason: String,
    /// The event the slice controller records about it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<EventNote>,
    /// Per zone.
    pub zones: Vec<ZoneFigures>,
}

/// The hints explanation, for a Service asking for hints one way or the other.
pub(crate) fn explain_hints(
    service: &ServiceInfo,
    snapshot: &Snapshot,
    planned: &Objects<'_>,
    events: &[EventNote],
    rules: &reconcile::VersionRules,
) -> Option<HintsExplanation> {
    let auto = hints_enabled(&service.annotations);
    let distribution = service.traffic_distribution.as_deref();
    if !auto && distribution.is_none() {
        return None;
    }
    let mut zones: BTreeMap<String, ZoneFigures> = BTreeMap::new();
    let mut written = false;
    let mut ready_total = 0;
    for endpoint in planned.slices.iter().flat_map(|s| s.endpoints.iter()) {
        let hinted: Vec<String> = endpoint
            .hints
            .iter()
            .flat_map(|h| h.for_zones.iter().flatten())
            .map(|z| z.name.clone())
            .collect();
        written |= endpoint.hints.is_some();
        for zone in &hinted {
            figures(&mut zones, zone).hinted_endpoints += 1;
        }
        if endpoint
            .conditions
            .as_ref()
            .and_then(|c| c.ready)
            .unwrap_or(true)
        {
            ready_total += 1;
            figures(&mut zones, endpoint.zone.as_deref().unwrap_or_default()).ready_endpoints += 1;
        }
    }
    // The zones' CPU shares as the slice controller's topology cache computes them.
    let mut cache = TopologyCache::default();
    let nodes: Vec<NodeInfo> = snapshot
        .nodes
        .iter()
        .filter_map(NodeInfo::from_node)
        .collect();
    cache.set_nodes(&nodes);
    if let Some(ratios) = cache.cpu_ratios() {
        let allocations = if auto {
            allocate(ratios, ready_total).ok()
        } else {
            None
        };
        for (zone, share) in ratios {
            let f = figures(&mut zones, zone);
            f.cpu_share = Some(*share);
            f.allowed = allocations
                .as_ref()
                .and_then(|a| a.get(zone))
                .map(|a| HintBounds {
                    minimum: a.minimum,
                    maximum: a.maximum,
                });
        }
    }
    let event = events
        .iter()
        .find(|e| e.reason.starts_with("TopologyAwareHints"))
        .cloned();
    let (mode, reason) = if auto {
        let reason = match &event {
            Some(e) => e.message.clone(),
            None if written => "hints are allocated by the zones' CPU shares".to_owned(),
            None => "no hints: the slice controller recorded no reason".to_owned(),
        };
        ("topology-mode Auto".to_owned(), reason)
    } else {
        let value = distribution.unwrap_or_default();
        let reason = if !traffic_distribution::acts_on(Some(value), rules) {
            format!(
                "{value:?} is not a trafficDistribution the controller of {rules} acts on: no hints"
            )
        } else if value == traffic_distribution::PREFER_SAME_NODE {
            "each ready endpoint's hints name its own zone and node".to_owned()
        } else {
            "each ready endpoint's hint names its own zone".to_owned()
        };
        (format!("trafficDistribution {value}"), reason)
    };
    Some(HintsExplanation {
        mode,
        written,
        reason,
        event,
        zones: zones.into_values().collect(),
    })
}

fn figures<'a>(zones: &'a mut BTreeMap<String, ZoneFigures>, zone: &str) -> &'a mut ZoneFigures {
    zones.entry(zone.to_owned()).or_insert_with(|| ZoneFigures {
        zone: zone.to_owned(),
        ready_endpoints: 0,
        hinted_endpoints: 0,
        cpu_share: None,
        allowed: None,
    })
}
