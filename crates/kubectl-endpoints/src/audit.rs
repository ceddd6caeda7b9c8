//! `audit`: would our controllers write what this cluster holds?
//!
//! The cluster is read with list requests only. Its Namespaces, Nodes, Services and Pods, and
//! the hand-written Endpoints of Services without a selector, go into an in-process embedded
//! API server, the controllers run there from scratch (the code
//! path `run` and `plan` use), and what they wrote is compared, Service by Service, with the
//! Endpoints and EndpointSlices the cluster has, by the conformance corpus' comparison rules
//! for dynamic cases: names, uids, resourceVersions and timestamps are ignored, and so is what
//! upstream itself writes in map order or after the order of past changes. Nothing is ever written to the cluster.

use crate::conformance::{compare_by, Rules, Written};
use crate::manifests::Object;
use crate::plan::{plan, PlanSettings};
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::ListParams;
use kube::{Api, Client};
use reconcile::projection::ServiceInfo;
use serde::Serialize;
use std::collections::BTreeMap;

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

async fn list<K>(client: &Client, namespace: Option<&str>) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    Ok(api.list(&ListParams::default()).await?.items)
}

/// Audits the cluster `client` talks to.
pub async fn audit(client: &Client, scope: &AuditScope) -> Result<AuditReport> {
    let ns = scope.namespace.as_deref();
    let lp = ListParams::default();
    let namespaces = Api::<Namespace>::all(client.clone())
        .list(&lp)
        .await
        .context("listing Namespaces")?
        .items;
    let nodes = Api::<Node>::all(client.clone())
        .list(&lp)
        .await
        .context("listing Nodes")?
        .items;
    let services: Vec<Service> = list(client, ns).await.context("listing Services")?;
    let pods: Vec<Pod> = list(client, ns).await.context("listing Pods")?;
    let endpoints: Vec<Endpoints> = list(client, ns).await.context("listing Endpoints")?;
    let slices: Vec<EndpointSlice> = list(client, ns).await.context("listing EndpointSlices")?;

    let service_keys: Vec<String> = services
        .iter()
        .filter_map(|s| {
            Some(format!(
                "{}/{}",
                s.metadata.namespace.as_ref()?,
                s.metadata.name.as_ref()?
            ))
        })
        .filter(|key| key != "default/kubernetes")
        .collect();
    // The Endpoints of a Service without a selector are written by hand: they are the
    // mirroring controller's input, not what a controller writes, so the copy gets them too.
    let hand_written: Vec<Endpoints> = endpoints
        .iter()
        .filter(|e| {
            services.iter().any(|s| {
                s.metadata.namespace == e.metadata.namespace
                    && s.metadata.name == e.metadata.name
                    && ServiceInfo::from_service(s).is_some_and(|s| s.selector.is_none())
            })
        })
        .cloned()
        .collect();
    let mut objects: Vec<Object> = Vec::new();
    objects.extend(namespaces.into_iter().map(Object::Namespace));
    objects.extend(nodes.into_iter().map(Object::Node));
    objects.extend(services.into_iter().map(Object::Service));
    objects.extend(pods.into_iter().map(Object::Pod));
    objects.extend(hand_written.into_iter().map(Object::Endpoints));

    let mut settings = PlanSettings::new(reconcile::Timestamp::now());
    scope.flags.apply(&mut settings.options)?;
    let objects =
        crate::manifests::into_values(objects).context("encoding the cluster's objects")?;
    let ours = plan(objects, &settings)
        .await
        .context("running the controllers on a copy of the cluster")?;
    let ours = Written::from_outcome(ours)?.without_events();
    let theirs = Written {
        endpoints: values(&endpoints)?,
        endpoint_slices: values(&slices)?,
        events: Vec::new(),
    };

    // Each difference line starts with the `namespace/name` of the Service it is about.
    let mut by_service: BTreeMap<String, Vec<String>> = service_keys
        .iter()
        .map(|k| (k.clone(), Vec::new()))
        .collect();
    // A running cluster has been through changes, so slices are compared as in the corpus'
    // dynamic cases: by the total endpoints of each port list, not slice by slice (how they
    // are spread over slices depends on the order changes came in), and without trigger times.
    for difference in compare_by(&ours, &theirs, Rules::Dynamic) {
        let service = difference
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        by_service.entry(service).or_default().push(difference);
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

fn values<T: Serialize>(items: &[T]) -> Result<Vec<serde_json::Value>> {
    items
        .iter()
        .map(|i| serde_json::to_value(i).context("encoding an object"))
        .collect()
}
