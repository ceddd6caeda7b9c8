//! The migration guard: noticing another controller writing the objects we manage.
//!
//! Moving to these controllers means turning kube-controller-manager's own off
//! (`--controllers=*,-endpoints-controller,-endpointslice-controller`). An operator who forgets
//! gets two controllers rewriting the same Endpoints and EndpointSlices, which mostly agree and
//! so go unnoticed, until they do not. kube-apiserver records who changed which fields of an
//! object in `metadata.managedFields`, so we watch those: an entry of another manager (any
//! but [`FIELD_MANAGER`]), dated after we started, that owns fields the controllers write
//! (a slice's endpoints, ports, address type or managed-by label; an Endpoints' subsets or
//! managed-by label), on an object one of our running controllers manages, is a foreign write.
//! It is counted once per object, manager and entry time in
//! `migration_guard_foreign_writes_total{controller,manager}`. When the writer is
//! kube-controller-manager ([`UPSTREAM_MANAGER`]) it is also reported loudly: an error log
//! line naming the object and the writer, and a Warning Event `ForeignWriter` on the Service.
//! Another manager (someone's `kubectl edit` of a slice's endpoints) gets a warning line only:
//! upstream's controllers repair such edits silently, and so do we, with the same Events.
//!
//! Our own writes never count (they carry our manager name), nor do edits of fields the
//! controllers leave alone (a label added with kubectl), nor entries from before we started
//! (kube-controller-manager's, from before the switch). The informers drop managedFields to
//! keep their stores small, so they hand each object's foreign entries to a [`ManagedFieldsTap`]
//! first; the guard, an informer handler, takes them from there when it hears of the object.

use crate::events::{EventRecorder, Involved};
use crate::field_manager::FIELD_MANAGER;
use crate::informer::{Handler, ObjectKey, Store};
use crate::instruments::Instruments;
use crate::service_accounts::Identity;
use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use prometheus::{IntCounterVec, Registry};
use reconcile::event::PlannedEvent;
use reconcile::labels::{
    ENDPOINTS_CONTROLLER_NAME, ENDPOINTS_MANAGED_BY, MIRRORING_CONTROLLER_NAME, SERVICE_NAME,
    SLICE_CONTROLLER_NAME, SLICE_MANAGED_BY,
};
use reconcile::projection::{ServiceInfo, StoredEndpoints, StoredSlice};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The Event reason of a foreign write.
pub const REASON: &str = "ForeignWriter";

/// The field manager of kube-controller-manager's controllers: the product part of their
/// User-Agent (`kube-controller-manager/v1.35.0 (linux/amd64) kubernetes/... /
/// system:serviceaccount:kube-system:endpointslice-controller`).
pub const UPSTREAM_MANAGER: &str = "kube-controller-manager";

/// The kinds the guard watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// discovery.k8s.io/v1 EndpointSlice.
    EndpointSlice,
    /// core/v1 Endpoints.
    Endpoints,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::EndpointSlice => "EndpointSlice",
            Self::Endpoints => "Endpoints",
        }
    }
}

/// One managedFields entry of another manager that owns fields the controllers write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignWrite {
    /// The entry's manager, e.g. `kube-controller-manager`.
    pub manager: String,
    /// The entry's time: when that manager last took fields of the object.
    pub time: Timestamp,
}

type Seen = HashMap<(Kind, ObjectKey), Vec<ForeignWrite>>;

/// Where the slice and Endpoints informers leave each object's foreign writes before they drop
/// its managedFields. Clones share one map, which holds an object only between its informer
/// seeing it and the guard handling it, and only when it has foreign writes (normally never).
/// It notes nothing until a guard takes it (a shadow runs none), so that nothing piles up.
#[derive(Debug, Clone)]
pub struct ManagedFieldsTap {
    seen: Arc<Mutex<Seen>>,
    since: Timestamp,
    enabled: Arc<AtomicBool>,
}

