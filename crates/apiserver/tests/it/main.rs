//! The embedded API server's integration tests, in one binary: each module is an area of
//! what it serves (objects, watches, validation, reviews, protobuf, kubectl), on the shared
//! test kit (`crates/testkit`).

use apiserver::ApiServer;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::NamespaceResourceScope;
use kube::api::PostParams;
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use std::fmt::Debug;

mod bounded_input;
mod garbage_collection;
mod kubectl;
mod loading;
mod objects;
mod protobuf;
mod resource_versions;
mod reviews;
mod validation;
mod watches;

/// An unscheduled pod labelled `app=web` with one container exposing port 80, without a
/// namespace: the request's namespace is the one it is created in.
pub fn pod(name: &str) -> Pod {
    let mut pod = testkit::pod(name)
        .unscheduled()
        .label("app", "web")
        .container_port("http", 80)
        .object();
    pod.metadata.namespace = None;
    pod
}

/// Creates [`pod`]`(name)` through `pods`.
pub async fn create_pod(pods: &Api<Pod>, name: &str) -> kube::Result<Pod> {
    pods.create(&PostParams::default(), &pod(name)).await
}

/// The pods of the default namespace of a server started with its client (by
/// `testkit::server::start`), holding [`pod`]`(name)` for each of `names`.
pub async fn pods_holding(
    (server, client): (ApiServer, Client),
    names: &[&str],
) -> (ApiServer, Api<Pod>) {
    let pods = Api::default_namespaced(client);
    for name in names {
        create_pod(&pods, name).await.unwrap();
    }
    (server, pods)
}

/// The object `name` of kind `K` in the default namespace, read through `client`.
pub async fn get<K>(client: &Client, name: &str) -> K
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    K: Clone + DeserializeOwned + Debug,
{
    Api::<K>::default_namespaced(client.clone())
        .get(name)
        .await
        .unwrap()
}
