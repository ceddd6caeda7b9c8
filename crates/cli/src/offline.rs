//! An in-memory cluster state on which the controllers' syncs run without an API server.
//!
//! `plan` and the offline conformance runner load manifests into it, apply the API server's
//! defaults (as a real cluster would have when the controllers read the objects), run one
//! sync of each controller for every Service through the same `reconcile` functions the live
//! controllers call, and apply the writes in order.

use crate::manifests::Object;
use apiserver::defaults::{default_pod, default_service, ClusterIpAllocator};
use k8s_openapi::api::core::v1::{Endpoints, Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use reconcile::endpoints::{EndpointsAction, LEADER_ANNOTATION};
use reconcile::event::PlannedEvent;
use reconcile::projection::{NodeInfo, PodInfo, ServiceInfo};
use reconcile::selector::selector_matches;
use reconcile::slice::{failure_event, is_managed_slice_of};
use reconcile::topology::TopologyCache;
use reconcile::trigger_time::TriggerTimeTracker;
use reconcile::upstream_order::fnv128a;
use reconcile::{plan_endpoints, plan_slices, EndpointsInput, SliceInput, Timestamp};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

type Key = (String, String);

/// Which controllers run.
#[derive(Debug, Clone, Copy)]
pub struct OfflineSettings {
    /// Run the v1 Endpoints controller.
    pub endpoints: bool,
    /// Run the EndpointSlice controller.
    pub endpoint_slices: bool,
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
}

/// One write, in the order it would be sent.
#[derive(Debug, Clone, Serialize)]
pub struct Action {
    /// create, update or delete.
    pub verb: &'static str,
    /// Endpoints or EndpointSlice.
    pub kind: &'static str,
    /// Namespace.
    pub namespace: String,
    /// Name (for creates, the name the API server would have generated).
    pub name: String,
    /// The object sent (absent for deletes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<serde_json::Value>,
}

/// The object an event is about.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct InvolvedObject {
    /// Service or Endpoints.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// A recorded event.
#[derive(Debug, Clone, Serialize)]
pub struct RecordedEvent {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub type_: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
    /// What it is about.
    #[serde(rename = "involvedObject")]
    pub involved_object: InvolvedObject,
    /// The component that recorded it.
    pub source: &'static str,
}

/// Per-service summary of one pass, for the human-readable output.
#[derive(Debug, Clone, Default)]
pub struct ServiceSummary {
    /// Slices after the pass.
    pub slices: usize,
    /// Endpoints over all slices.
    pub slice_endpoints: usize,
    /// Addresses in the Endpoints object.
    pub addresses: usize,
    /// Writes made.
    pub writes: usize,
}

/// What one pass did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Writes in order.
    pub actions: Vec<Action>,
    /// Events in order.
    pub events: Vec<RecordedEvent>,
    /// Per service (namespace/name) summary.
    pub summaries: BTreeMap<String, ServiceSummary>,
}

/// The in-memory cluster.
pub struct OfflineCluster {
    now: Timestamp,
    namespaces: BTreeMap<String, Namespace>,
    nodes: BTreeMap<String, NodeInfo>,
    services: BTreeMap<Key, Service>,
    pods: BTreeMap<Key, PodInfo>,
    endpoints: BTreeMap<Key, Endpoints>,
    slices: BTreeMap<Key, Arc<EndpointSlice>>,
    resource_version: u64,
    uid_counter: u64,
    ips: ClusterIpAllocator,
    topology: TopologyCache,
    slice_triggers: TriggerTimeTracker,
    endpoints_triggers: TriggerTimeTracker,
}

fn key_of(meta: &ObjectMeta) -> Key {
    (
        meta.namespace.clone().unwrap_or_else(|| "default".into()),
        meta.name.clone().unwrap_or_default(),
    )
}

impl OfflineCluster {
    /// An empty cluster whose clock reads `now` (creation times, trigger times).
    pub fn new(now: Timestamp) -> Self {
        Self {
            now,
            namespaces: BTreeMap::new(),
            nodes: BTreeMap::new(),
            services: BTreeMap::new(),
            pods: BTreeMap::new(),
            endpoints: BTreeMap::new(),
            slices: BTreeMap::new(),
            resource_version: 0,
            uid_counter: 0,
            ips: ClusterIpAllocator::default(),
            topology: TopologyCache::default(),
            slice_triggers: TriggerTimeTracker::default(),
            endpoints_triggers: TriggerTimeTracker::default(),
        }
    }