impl ManagedFieldsTap {
    /// A tap that ignores entries older than `since` (whole seconds: managedFields times have
    /// no fraction).
    pub fn new(since: Timestamp) -> Self {
        let since = Timestamp::from_second(since.as_second()).unwrap_or(since);
        Self {
            seen: Arc::default(),
            since,
            enabled: Arc::default(),
        }
    }

    /// Notes `object`'s foreign writes, then drops its managedFields, which nothing else
    /// reads: what the informer keeps of it.
    pub fn stripped<K: Tapped>(&self, mut object: K) -> K {
        self.note(&object);
        object.meta_mut().managed_fields = None;
        object
    }

    /// Notes `object`'s foreign writes.
    fn note<K: Tapped>(&self, object: &K) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let (kind, meta) = (K::KIND, object.meta());
        let writes = foreign_writes(meta, self.since, K::fields_owned);
        let (Some(namespace), Some(name)) = (&meta.namespace, &meta.name) else {
            return;
        };
        let key = (kind, ObjectKey::new(namespace, name));
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if writes.is_empty() {
            seen.remove(&key);
        } else {
            seen.insert(key, writes);
        }
    }

    fn take(&self, kind: Kind, key: &ObjectKey) -> Vec<ForeignWrite> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.is_empty() {
            return Vec::new();
        }
        seen.remove(&(kind, key.clone())).unwrap_or_default()
    }
}

/// The kinds the tap reads, and which of their fields the controllers write.
pub trait Tapped: kube::Resource {
    /// The kind, as the guard reports it.
    const KIND: Kind;
    /// Whether a managedFields entry's fieldset holds a field the controllers write.
    fn fields_owned(fields: &Value) -> bool;
}

impl Tapped for EndpointSlice {
    const KIND: Kind = Kind::EndpointSlice;
    fn fields_owned(fields: &Value) -> bool {
        slice_fields_owned(fields)
    }
}

impl Tapped for Endpoints {
    const KIND: Kind = Kind::Endpoints;
    fn fields_owned(fields: &Value) -> bool {
        endpoints_fields_owned(fields)
    }
}

/// The entries of `meta` that are another manager's, dated `since` or later, and own fields
/// `owns_managed` recognises.
fn foreign_writes(
    meta: &ObjectMeta,
    since: Timestamp,
    owns_managed: fn(&Value) -> bool,
) -> Vec<ForeignWrite> {
    let Some(entries) = &meta.managed_fields else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|e| e.manager.as_deref() != Some(FIELD_MANAGER))
        // Status writes never touch what the controllers write (neither kind has a status).
        .filter(|e| e.subresource.as_deref().unwrap_or_default().is_empty())
        .filter(|e| e.fields_v1.as_ref().is_some_and(|f| owns_managed(&f.0)))
        .filter_map(|e| {
            let time = e.time.as_ref()?.0;
            (time >= since).then(|| ForeignWrite {
                manager: e.manager.clone().unwrap_or_default(),
                time,
            })
        })
        .collect()
}

/// Whether a FieldsV1 set holds `f:metadata.f:labels.f:<label>`.
fn owns_label(fields: &Value, label: &str) -> bool {
    fields
        .get("f:metadata")
        .and_then(|m| m.get("f:labels"))
        .and_then(|l| l.get(format!("f:{label}")))
        .is_some()
}

/// The fields of a slice the slice controllers write, as opposed to labels or annotations
/// a user may add.
fn slice_fields_owned(fields: &Value) -> bool {
    ["f:endpoints", "f:ports", "f:addressType"]
        .iter()
        .any(|f| fields.get(f).is_some())
        || owns_label(fields, SLICE_MANAGED_BY)
}

/// The fields of an Endpoints object the Endpoints controller writes.
fn endpoints_fields_owned(fields: &Value) -> bool {
    fields.get("f:subsets").is_some() || owns_label(fields, ENDPOINTS_MANAGED_BY)
}

