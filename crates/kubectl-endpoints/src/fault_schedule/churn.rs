//! The workload: pods, Services and hand-written Endpoints changed as users and kubelets
//! change them, while the faults run.
//!
//! Each change names its object (`pod-3` in `shop`) and says what it should look like, and
//! is applied against whatever the server holds now: a restart from a backup may have taken
//! the object away or brought an old one back, so "put" creates or patches and a delete of a
//! missing object is done.

use super::api::{is_already_exists, is_not_found, retrying};
use super::schedule::{Churn, PodShape, PortSet, ServiceShape, NAMESPACES, NODES, SERVICES};
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Node, Pod, Service};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{json, Value};

fn pod_name(pod: usize) -> String {
    format!("pod-{pod}")
}

/// The IP of a pod: unique per namespace, pod and generation.
fn pod_ip(ns: usize, pod: usize, generation: u8) -> String {
    format!("10.{}.{}.{}", ns + 1, generation, pod + 1)
}

fn ready_condition(ready: bool) -> Value {
    json!({"type": "Ready", "status": if ready { "True" } else { "False" }})
}

fn ip_status(ip: &str) -> Value {
    json!({"podIP": ip, "podIPs": [{"ip": ip}]})
}

fn pod_object(ns: usize, pod: usize, shape: &PodShape) -> Result<Pod> {
    Ok(serde_json::from_value(json!({
        "metadata": {
            "name": pod_name(pod),
            "namespace": NAMESPACES[ns],
            "labels": {"app": shape.app},
        },
        "spec": {
            "nodeName": NODES[shape.node].0,
            "containers": [{
                "name": "app",
                "image": "nginx",
                "ports": [
                    {"name": "http", "containerPort": 8080},
                    {"name": "metrics", "containerPort": 9090},
                ],
            }],
        },
    }))?)
}

fn pod_status(ns: usize, pod: usize, shape: &PodShape) -> Value {
    let mut status = ip_status(&pod_ip(ns, pod, shape.ip_generation));
    status["phase"] = json!("Running");
    status["conditions"] = json!([ready_condition(shape.ready)]);
    json!({ "status": status })
}

fn ports(set: PortSet) -> Value {
    match set {
        PortSet::Http => json!([{"name": "http", "port": 80, "targetPort": 8080}]),
        PortSet::HttpAndMetrics => json!([
            {"name": "http", "port": 80, "targetPort": "http"},
            {"name": "metrics", "port": 9090, "targetPort": 9090},
        ]),
        PortSet::Web => json!([{"name": "web", "port": 8080, "targetPort": 8080}]),
    }
}

/// The parts of a Service's spec a shape decides (`null` removes the selector).
fn service_spec(shape: &ServiceShape) -> Value {
    json!({
        "selector": shape.selector.map(|app| json!({"app": app})),
        "ports": ports(shape.ports),
        "publishNotReadyAddresses": shape.publish_not_ready,
    })
}

fn service_object(ns: usize, service: usize, shape: &ServiceShape) -> Result<Service> {
    let mut spec = service_spec(shape);
    if shape.headless {
        spec["clusterIP"] = json!("None");
    }
    if shape.selector.is_none() {
        if let Some(map) = spec.as_object_mut() {
            map.remove("selector");
        }
    }
    Ok(serde_json::from_value(json!({
        "metadata": {
            "name": SERVICES[service],
            "namespace": NAMESPACES[ns],
            "labels": {"tier": format!("tier-{}", service)},
        },
        "spec": spec,
    }))?)
}

/// The nodes and namespaces every seed starts with.
pub async fn base(client: &Client, namespaces: usize) -> Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    for (name, zone) in NODES {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        }))?;
        nodes.create(&PostParams::default(), &node).await?;
        let status = json!({"status": {
            "allocatable": {"cpu": "4"},
            "conditions": [{"type": "Ready", "status": "True"}],
        }});
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
    }
    let api: Api<Namespace> = Api::all(client.clone());
    for name in &NAMESPACES[1..namespaces] {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        api.create(&PostParams::default(), &ns).await?;
    }
    Ok(())
}

/// What applying a change did.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// The change was made (or there was nothing to do).
    Done,
    /// The change did not apply to what the server holds (why).
    Skipped(&'static str),
}

/// Applies one change, retrying what a client should retry.
pub async fn apply(client: &Client, change: &Churn) -> Result<Applied> {
    match *change {
        Churn::PutPod { ns, pod, shape } => put_pod(client, ns, pod, &shape).await,
        Churn::DeletePod { ns, pod } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACES[ns]);
            delete(&api, &pod_name(pod)).await
        }
        Churn::SetReady { ns, pod, ready } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACES[ns]);
            let patch = json!({"status": {"conditions": [ready_condition(ready)]}});
            patch_status(&api, &pod_name(pod), &patch).await
        }
        Churn::SetIp {
            ns,
            pod,
            generation,
        } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACES[ns]);
            let patch = json!({"status": ip_status(&pod_ip(ns, pod, generation))});
            patch_status(&api, &pod_name(pod), &patch).await
        }
        Churn::PutService { ns, service, shape } => put_service(client, ns, service, &shape).await,
        Churn::DeleteService { ns, service } => {
            let name = SERVICES[service];
            let api: Api<Service> = Api::namespaced(client.clone(), NAMESPACES[ns]);
            // A user deleting a selector-less Service deletes the Endpoints they wrote too.
            if let Some(existing) = retrying(|| api.get_opt(name)).await? {
                if !has_selector(&existing) {
                    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), NAMESPACES[ns]);
                    delete(&endpoints, name).await?;
                }
            }
            delete(&api, name).await
        }
        Churn::PutEndpoints {
            ns,
            service,
            ref addresses,
        } => put_endpoints(client, ns, service, addresses).await,
        Churn::DeleteEndpoints { ns, service } => {
            let api: Api<Endpoints> = Api::namespaced(client.clone(), NAMESPACES[ns]);
            delete(&api, SERVICES[service]).await
        }
    }
}

