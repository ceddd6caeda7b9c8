//! A cluster's state as `audit` and `explain` read it: from a live cluster with get and list
//! requests only, or from manifests.

use crate::manifests::Object;
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::ListParams;
use kube::{Api, Client};
use reconcile::projection::ServiceInfo;

/// The objects the controllers read and write.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Namespaces.
    pub namespaces: Vec<Namespace>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Services.
    pub services: Vec<Service>,
    /// Pods.
    pub pods: Vec<Pod>,
    /// Endpoints, hand-written and written by the Endpoints controller.
    pub endpoints: Vec<Endpoints>,
    /// EndpointSlices, of every manager.
    pub slices: Vec<EndpointSlice>,
}

/// Every object of the namespaced kind `K` in `namespace` (in all namespaces when `None`), in
/// one list request.
pub async fn list<K>(client: &Client, namespace: Option<&str>) -> Result<Vec<K>>
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

impl Snapshot {
    /// Reads the cluster `client` talks to, with list requests only: every Namespace and Node,
    /// and the namespaced kinds of `namespace` (all namespaces when `None`).
    pub async fn read(client: &Client, namespace: Option<&str>) -> Result<Self> {
        let lp = ListParams::default();
        Ok(Self {
            namespaces: Api::<Namespace>::all(client.clone())
                .list(&lp)
                .await
                .context("listing Namespaces")?
                .items,
            nodes: Api::<Node>::all(client.clone())
                .list(&lp)
                .await
                .context("listing Nodes")?
                .items,
            services: list(client, namespace).await.context("listing Services")?,
            pods: list(client, namespace).await.context("listing Pods")?,
            endpoints: list(client, namespace).await.context("listing Endpoints")?,
            slices: list(client, namespace)
                .await
                .context("listing EndpointSlices")?,
        })
    }

    /// Sorts manifests into a snapshot.
    pub fn from_objects(objects: Vec<Object>) -> Self {
        let mut snapshot = Self::default();
        for object in objects {
            match object {
                Object::Namespace(x) => snapshot.namespaces.push(x),
                Object::Node(x) => snapshot.nodes.push(x),
                Object::Service(x) => snapshot.services.push(x),
                Object::Pod(x) => snapshot.pods.push(x),
                Object::Endpoints(x) => snapshot.endpoints.push(x),
                Object::EndpointSlice(x) => snapshot.slices.push(x),
            }
        }
        snapshot
    }

    /// What the controllers start from: Namespaces (those the Services and Pods name are
    /// added when missing), Nodes, Services, Pods and the Endpoints
    /// of Services without a selector. Those are written by hand (or left by the Endpoints
    /// controller when the selector went): the mirroring controller's input, not something a
    /// controller writes. Every other Endpoints object and every slice is left out, so a run
    /// writes them from nothing.
    pub fn controller_input(&self) -> Vec<Object> {
        let hand_written = self.endpoints.iter().filter(|e| {
            self.services.iter().any(|s| {
                s.metadata.namespace == e.metadata.namespace
                    && s.metadata.name == e.metadata.name
                    && ServiceInfo::from_service(s).is_some_and(|s| s.selector.is_none())
            })
        });
        let mut objects = Vec::new();
        objects.extend(self.namespaces.iter().cloned().map(Object::Namespace));
        // A dump of one namespace's Services and Pods rarely holds the Namespace itself.
        let known: std::collections::BTreeSet<&str> = self
            .namespaces
            .iter()
            .filter_map(|n| n.metadata.name.as_deref())
            .collect();
        let used: std::collections::BTreeSet<&str> = self
            .services
            .iter()
            .map(|s| &s.metadata)
            .chain(self.pods.iter().map(|p| &p.metadata))
            .filter_map(|m| m.namespace.as_deref())
            .filter(|ns| !known.contains(ns))
            .collect();
        objects.extend(used.into_iter().map(|name| {
            Object::Namespace(Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.to_owned()),
                    ..Default::default()
                },
                ..Default::default()
            })
        }));
        objects.extend(self.nodes.iter().cloned().map(Object::Node));
        objects.extend(self.services.iter().cloned().map(Object::Service));
        objects.extend(self.pods.iter().cloned().map(Object::Pod));
        objects.extend(hand_written.cloned().map(Object::Endpoints));
        objects
    }

    /// The `namespace/name` of every Service but the API server's own `default/kubernetes`.
    pub fn service_keys(&self) -> Vec<String> {
        self.services
            .iter()
            .filter_map(|s| {
                Some(format!(
                    "{}/{}",
                    s.metadata.namespace.as_ref()?,
                    s.metadata.name.as_ref()?
                ))
            })
            .filter(|key| key != "default/kubernetes")
            .collect()
    }
}
