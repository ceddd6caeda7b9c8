//! Create, update and delete, with finalizers and the namespace lifecycle.
//!
//! The operations take the locked cluster so that the manifest loader and the PATCH handler
//! reuse exactly the rules the REST verbs follow. Deletion follows kube-apiserver: an object
//! with finalizers only gets a `deletionTimestamp`, and goes away when an update removes the
//! last finalizer; deleting a namespace marks it Terminating, deletes what it holds, and
//! removes it once it is empty. Unlike a real cluster, a pod without finalizers is removed at
//! once (there is no kubelet to confirm its graceful termination).

use super::read::{list_response, selected};
use super::{resource_response, Params, Target};
use crate::admission::{
    check_namespace, has_finalizers, is_terminating, prepare_create, prepare_update,
    PROTECTED_NAMESPACES,
};
use crate::gc::{self, Propagation};
use crate::managed_fields::Writer;
use crate::resources::{self, Resource};
use crate::state::{Cluster, Shared};
use crate::status::ApiError;
use crate::store::{meta_str, set_meta};
use crate::validation;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::Arc;

/// Creates an object; `namespace` is required for namespaced resources. `writer` is recorded
/// in the object's managedFields when one is given (requests; the manifest loader and the
/// garbage collector write without).
pub(crate) fn create(
    cluster: &mut Cluster,
    resource: &'static Resource,
    namespace: Option<&str>,
    body: Value,
    writer: Option<&Writer>,
) -> Result<Arc<Value>, ApiError> {
    let body_name = meta_str(&body, "name").unwrap_or_default().to_owned();
    let ns_key = match (resource.namespaced, namespace) {
        (true, Some(ns)) => {
            check_namespace(&cluster.store, resource, ns, &body_name)?;
            ns
        }
        (true, None) => return Err(ApiError::method_not_allowed()),
        (false, _) => "",
    };
    let Cluster {
        store,
        stamps,
        ips,
        version,
    } = cluster;
    let mut object = prepare_create(resource, namespace, body, stamps, ips, |name| {
        store.get(resource, ns_key, name).is_some()
    })?;
    let name = meta_str(&object, "name").unwrap_or_default();
    if store.get(resource, ns_key, name).is_some() {
        return Err(ApiError::already_exists(resource, name));
    }
    validation::validate(resource, &object, None, version)?;
    if let Some(writer) = writer {
        writer.record(
            None,
            &mut object,
            &resource.api_version(),
            stamps.timestamp(0),
        );
    }
    Ok(store.create(resource, object))
}

/// Replaces an object (or its status), recording `writer` in the object's managedFields when
/// one is given. PUT creates endpoints, events and leases that do not exist, as the real
/// server does.
pub(crate) fn update(
    cluster: &mut Cluster,
    resource: &'static Resource,
    namespace: &str,
    name: &str,
    body: Value,
    status_only: bool,
    writer: Option<&Writer>,
) -> Result<(Arc<Value>, Written), ApiError> {
    let Some(old) = cluster.store.get(resource, namespace, name).cloned() else {
        if resource.create_on_update && !status_only {
            if meta_str(&body, "name").is_some_and(|n| n != name) {
                return Err(ApiError::bad_request(format!(
                    "the name of the object does not match the name on the URL ({name})"
                )));
            }
            let mut body = body;
            if body.is_object() {
                set_meta(&mut body, "name", json!(name));
            }
            let ns = resource.namespaced.then_some(namespace);
            return create(cluster, resource, ns, body, writer).map(|o| (o, Written::Created));
        }
        return Err(ApiError::not_found(resource, name));
    };
    let wanted_rv = meta_str(&body, "resourceVersion").filter(|rv| !rv.is_empty());
    if wanted_rv.is_some_and(|rv| Some(rv) != meta_str(&old, "resourceVersion")) {
        return Err(ApiError::stale(resource, name));
    }
    let mut new = prepare_update(resource, &old, body, status_only, &mut cluster.ips)?;
    validation::validate(resource, &new, Some(&old), &cluster.version)?;
    if let Some(writer) = writer {
        let now = cluster.stamps.timestamp(0);
        writer.record(Some(&old), &mut new, &resource.api_version(), now);
    }
    if is_terminating(&new) && !has_finalizers(&new) {
        // The last finalizer of a deleting object is gone: the deletion completes now.
        return Ok((
            remove(cluster, resource, namespace, name)?,
            Written::Removed,
        ));
    }
    Ok((cluster.store.update(resource, new), Written::Changed))
}

