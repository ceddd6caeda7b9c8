//! The independent convergence check and the per-change latencies.
//!
//! Two watches (managed EndpointSlices, Endpoints) keep the bench's own view of what the
//! controller wrote. Every Service is re-checked against the [model](super::model) whenever
//! its pods change or its slices or Endpoints do; the run has converged when, after the load
//! is done, no Service differs. A pod change the bench writes is "pending" until the first
//! watch event after which the Service's slices (or Endpoints) show that pod as the change
//! says; the time from the write's completion to that event is the change's latency.

use super::model::{EndpointsAddress, NodeModel, PodModel, SliceEndpoint};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

// The well-known label names are shared; what the slices must hold is judged here on its own.
use reconcile::labels::{
    SERVICE_NAME as SERVICE_NAME_LABEL, SLICE_CONTROLLER_NAME as MANAGED_BY_CONTROLLER,
    SLICE_MANAGED_BY as MANAGED_BY_LABEL,
};

/// Something a watch can show that a pending change expects.
pub trait Observed: Clone + PartialEq {
    /// Whether `self`, as seen, is what `expected` asks for.
    fn satisfies(&self, expected: &Self) -> bool;
}

impl Observed for SliceEndpoint {
    fn satisfies(&self, expected: &Self) -> bool {
        self.matches(expected)
    }
}

impl Observed for EndpointsAddress {
    fn satisfies(&self, expected: &Self) -> bool {
        self == expected
    }
}

#[derive(Debug)]
struct Pending<T> {
    expected: Option<T>,
    /// When the change was made: its status stamped, before the write (and before the
    /// load generator's client waited for its rate limit).
    changed_at: Instant,
    written_at: Option<Instant>,
    observed_at: Option<Instant>,
}

/// Pending changes of one view (slices or Endpoints) and the latencies measured so far.
#[derive(Debug)]
pub struct Latencies<T> {
    pending: HashMap<String, Pending<T>>,
    /// Write completion to first reflecting watch event, one per observed change.
    pub samples: Vec<Duration>,
    /// The change (its status stamped, before the write) to first reflecting watch event:
    /// the span kube-proxy's SLI starts with, up to the controller's write.
    pub from_change: Vec<Duration>,
    /// Changes replaced by a later change of the same pod before they were seen.
    pub superseded: u64,
    /// Changes expected.
    pub changes: u64,
}

impl<T> Default for Latencies<T> {
    fn default() -> Self {
        Self {
            pending: HashMap::new(),
            samples: Vec::new(),
            from_change: Vec::new(),
            superseded: 0,
            changes: 0,
        }
    }
}

impl<T: Observed> Latencies<T> {
    /// Registers, before the write, that `pod` should come to look like `expected`, changed
    /// `now`.
    fn expect(&mut self, pod: &str, expected: Option<T>, now: Instant) {
        self.changes += 1;
        let new = Pending {
            expected,
            changed_at: now,
            written_at: None,
            observed_at: None,
        };
        // The generator writes one pod at a time, so an older entry is a change that was
        // written and never seen before this one replaced it.
        if self.pending.insert(pod.to_owned(), new).is_some() {
            self.superseded += 1;
        }
    }

    /// The write that made `pod`'s latest change completed at `at`.
    fn written(&mut self, pod: &str, at: Instant) {
        let Some(p) = self.pending.get_mut(pod) else {
            return;
        };
        if p.written_at.is_some() {
            return;
        }
        p.written_at = Some(at);
        if let Some(seen) = p.observed_at {
            // Seen before the response arrived: the controller beat our own client.
            self.samples.push(seen.saturating_duration_since(at));
            self.pending.remove(pod);
        }
    }

