//! Sending the Endpoints controller's one write per sync, and reading the API's answer:
//! which refusals are quiet, which are retried without an event, which become a Warning.

use super::EndpointsController;
use crate::api_errors::{is_already_exists, is_namespace_terminating, is_not_found};
use crate::events::Involved;
use crate::informer::echoes::Flight;
use crate::informer::ObjectKey;
use crate::stale_cache::is_conflict;
use crate::wire::objects::Write;
use crate::worker::SyncError;
use k8s_openapi::api::core::v1::Endpoints;
use kube::api::DeleteParams;
use kube::Api;
use reconcile::event::PlannedEvent;
use reconcile::keys::ServiceKey;
use reconcile::projection::StoredEndpoints;

/// An update that went through: the resourceVersion the object had and the one it has now.
pub(super) struct Replaced {
    pub old_rv: String,
    pub new_rv: String,
}

impl EndpointsController {
    fn api(&self, key: &ServiceKey) -> Api<Endpoints> {
        Api::namespaced(self.parts.client.clone(), &key.namespace)
    }

    fn involved(key: &ServiceKey) -> Involved {
        Involved {
            kind: "Endpoints",
            namespace: key.namespace.to_string(),
            name: key.name.to_string(),
            uid: String::new(),
        }
    }

    fn write_error(key: &ServiceKey, verb: &'static str, source: kube::Error) -> SyncError {
        SyncError::Write {
            verb,
            kind: "Endpoints",
            name: key.name.to_string(),
            service: key.clone(),
            source,
        }
    }

    /// A write refused for good: reported as a Warning Event `reason` saying `message`, and
    /// retried as the sync's error.
    fn failed(
        &self,
        key: &ServiceKey,
        verb: &'static str,
        reason: &'static str,
        message: String,
        source: kube::Error,
    ) -> SyncError {
        self.parts
            .events
            .record(Self::involved(key), PlannedEvent::warning(reason, message));
        Self::write_error(key, verb, source)
    }

    /// Notes a write of the Service's Endpoints on its way (see [`crate::informer::echoes`]).
    fn sending(&self, key: &ServiceKey) -> Flight<'_, Endpoints, StoredEndpoints> {
        let object = ObjectKey::new(&key.namespace, &key.name);
        self.parts.stores.endpoints_echoes.sending(Some(object))
    }

    /// Deletes the Endpoints of a Service that is gone (already gone is fine); says whether
    /// there was one to delete.
    pub(super) async fn delete(&self, key: &ServiceKey) -> Result<bool, SyncError> {
        match self
            .api(key)
            .delete(&key.name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(Self::write_error(key, "delete", e)),
        }
    }

    /// Creates the Endpoints object; says whether it was (not while its namespace
    /// terminates).
    pub(super) async fn create(
        &self,
        key: &ServiceKey,
        object: Endpoints,
    ) -> Result<bool, SyncError> {
        let flight = self.sending(key);
        match crate::written::write(&self.api(key), Write::Create, &object, &self.parts.wire).await
        {
            Ok(created) => {
                flight.written(object, &created.metadata);
                Ok(true)
            }
            // Creates keep failing while the namespace terminates: drop the work quietly.
            Err(e) if is_namespace_terminating(&e) => Ok(false),
            // Our own earlier create has not reached the cache yet: retry once it has, rather
            // than report a failure that is only the cache lagging.
            Err(e) if is_already_exists(&e) => Err(SyncError::StaleCache {
                cache: "Endpoints",
                service: key.clone(),
            }),
            Err(e) => {
                let message = format!("Failed to create endpoint for service {key}: {e}");
                Err(self.failed(key, "create", "FailedToCreateEndpoint", message, e))
            }
        }
    }

    /// Replaces the Endpoints object `current` with `object`.
    pub(super) async fn update(
        &self,
        key: &ServiceKey,
        current: Option<&Endpoints>,
        object: Endpoints,
    ) -> Result<Replaced, SyncError> {
        let sent_rv = object.metadata.resource_version.clone().unwrap_or_default();
        let flight = self.sending(key);
        let result = crate::written::write(
            &self.api(key),
            Write::Replace { name: &key.name },
            &object,
            &self.parts.wire,
        )
        .await;
        {
            let mut state = self.state.lock();
            match &result {
                Ok(_) => state.conflicts.written(&key.to_string()),
                Err(e) if is_conflict(e) => {
                    if state.conflicts.refused(
                        &key.to_string(),
                        &sent_rv,
                        std::time::Instant::now(),
                    ) {
                        self.workers.stores().endpoints.request_relist();
                    }
                }
                Err(_) => {}
            }
        }
        match result {
            Ok(updated) => {
                flight.written(object, &updated.metadata);
                Ok(Replaced {
                    old_rv: current
                        .and_then(|c| c.metadata.resource_version.clone())
                        .unwrap_or_default(),
                    new_rv: updated.metadata.resource_version.unwrap_or_default(),
                })
            }
            Err(e) => {
                let message = format!("Failed to update endpoint {key}: {e}");
                Err(self.failed(key, "update", "FailedToUpdateEndpoint", message, e))
            }
        }
    }
}