/// What a write did to its object, which tells the status code of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    Created,
    Changed,
    Removed,
    /// Marked for deletion: finalizers (or a namespace's content) hold it back.
    Terminating,
}

impl Written {
    /// kube-apiserver answers 201 for a created object and 202 while finalizers hold a deleted
    /// one back.
    pub(crate) fn code(self) -> StatusCode {
        match self {
            Self::Created => StatusCode::CREATED,
            Self::Changed | Self::Removed => StatusCode::OK,
            Self::Terminating => StatusCode::ACCEPTED,
        }
    }
}

/// The parts of `DeleteOptions` the server honours.
#[derive(Debug, Default, Clone)]
pub(crate) struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub grace_period_seconds: Option<i64>,
    pub propagation: Propagation,
}

impl DeleteOptions {
    fn from_request(params: &Params, body: &[u8]) -> Result<Self, ApiError> {
        let mut options = Self::default();
        if !body.iter().all(u8::is_ascii_whitespace) {
            // client-go sends its DeleteOptions as protobuf when it talks protobuf.
            let value: Value = if crate::protobuf::payload(body).is_some() {
                crate::protobuf::decode_delete_options(body)?
            } else {
                serde_json::from_slice(body).map_err(|e| {
                    ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}"))
                })?
            };
            let pre = value.get("preconditions");
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
            options.uid = text(pre.and_then(|p| p.get("uid")));
            options.resource_version = text(pre.and_then(|p| p.get("resourceVersion")));
            options.grace_period_seconds = value.get("gracePeriodSeconds").and_then(Value::as_i64);
            if value.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
                options.propagation = Propagation::Orphan;
            }
            if let Some(policy) = value.get("propagationPolicy").and_then(Value::as_str) {
                options.propagation = parse_propagation(policy)?;
            }
        }
        if let Some(policy) = params.get("propagationPolicy") {
            options.propagation = parse_propagation(policy)?;
        }
        if let Some(grace) = params.get("gracePeriodSeconds") {
            let grace = grace.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid gracePeriodSeconds {grace:?}"))
            })?;
            options.grace_period_seconds = Some(grace);
        }
        Ok(options)
    }
}

fn parse_propagation(policy: &str) -> Result<Propagation, ApiError> {
    Propagation::parse(policy).ok_or_else(|| {
        ApiError::bad_request(format!(
            "unsupported propagationPolicy {policy:?}, only Background, Foreground or Orphan"
        ))
    })
}

/// How long a pod on a node is given to terminate, which sets its `deletionTimestamp`.
fn grace_period(resource: &Resource, object: &Value, options: &DeleteOptions) -> i64 {
    let is_pod = resource.group.is_empty() && resource.kind == "Pod";
    let scheduled = object
        .get("spec")
        .and_then(|s| s.get("nodeName"))
        .is_some_and(|n| n != "");
    if !is_pod || !scheduled {
        return 0;
    }
    options.grace_period_seconds.unwrap_or_else(|| {
        object
            .get("spec")
            .and_then(|s| s.get("terminationGracePeriodSeconds"))
            .and_then(Value::as_i64)
            .unwrap_or(30)
    })
}

