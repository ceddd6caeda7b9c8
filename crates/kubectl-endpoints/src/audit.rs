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
use reconcile::VersionRules;
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
    // What the followed version would not rewrite for its order alone is put in its order,
    // on both sides alike (the hand-written Endpoints of selector-less Services are on both).
    let (endpoints, slices) = in_free_order(&planned.endpoints, &planned.slices, &rules);
    let ours = Objects::new(&endpoints, &slices);
    let (endpoints, slices) = in_free_order(&snapshot.endpoints, &snapshot.slices, &rules);
    let theirs = Objects::new(&endpoints, &slices);
    // The same with every port order ignored: a difference gone there is one of order only.
    let all_orders = VersionRules {
        endpoints_skip_repacked: true,
        ..rules
    };
    let (endpoints, slices) = in_free_order(&planned.endpoints, &planned.slices, &all_orders);
    let ours_any_order = Objects::new(&endpoints, &slices);
    let (endpoints, slices) = in_free_order(&snapshot.endpoints, &snapshot.slices, &all_orders);
    let theirs_any_order = Objects::new(&endpoints, &slices);

    let mut by_service: BTreeMap<String, (Vec<String>, Vec<String>)> = service_keys
        .iter()
        .map(|k| (k.clone(), Default::default()))
        .collect();
    // A running cluster has been through changes, so slices are compared as in the corpus'
    // dynamic cases: by the total endpoints of each port list, not slice by slice (how they
    // are spread over slices depends on the order changes came in), and without trigger times.
    let order_only: BTreeSet<String> = {
        let remaining: BTreeSet<String> =
            differences(&ours_any_order, &theirs_any_order, Rules::Dynamic, SIDES)
                .into_iter()
                .map(|d| d.subject)
                .collect();
        differences(&ours, &theirs, Rules::Dynamic, SIDES)
            .into_iter()
            .map(|d| d.subject)
            .filter(|subject| !remaining.contains(subject))
            .collect()
    };
    for difference in differences(&ours, &theirs, Rules::Dynamic, SIDES) {
        let (reasons, lines) = by_service.entry(difference.subject.clone()).or_default();
        let reason = if order_only.contains(&difference.subject) {
            format!(
                "ports in another order, which kube-controller-manager {} rewrites",
                rules.version
            )
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

/// Copies of the cluster's objects with the orders `rules`' kube-controller-manager would
/// leave alone put in its own: every slice's ports, and from v1.35 every Endpoints object's
/// subsets repacked (their ports then in that version's order).
fn in_free_order(
    endpoints: &[Endpoints],
    slices: &[EndpointSlice],
    rules: &VersionRules,
) -> (Vec<Endpoints>, Vec<EndpointSlice>) {
    let slices = slices
        .iter()
        .cloned()
        .map(|mut slice| {
            if let Some(ports) = slice.ports.as_mut() {
                reconcile::slice::port_groups::sort_ports(ports, rules.order_hash);
            }
            slice
        })
        .collect();
    let endpoints = endpoints
        .iter()
        .cloned()
        .map(|mut e| {
            if rules.endpoints_order_is_free() {
                if let Some(subsets) = e.subsets.as_mut() {
                    *subsets = repack_subsets(subsets, rules.order_hash);
                }
            }
            e
        })
        .collect();
    (endpoints, slices)
}
