//! What the EndpointSlice mirroring controller reads and writes: the hand-written Endpoints
//! of a Service without a selector, built with named setters, and slices told apart by the
//! controller that manages them (their `endpointslice.kubernetes.io/managed-by` label).

use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, PostParams};
use reconcile::labels::{MIRRORING_CONTROLLER_NAME, SERVICE_NAME, SLICE_MANAGED_BY};
use serde_json::json;

use crate::build::service;
use crate::cluster::TestCluster;

/// Starts a Service `name` in `default` without a selector, and its hand-written Endpoints:
/// one subset, no addresses, no ports yet.
pub fn hand_written(name: &str) -> HandWritten {
    HandWritten {
        namespace: "default".into(),
        name: name.into(),
        addresses: Vec::new(),
        ports: Vec::new(),
    }
}

/// Builds a selector-less Service and the Endpoints its owner writes for it.
#[derive(Debug, Clone)]
pub struct HandWritten {
    namespace: String,
    name: String,
    addresses: Vec<String>,
    ports: Vec<(String, i32)>,
}

impl HandWritten {
    /// Adds a ready address.
    pub fn address(mut self, ip: &str) -> Self {
        self.addresses.push(ip.into());
        self
    }

    /// Adds a TCP port to the Service (its targetPort the same number) and to the Endpoints.
    pub fn port(mut self, name: &str, port: i32) -> Self {
        self.ports.push((name.into(), port));
        self
    }

    /// Creates the Service.
    pub async fn create_service(&self, cluster: &TestCluster) -> anyhow::Result<Service> {
        let service = self.ports.iter().fold(
            service(&self.name).ns(&self.namespace),
            |service, (name, port)| service.port(name, *port, *port),
        );
        cluster.create_service(&service).await
    }

    /// Creates the Endpoints, as the Service's owner writes them.
    pub async fn create_endpoints(&self, cluster: &TestCluster) -> anyhow::Result<Endpoints> {
        let addresses: Vec<_> = self.addresses.iter().map(|ip| json!({"ip": ip})).collect();
        let ports: Vec<_> = self
            .ports
            .iter()
            .map(|(name, port)| json!({"name": name, "port": port, "protocol": "TCP"}))
            .collect();
        let endpoints: Endpoints = serde_json::from_value(json!({
            "metadata": {"name": self.name, "namespace": self.namespace},
            "subsets": [{"addresses": addresses, "ports": ports}],
        }))?;
        Ok(cluster
            .endpoints(&self.namespace)
            .create(&PostParams::default(), &endpoints)
            .await?)
    }

    /// The slices the mirroring controller wrote for the Service.
    pub async fn mirrored(&self, cluster: &TestCluster) -> anyhow::Result<Vec<EndpointSlice>> {
        let selector = format!(
            "{SERVICE_NAME}={},{SLICE_MANAGED_BY}={MIRRORING_CONTROLLER_NAME}",
            self.name
        );
        labelled_slices(cluster, &self.namespace, &selector).await
    }
}

/// The slices in `ns` that `controller` manages, whichever Service they are for.
pub async fn slices_managed_by(
    cluster: &TestCluster,
    ns: &str,
    controller: &str,
) -> anyhow::Result<Vec<EndpointSlice>> {
    labelled_slices(cluster, ns, &format!("{SLICE_MANAGED_BY}={controller}")).await
}

/// The slices in `ns` whose labels match `selector`, as the server selects them.
async fn labelled_slices(
    cluster: &TestCluster,
    ns: &str,
    selector: &str,
) -> anyhow::Result<Vec<EndpointSlice>> {
    let params = ListParams::default().labels(selector);
    Ok(cluster.slices(ns).list(&params).await?.items)
}