/// Deletes an object. Returns the object as last stored and whether it is gone or terminating
/// (objects with finalizers, and namespaces with finalized content, stay until they are
/// released).
pub(crate) fn delete(
    cluster: &mut Cluster,
    resource: &'static Resource,
    namespace: &str,
    name: &str,
    options: &DeleteOptions,
) -> Result<(Arc<Value>, Written), ApiError> {
    let old = cluster
        .store
        .get(resource, namespace, name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(resource, name))?;
    if let Some(uid) = &options.uid {
        if Some(uid.as_str()) != meta_str(&old, "uid") {
            let why = format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(&old, "uid").unwrap_or_default()
            );
            return Err(ApiError::conflict(resource, name, &why));
        }
    }
    if let Some(rv) = &options.resource_version {
        if Some(rv.as_str()) != meta_str(&old, "resourceVersion") {
            let why = format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", meta_str(&old, "resourceVersion").unwrap_or_default());
            return Err(ApiError::conflict(resource, name, &why));
        }
    }
    if std::ptr::eq(resource, resources::namespaces()) {
        return delete_namespace(cluster, name, old);
    }
    let mut old = old;
    match options.propagation {
        Propagation::Orphan => gc::orphan_dependents(cluster, &old),
        Propagation::Foreground if !is_terminating(&old) => {
            gc::add_foreground_finalizer(Arc::make_mut(&mut old));
        }
        Propagation::Foreground | Propagation::Background => {}
    }
    if !has_finalizers(&old) {
        return Ok((
            remove(cluster, resource, namespace, name)?,
            Written::Removed,
        ));
    }
    if is_terminating(&old) {
        return Ok((old, Written::Terminating));
    }
    let mut marked = Arc::unwrap_or_clone(old);
    let grace = grace_period(resource, &marked, options);
    set_meta(
        &mut marked,
        "deletionTimestamp",
        cluster.stamps.timestamp(grace),
    );
    set_meta(&mut marked, "deletionGracePeriodSeconds", json!(grace));
    if let Some(generation) = marked
        .get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
    {
        set_meta(&mut marked, "generation", json!(generation + 1));
    }
    let marked = cluster.store.update(resource, marked);
    if options.propagation == Propagation::Foreground {
        gc::after_foreground_mark(cluster, resource, &marked);
        return Ok(match cluster.store.get(resource, namespace, name) {
            Some(current) => (current.clone(), Written::Terminating),
            None => (marked, Written::Removed),
        });
    }
    Ok((marked, Written::Terminating))
}

fn delete_namespace(
    cluster: &mut Cluster,
    name: &str,
    old: Arc<Value>,
) -> Result<(Arc<Value>, Written), ApiError> {
    let namespaces = resources::namespaces();
    if PROTECTED_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(
            namespaces,
            name,
            "this namespace may not be deleted",
        ));
    }
    let mut last = old.clone();
    if !is_terminating(&old) {
        let mut marked = Arc::unwrap_or_clone(old);
        set_meta(
            &mut marked,
            "deletionTimestamp",
            cluster.stamps.timestamp(0),
        );
        set_meta(&mut marked, "deletionGracePeriodSeconds", json!(0));
        marked["status"] = json!({"phase": "Terminating"});
        last = cluster.store.update(namespaces, marked);
    }
    // The namespace controller's work, done at once: delete everything inside.
    for (resource, object) in cluster.store.contents_of(name) {
        match delete(cluster, resource, name, &object, &DeleteOptions::default()) {
            // The garbage collector may have taken it with its owner already.
            Ok(_) => {}
            Err(e) if e.code() == 404 => {}
            Err(e) => {
                tracing::warn!(namespace = name, object, error = %e, "deleting namespace content failed")
            }
        }
    }
    finish_namespace(cluster, name);
    match cluster.store.get(namespaces, "", name) {
        Some(current) => Ok((current.clone(), Written::Terminating)),
        None => Ok((last, Written::Removed)),
    }
}

/// Removes a terminating namespace once nothing is left in it.
fn finish_namespace(cluster: &mut Cluster, namespace: &str) {
    let namespaces = resources::namespaces();
    let terminating = cluster
        .store
        .get(namespaces, "", namespace)
        .is_some_and(|n| is_terminating(n));
    if terminating && cluster.store.contents_of(namespace).is_empty() {
        cluster.store.remove(namespaces, "", namespace);
    }
}

