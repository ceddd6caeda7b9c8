//! Garbage collection by `ownerReferences`, done at once inside the delete path.
//!
//! kube-controller-manager's garbage collector deletes dependents whose owners are all gone
//! (background propagation), holds an owner deleted with `propagationPolicy: Foreground` under
//! the `foregroundDeletion` finalizer until its dependents with `blockOwnerDeletion` are gone,
//! and strips the references to an owner deleted with `Orphan`. Without it, `kubectl delete svc`
//! would leave the Service's EndpointSlices behind for good. The embedded server has no
//! controller loop, so the same decisions run synchronously after each removal, and every
//! object they change or remove goes through the store, which records the watch events.
//!
//! An owner of a kind the server does not serve (a ReplicaSet owning a loaded pod) cannot be
//! looked up, so it counts as present: the server never deletes an object because of an owner
//! it cannot see.

use crate::admission::is_terminating;
use crate::resources::{self, Resource};
use crate::rest::{delete, update, DeleteOptions};
use crate::state::Cluster;
use crate::store::{meta_list, meta_str, remove_meta, set_meta};
use serde_json::Value;
use std::sync::Arc;

/// The finalizer that holds an owner deleted in the foreground.
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// How a delete treats the objects the deleted one owns (`DeleteOptions.propagationPolicy`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// The owner goes at once; its dependents are deleted after it.
    #[default]
    Background,
    /// The owner stays terminating until its blocking dependents are gone.
    Foreground,
    /// The dependents lose their reference to the owner and stay.
    Orphan,
}

impl Propagation {
    /// Parses `propagationPolicy`; `None` for an unknown value.
    pub fn parse(policy: &str) -> Option<Self> {
        match policy {
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            "Orphan" => Some(Self::Orphan),
            _ => None,
        }
    }
}

/// A stored object, addressed for a write.
struct Dependent {
    resource: &'static Resource,
    object: Arc<Value>,
}

impl Dependent {
    fn namespace(&self) -> &str {
        meta_str(&self.object, "namespace").unwrap_or_default()
    }

    fn name(&self) -> &str {
        meta_str(&self.object, "name").unwrap_or_default()
    }
}

fn owner_references(object: &Value) -> &[Value] {
    meta_list(object, "ownerReferences")
}

/// Replaces the owner references; an empty list is dropped, as the API server serialises it.
fn set_owner_references(object: &mut Value, references: Vec<Value>) {
    if references.is_empty() {
        remove_meta(object, "ownerReferences");
    } else {
        set_meta(object, "ownerReferences", Value::Array(references));
    }
}

fn reference_uid(reference: &Value) -> Option<&str> {
    reference.get("uid").and_then(Value::as_str)
}

fn finalizers(object: &Value) -> &[Value] {
    meta_list(object, "finalizers")
}

fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    finalizers(object).iter().any(|f| f == finalizer)
}

/// Adds the foreground finalizer to an object about to be marked for deletion.
pub(crate) fn add_foreground_finalizer(object: &mut Value) {
    if has_finalizer(object, FOREGROUND_FINALIZER) {
        return;
    }
    let mut list = finalizers(object).to_vec();
    list.push(Value::String(FOREGROUND_FINALIZER.to_owned()));
    set_meta(object, "finalizers", Value::Array(list));
}

/// The stored objects whose `ownerReferences` name `owner`'s uid.
fn dependents_of(cluster: &Cluster, owner: &Value) -> Vec<Dependent> {
    let Some(uid) = meta_str(owner, "uid") else {
        return Vec::new();
    };
    cluster
        .store
        .dependents_of(uid)
        .into_iter()
        .map(|(resource, object)| Dependent {
            resource,
            object: object.clone(),
        })
        .collect()
}

/// What an owner reference of a dependent points at now.
#[derive(Debug, PartialEq, Eq)]
enum OwnerState {
    /// Present and not being deleted in the foreground (or of a kind the server cannot see).
    Solid,
    /// Gone, or replaced by an object of the same name with another uid.
    Dangling,
    /// Being deleted in the foreground, waiting for its dependents.
    Waiting,
}

fn owner_state(cluster: &Cluster, dependent_namespace: &str, reference: &Value) -> OwnerState {
    let text = |field: &str| reference.get(field).and_then(Value::as_str);
    let (Some(api_version), Some(kind), Some(name)) =
        (text("apiVersion"), text("kind"), text("name"))
    else {
        return OwnerState::Solid;
    };
    let Some(resource) = resources::by_kind(api_version, kind) else {
        return OwnerState::Solid;
    };
    let namespace = if resource.namespaced {
        dependent_namespace
    } else {
        ""
    };
    match cluster.store.get(resource, namespace, name) {
        Some(owner) if meta_str(owner, "uid") == reference_uid(reference) => {
            if is_terminating(owner) && has_finalizer(owner, FOREGROUND_FINALIZER) {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            }
        }
        _ => OwnerState::Dangling,
    }
}