/// Which controllers run here, so which objects are ours to guard.
#[derive(Debug, Clone, Copy, Default)]
pub struct Guarded {
    /// Slices managed by `endpointslice-controller.k8s.io`.
    pub slices: bool,
    /// Slices managed by `endpointslicemirroring-controller.k8s.io`.
    pub mirrored_slices: bool,
    /// Endpoints of Services with a selector.
    pub endpoints: bool,
}

/// The guard: an informer handler for slices and Endpoints.
pub struct MigrationGuard {
    tap: ManagedFieldsTap,
    services: Store<ServiceInfo>,
    guarded: Guarded,
    events: EventRecorder,
    foreign_writes: IntCounterVec,
    /// The latest entry time reported per object and manager.
    reported: Mutex<HashMap<(Kind, ObjectKey), BTreeMap<String, Timestamp>>>,
}

impl MigrationGuard {
    /// A guard reading `tap`, with `services` to tell which Endpoints are ours, reporting
    /// through `events` and the counter it registers in `registry`.
    pub fn new(
        tap: ManagedFieldsTap,
        services: Store<ServiceInfo>,
        guarded: Guarded,
        events: EventRecorder,
        registry: &Registry,
    ) -> Result<Arc<Self>, prometheus::Error> {
        let foreign_writes = Instruments::with_subsystem(registry, "migration_guard")
            .metric_vec::<IntCounterVec>(
            "foreign_writes_total",
            "Changes by another field manager to fields of Endpoints and EndpointSlices \
                 these controllers manage, by the upstream controller that writes such objects \
                 and the manager",
            &["controller", "manager"],
        )?;
        // The series an alert watches start at 0, so that `increase()` sees the first
        // foreign write by kube-controller-manager rather than a series appearing.
        for (guarded, controller) in [
            (guarded.slices, Identity::EndpointSlices),
            (guarded.mirrored_slices, Identity::Mirroring),
            (guarded.endpoints, Identity::Endpoints),
        ] {
            if guarded {
                foreign_writes.with_label_values(&[controller.controller_name(), UPSTREAM_MANAGER]);
            }
        }
        tap.enabled.store(true, Ordering::Relaxed);
        Ok(Arc::new(Self {
            tap,
            services,
            guarded,
            events,
            foreign_writes,
            reported: Mutex::default(),
        }))
    }

    fn check_slice(&self, slice: &EndpointSlice) {
        let Some(key) = key_of(&slice.metadata) else {
            return;
        };
        let writes = self.tap.take(Kind::EndpointSlice, &key);
        if writes.is_empty() {
            return;
        }
        let labels = slice.metadata.labels.as_ref();
        let label = |name: &str| labels.and_then(|l| l.get(name)).map(String::as_str);
        let controller = match label(SLICE_MANAGED_BY) {
            Some(SLICE_CONTROLLER_NAME) if self.guarded.slices => {
                Identity::EndpointSlices.controller_name()
            }
            Some(MIRRORING_CONTROLLER_NAME) if self.guarded.mirrored_slices => {
                Identity::Mirroring.controller_name()
            }
            _ => return,
        };
        let service = label(SERVICE_NAME);
        self.report(Kind::EndpointSlice, &key, controller, service, writes);
    }

