//! `audit`: would our controllers write what this cluster holds?
//!
//! The cluster is read with list requests only. Its Namespaces, Nodes, Services and Pods, and
//! the hand-written Endpoints of Services without a selector, go into an in-process embedded
//! API server, the controllers run there from scratch (the code
//! path `run` and `plan` use), and what they wrote is compared, Service by Service, with the
//! Endpoints and EndpointSlices the cluster has, by the conformance corpus' comparison rules
//! for dynamic cases: names, uids, resourceVersions and timestamps are ignored, and so is what
//! upstream itself writes in map order or after the order of past changes. Nothing is ever written to the cluster.
//!
//! The controllers follow the cluster's Kubernetes version (its `/version`, or
//! `--emulated-version`), and an order that version's kube-controller-manager would leave
//! alone is no difference: the ports of a slice (no version rewrites a slice for their order),
//! and from v1.35 the ports and subsets of an Endpoints object (it compares them repacked).
//! Each differing Service says first, in a few words, what differs.

use crate::plan::{plan, PlanSettings};
use crate::snapshot::Snapshot;
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use reconcile::compare::{differences, Objects, Rules, Sides};
use reconcile::endpoints::repack::repack_subsets;
use reconcile::kube_version::OrderHash;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What the two sides of an audit's differences are called: what these controllers would
/// write, and what the cluster holds.
pub const SIDES: Sides = Sides {
    ours: "plan",
    theirs: "cluster",
};

/// What the audit reads.
#[derive(Debug, Clone)]
pub struct AuditScope {
    /// Only this namespace (all when `None`).
    pub namespace: Option<String>,
    /// The flags the cluster's controllers run with (those that decide what is written).
    pub flags: kube_endpoints::flags::OutputFlags,
}

/// One Service's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceAudit {
    /// namespace/name.
    pub service: String,
    /// `same` or `differs`.
    pub result: &'static str,
    /// What differs, in a few words each (`ports in another order`, `2 endpoints only in
    /// the plan`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The differences, in the readable form `conformance` prints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
}

/// The whole answer.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// The Kubernetes version whose controllers were followed (`v1.34`).
    pub version: String,
    /// Per Service, by namespace and name.
    pub services: Vec<ServiceAudit>,
    /// Services whose objects are the same.
    pub same: usize,
    /// Services whose objects differ.
    pub differ: usize,
}

impl AuditReport {
    /// The closing summary line.
    pub fn summary(&self) -> String {
        format!(
            "{} services: {} same, {} differ (following kube-controller-manager {})",
            self.services.len(),
            self.same,
            self.differ,
            self.version
        )
    }
}

/// Audits the cluster `client` talks to.
pub async fn audit(client: &Client, scope: &AuditScope) -> Result<AuditReport> {
    let mut flags = scope.flags.clone();
    crate::cluster_version::follow_cluster(client, &mut flags).await?;
    let snapshot = Snapshot::read(client, scope.namespace.as_deref()).await?;
    let service_keys = snapshot.service_keys();
    let objects = snapshot.controller_input();
    let mut settings = PlanSettings::new(reconcile::Timestamp::now());
    flags.apply(&mut settings.options)?;
    let rules = crate::plan::followed_rules(&settings.options.settings)?;
    let objects =
        crate::manifests::into_values(objects).context("encoding the cluster's objects")?;
    let planned = plan(objects, &settings)
        .await
        .context("running the controllers on a copy of the cluster")?;
    // What the followed version would not rewrite for its order alone is compared in its
    // order, on both sides alike (the hand-written Endpoints of selector-less Services are on
    // both): a slice's ports always, an Endpoints object repacked from v1.35.
    let hash = rules.order_hash;
    let (our_slices, their_slices) = (
        in_port_order(&planned.slices, hash),
        in_port_order(&snapshot.slices, hash),
    );
    let (our_repacked, their_repacked) = (
        repacked(&planned.endpoints, hash),
        repacked(&snapshot.endpoints, hash),
    );
    let (our_endpoints, their_endpoints) = if rules.endpoints_skip_repacked {
        (&our_repacked, &their_repacked)
    } else {
        (&planned.endpoints, &snapshot.endpoints)
    };
    let ours = Objects::new(our_endpoints, &our_slices);
    let theirs = Objects::new(their_endpoints, &their_slices);
    // A running cluster has been through changes, so slices are compared as in the corpus'
    // dynamic cases: by the total endpoints of each port list, not slice by slice (how they
    // are spread over slices depends on the order changes came in), and without trigger times.
    let found = differences(&ours, &theirs, Rules::Dynamic, SIDES);
    // Up to v1.34 the Endpoints' order counts: a Service whose differences all go once both
    // sides are repacked differs in that order only.
    let differs_repacked: Option<BTreeSet<String>> =
        (!rules.endpoints_skip_repacked && !found.is_empty()).then(|| {
            let ours = Objects::new(&our_repacked, &our_slices);
            let theirs = Objects::new(&their_repacked, &their_slices);
            differences(&ours, &theirs, Rules::Dynamic, SIDES)
                .into_iter()
                .map(|d| d.subject)
                .collect()
        });

    let mut by_service: BTreeMap<String, (Vec<String>, Vec<String>)> = service_keys
        .iter()
        .map(|k| (k.clone(), Default::default()))
        .collect();
    for difference in found {
        let (reasons, lines) = by_service.entry(difference.subject.clone()).or_default();
        let order_only = differs_repacked
            .as_ref()
            .is_some_and(|remaining| !remaining.contains(&difference.subject));
        let reason = if order_only {
            rules.port_order_rewritten()
        } else {
            difference.summary()
        };
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
        lines.push(difference.to_string());
    }
    let services: Vec<ServiceAudit> = by_service
        .into_iter()
        .map(|(service, (reasons, differences))| ServiceAudit {
            service,
            result: if differences.is_empty() {
                "same"
            } else {
                "differs"
            },
            reasons,
            differences,
        })
        .collect();
    let same = services.iter().filter(|s| s.result == "same").count();
    Ok(AuditReport {
        version: rules.version.to_string(),
        differ: services.len() - same,
        same,
        services,
    })
}

/// Copies of `slices` with their ports sorted by `hash`.
fn in_port_order(slices: &[EndpointSlice], hash: OrderHash) -> Vec<EndpointSlice> {
    let mut slices = slices.to_vec();
    for ports in slices.iter_mut().filter_map(|s| s.ports.as_mut()) {
        reconcile::slice::port_groups::sort_ports(ports, hash);
    }
    slices
}

/// Copies of `endpoints` with their subsets repacked, ports sorted by `hash`.
fn repacked(endpoints: &[Endpoints], hash: OrderHash) -> Vec<Endpoints> {
    let mut endpoints = endpoints.to_vec();
    for subsets in endpoints.iter_mut().filter_map(|e| e.subsets.as_mut()) {
        *subsets = repack_subsets(subsets, hash);
    }
    endpoints
}