/// Removes an object whose deletion completes, and does what follows its removal.
fn remove(
    cluster: &mut Cluster,
    resource: &'static Resource,
    namespace: &str,
    name: &str,
) -> Result<Arc<Value>, ApiError> {
    let removed = cluster
        .store
        .remove(resource, namespace, name)
        .ok_or_else(|| ApiError::not_found(resource, name))?;
    after_removal(cluster, resource, &removed);
    Ok(removed)
}

/// After a deletion completed: the garbage collector sees to the removed object's dependents,
/// and a namespace waiting for its content may now be empty.
fn after_removal(cluster: &mut Cluster, resource: &Resource, removed: &Value) {
    gc::after_removal(cluster, removed);
    if resource.namespaced {
        finish_namespace(cluster, meta_str(removed, "namespace").unwrap_or_default());
    }
}

/// POST of `object`, the request's body.
pub(crate) fn create_request(
    shared: &Shared,
    target: &Target,
    object: Value,
) -> Result<Response, ApiError> {
    let writer = Writer::update(&target.manager, false);
    let created = shared.mutate(target.dry_run, |c| {
        create(
            c,
            target.resource,
            target.namespace.as_deref(),
            object,
            Some(&writer),
        )
    })?;
    Ok(resource_response(target, StatusCode::CREATED, &created))
}

/// PUT of `object`, the request's body.
pub(crate) fn update_request(
    shared: &Shared,
    target: &Target,
    object: Value,
) -> Result<Response, ApiError> {
    let name = target.name.as_deref().unwrap_or_default();
    validation::check_put_name(&object, name)?;
    let writer = Writer::update(&target.manager, target.is_status());
    let (stored, written) = shared.mutate(target.dry_run, |c| {
        update(
            c,
            target.resource,
            target.store_namespace(),
            name,
            object,
            target.is_status(),
            Some(&writer),
        )
    })?;
    Ok(resource_response(target, written.code(), &stored))
}

/// DELETE of the named object, or of the selected objects of a collection path
/// (deletecollection).
pub(crate) fn delete_request(
    shared: &Shared,
    target: &Target,
    params: &Params,
    body: &[u8],
) -> Result<Response, ApiError> {
    let options = DeleteOptions::from_request(params, body)?;
    let Some(name) = target.name.as_deref() else {
        return delete_collection(shared, target, params, &options);
    };
    let (object, written) = shared.mutate(target.dry_run, |c| {
        delete(c, target.resource, target.store_namespace(), name, &options)
    })?;
    Ok(resource_response(target, written.code(), &object))
}