    fn next_rv(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }

    fn next_uid(&mut self, seed: &str) -> String {
        self.uid_counter += 1;
        let h = fnv128a(format!("{seed}/{}", self.uid_counter).as_bytes());
        let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }

    /// Gives an object what the API server would have stored with it.
    fn admit(&mut self, meta: &mut ObjectMeta, kind: &str) {
        if meta.uid.as_deref().is_none_or(str::is_empty) {
            let seed = format!(
                "{kind}/{}/{}",
                meta.namespace.as_deref().unwrap_or(""),
                meta.name.as_deref().unwrap_or("")
            );
            meta.uid = Some(self.next_uid(&seed));
        }
        if meta.creation_timestamp.is_none() {
            meta.creation_timestamp = Some(Time(self.now));
        }
        meta.resource_version = Some(self.next_rv());
    }

    /// Loads objects as the cluster's current state. Returns warnings for objects skipped.
    pub fn load(&mut self, objects: Vec<Object>) -> Vec<String> {
        let mut warnings = Vec::new();
        for object in objects {
            match object {
                Object::Namespace(mut ns) => {
                    self.admit(&mut ns.metadata, "Namespace");
                    self.namespaces
                        .insert(ns.metadata.name.clone().unwrap_or_default(), ns);
                }
                Object::Node(node) => match NodeInfo::from_node(&node) {
                    Some(info) => {
                        self.nodes.insert(info.name.clone(), info);
                    }
                    None => warnings.push("Node without a name skipped".to_owned()),
                },
                Object::Service(mut svc) => {
                    self.admit(&mut svc.metadata, "Service");
                    default_service(&mut svc, &mut self.ips);
                    self.services.insert(key_of(&svc.metadata), svc);
                }
                Object::Pod(mut pod) => {
                    self.admit(&mut pod.metadata, "Pod");
                    default_pod(&mut pod);
                    let key = key_of(&pod.metadata);
                    let Some(info) = PodInfo::from_pod(&pod).or_else(|| {
                        pod.metadata.namespace = Some(key.0.clone());
                        PodInfo::from_pod(&pod)
                    }) else {
                        continue;
                    };
                    if let Some(bad) = info
                        .ips
                        .iter()
                        .find(|ip| reconcile::ip::parse_sloppy(ip).is_none())
                    {
                        warnings.push(format!(
                            "Pod {}/{}: unparsable IP {bad:?}, skipped",
                            key.0, key.1
                        ));
                        continue;
                    }
                    self.pods.insert(key, info);
                }
                Object::Endpoints(mut ep) => {
                    self.admit(&mut ep.metadata, "Endpoints");
                    self.endpoints.insert(key_of(&ep.metadata), ep);
                }
                Object::EndpointSlice(mut slice) => {
                    self.admit(&mut slice.metadata, "EndpointSlice");
                    slice.metadata.generation.get_or_insert(1);
                    self.slices.insert(key_of(&slice.metadata), Arc::new(slice));
                }
            }
        }
        self.topology.set_nodes(self.nodes.values());
        warnings
    }

    fn namespace_terminating(&self, ns: &str) -> bool {
        self.namespaces.get(ns).is_some_and(|n| {
            n.metadata.deletion_timestamp.is_some()
                || n.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating")
        })
    }

