//! Loading a cluster state from manifests, the way the conformance corpus was recorded.
//!
//! The corpus was loaded into a real kube-apiserver in three passes: every object created in
//! order; then the status of nodes and pods written through the status subresource (create
//! ignores a pod's status, and there is no kubelet to write it); then objects that carry a
//! `deletionTimestamp` deleted after being created with a finalizer, so they stay terminating.
//! This module does the same against the embedded store. The server assigns new uids, so
//! references between the loaded objects are rewritten to them (see `uids`).

mod uids;

use crate::resources::{self, Resource};
use crate::rest::{create, delete, update, DeleteOptions};
use crate::state::{Cluster, Shared};
use crate::status::ApiError;
use crate::store::{meta_list, meta_str, remove_meta, set_meta};
use serde_json::{json, Value};
use uids::{remap_references, UidMap};

/// The finalizer that keeps loaded objects with a `deletionTimestamp` terminating.
pub const HOLD_FINALIZER: &str = "kube-endpoints.dev/hold-terminating";

/// Why a set of objects could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// An object has no `apiVersion` or `kind`.
    #[error("object {index} has no apiVersion or kind")]
    MissingType {
        /// Position in the input.
        index: usize,
    },
    /// An object is of a kind the server does not serve.
    #[error("object {index} is a {api_version} {kind}, which this server does not serve")]
    UnknownKind {
        /// Position in the input.
        index: usize,
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
    },
    /// The server refused an object.
    #[error("loading {kind} {namespace}/{name} failed")]
    Rejected {
        /// The object's kind.
        kind: String,
        /// The object's namespace (empty for cluster-scoped objects).
        namespace: String,
        /// The object's name.
        name: String,
        /// The server's answer.
        #[source]
        source: Box<ApiError>,
    },
}

struct Loaded {
    resource: &'static Resource,
    namespace: String,
    name: String,
    status: Option<Value>,
    delete: Option<DeleteOptions>,
    /// The uid the input gave the object, if any.
    input_uid: Option<String>,
}

impl Loaded {
    fn rejected(&self, source: ApiError) -> LoadError {
        LoadError::Rejected {
            kind: self.resource.kind.to_owned(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source: Box::new(source),
        }
    }
}

fn create_one(
    cluster: &mut Cluster,
    index: usize,
    mut object: Value,
    uids: &mut UidMap,
) -> Result<Loaded, LoadError> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        return Err(LoadError::MissingType { index });
    }
    let resource = resources::by_kind(api_version, kind).ok_or_else(|| LoadError::UnknownKind {
        index,
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    let namespace = if resource.namespaced {
        meta_str(&object, "namespace")
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
            .to_owned()
    } else {
        String::new()
    };
    let status = if resource.status && !std::ptr::eq(resource, resources::namespaces()) {
        object.as_object_mut().and_then(|o| o.remove("status"))
    } else {
        None
    };
    let delete = remove_meta(&mut object, "deletionTimestamp")
        .filter(|t| !t.is_null())
        .map(|_| {
            let grace =
                remove_meta(&mut object, "deletionGracePeriodSeconds").and_then(|g| g.as_i64());
            let mut finalizers = meta_list(&object, "finalizers").to_vec();
            if !finalizers.iter().any(|f| f == HOLD_FINALIZER) {
                finalizers.push(json!(HOLD_FINALIZER));
            }
            set_meta(&mut object, "finalizers", Value::Array(finalizers));
            DeleteOptions {
                grace_period_seconds: grace,
                ..DeleteOptions::default()
            }
        });
    let input_uid = remove_meta(&mut object, "uid")
        .and_then(|uid| uid.as_str().map(str::to_owned))
        .filter(|uid| !uid.is_empty());
    // References to objects loaded earlier are rewritten now; later ones after the last create.
    remap_references(&mut object, uids);
    for server_owned in [
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
    ] {
        remove_meta(&mut object, server_owned);
    }
    let mut loaded = Loaded {
        resource,
        namespace: namespace.clone(),
        name: meta_str(&object, "name").unwrap_or_default().to_owned(),
        status,
        delete,
        input_uid,
    };
    // The built-in namespaces (default, kube-system, ...) exist from the start; a manifest
    // that lists them, as a dump of a real cluster does, loads fine.
    let existing = std::ptr::eq(resource, resources::namespaces())
        .then(|| {
            cluster
                .store
                .get(resource, &namespace, &loaded.name)
                .cloned()
        })
        .flatten();
    let stored = match existing {
        Some(existing) => existing,
        None => {
            let ns = resource.namespaced.then_some(namespace.as_str());
            let created =
                create(cluster, resource, ns, object, None).map_err(|e| loaded.rejected(e))?;
            loaded.name = meta_str(&created, "name").unwrap_or_default().to_owned();
            created
        }
    };
    if let (Some(old), Some(new)) = (&loaded.input_uid, meta_str(&stored, "uid")) {
        uids.entry(old.clone()).or_insert_with(|| new.to_owned());
    }
    Ok(loaded)
}

/// Rewrites the references that point at objects created after the one holding them. The
/// stored object is replaced as is, without admission: the rewrite is part of loading, so it
/// must not bump a generation the way a change by a client would.
fn remap_forward_references(cluster: &mut Cluster, loaded: &[Loaded], uids: &UidMap) {
    for item in loaded {
        let Some(stored) = cluster
            .store
            .get(item.resource, &item.namespace, &item.name)
        else {
            continue;
        };
        // Only owner references and the targetRefs of Endpoints, slices and Events can point
        // at loaded objects; most objects (pods, by the thousand) have neither.
        let may_refer = stored.pointer("/metadata/ownerReferences").is_some()
            || matches!(
                item.resource.plural,
                "endpoints" | "endpointslices" | "events"
            );
        if !may_refer {
            continue;
        }
        let mut object = (**stored).clone();
        if remap_references(&mut object, uids) {
            cluster.store.update(item.resource, object);
        }
    }
}

/// What a lenient load did.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// The objects as finally stored, in input order (objects a delete removed at once, and
    /// refused ones, are left out). Only `apply_objects` fills it: a lenient load of a large
    /// cluster state should not hold a second copy of every object.
    pub stored: Vec<Value>,
    /// Why each refused object was refused, in input order.
    pub refused: Vec<LoadError>,
}

