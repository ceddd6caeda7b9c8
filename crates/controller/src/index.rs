//! The informers both controllers share, their compact stores, and the indexes the handlers
//! and syncs read: pods and services by label pair, slices by (namespace, service name).

use crate::informer::store::{Index, ObjectKey, Store};
use crate::informer::{Echoes, Handler, Informer, Synced};
use crate::migration_guard::ManagedFieldsTap;
use compact_str::CompactString;
use k8s_openapi::api::core::v1::{Endpoints, Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::watcher;
use kube::Api;
use reconcile::keys::ServiceKey;
use reconcile::projection::{
    LabelSet, NodeInfo, PartialPod, PodInfo, ServiceInfo, StoredEndpoints, StoredSlice,
};
use reconcile::selector::selector_matches;
use std::sync::Arc;

/// Read access to everything the informers keep.
#[derive(Clone)]
pub struct Stores {
    /// Pods (projections).
    pub pods: Store<PodInfo>,
    /// Services (projections).
    pub services: Store<ServiceInfo>,
    /// Nodes (projections).
    pub nodes: Store<NodeInfo>,
    /// EndpointSlices, their endpoints kept compact.
    pub slices: Store<StoredSlice>,
    /// Slices by (namespace, service-name label).
    pub slices_by_service: Index<StoredSlice, (CompactString, CompactString)>,
    /// v1 Endpoints, their addresses kept compact.
    pub endpoints: Store<StoredEndpoints>,
    /// Pods by label pair, Services by selector pair.
    pub labels: crate::label_index::LabelIndex,
    /// The slices we wrote whose echo the slice informer awaits.
    pub slice_echoes: Echoes<EndpointSlice, StoredSlice>,
    /// The Endpoints objects we wrote whose echo the Endpoints informer awaits.
    pub endpoints_echoes: Echoes<Endpoints, StoredEndpoints>,
}

impl Stores {
    /// The service, by key.
    pub fn service(&self, key: &ServiceKey) -> Option<Arc<ServiceInfo>> {
        self.services
            .get(&ObjectKey::new(&key.namespace, &key.name))
    }

    /// The pods a Service's selector matches, in its namespace.
    pub fn pods_of(&self, service: &ServiceInfo) -> Vec<Arc<PodInfo>> {
        let Some(selector) = service.selector.as_ref() else {
            return Vec::new();
        };
        let Some(candidates) = self.labels.pod_candidates(&service.namespace, selector) else {
            return Vec::new();
        };
        self.pods.get_each(&candidates, |p| {
            p.namespace == service.namespace && selector_matches(selector, &p.labels)
        })
    }

    /// The services of the pod's namespace whose selector matches these labels.
    pub fn services_matching(&self, namespace: &str, labels: &LabelSet) -> Vec<ServiceKey> {
        self.labels
            .service_candidates(namespace, labels)
            .iter()
            .filter_map(|key| self.services.get(key))
            .filter(|s| {
                s.namespace == namespace
                    && s.selector
                        .as_ref()
                        .is_some_and(|sel| selector_matches(sel, labels))
            })
            .map(|s| s.key())
            .collect()
    }

    /// The Services a pod update concerns (None for a resync or an irrelevant change): the
    /// union of old and new matches when the pod's endpoints changed, otherwise only the
    /// Services it joined or left.
    pub fn services_for_pod_update(&self, old: &PodInfo, new: &PodInfo) -> Vec<ServiceKey> {
        let Some(change) = reconcile::membership::pod_change(old, new) else {
            return Vec::new();
        };
        let mut now = self.services_matching(&new.namespace, &new.labels);
        if !change.labels_changed {
            // The same Services before and after (a readiness flip, most updates): their
            // union is each of them once, in order.
            now.sort_unstable();
            now.dedup();
            return now;
        }
        let before = self.services_matching(&old.namespace, &old.labels);
        reconcile::membership::services_to_queue(change, &before, &now)
    }

    /// The slices labelled with a Service's name that `keep` accepts, whole. `keep` sees
    /// each slice without its endpoints (it decides by metadata), so that only the slices a
    /// sync reads are rebuilt from their stored form.
    pub fn slices_of(
        &self,
        key: &ServiceKey,
        keep: impl Fn(&EndpointSlice) -> bool,
    ) -> Vec<Arc<EndpointSlice>> {
        self.stored_slices_of(key, keep)
            .iter()
            .map(|slice| Arc::new(slice.to_slice()))
            .collect()
    }

    /// The slices labelled with a Service's name that `keep` accepts, as stored (a sync of
    /// the EndpointSlice controller compares endpoints where they are kept, and builds back
    /// only the slices it writes or deletes).
    pub fn stored_slices_of(
        &self,
        key: &ServiceKey,
        keep: impl Fn(&EndpointSlice) -> bool,
    ) -> Vec<Arc<StoredSlice>> {
        self.slices_by_service
            .get(&(key.namespace.clone(), key.name.clone()))
            .into_iter()
            .filter(|slice| keep(slice.without_endpoints()))
            .collect()
    }

    /// The Endpoints object of a Service, whole.
    pub fn endpoints_of(&self, key: &ServiceKey) -> Option<Endpoints> {
        self.endpoints
            .get(&ObjectKey::new(&key.namespace, &key.name))
            .map(|endpoints| endpoints.to_endpoints())
    }
}

/// The informers, before they run.
pub struct Informers {
    pods: Informer<PartialPod, PodInfo>,
    services: Informer<Service, ServiceInfo>,
    nodes: Informer<Node, NodeInfo>,
    slices: Informer<EndpointSlice, StoredSlice>,
    endpoints: Informer<Endpoints, StoredEndpoints>,
    /// The stores they fill.
    pub stores: Stores,
    /// What the slice and Endpoints informers saw in managedFields before dropping them.
    pub managed_fields: ManagedFieldsTap,
}

/// Handlers for every informer (a controller that does not care about a kind ignores it).
pub struct Handlers {
    /// Pod events.
    pub pods: Vec<Arc<dyn Handler<PodInfo>>>,
    /// Service events.
    pub services: Vec<Arc<dyn Handler<ServiceInfo>>>,
    /// Node events.
    pub nodes: Vec<Arc<dyn Handler<NodeInfo>>>,
    /// EndpointSlice events.
    pub slices: Vec<Arc<dyn Handler<StoredSlice>>>,
    /// Endpoints events.
    pub endpoints: Vec<Arc<dyn Handler<StoredEndpoints>>>,
}

struct Fanout<P>(Vec<Arc<dyn Handler<P>>>);

impl<P> Handler<P> for Fanout<P> {
    fn on_add(&self, obj: &Arc<P>) {
        self.0.iter().for_each(|h| h.on_add(obj));
    }
    fn on_update(&self, old: &Arc<P>, new: &Arc<P>) {
        self.0.iter().for_each(|h| h.on_update(old, new));
    }
    fn on_delete(&self, obj: &Arc<P>) {
        self.0.iter().for_each(|h| h.on_delete(obj));
    }
    fn on_listed(&self) {
        self.0.iter().for_each(|h| h.on_listed());
    }
}

/// An informer of `K` in every namespace, through the client watching `kind`, keeping
/// `project`'s output.
fn informer<K, P>(
    clients: &crate::InformerClients,
    kind: crate::service_accounts::Watched,
    wire: &crate::wire::Negotiated,
    project: impl Fn(K) -> Option<Arc<P>> + Send + Sync + 'static,
) -> Informer<K, P>
where
    K: crate::wire::WireKind
        + kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
    P: crate::informer::store::Keyed + PartialEq + Send + Sync + 'static,
{
    // The first state comes as a streaming list (a watch with `sendInitialEvents`, what
    // kube-apiserver calls WatchList, on by default since v1.34): served from the watch
    // cache, and decoded one object at a time instead of a page of 500 at once. A server
    // that refuses it (v1.33) gets a list instead (see `Informer::run`), asked for at any
    // resourceVersion (`resourceVersion=0`) as client-go's reflector does, so that it too
    // is answered from the watch cache rather than by a quorum read of etcd.
    let config = watcher::Config::default().any_semantic().streaming_lists();
    Informer::new(Api::all(clients.of(kind).clone()), config, project).with_wire(wire.clone())
}

impl Informers {
    /// Informers over all namespaces. Objects are projected to the compact views of
    /// `reconcile::projection`; slices and Endpoints are kept in full, with their endpoints and
    /// addresses in a compact form (`StoredSlice`, `StoredEndpoints`).
    pub fn new(clients: &crate::InformerClients, wire: &crate::wire::Negotiated) -> Self {
        use crate::service_accounts::Watched;
        let tap = ManagedFieldsTap::new(k8s_openapi::jiff::Timestamp::now());
        // Pods are decoded straight into the fields the projection reads (see PartialPod), and
        // pods of one template share their labels and ports (see PodInterner). Only the pod
        // informer's task projects, so the lock is never contended.
        let interner = std::sync::Mutex::new(reconcile::projection::PodInterner::default());
        let pods = informer(clients, Watched::Pods, wire, move |p: PartialPod| {
            let mut interner = interner
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            PodInfo::from_partial_shared(&p, &mut interner).map(Arc::new)
        });
        let services = informer(clients, Watched::Services, wire, |s: Service| {
            ServiceInfo::from_service(&s).map(Arc::new)
        });
        let nodes = informer(clients, Watched::Nodes, wire, |n: Node| {
            NodeInfo::from_node(&n).map(Arc::new)
        });
        // Slices and Endpoints are kept without their managedFields, once the tap read them.
        let mut slices = informer(clients, Watched::EndpointSlices, wire, {
            let tap = tap.clone();
            move |s: EndpointSlice| Some(Arc::new(StoredSlice::new(tap.stripped(s))))
        });
        let mut endpoints = informer(clients, Watched::Endpoints, wire, {
            let tap = tap.clone();
            move |e: Endpoints| Some(Arc::new(StoredEndpoints::new(tap.stripped(e))))
        });
        let (slice_echoes, endpoints_echoes) = (slices.echoes(), endpoints.echoes());
        let slice_store = slices.store();
        let stores = Stores {
            pods: pods.store(),
            services: services.store(),
            nodes: nodes.store(),
            slices_by_service: slice_store.add_index(|key: &ObjectKey, s: &StoredSlice| {
                reconcile::slice::service_name_of(s.without_endpoints())
                    .map(|name| (key.namespace.clone(), CompactString::new(name)))
            }),
            slices: slice_store,
            endpoints: endpoints.store(),
            labels: crate::label_index::LabelIndex::default(),
            slice_echoes,
            endpoints_echoes,
        };
        Self {
            pods,
            services,
            nodes,
            slices,
            endpoints,
            stores,
            managed_fields: tap,
        }
    }

    /// Every informer's "synced" signal and progress.
    fn signals(&self) -> [(Synced, crate::informer::Progress); 5] {
        [
            (self.pods.synced(), self.pods.progress()),
            (self.services.synced(), self.services.progress()),
            (self.nodes.synced(), self.nodes.progress()),
            (self.slices.synced(), self.slices.progress()),
            (self.endpoints.synced(), self.endpoints.progress()),
        ]
    }

    /// "Synced" signals of every informer.
    pub fn synced(&self) -> Vec<Synced> {
        self.signals()
            .into_iter()
            .map(|(synced, _)| synced)
            .collect()
    }

    /// How far each informer has caught up with the server.
    pub fn progress(&self) -> Vec<crate::informer::Progress> {
        self.signals()
            .into_iter()
            .map(|(_, progress)| progress)
            .collect()
    }

    /// Runs every informer until `shutdown` is cancelled.
    pub async fn run(
        self,
        handlers: Handlers,
        health: crate::informer::WatchHealth,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        let s = || {
            let t = shutdown.clone();
            async move { t.cancelled().await }
        };
        let h = || health.clone();
        tokio::join!(
            self.pods.with_health(h()).run(Fanout(handlers.pods), s()),
            self.services
                .with_health(h())
                .run(Fanout(handlers.services), s()),
            self.nodes.with_health(h()).run(Fanout(handlers.nodes), s()),
            self.slices
                .with_health(h())
                .run(Fanout(handlers.slices), s()),
            self.endpoints
                .with_health(h())
                .run(Fanout(handlers.endpoints), s()),
        );
    }
}