/// Decides the fate of one dependent after one of its owners went away or started a
/// foreground deletion, as the garbage collector's attempt to delete an item does: kept with
/// its references to missing or waiting owners removed while another owner is present,
/// deleted otherwise (in the foreground when an owner waits for it and it owns objects too).
fn attempt_to_delete(cluster: &mut Cluster, dependent: &Dependent) {
    // Re-read: an earlier decision in the same pass may have changed or removed it.
    let Some(object) = cluster
        .store
        .get(dependent.resource, dependent.namespace(), dependent.name())
        .cloned()
    else {
        return;
    };
    if meta_str(&object, "uid") != meta_str(&dependent.object, "uid") {
        return;
    }
    if is_terminating(&object) && !has_finalizer(&object, FOREGROUND_FINALIZER) {
        // Already on its way out; its own finalizers decide when it goes.
        return;
    }
    let namespace = dependent.namespace();
    let states: Vec<OwnerState> = owner_references(&object)
        .iter()
        .map(|r| owner_state(cluster, namespace, r))
        .collect();
    if states.contains(&OwnerState::Solid) {
        if states.iter().all(|s| *s == OwnerState::Solid) {
            return;
        }
        let kept: Vec<Value> = owner_references(&object)
            .iter()
            .zip(&states)
            .filter(|(_, state)| **state == OwnerState::Solid)
            .map(|(r, _)| r.clone())
            .collect();
        let mut changed = Arc::unwrap_or_clone(object);
        set_owner_references(&mut changed, kept);
        cluster.store.update(dependent.resource, changed);
        return;
    }
    let propagation =
        if states.contains(&OwnerState::Waiting) && !dependents_of(cluster, &object).is_empty() {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
    let options = DeleteOptions {
        propagation,
        ..DeleteOptions::default()
    };
    if let Err(e) = delete(
        cluster,
        dependent.resource,
        namespace,
        dependent.name(),
        &options,
    ) {
        if e.code() != 404 {
            tracing::warn!(
                resource = dependent.resource.plural,
                namespace,
                name = dependent.name(),
                error = %e,
                "garbage collecting a dependent failed"
            );
        }
    }
}

/// After `removed` left the store: collects its dependents, and releases any owner of it that
/// was waiting in the foreground for it to go.
pub(crate) fn after_removal(cluster: &mut Cluster, removed: &Value) {
    for dependent in dependents_of(cluster, removed) {
        attempt_to_delete(cluster, &dependent);
    }
    let namespace = meta_str(removed, "namespace").unwrap_or_default();
    for reference in owner_references(removed) {
        let blocked = reference
            .get("blockOwnerDeletion")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if blocked && owner_state(cluster, namespace, reference) == OwnerState::Waiting {
            let text = |field: &str| reference.get(field).and_then(Value::as_str);
            if let Some(resource) = text("apiVersion")
                .zip(text("kind"))
                .and_then(|(v, k)| resources::by_kind(v, k))
            {
                let ns = if resource.namespaced { namespace } else { "" };
                release_if_unblocked(cluster, resource, ns, text("name").unwrap_or_default());
            }
        }
    }
}

/// After `owner` was marked for deletion in the foreground: deletes its dependents, then lets
/// it go if none of them blocks it.
pub(crate) fn after_foreground_mark(
    cluster: &mut Cluster,
    resource: &'static Resource,
    owner: &Value,
) {
    for dependent in dependents_of(cluster, owner) {
        attempt_to_delete(cluster, &dependent);
    }
    let namespace = meta_str(owner, "namespace").unwrap_or_default();
    let name = meta_str(owner, "name").unwrap_or_default();
    release_if_unblocked(cluster, resource, namespace, name);
}

/// Removes the foreground finalizer of a waiting owner once no dependent with
/// `blockOwnerDeletion` refers to it; without other finalizers the owner then goes.
fn release_if_unblocked(
    cluster: &mut Cluster,
    resource: &'static Resource,
    namespace: &str,
    name: &str,
) {
    let Some(owner) = cluster.store.get(resource, namespace, name).cloned() else {
        return;
    };
    if !has_finalizer(&owner, FOREGROUND_FINALIZER) {
        return;
    }
    let uid = meta_str(&owner, "uid");
    let blocked = dependents_of(cluster, &owner).iter().any(|d| {
        owner_references(&d.object).iter().any(|r| {
            reference_uid(r) == uid
                && r.get("blockOwnerDeletion")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
        })
    });
    if blocked {
        return;
    }
    let mut released = Arc::unwrap_or_clone(owner);
    let rest: Vec<Value> = finalizers(&released)
        .iter()
        .filter(|f| *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    set_meta(&mut released, "finalizers", Value::Array(rest));
    if let Err(e) = update(cluster, resource, namespace, name, released, false, None) {
        tracing::warn!(resource = resource.plural, namespace, name, error = %e,
            "releasing an owner deleted in the foreground failed");
    }
}

/// Before `owner` is deleted with `Orphan`: removes the references to it from its dependents,
/// which then outlive it.
pub(crate) fn orphan_dependents(cluster: &mut Cluster, owner: &Value) {
    let uid = meta_str(owner, "uid");
    for dependent in dependents_of(cluster, owner) {
        let kept: Vec<Value> = owner_references(&dependent.object)
            .iter()
            .filter(|r| reference_uid(r) != uid)
            .cloned()
            .collect();
        let mut changed = Arc::unwrap_or_clone(dependent.object);
        set_owner_references(&mut changed, kept);
        cluster.store.update(dependent.resource, changed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn propagation_policies_parse_by_their_api_names() {
        assert_eq!(
            Propagation::parse("Foreground"),
            Some(Propagation::Foreground)
        );
        assert_eq!(Propagation::parse("Orphan"), Some(Propagation::Orphan));
        assert_eq!(
            Propagation::parse("Background"),
            Some(Propagation::Background)
        );
        assert_eq!(Propagation::parse("background"), None);
    }
}
