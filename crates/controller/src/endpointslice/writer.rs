//! Applying a plan: per address type, creates, then updates, then deletes; each success is
//! recorded in the tracker; the first failure ends that address type's batch.

use super::EndpointSliceController;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use reconcile::projection::ServiceInfo;
use reconcile::slice::SliceBatch;

/// True when the API refused a create because the namespace is being deleted.
pub(crate) fn is_namespace_terminating(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status)
        if status.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")))
}

/// True for a 409 AlreadyExists.
pub(crate) fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 409 && status.reason == "AlreadyExists")
}

/// True for a 404.
pub(crate) fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}

/// Writes every batch; returns how many slices changed and appends failures to `errors`.
pub(super) async fn write_batches(
    controller: &EndpointSliceController,
    service: &ServiceInfo,
    batches: &[SliceBatch],
    errors: &mut Vec<String>,
) -> usize {
    let api: Api<EndpointSlice> = Api::namespaced(controller.client.clone(), &service.namespace);
    let mut changed = 0;
    for batch in batches {
        if batch.address_type.is_none() {
            // Slices of address types the Service no longer uses: every delete is tried.
            for slice in &batch.delete {
                if let Err(e) = delete(controller, &api, slice).await {
                    errors.push(format!(
                        "error deleting {} EndpointSlice for Service {}/{}: {e}",
                        name(slice),
                        service.namespace,
                        service.name
                    ));
                } else {
                    changed += 1;
                }
            }
            continue;
        }
        match write_batch(controller, &api, service, batch, &mut changed).await {
            Ok(()) => {}
            Err(e) => errors.push(e),
        }
    }
    changed
}

fn name(slice: &EndpointSlice) -> &str {
    slice.metadata.name.as_deref().unwrap_or("")
}

async fn write_batch(
    controller: &EndpointSliceController,
    api: &Api<EndpointSlice>,
    service: &ServiceInfo,
    batch: &SliceBatch,
    changed: &mut usize,
) -> Result<(), String> {
    let (ns, svc) = (&service.namespace, &service.name);
    for slice in &batch.create {
        match api.create(&PostParams::default(), slice).await {
            Ok(created) => {
                controller.state().tracker.update(&created);
                controller
                    .metrics
                    .changes
                    .with_label_values(&["create"])
                    .inc();
                *changed += 1;
            }
            // Creates keep failing while the namespace terminates: drop the work quietly.
            Err(e) if is_namespace_terminating(&e) => return Ok(()),
            Err(e) => {
                return Err(format!(
                    "failed to create EndpointSlice for Service {ns}/{svc}: {e}"
                ))
            }
        }
    }
    for slice in &batch.update {
        match api
            .replace(name(slice), &PostParams::default(), slice)
            .await
        {
            Ok(updated) => {
                controller.state().tracker.update(&updated);
                controller
                    .metrics
                    .changes
                    .with_label_values(&["update"])
                    .inc();
                *changed += 1;
            }
            Err(e) => {
                return Err(format!(
                    "failed to update {} EndpointSlice for Service {ns}/{svc}: {e}",
                    name(slice)
                ))
            }
        }
    }
    for slice in &batch.delete {
        delete(controller, api, slice).await.map_err(|e| {
            format!(
                "failed to delete {} EndpointSlice for Service {ns}/{svc}: {e}",
                name(slice)
            )
        })?;
        *changed += 1;
    }
    Ok(())
}

async fn delete(
    controller: &EndpointSliceController,
    api: &Api<EndpointSlice>,
    slice: &EndpointSlice,
) -> Result<(), kube::Error> {
    match api.delete(name(slice), &DeleteParams::default()).await {
        Ok(_) => {
            controller.state().tracker.expect_deletion(slice);
            controller
                .metrics
                .changes
                .with_label_values(&["delete"])
                .inc();
            Ok(())
        }
        // Already gone: nothing to expect.
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(e),
    }
}