    /// A watch event at `at` changed how `pod` looks to `current`.
    fn observed(&mut self, pod: &str, current: Option<&T>, at: Instant) {
        let Some(p) = self.pending.get_mut(pod) else {
            return;
        };
        let matched = match (current, &p.expected) {
            (None, None) => true,
            (Some(seen), Some(expected)) => seen.satisfies(expected),
            _ => false,
        };
        if !matched || p.observed_at.is_some() {
            return;
        }
        self.from_change
            .push(at.saturating_duration_since(p.changed_at));
        match p.written_at {
            Some(written) => {
                self.samples.push(at.saturating_duration_since(written));
                self.pending.remove(pod);
            }
            None => p.observed_at = Some(at),
        }
    }

    /// Changes written and not seen (yet).
    pub fn unobserved(&self) -> usize {
        self.pending.len()
    }

    fn reset(&mut self) {
        *self = Self::default();
    }
}

/// A Service the bench created.
#[derive(Debug)]
pub struct ServiceTrack {
    /// Its name.
    pub name: String,
    /// Names of the pods it selects (terminating ones included).
    pub pods: BTreeSet<String>,
    /// Whether it has `service.kubernetes.io/topology-mode: Auto`.
    pub topology_auto: bool,
}

#[derive(Debug)]
struct SliceSeen {
    service: usize,
    endpoints: Vec<(String, SliceEndpoint, bool)>,
}

#[derive(Debug, Default)]
struct ServiceSlices {
    names: BTreeSet<String>,
    union: HashMap<String, SliceEndpoint>,
    duplicates: usize,
    hinted: usize,
}

#[derive(Debug, Default)]
struct ServiceEndpoints {
    addresses: HashMap<String, EndpointsAddress>,
    duplicates: usize,
}

/// Objects the controller wrote, as the watches saw them.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct WriteCount {
    /// Objects that appeared.
    pub created: u64,
    /// New versions of existing objects.
    pub updated: u64,
    /// Objects removed.
    pub deleted: u64,
    /// Serialized JSON size of created and updated objects (an approximation of the bytes
    /// the controller sent).
    pub bytes: u64,
}

/// The bench's state: what it wrote, what the controller wrote, and the comparison.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Services, by index.
    pub services: Vec<ServiceTrack>,
    service_index: HashMap<String, usize>,
    /// Pods that exist, by name.
    pub pods: HashMap<String, PodModel>,
    /// Nodes, by index.
    pub nodes: Vec<NodeModel>,
    slices: HashMap<String, SliceSeen>,
    slice_relist: Relist<EndpointSlice>,
    by_service: Vec<ServiceSlices>,
    endpoints: Vec<Option<ServiceEndpoints>>,
    endpoints_relist: Relist<Endpoints>,
    /// Latencies to the slices.
    pub slice_latency: Latencies<SliceEndpoint>,
    /// Latencies to the Endpoints objects.
    pub endpoints_latency: Latencies<EndpointsAddress>,
    unconverged: BTreeSet<usize>,
    load_done: bool,
    /// When the last Service came to match, once the load was done.
    pub converged_at: Option<Instant>,
    /// EndpointSlice writes seen.
    pub slice_writes: WriteCount,
    /// Endpoints writes seen.
    pub endpoints_writes: WriteCount,
    /// Whether each watch finished its first list.
    pub synced: (bool, bool),
}

/// The tracker, shared by the generator and the watches.
pub type Shared = Arc<Mutex<Tracker>>;