    fn check_endpoints(&self, endpoints: &Endpoints) {
        let Some(key) = key_of(&endpoints.metadata) else {
            return;
        };
        let writes = self.tap.take(Kind::Endpoints, &key);
        if writes.is_empty() || !self.guarded.endpoints {
            return;
        }
        let labelled = endpoints
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(ENDPOINTS_MANAGED_BY))
            .is_some_and(|v| v == ENDPOINTS_CONTROLLER_NAME);
        // The Endpoints of a Service without a selector are written by hand (and mirrored),
        // not by the Endpoints controller. A writer that drops our label still counts when
        // the Service has a selector.
        let selected = self
            .services
            .get(&key)
            .is_some_and(|s| s.selector.is_some());
        if labelled || selected {
            let service = Some(key.name.clone());
            let service = service.as_deref();
            self.report(
                Kind::Endpoints,
                &key,
                Identity::Endpoints.controller_name(),
                service,
                writes,
            );
        }
    }

    fn report(
        &self,
        kind: Kind,
        key: &ObjectKey,
        controller: &'static str,
        service: Option<&str>,
        writes: Vec<ForeignWrite>,
    ) {
        let fresh: Vec<ForeignWrite> = {
            let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
            let latest = reported.entry((kind, key.clone())).or_default();
            writes
                .into_iter()
                .filter(|w| {
                    let new = latest.get(&w.manager).is_none_or(|t| *t < w.time);
                    if new {
                        latest.insert(w.manager.clone(), w.time);
                    }
                    new
                })
                .collect()
        };
        for write in fresh {
            self.foreign_writes
                .with_label_values(&[controller, write.manager.as_str()])
                .inc();
            let kind = kind.as_str();
            if write.manager != UPSTREAM_MANAGER {
                // A person or a tool edited what the controllers write. Upstream's controllers
                // repair such edits without a word; we only note them.
                let manager = match write.manager.as_str() {
                    "" => "(unnamed)",
                    named => named,
                };
                tracing::warn!(
                    kind,
                    object = %key,
                    manager = %manager,
                    time = %write.time,
                    controller,
                    "Another field manager changed fields these controllers write"
                );
                continue;
            }
            tracing::error!(
                kind,
                object = %key,
                manager = %write.manager,
                time = %write.time,
                controller,
                "Another writer changed an object these controllers manage; is \
                 kube-controller-manager still running this controller?"
            );
            let Some(service) = service else {
                continue;
            };
            // No time in the message: repeats within the recorder's window then bump one
            // Event's count instead of adding an Event per write.
            let message = format!(
                "{kind} {key} was changed by kube-controller-manager, not by kube-endpoints: \
                 kube-controller-manager still runs its {controller}. Restart it with \
                 --controllers=*,-{controller} added to its other disabled controllers"
            );
            let uid = self
                .services
                .get(&ObjectKey::new(&key.namespace, service))
                .map(|s| s.uid.clone())
                .unwrap_or_default();
            self.events.record(
                Involved {
                    kind: "Service",
                    namespace: key.namespace.to_string(),
                    name: service.to_owned(),
                    uid,
                },
                PlannedEvent::warning(REASON, message),
            );
        }
    }

    fn forget(&self, kind: Kind, meta: &ObjectMeta) {
        if let Some(key) = key_of(meta) {
            self.tap.take(kind, &key);
            self.reported
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&(kind, key));
        }
    }
}

fn key_of(meta: &ObjectMeta) -> Option<ObjectKey> {
    Some(ObjectKey::new(
        meta.namespace.as_ref()?,
        meta.name.as_ref()?,
    ))
}

/// The two stored kinds the guard watches, and what it does with each.
trait GuardedKind: Send + Sync + 'static {
    /// Looks at the object's latest version for another manager's writes.
    fn check(&self, guard: &MigrationGuard);
    /// Forgets the deleted object.
    fn forget(&self, guard: &MigrationGuard);
}

impl GuardedKind for StoredSlice {
    fn check(&self, guard: &MigrationGuard) {
        guard.check_slice(self.without_endpoints());
    }
    fn forget(&self, guard: &MigrationGuard) {
        guard.forget(Kind::EndpointSlice, &self.without_endpoints().metadata);
    }
}

impl GuardedKind for StoredEndpoints {
    fn check(&self, guard: &MigrationGuard) {
        guard.check_endpoints(self.without_subsets());
    }
    fn forget(&self, guard: &MigrationGuard) {
        guard.forget(Kind::Endpoints, &self.without_subsets().metadata);
    }
}

