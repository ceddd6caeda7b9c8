//! A Pod as the pod informer decodes it: only the fields [`PodInfo`](super::PodInfo) reads.
//!
//! Every pod change reaches the controllers as a whole Pod in JSON: its managedFields, every
//! container's image, environment, resources and probes, its volumes and statuses. Decoding
//! all of that into `k8s_openapi`'s Pod, only to keep a few fields, was a good part of the
//! CPU spent per pod change. This type names the fields the projection reads; serde skips the
//! rest of the text without building anything from it.
//!
//! It implements the `k8s_openapi` resource traits (kind Pod, core/v1, namespaced), so a
//! `kube::Api` lists and watches it as it would a Pod.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// The parts of a Pod the controllers read. Lenient: an absent or `null` list reads as none.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PartialPod {
    /// Name, namespace, uid, resourceVersion, labels and deletionTimestamp; nothing else
    /// (managedFields, annotations and ownerReferences are skipped).
    #[serde(default, deserialize_with = "read_meta")]
    pub metadata: ObjectMeta,
    /// What the projection reads of the spec.
    #[serde(default)]
    pub spec: Option<PartialPodSpec>,
    /// What the projection reads of the status.
    #[serde(default)]
    pub status: Option<PartialPodStatus>,
}

/// `spec`: placement, DNS names and container ports.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialPodSpec {
    /// `nodeName`.
    pub node_name: Option<String>,
    /// `hostname`.
    pub hostname: Option<String>,
    /// `subdomain`.
    pub subdomain: Option<String>,
    /// `containers`.
    pub containers: Option<Vec<PartialContainer>>,
    /// `initContainers`.
    pub init_containers: Option<Vec<PartialContainer>>,
}

/// A container: its ports, and (for init containers) whether it is a sidecar.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialContainer {
    /// `ports`.
    pub ports: Option<Vec<PartialContainerPort>>,
    /// `restartPolicy` (`Always` makes an init container a sidecar).
    pub restart_policy: Option<String>,
}

/// A container port.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialContainerPort {
    /// `name`.
    pub name: Option<String>,
    /// `containerPort`.
    #[serde(default)]
    pub container_port: i32,
    /// `protocol` (TCP when absent).
    pub protocol: Option<String>,
}

/// `status`: phase, IPs and conditions.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialPodStatus {
    /// `phase`.
    pub phase: Option<String>,
    /// `podIP`.
    #[serde(rename = "podIP")]
    pub pod_ip: Option<String>,
    /// `podIPs`.
    #[serde(rename = "podIPs")]
    pub pod_ips: Option<Vec<PartialPodIp>>,
    /// `conditions`.
    pub conditions: Option<Vec<PartialPodCondition>>,
}

/// One of `status.podIPs`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PartialPodIp {
    /// `ip`.
    #[serde(default)]
    pub ip: String,
}

/// One of `status.conditions`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialPodCondition {
    /// `type`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// `status`.
    #[serde(default)]
    pub status: String,
    /// `lastTransitionTime`.
    pub last_transition_time: Option<Time>,
}

/// The metadata fields read, decoded on their own so that managedFields (often the largest
/// part of a pod's text) are skipped rather than built.
fn read_meta<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Fields {
        name: Option<String>,
        namespace: Option<String>,
        uid: Option<String>,
        resource_version: Option<String>,
        labels: Option<BTreeMap<String, String>>,
        deletion_timestamp: Option<Time>,
    }
    let fields = Option::<Fields>::deserialize(deserializer)?;
    Ok(fields.map_or_else(ObjectMeta::default, |f| ObjectMeta {
        name: f.name,
        namespace: f.namespace,
        uid: f.uid,
        resource_version: f.resource_version,
        labels: f.labels,
        deletion_timestamp: f.deletion_timestamp,
        ..ObjectMeta::default()
    }))
}

impl k8s_openapi::Resource for PartialPod {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for PartialPod {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