/// Loads `objects` in three passes (create, status, delete) and returns them as finally
/// stored, in input order; objects that a delete removed at once are left out. Stops at the
/// first refusal.
pub(crate) fn apply_objects(shared: &Shared, objects: Vec<Value>) -> Result<Vec<Value>, LoadError> {
    let report = load(shared, objects, false)?;
    Ok(report.stored)
}

/// Like [`apply_objects`], but an object the server refuses (or whose status or deletion it
/// refuses) is left out and reported, and loading goes on with the rest.
pub(crate) fn load_objects(shared: &Shared, objects: Vec<Value>) -> LoadReport {
    // With `lenient` set, `load` reports refusals instead of returning them.
    load(shared, objects, true).unwrap_or_else(|refused| LoadReport {
        stored: Vec::new(),
        refused: vec![refused],
    })
}

fn load(shared: &Shared, objects: Vec<Value>, lenient: bool) -> Result<LoadReport, LoadError> {
    shared.write(|cluster| {
        let mut report = LoadReport::default();
        let mut loaded = Vec::with_capacity(objects.len());
        let keep = |result: Result<(), LoadError>, report: &mut LoadReport| match result {
            Ok(()) => Ok(true),
            Err(e) if lenient => {
                report.refused.push(e);
                Ok(false)
            }
            Err(e) => Err(e),
        };
        let mut uids = UidMap::new();
        for (index, object) in objects.into_iter().enumerate() {
            match create_one(cluster, index, object, &mut uids) {
                Ok(item) => loaded.push(item),
                Err(e) => {
                    keep(Err(e), &mut report)?;
                }
            }
        }
        remap_forward_references(cluster, &loaded, &uids);
        let mut refused = vec![false; loaded.len()];
        for (i, item) in loaded.iter().enumerate() {
            let Some(status) = &item.status else { continue };
            let body = json!({ "metadata": { "name": item.name }, "status": status });
            let result = update(
                cluster,
                item.resource,
                &item.namespace,
                &item.name,
                body,
                true,
                None,
            )
            .map(drop)
            .map_err(|e| item.rejected(e));
            refused[i] = !keep(result, &mut report)?;
            if refused[i] {
                // An object whose status the server refuses would not exist on a cluster
                // either (the status is part of what the input claims): take it out again.
                let options = DeleteOptions {
                    grace_period_seconds: Some(0),
                    ..DeleteOptions::default()
                };
                if let Err(e) = delete(
                    cluster,
                    item.resource,
                    &item.namespace,
                    &item.name,
                    &options,
                ) {
                    report.refused.push(item.rejected(e));
                }
            }
        }
        for (i, item) in loaded.iter().enumerate() {
            let Some(options) = &item.delete else {
                continue;
            };
            if refused[i] {
                continue;
            }
            let result = delete(cluster, item.resource, &item.namespace, &item.name, options)
                .map(drop)
                .map_err(|e| item.rejected(e));
            refused[i] = !keep(result, &mut report)?;
        }
        if lenient {
            return Ok(report);
        }
        report.stored = loaded
            .iter()
            .filter_map(|item| {
                cluster
                    .store
                    .get(item.resource, &item.namespace, &item.name)
            })
            .map(|object| (**object).clone())
            .collect();
        Ok(report)
    })
}