/// Locks the tracker; a panic elsewhere does not make its figures useless.
pub fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Tracker> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Tracker {
    /// Adds a Service (before it is created); it is unconverged until the controller has
    /// written its slices and Endpoints.
    pub fn add_service(&mut self, name: &str, topology_auto: bool) -> usize {
        let index = self.services.len();
        self.services.push(ServiceTrack {
            name: name.to_owned(),
            pods: BTreeSet::new(),
            topology_auto,
        });
        self.service_index.insert(name.to_owned(), index);
        self.by_service.push(ServiceSlices::default());
        self.endpoints.push(None);
        self.unconverged.insert(index);
        self.converged_at = None;
        index
    }

    /// Records the pod's new state (`None`: gone) before the write that makes it so.
    pub fn set_pod(&mut self, name: &str, new: Option<PodModel>, now: Instant) {
        let old = self.pods.get(name).cloned();
        let Some(service) = new.as_ref().or(old.as_ref()).map(|p| p.service) else {
            return;
        };
        let slice_of = |p: &Option<PodModel>| p.as_ref().and_then(|p| p.in_slices(None));
        let endpoints_of = |p: &Option<PodModel>| p.as_ref().and_then(PodModel::in_endpoints);
        if slice_of(&old) != slice_of(&new) {
            self.slice_latency.expect(name, slice_of(&new), now);
        }
        if endpoints_of(&old) != endpoints_of(&new) {
            self.endpoints_latency.expect(name, endpoints_of(&new), now);
        }
        match new {
            Some(p) => {
                self.pods.insert(name.to_owned(), p);
                if let Some(s) = self.services.get_mut(service) {
                    s.pods.insert(name.to_owned());
                }
            }
            None => {
                self.pods.remove(name);
                if let Some(s) = self.services.get_mut(service) {
                    s.pods.remove(name);
                }
            }
        }
        self.evaluate(service, now);
    }

    /// The write for `pod`'s latest change completed at `at`.
    pub fn written(&mut self, pod: &str, at: Instant) {
        self.slice_latency.written(pod, at);
        self.endpoints_latency.written(pod, at);
    }

    /// Records a node's new zone label; endpoints on it are no longer zone-checked.
    pub fn set_node_zone(&mut self, node: usize, zone: &str, now: Instant) {
        if let Some(n) = self.nodes.get_mut(node) {
            n.zone = zone.to_owned();
            n.zone_changed = true;
        }
        for s in 0..self.services.len() {
            self.evaluate(s, now);
        }
    }

    /// The load is written; convergence can be declared from now on.
    pub fn set_load_done(&mut self, now: Instant) {
        self.load_done = true;
        if self.unconverged.is_empty() && self.converged_at.is_none() {
            self.converged_at = Some(now);
        }
    }

    /// Starts a measured phase: forgets latencies, write counts and convergence so far.
    pub fn start_phase(&mut self) {
        self.slice_latency.reset();
        self.endpoints_latency.reset();
        self.slice_writes = WriteCount::default();
        self.endpoints_writes = WriteCount::default();
        self.load_done = false;
        self.converged_at = None;
    }

    /// Whether every Service matches and the load is done.
    pub fn converged(&self) -> bool {
        self.load_done && self.unconverged.is_empty()
    }

    /// How many Services match now.
    pub fn converged_services(&self) -> usize {
        self.services.len() - self.unconverged.len()
    }

    /// Why the first `limit` unconverged Services differ.
    pub fn mismatches(&self, limit: usize) -> Vec<String> {
        self.unconverged
            .iter()
            .take(limit)
            .map(|&s| {
                let name = self.services.get(s).map_or("?", |t| t.name.as_str());
                match self.check(s) {
                    Ok(()) => format!("{name}: matches"),
                    Err(why) => format!("{name}: {why}"),
                }
            })
            .collect()
    }

    /// Endpoints of topology-mode Auto Services in slices, and how many of them carry hints.
    pub fn hints(&self) -> (usize, usize) {
        self.services
            .iter()
            .zip(&self.by_service)
            .filter(|(s, _)| s.topology_auto)
            .fold((0, 0), |(n, h), (_, b)| (n + b.union.len(), h + b.hinted))
    }

    fn evaluate(&mut self, service: usize, now: Instant) {
        if self.check(service).is_ok() {
            self.unconverged.remove(&service);
            if self.load_done && self.unconverged.is_empty() && self.converged_at.is_none() {
                self.converged_at = Some(now);
            }
        } else {
            self.unconverged.insert(service);
            self.converged_at = None;
        }
    }

    fn check(&self, service: usize) -> Result<(), String> {
        let (Some(track), Some(slices)) =
            (self.services.get(service), self.by_service.get(service))
        else {
            return Err("unknown service".into());
        };
        if slices.names.is_empty() {
            return Err("no managed EndpointSlice".into());
        }
        if slices.duplicates > 0 {
            return Err(format!(
                "{} endpoint(s) in more than one slice",
                slices.duplicates
            ));
        }
        let Some(Some(endpoints)) = self.endpoints.get(service) else {
            return Err("no Endpoints object".into());
        };
        if endpoints.duplicates > 0 {
            return Err(format!(
                "{} duplicate Endpoints address(es)",
                endpoints.duplicates
            ));
        }
        // Past 1,000 addresses an Endpoints object is truncated to 1,000 (which ones is
        // the controller's choice): then each address it holds must be right, and no more.
        let wanted_in_endpoints = track
            .pods
            .iter()
            .filter_map(|name| self.pods.get(name))
            .filter(|pod| pod.in_endpoints().is_some())
            .count();
        let truncated = wanted_in_endpoints > reconcile::endpoints::MAX_ADDRESSES;
        let (mut in_slices, mut in_endpoints) = (0, 0);
        for name in &track.pods {
            let Some(pod) = self.pods.get(name) else {
                continue;
            };
            let zone = self.nodes.get(pod.node).and_then(NodeModel::expected_zone);
            if let Some(expected) = pod.in_slices(zone) {
                in_slices += 1;
                match slices.union.get(name) {
                    Some(seen) if seen.matches(&expected) => {}
                    Some(seen) => {
                        return Err(format!(
                            "slice endpoint {name} is {seen:?}, expected {expected:?}"
                        ))
                    }
                    None => return Err(format!("pod {name} missing from the slices")),
                }
            }
            if let Some(expected) = pod.in_endpoints() {
                in_endpoints += 1;
                match endpoints.addresses.get(name) {
                    Some(seen) if *seen == expected => {}
                    Some(seen) => {
                        return Err(format!(
                            "Endpoints address {name} is {seen:?}, expected {expected:?}"
                        ))
                    }
                    None if truncated => {}
                    None => return Err(format!("pod {name} missing from Endpoints")),
                }
            }
        }
        if slices.union.len() != in_slices {
            return Err(format!(
                "slices hold {} endpoint(s), expected {in_slices}",
                slices.union.len()
            ));
        }
        let in_endpoints = in_endpoints.min(reconcile::endpoints::MAX_ADDRESSES);
        if endpoints.addresses.len() != in_endpoints {
            return Err(format!(
                "Endpoints hold {} address(es), expected {in_endpoints}",
                endpoints.addresses.len()
            ));
        }
        Ok(())
    }

    /// Applies one event of the EndpointSlice watch.
    pub fn on_slice_event(&mut self, event: watcher::Event<EndpointSlice>, now: Instant) {
        match self.slice_relist.step(event) {
            Step::Apply(slice) => self.apply_slice(&slice, true, now),
            Step::Delete(slice) => {
                if let Some(name) = slice.metadata.name.as_deref() {
                    if let Some(seen) = self.slices.remove(name) {
                        self.slice_writes.deleted += 1;
                        if let Some(b) = self.by_service.get_mut(seen.service) {
                            b.names.remove(name);
                        }
                        self.refresh_slices(seen.service, now);
                    }
                }
            }
            Step::Staged => {}
            Step::Listed(staged) => {
                // A re-list replaces everything: drop what we had, apply what was listed.
                self.slices.clear();
                for b in &mut self.by_service {
                    b.names.clear();
                }
                for slice in &staged {
                    self.apply_slice(slice, false, now);
                }
                for s in 0..self.services.len() {
                    self.refresh_slices(s, now);
                }
                self.synced.0 = true;
            }
        }
    }

    fn apply_slice(&mut self, slice: &EndpointSlice, count: bool, now: Instant) {
        let Some(name) = slice.metadata.name.clone() else {
            return;
        };
        let labels = slice.metadata.labels.as_ref();
        let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
        if label(MANAGED_BY_LABEL) != Some(MANAGED_BY_CONTROLLER) {
            return;
        }
        let Some(&service) = label(SERVICE_NAME_LABEL).and_then(|s| self.service_index.get(s))
        else {
            return;
        };
        let endpoints = slice
            .endpoints
            .iter()
            .filter_map(|ep| {
                let ip = ep.addresses.first()?.clone();
                let key = ep
                    .target_ref
                    .as_ref()
                    .and_then(|r| r.name.clone())
                    .unwrap_or_else(|| format!("ip:{ip}"));
                let c = ep.conditions.as_ref();
                let hinted = ep
                    .hints
                    .as_ref()
                    .and_then(|h| h.for_zones.as_ref())
                    .is_some_and(|z| !z.is_empty());
                let seen = SliceEndpoint {
                    ip,
                    ready: c.and_then(|c| c.ready).unwrap_or(false),
                    serving: c.and_then(|c| c.serving).unwrap_or(false),
                    terminating: c.and_then(|c| c.terminating).unwrap_or(false),
                    zone: ep.zone.clone(),
                };
                Some((key, seen, hinted))
            })
            .collect();
        let previous = self
            .slices
            .insert(name.clone(), SliceSeen { service, endpoints });
        if count {
            let w = &mut self.slice_writes;
            if previous.is_some() {
                w.updated += 1;
            } else {
                w.created += 1;
            }
            w.bytes += serde_json::to_vec(slice).map_or(0, |v| v.len() as u64);
        }
        if let Some(b) = self.by_service.get_mut(service) {
            b.names.insert(name);
        }
        if count {
            self.refresh_slices(service, now);
        }
    }

    fn refresh_slices(&mut self, service: usize, now: Instant) {
        let Some(b) = self.by_service.get(service) else {
            return;
        };
        let mut union = HashMap::with_capacity(b.union.len());
        let (mut duplicates, mut hinted) = (0, 0);
        for name in &b.names {
            let Some(seen) = self.slices.get(name) else {
                continue;
            };
            for (pod, ep, hint) in &seen.endpoints {
                if union.insert(pod.clone(), ep.clone()).is_some() {
                    duplicates += 1;
                }
                hinted += usize::from(*hint);
            }
        }
        let old = std::mem::take(&mut self.by_service[service].union);
        for (pod, ep) in &union {
            if old.get(pod) != Some(ep) {
                self.slice_latency.observed(pod, Some(ep), now);
            }
        }
        for pod in old.keys().filter(|p| !union.contains_key(*p)) {
            self.slice_latency.observed(pod, None, now);
        }
        let b = &mut self.by_service[service];
        b.union = union;
        b.duplicates = duplicates;
        b.hinted = hinted;
        self.evaluate(service, now);
    }

    /// Applies one event of the Endpoints watch.
    pub fn on_endpoints_event(&mut self, event: watcher::Event<Endpoints>, now: Instant) {
        match self.endpoints_relist.step(event) {
            Step::Apply(e) => self.apply_endpoints(&e, true, now),
            Step::Delete(e) => {
                let service = e
                    .metadata
                    .name
                    .as_deref()
                    .and_then(|n| self.service_index.get(n))
                    .copied();
                if let Some(s) = service {
                    self.endpoints_writes.deleted += 1;
                    self.replace_endpoints(s, None, now);
                }
            }
            Step::Staged => {}
            Step::Listed(staged) => {
                let listed: BTreeSet<usize> = staged
                    .iter()
                    .filter_map(|e| e.metadata.name.as_deref())
                    .filter_map(|n| self.service_index.get(n).copied())
                    .collect();
                for s in 0..self.services.len() {
                    if !listed.contains(&s) {
                        self.replace_endpoints(s, None, now);
                    }
                }
                for e in &staged {
                    self.apply_endpoints(e, false, now);
                }
                self.synced.1 = true;
            }
        }
    }

    fn apply_endpoints(&mut self, e: &Endpoints, count: bool, now: Instant) {
        let Some(&service) = e
            .metadata
            .name
            .as_deref()
            .and_then(|n| self.service_index.get(n))
        else {
            return;
        };
        let mut seen = ServiceEndpoints::default();
        for subset in e.subsets.iter().flatten() {
            let lists = [
                (&subset.addresses, true),
                (&subset.not_ready_addresses, false),
            ];
            for (list, ready) in lists {
                for a in list.iter().flatten() {
                    let key = a
                        .target_ref
                        .as_ref()
                        .and_then(|r| r.name.clone())
                        .unwrap_or_else(|| format!("ip:{}", a.ip));
                    let address = EndpointsAddress {
                        ip: a.ip.clone(),
                        ready,
                    };
                    if seen.addresses.insert(key, address).is_some() {
                        seen.duplicates += 1;
                    }
                }
            }
        }
        if count {
            let w = &mut self.endpoints_writes;
            if matches!(self.endpoints.get(service), Some(Some(_))) {
                w.updated += 1;
            } else {
                w.created += 1;
            }
            w.bytes += serde_json::to_vec(e).map_or(0, |v| v.len() as u64);
        }
        self.replace_endpoints(service, Some(seen), now);
    }

    fn replace_endpoints(&mut self, service: usize, new: Option<ServiceEndpoints>, now: Instant) {
        let Some(slot) = self.endpoints.get_mut(service) else {
            return;
        };
        let old = std::mem::replace(slot, new);
        let empty = HashMap::new();
        let old = old.as_ref().map_or(&empty, |o| &o.addresses);
        let new = self.endpoints[service]
            .as_ref()
            .map_or(&empty, |n| &n.addresses);
        let mut changed: Vec<(String, Option<EndpointsAddress>)> = Vec::new();
        for (pod, a) in new {
            if old.get(pod) != Some(a) {
                changed.push((pod.clone(), Some(a.clone())));
            }
        }
        for pod in old.keys().filter(|p| !new.contains_key(*p)) {
            changed.push((pod.clone(), None));
        }
        for (pod, a) in changed {
            self.endpoints_latency.observed(&pod, a.as_ref(), now);
        }
        self.evaluate(service, now);
    }
}