    fn selected_pods<'a>(
        pods: &'a BTreeMap<Key, PodInfo>,
        service: &ServiceInfo,
    ) -> Vec<&'a PodInfo> {
        let Some(selector) = service.selector.as_ref() else {
            return Vec::new();
        };
        let start = (service.namespace.clone(), String::new());
        pods.range(start..)
            .take_while(|((ns, _), _)| ns == &service.namespace)
            .map(|(_, p)| p)
            .filter(|p| selector_matches(selector, &p.labels))
            .collect()
    }

    /// Runs one sync of each enabled controller for every Service (and the Endpoints
    /// controller's start-up sweep of Endpoints whose Service is gone), applying the writes.
    pub fn sync_all(&mut self, settings: &OfflineSettings) -> Outcome {
        let mut outcome = Outcome::default();
        let services: Vec<ServiceInfo> = self
            .services
            .values()
            .filter_map(ServiceInfo::from_service)
            .collect();
        if settings.endpoints {
            for service in &services {
                self.sync_endpoints(service, &mut outcome);
            }
            self.sweep_leftover_endpoints(&mut outcome);
        }
        if settings.endpoint_slices {
            for service in &services {
                self.sync_slices(service, settings.max_endpoints_per_slice, &mut outcome);
            }
        }
        for service in &services {
            let summary = outcome
                .summaries
                .entry(service.key().to_string())
                .or_default();
            let slices: Vec<&Arc<EndpointSlice>> = self
                .slices
                .values()
                .filter(|s| {
                    s.metadata.namespace.as_deref() == Some(&service.namespace)
                        && is_managed_slice_of(s, &service.name)
                })
                .collect();
            summary.slices = slices.len();
            summary.slice_endpoints = slices.iter().map(|s| s.endpoints.len()).sum();
            summary.addresses = self
                .endpoints
                .get(&(service.namespace.clone(), service.name.clone()))
                .and_then(|e| e.subsets.as_ref())
                .map(|subsets| {
                    subsets
                        .iter()
                        .map(|s| {
                            s.addresses.as_ref().map_or(0, Vec::len)
                                + s.not_ready_addresses.as_ref().map_or(0, Vec::len)
                        })
                        .sum()
                })
                .unwrap_or(0);
        }
        outcome
    }

    fn record(
        outcome: &mut Outcome,
        event: PlannedEvent,
        kind: &str,
        namespace: &str,
        name: &str,
        source: &'static str,
    ) {
        outcome.events.push(RecordedEvent {
            type_: event.type_.as_str().to_owned(),
            reason: event.reason,
            message: event.message,
            involved_object: InvolvedObject {
                kind: kind.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
            source,
        });
    }

    fn sync_endpoints(&mut self, service: &ServiceInfo, outcome: &mut Outcome) {
        if service.is_skipped() {
            return;
        }
        let key = (service.namespace.clone(), service.name.clone());
        let pods = Self::selected_pods(&self.pods, service);
        let trigger_time = self.endpoints_triggers.compute(service, &pods);
        let plan = plan_endpoints(&EndpointsInput {
            service,
            pods: &pods,
            current: self.endpoints.get(&key),
            trigger_time,
        });
        let writes = &mut outcome
            .summaries
            .entry(service.key().to_string())
            .or_default()
            .writes;
        match plan.action {
            EndpointsAction::Unchanged => {}
            EndpointsAction::Create(mut object) => {
                if self.namespace_terminating(&service.namespace) {
                    return; // refused with NamespaceTerminating: dropped quietly, as upstream does
                }
                *writes += 1;
                outcome
                    .actions
                    .push(action("create", "Endpoints", &key, Some(&object)));
                self.admit(&mut object.metadata, "Endpoints");
                self.endpoints.insert(key, object);
            }
            EndpointsAction::Update(mut object) => {
                *writes += 1;
                outcome
                    .actions
                    .push(action("update", "Endpoints", &key, Some(&object)));
                object.metadata.resource_version = Some(self.next_rv());
                self.endpoints.insert(key, object);
            }
        }
    }

    fn sweep_leftover_endpoints(&mut self, outcome: &mut Outcome) {
        let orphans: Vec<Key> = self
            .endpoints
            .iter()
            .filter(|(key, ep)| {
                !self.services.contains_key(*key)
                    && !ep
                        .metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key(LEADER_ANNOTATION))
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in orphans {
            outcome
                .actions
                .push(action::<Endpoints>("delete", "Endpoints", &key, None));
            self.endpoints.remove(&key);
        }
    }

    fn sync_slices(&mut self, service: &ServiceInfo, max: usize, outcome: &mut Outcome) {
        if service.is_skipped() {
            return;
        }
        let existing: Vec<Arc<EndpointSlice>> = self
            .slices
            .values()
            .filter(|s| {
                s.metadata.namespace.as_deref() == Some(&service.namespace)
                    && is_managed_slice_of(s, &service.name)
                    && s.metadata.deletion_timestamp.is_none()
            })
            .cloned()
            .collect();
        let pods = Self::selected_pods(&self.pods, service);
        let trigger_time = self.slice_triggers.compute(service, &pods);
        let input = SliceInput {
            service,
            pods: &pods,
            existing: &existing,
            nodes: &self.nodes,
            trigger_time,
            max_endpoints_per_slice: max,
        };
        let plan = plan_slices(&input, &mut self.topology);
        let terminating = self.namespace_terminating(&service.namespace);
        let mut writes = 0;
        'batches: for batch in plan.batches {
            for mut slice in batch.create {
                if terminating {
                    break 'batches; // the sync ends quietly, as upstream's does
                }
                let name = self.generate_name(
                    &service.namespace,
                    slice.metadata.generate_name.as_deref().unwrap_or(""),
                );
                slice.metadata.name = Some(name.clone());
                let key = (service.namespace.clone(), name);
                outcome
                    .actions
                    .push(action("create", "EndpointSlice", &key, Some(&slice)));
                writes += 1;
                self.admit(&mut slice.metadata, "EndpointSlice");
                slice.metadata.generation = Some(1);
                self.slices.insert(key, Arc::new(slice));
            }
            for mut slice in batch.update {
                let key = (
                    service.namespace.clone(),
                    slice.metadata.name.clone().unwrap_or_default(),
                );
                outcome
                    .actions
                    .push(action("update", "EndpointSlice", &key, Some(&slice)));
                writes += 1;
                let previous = self.slices.get(&key).cloned();
                let generation = previous
                    .as_ref()
                    .and_then(|p| p.metadata.generation)
                    .unwrap_or(1);
                let spec_changed = previous.as_ref().is_none_or(|p| {
                    p.endpoints != slice.endpoints
                        || p.ports != slice.ports
                        || p.address_type != slice.address_type
                });
                if let Some(p) = &previous {
                    slice.metadata.uid = p.metadata.uid.clone();
                    slice.metadata.creation_timestamp = p.metadata.creation_timestamp.clone();
                }
                slice.metadata.generation = Some(if spec_changed {
                    generation + 1
                } else {
                    generation
                });
                slice.metadata.resource_version = Some(self.next_rv());
                self.slices.insert(key, Arc::new(slice));
            }
            for slice in batch.delete {
                let key = key_of(&slice.metadata);
                outcome.actions.push(action::<EndpointSlice>(
                    "delete",
                    "EndpointSlice",
                    &key,
                    None,
                ));
                writes += 1;
                self.slices.remove(&key);
            }
        }
        outcome
            .summaries
            .entry(service.key().to_string())
            .or_default()
            .writes += writes;
        // Events of the sync, then the failure event when the sync fails (as upstream records).
        let failure = (!plan.errors.is_empty())
            .then(|| failure_event(&service.namespace, &service.name, &plan.errors));
        for event in plan.events.into_iter().chain(failure) {
            Self::record(
                outcome,
                event,
                "Service",
                &service.namespace,
                &service.name,
                "endpoint-slice-controller",
            );
        }
    }

    /// A name as the API server resolves `generateName`: the prefix and five characters,
    /// derived from the prefix so the same input gives the same names.
    fn generate_name(&self, namespace: &str, prefix: &str) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut attempt: u64 = 0;
        loop {
            let h = u128::from_be_bytes(fnv128a(
                format!("{namespace}/{prefix}/{attempt}").as_bytes(),
            ));
            let suffix: String = (0..5)
                .map(|i| ALPHABET[((h >> (i * 8)) % ALPHABET.len() as u128) as usize] as char)
                .collect();
            let name = format!("{prefix}{suffix}");
            if !self
                .slices
                .contains_key(&(namespace.to_owned(), name.clone()))
            {
                return name;
            }
            attempt += 1;
        }
    }

    /// Every EndpointSlice, sorted by namespace and name.
    pub fn endpoint_slices(&self) -> impl Iterator<Item = &EndpointSlice> {
        self.slices.values().map(|s| &**s)
    }

    /// Every Endpoints object, sorted by namespace and name.
    pub fn endpoints(&self) -> impl Iterator<Item = &Endpoints> {
        self.endpoints.values()
    }
}

fn action<T: Serialize>(
    verb: &'static str,
    kind: &'static str,
    key: &Key,
    object: Option<&T>,
) -> Action {
    Action {
        verb,
        kind,
        namespace: key.0.clone(),
        name: key.1.clone(),
        object: object.and_then(|o| serde_json::to_value(o).ok()),
    }
}