impl<T: GuardedKind> Handler<T> for MigrationGuard {
    fn on_add(&self, new: &Arc<T>) {
        new.check(self);
    }
    fn on_update(&self, _old: &Arc<T>, new: &Arc<T>) {
        new.check(self);
    }
    fn on_delete(&self, old: &Arc<T>) {
        old.forget(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time};
    use serde_json::json;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    fn entry(manager: &str, second: i64, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Update".into()),
            api_version: Some("discovery.k8s.io/v1".into()),
            time: Some(Time(at(second))),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            subresource: None,
        }
    }

    fn meta(entries: Vec<ManagedFieldsEntry>) -> ObjectMeta {
        ObjectMeta {
            name: Some("web-abc".into()),
            namespace: Some("default".into()),
            managed_fields: Some(entries),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn another_managers_entry_on_controller_fields_after_the_start_is_a_foreign_write() {
        let meta = meta(vec![
            entry("kube-endpoints", 200, json!({"f:endpoints": {}})),
            entry("kube-controller-manager", 150, json!({"f:endpoints": {}})),
        ]);
        let writes = foreign_writes(&meta, at(100), slice_fields_owned);
        assert_eq!(
            writes,
            vec![ForeignWrite {
                manager: "kube-controller-manager".into(),
                time: at(150)
            }]
        );
    }

    #[test]
    fn entries_from_before_the_start_are_history_not_foreign_writes() {
        let meta = meta(vec![entry(
            "kube-controller-manager",
            99,
            json!({"f:ports": {}}),
        )]);
        assert!(foreign_writes(&meta, at(100), slice_fields_owned).is_empty());
    }

    #[test]
    fn an_entry_owning_only_a_users_label_is_not_a_foreign_write() {
        let label = json!({"f:metadata": {"f:labels": {"f:team": {}}}});
        let meta = meta(vec![entry("kubectl-label", 150, label)]);
        assert!(foreign_writes(&meta, at(100), slice_fields_owned).is_empty());
        assert!(foreign_writes(&meta, at(100), endpoints_fields_owned).is_empty());
    }

    #[test]
    fn the_managed_by_label_and_subsets_are_controller_fields() {
        let managed_by = json!({"f:metadata": {"f:labels": {
            "f:endpointslice.kubernetes.io/managed-by": {}}}});
        assert!(slice_fields_owned(&managed_by));
        assert!(endpoints_fields_owned(&json!({"f:subsets": {}})));
        assert!(endpoints_fields_owned(&json!({"f:metadata": {"f:labels": {
            "f:endpoints.kubernetes.io/managed-by": {}}}})));
    }

    /// A slice whose endpoints kube-controller-manager last wrote at `second`.
    fn slice_written_by_kube_controller_manager_at(second: i64) -> EndpointSlice {
        EndpointSlice {
            metadata: meta(vec![entry(
                "kube-controller-manager",
                second,
                json!({"f:endpoints": {}}),
            )]),
            ..EndpointSlice::default()
        }
    }

    #[test]
    fn the_tap_keeps_an_object_only_while_it_has_foreign_writes() {
        let tap = ManagedFieldsTap::new(at(100));
        tap.enabled.store(true, Ordering::Relaxed);
        let key = ObjectKey::new("default", "web-abc");
        let mut slice = slice_written_by_kube_controller_manager_at(150);
        tap.note(&slice);
        assert_eq!(tap.take(Kind::EndpointSlice, &key).len(), 1);
        tap.note(&slice);
        slice.metadata.managed_fields = None;
        tap.note(&slice);
        assert!(tap.take(Kind::EndpointSlice, &key).is_empty());
    }

    #[test]
    fn a_tap_no_guard_took_notes_nothing() {
        let tap = ManagedFieldsTap::new(at(100));
        let slice = slice_written_by_kube_controller_manager_at(150);
        tap.note(&slice);
        assert!(tap.seen.lock().unwrap().is_empty());
    }
}