/// What one watch event means once a re-list in progress is accounted for.
enum Step<K> {
    /// An object added or changed.
    Apply(K),
    /// An object deleted.
    Delete(K),
    /// Part of a re-list, kept until it ends.
    Staged,
    /// A re-list ended: everything it listed.
    Listed(Vec<K>),
}

/// The objects of a re-list in progress, handed over all at once when it ends.
#[derive(Debug)]
struct Relist<K>(Option<Vec<K>>);

impl<K> Default for Relist<K> {
    fn default() -> Self {
        Self(None)
    }
}

impl<K> Relist<K> {
    /// Takes in one event of the watch.
    fn step(&mut self, event: watcher::Event<K>) -> Step<K> {
        match event {
            watcher::Event::Apply(object) => Step::Apply(object),
            watcher::Event::Delete(object) => Step::Delete(object),
            watcher::Event::Init => {
                self.0 = Some(Vec::new());
                Step::Staged
            }
            watcher::Event::InitApply(object) => {
                if let Some(staged) = self.0.as_mut() {
                    staged.push(object);
                }
                Step::Staged
            }
            watcher::Event::InitDone => Step::Listed(self.0.take().unwrap_or_default()),
        }
    }
}

/// Starts the two watches in `namespace`, feeding `tracker`.
pub fn spawn_watches(client: &Client, namespace: &str, tracker: &Shared) -> Vec<JoinHandle<()>> {
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), namespace);
    let managed = format!("{MANAGED_BY_LABEL}={MANAGED_BY_CONTROLLER}");
    vec![
        spawn_watch(
            slices,
            watcher::Config::default().labels(&managed),
            tracker,
            "EndpointSlice",
            Tracker::on_slice_event,
        ),
        spawn_watch(
            endpoints,
            watcher::Config::default(),
            tracker,
            "Endpoints",
            Tracker::on_endpoints_event,
        ),
    ]
}