fn delete_collection(
    shared: &Shared,
    target: &Target,
    params: &Params,
    options: &DeleteOptions,
) -> Result<Response, ApiError> {
    let (objects, _) = selected(shared, target, params)?;
    let (deleted, rv) = shared.mutate(target.dry_run, |c| {
        let mut deleted = Vec::new();
        for object in &objects {
            let ns = meta_str(object, "namespace").unwrap_or_default();
            let name = meta_str(object, "name").unwrap_or_default();
            match delete(c, target.resource, ns, name, options) {
                Ok((object, _)) => deleted.push(object),
                Err(e) if e.code() == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok((deleted, c.store.resource_version()))
    })?;
    Ok(list_response(target, &deleted, rv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    fn cluster() -> Cluster {
        let mut c = Cluster {
            store: crate::store::Store::new(1000),
            stamps: crate::random::Stamps::new(1, None),
            ips: Default::default(),
            version: Default::default(),
        };
        let ns = json!({"metadata": {"name": "ns"}});
        create(&mut c, resources::namespaces(), None, ns, None).unwrap();
        c
    }

    fn pods() -> &'static Resource {
        find("", "v1", "pods").unwrap()
    }

    /// Creates a pod with `metadata` in namespace `ns`.
    fn create_pod(c: &mut Cluster, metadata: Value) -> Result<Arc<Value>, ApiError> {
        create(c, pods(), Some("ns"), json!({ "metadata": metadata }), None)
    }

    /// Replaces pod `name` of namespace `ns` with `body`.
    fn update_pod(c: &mut Cluster, name: &str, body: Value) -> Result<Written, ApiError> {
        update(c, pods(), "ns", name, body, false, None).map(|(_, written)| written)
    }

    fn delete_namespace(c: &mut Cluster, name: &str) -> Result<(Arc<Value>, Written), ApiError> {
        let namespaces = resources::namespaces();
        delete(c, namespaces, "", name, &DeleteOptions::default())
    }

    #[test]
    fn create_of_an_existing_name_is_already_exists() {
        let mut c = cluster();
        create_pod(&mut c, json!({"name": "p"})).unwrap();
        let err = create_pod(&mut c, json!({"name": "p"})).unwrap_err();
        assert_eq!((err.code(), err.reason()), (409, "AlreadyExists"));
    }

    #[test]
    fn create_in_a_missing_namespace_is_not_found() {
        let mut c = cluster();
        let body = json!({"metadata": {"name": "p"}});
        let err = create(&mut c, pods(), Some("nope"), body, None).unwrap_err();
        assert_eq!(err.code(), 404);
        assert_eq!(err.message(), "namespaces \"nope\" not found");
    }

    #[test]
    fn update_with_a_stale_resource_version_conflicts() {
        let mut c = cluster();
        let p = create_pod(&mut c, json!({"name": "p"})).unwrap();
        let mut body = (*p).clone();
        update_pod(&mut c, "p", body.clone()).unwrap();
        body["metadata"]["labels"] = json!({"a": "b"});
        let err = update_pod(&mut c, "p", body).unwrap_err();
        assert_eq!((err.code(), err.reason()), (409, "Conflict"));
    }

    #[test]
    fn object_with_finalizer_is_kept_terminating_until_the_finalizer_is_removed() {
        let mut c = cluster();
        create_pod(&mut c, json!({"name": "p", "finalizers": ["x/y"]})).unwrap();
        let (marked, written) =
            delete(&mut c, pods(), "ns", "p", &DeleteOptions::default()).unwrap();
        assert_eq!(written, Written::Terminating);
        assert!(is_terminating(&marked));
        let mut body = (*marked).clone();
        body["metadata"]["finalizers"] = json!([]);
        update_pod(&mut c, "p", body).unwrap();
        assert!(c.store.get(pods(), "ns", "p").is_none());
    }

    #[test]
    fn namespace_delete_terminates_then_goes_away_when_empty() {
        let mut c = cluster();
        create_pod(&mut c, json!({"name": "held", "finalizers": ["x/y"]})).unwrap();
        create_pod(&mut c, json!({"name": "free"})).unwrap();
        let (ns, written) = delete_namespace(&mut c, "ns").unwrap();
        assert_eq!(written, Written::Terminating);
        assert_eq!(ns["status"]["phase"], "Terminating");
        assert!(c.store.get(pods(), "ns", "free").is_none());
        let err = create_pod(&mut c, json!({"name": "new"})).unwrap_err();
        assert_eq!(err.code(), 403);

        let mut held = (**c.store.get(pods(), "ns", "held").unwrap()).clone();
        held["metadata"]["finalizers"] = json!(null);
        update_pod(&mut c, "held", held).unwrap();
        assert!(c.store.get(resources::namespaces(), "", "ns").is_none());
    }

    #[test]
    fn default_namespace_cannot_be_deleted() {
        let mut c = cluster();
        let default = json!({"metadata": {"name": "default"}});
        create(&mut c, resources::namespaces(), None, default, None).unwrap();
        let err = delete_namespace(&mut c, "default").unwrap_err();
        assert_eq!(err.code(), 403);
    }
}