fn has_selector(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .is_some_and(|s| !s.is_empty())
}

async fn delete<K>(api: &Api<K>, name: &str) -> Result<Applied>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let dp = DeleteParams::default();
    match retrying(|| api.delete(name, &dp)).await {
        Ok(_) => Ok(Applied::Done),
        Err(e) if is_not_found(&e) => Ok(Applied::Skipped("already gone")),
        Err(e) => Err(e).with_context(|| format!("deleting {name}")),
    }
}

async fn patch_status(api: &Api<Pod>, name: &str, patch: &Value) -> Result<Applied> {
    let pp = PatchParams::default();
    let patch = Patch::Merge(patch);
    match retrying(|| api.patch_status(name, &pp, &patch)).await {
        Ok(_) => Ok(Applied::Done),
        Err(e) if is_not_found(&e) => Ok(Applied::Skipped("no such pod")),
        Err(e) => Err(e).with_context(|| format!("writing the status of pod {name}")),
    }
}

async fn put_pod(client: &Client, ns: usize, pod: usize, shape: &PodShape) -> Result<Applied> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACES[ns]);
    let name = pod_name(pod);
    let object = pod_object(ns, pod, shape)?;
    let post = PostParams::default();
    match retrying(|| api.create(&post, &object)).await {
        Ok(_) => {}
        Err(e) if is_already_exists(&e) => {
            // The node of a pod cannot change: an existing pod keeps its own.
            let labels = Patch::Merge(json!({"metadata": {"labels": {"app": shape.app}}}));
            let pp = PatchParams::default();
            match retrying(|| api.patch(&name, &pp, &labels)).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => return Ok(Applied::Skipped("deleted meanwhile")),
                Err(e) => return Err(e).with_context(|| format!("labelling pod {name}")),
            }
        }
        Err(e) => return Err(e).with_context(|| format!("creating pod {name}")),
    }
    patch_status(&api, &name, &pod_status(ns, pod, shape)).await
}

async fn put_service(
    client: &Client,
    ns: usize,
    service: usize,
    shape: &ServiceShape,
) -> Result<Applied> {
    let api: Api<Service> = Api::namespaced(client.clone(), NAMESPACES[ns]);
    let name = SERVICES[service];
    if let Some(existing) = retrying(|| api.get_opt(name)).await? {
        // Taking the selector away leaves the EndpointSlice controller's slices in place, as
        // upstream does (it skips selector-less Services): a state no run from scratch
        // reaches. The workload deletes and re-creates the Service instead (the server's
        // garbage collector takes the slices), so the final state decides the objects.
        let drops_selector = has_selector(&existing) && shape.selector.is_none();
        if !drops_selector {
            let patch = Patch::Merge(json!({"spec": service_spec(shape)}));
            let pp = PatchParams::default();
            return match retrying(|| api.patch(name, &pp, &patch)).await {
                Ok(_) => Ok(Applied::Done),
                Err(e) if is_not_found(&e) => Ok(Applied::Skipped("deleted meanwhile")),
                Err(e) => Err(e).with_context(|| format!("patching Service {name}")),
            };
        }
        delete(&api, name).await?;
    }
    let object = service_object(ns, service, shape)?;
    let post = PostParams::default();
    match retrying(|| api.create(&post, &object)).await {
        Ok(_) => Ok(Applied::Done),
        Err(e) => Err(e).with_context(|| format!("creating Service {name}")),
    }
}

async fn put_endpoints(
    client: &Client,
    ns: usize,
    service: usize,
    addresses: &[u8],
) -> Result<Applied> {
    let name = SERVICES[service];
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACES[ns]);
    match retrying(|| services.get_opt(name)).await? {
        None => return Ok(Applied::Skipped("no such Service")),
        Some(s) if has_selector(&s) => return Ok(Applied::Skipped("the Service has a selector")),
        Some(_) => {}
    }
    let subsets = json!([{
        "addresses": addresses
            .iter()
            .map(|a| json!({"ip": format!("10.200.{}.{a}", ns + 1)}))
            .collect::<Vec<_>>(),
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }]);
    let api: Api<Endpoints> = Api::namespaced(client.clone(), NAMESPACES[ns]);
    let object: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": NAMESPACES[ns]},
        "subsets": subsets,
    }))?;
    let post = PostParams::default();
    match retrying(|| api.create(&post, &object)).await {
        Ok(_) => Ok(Applied::Done),
        Err(e) if is_already_exists(&e) => {
            let patch = Patch::Merge(json!({"subsets": subsets}));
            let pp = PatchParams::default();
            match retrying(|| api.patch(name, &pp, &patch)).await {
                Ok(_) => Ok(Applied::Done),
                Err(e) if is_not_found(&e) => Ok(Applied::Skipped("deleted meanwhile")),
                Err(e) => Err(e).with_context(|| format!("writing Endpoints {name}")),
            }
        }
        Err(e) => Err(e).with_context(|| format!("creating Endpoints {name}")),
    }
}