/// Watches `api` until the task is aborted, handing each event to `on_event` on `tracker`
/// and retrying (with backoff) after a failure of the `kind` watch.
fn spawn_watch<K>(
    api: Api<K>,
    config: watcher::Config,
    tracker: &Shared,
    kind: &'static str,
    on_event: fn(&mut Tracker, watcher::Event<K>, Instant),
) -> JoinHandle<()>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let tracker = tracker.clone();
    let stream = watcher(api, config).default_backoff();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => on_event(&mut lock(&tracker), event, Instant::now()),
                Err(err) => tracing::warn!(%err, "{kind} watch failed; retrying"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ready: bool, terminating: bool) -> PodModel {
        crate::model::test_pod(ready, terminating)
    }

    fn slice(endpoints: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": "web-abc", "labels": {
                SERVICE_NAME_LABEL: "web", MANAGED_BY_LABEL: MANAGED_BY_CONTROLLER}},
            "addressType": "IPv4",
            "endpoints": endpoints
        }))
        .unwrap()
    }

    fn endpoints(addresses: serde_json::Value, not_ready: serde_json::Value) -> Endpoints {
        serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "subsets": [{"addresses": addresses, "notReadyAddresses": not_ready}]
        }))
        .unwrap()
    }

    /// A tracker that has just seen the pod `web-1` of Service `web` written as `web_1`.
    fn tracker_with_web_1(web_1: PodModel) -> (Tracker, Instant) {
        let mut t = tracker();
        let now = Instant::now();
        t.set_pod("web-1", Some(web_1), now);
        (t, now)
    }

    fn tracker() -> Tracker {
        let mut t = Tracker::default();
        t.nodes.push(NodeModel {
            name: "n".into(),
            zone: "z1".into(),
            ready: true,
            zone_changed: false,
        });
        t.add_service("web", false);
        t
    }

    #[test]
    fn a_change_is_timed_from_its_write_to_the_first_event_showing_it() {
        let (mut t, changed) = tracker_with_web_1(pod(true, false));
        // The write waited 20 ms for the load generator's rate limit.
        let start = changed + Duration::from_millis(20);
        t.written("web-1", start);
        // An event that does not show the pod leaves the change pending.
        t.on_slice_event(watcher::Event::Apply(slice(json!([]))), start);
        assert_eq!(t.slice_latency.unobserved(), 1);
        let later = start + Duration::from_millis(30);
        let shown = slice(json!([{"addresses": ["10.0.0.1"], "zone": "z1",
            "conditions": {"ready": true, "serving": true, "terminating": false},
            "targetRef": {"kind": "Pod", "name": "web-1"}}]));
        t.on_slice_event(watcher::Event::Apply(shown), later);
        assert_eq!(t.slice_latency.samples, vec![Duration::from_millis(30)]);
        assert_eq!(t.slice_latency.from_change, vec![Duration::from_millis(50)]);
        assert_eq!(t.slice_writes.created, 1);
        assert_eq!(t.slice_writes.updated, 1);
    }

    #[test]
    fn a_service_converges_only_when_slices_and_endpoints_both_match() {
        let (mut t, now) = tracker_with_web_1(pod(true, true));
        t.set_load_done(now);
        assert!(!t.converged());
        // Terminating: serving but not ready in the slice, and absent from Endpoints.
        let terminating = slice(json!([{"addresses": ["10.0.0.1"], "zone": "z1",
            "conditions": {"ready": false, "serving": true, "terminating": true},
            "targetRef": {"kind": "Pod", "name": "web-1"}}]));
        t.on_slice_event(watcher::Event::Apply(terminating), now);
        assert!(!t.converged(), "no Endpoints object yet");
        let stale = endpoints(
            json!([{"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "name": "web-1"}}]),
            json!([]),
        );
        t.on_endpoints_event(watcher::Event::Apply(stale), now);
        assert!(!t.converged(), "a terminating pod must leave Endpoints");
        assert!(t.mismatches(1)[0].contains("Endpoints hold 1"));
        t.on_endpoints_event(watcher::Event::Apply(endpoints(json!([]), json!([]))), now);
        assert!(t.converged());
        assert!(t.converged_at.is_some());
    }

    #[test]
    fn a_service_past_1000_addresses_converges_on_an_endpoints_object_truncated_to_1000() {
        let mut t = tracker();
        let now = Instant::now();
        let pods = 1_001;
        let ip = |i: usize| format!("10.0.{}.{}", i / 250, i % 250 + 1);
        for i in 0..pods {
            let mut p = pod(true, false);
            p.ip = Some(ip(i));
            t.set_pod(&format!("web-{i}"), Some(p), now);
        }
        t.set_load_done(now);
        let endpoint = |i: usize| {
            json!({"addresses": [ip(i)], "zone": "z1",
            "conditions": {"ready": true, "serving": true, "terminating": false},
            "targetRef": {"kind": "Pod", "name": format!("web-{i}")}})
        };
        t.on_slice_event(
            watcher::Event::Apply(slice((0..pods).map(endpoint).collect())),
            now,
        );
        let address = |i: usize| json!({"ip": ip(i), "targetRef": {"kind": "Pod", "name": format!("web-{i}")}});
        let kept = |n: usize| endpoints((1..=n).map(address).collect(), json!([]));
        t.on_endpoints_event(watcher::Event::Apply(kept(999)), now);
        assert!(!t.converged(), "999 of 1,001");
        assert!(
            t.mismatches(1)[0].contains("Endpoints hold 999"),
            "{:?}",
            t.mismatches(1)
        );
        // Any 1,000 of them, each as it should be.
        t.on_endpoints_event(watcher::Event::Apply(kept(1_000)), now);
        assert!(t.converged(), "{:?}", t.mismatches(1));
    }

    #[test]
    fn a_change_overtaken_before_it_was_seen_counts_as_superseded() {
        let (mut t, now) = tracker_with_web_1(pod(true, false));
        t.written("web-1", now);
        t.set_pod("web-1", Some(pod(false, false)), now);
        t.written("web-1", now);
        assert_eq!(t.slice_latency.superseded, 1);
        assert_eq!(t.slice_latency.unobserved(), 1);
    }

    #[test]
    fn endpoints_in_the_wrong_zone_do_not_match() {
        let (mut t, now) = tracker_with_web_1(pod(true, false));
        t.set_load_done(now);
        t.on_endpoints_event(
            watcher::Event::Apply(endpoints(
                json!([{"ip": "10.0.0.1", "targetRef": {"kind": "Pod", "name": "web-1"}}]),
                json!([]),
            )),
            now,
        );
        let wrong_zone = slice(json!([{"addresses": ["10.0.0.1"], "zone": "z2",
            "conditions": {"ready": true, "serving": true, "terminating": false},
            "targetRef": {"kind": "Pod", "name": "web-1"}}]));
        t.on_slice_event(watcher::Event::Apply(wrong_zone), now);
        assert!(!t.converged());
        t.set_node_zone(0, "z2", now);
        assert!(t.converged(), "a node that moved zone is not zone-checked");
    }
}
