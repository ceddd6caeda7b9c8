//! `audit`: would our controllers write what this cluster holds?
//!
//! The cluster is read with list requests only. Its Namespaces, Nodes, Services and Pods, and
//! the hand-written Endpoints of Services without a selector, go into an in-process embedded
//! API server, the controllers run there from scratch (the code
//! path `run` and `plan` use), and what they wrote is compared, Service by Service, with the
//! Endpoints and EndpointSlices the cluster has, by the conformance corpus' comparison rules
//! for dynamic cases: names, uids, resourceVersions and timestamps are ignored, and so is what
//! upstream itself writes in map order or after the order of past changes. Nothing is ever written to the cluster.

use crate::plan::{plan, PlanSettings};
use crate::snapshot::Snapshot;
use anyhow::{Context, Result};
use kube::Client;
use reconcile::compare::{differences, Objects, Rules, Sides};
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// The differences, in the readable form `conformance` prints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
}

/// The whole answer.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
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
            "{} services: {} same, {} differ",
            self.services.len(),
            self.same,
            self.differ
        )
    }
}

/// Audits the cluster `client` talks to.
pub async fn audit(client: &Client, scope: &AuditScope) -> Result<AuditReport> {
    let snapshot = Snapshot::read(client, scope.namespace.as_deref()).await?;
    let service_keys = snapshot.service_keys();
    let objects = snapshot.controller_input();
    let mut settings = PlanSettings::new(reconcile::Timestamp::now());
    scope.flags.apply(&mut settings.options)?;
    let objects =
        crate::manifests::into_values(objects).context("encoding the cluster's objects")?;
    let planned = plan(objects, &settings)
        .await
        .context("running the controllers on a copy of the cluster")?;
    let ours = Objects::new(&planned.endpoints, &planned.slices);
    let theirs = Objects::new(&snapshot.endpoints, &snapshot.slices);

    let mut by_service: BTreeMap<String, Vec<String>> = service_keys
        .iter()
        .map(|k| (k.clone(), Vec::new()))
        .collect();
    // A running cluster has been through changes, so slices are compared as in the corpus'
    // dynamic cases: by the total endpoints of each port list, not slice by slice (how they
    // are spread over slices depends on the order changes came in), and without trigger times.
    for difference in differences(&ours, &theirs, Rules::Dynamic, SIDES) {
        by_service
            .entry(difference.subject.clone())
            .or_default()
            .push(difference.to_string());
    }
    let services: Vec<ServiceAudit> = by_service
        .into_iter()
        .map(|(service, differences)| ServiceAudit {
            service,
            result: if differences.is_empty() {
                "same"
            } else {
                "differs"
            },
            differences,
        })
        .collect();
    let same = services.iter().filter(|s| s.result == "same").count();
    Ok(AuditReport {
        differ: services.len() - same,
        same,
        services,
    })
}
