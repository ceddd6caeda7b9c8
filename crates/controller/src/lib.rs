//! The live Endpoints and EndpointSlice controllers.
//!
//! ```text
//!  API server ──watch──> informer (projection -> store + indexes)
//!                             │ Handler(old, new): which Service keys to queue
//!                             v
//!                         work queue (dedupe, one worker per key, backoff)
//!                             │
//!                             v
//!      worker: read stores -> reconcile::plan_* (pure) -> writer (creates, updates, deletes)
//!                             │                              │
//!                             └── events (bounded, async) ───┴── tracker / metrics
//! ```
//!
//! [`run`] wires it together: informers for pods, services, nodes, slices and Endpoints are
//! shared by both controllers; no worker starts before every informer has synced.

pub mod client;
pub mod config;
pub mod endpoints;
pub mod endpointslice;
pub mod events;
pub mod health;
pub mod index;
pub mod informer;
pub mod label_index;
pub mod leader;
pub mod metrics;
pub mod queue;
pub mod replica;
pub mod service_queuer;
pub mod token_bucket;
pub mod worker;

use crate::config::Settings;
use crate::endpoints::EndpointsController;
use crate::endpointslice::EndpointSliceController;
use crate::events::EventRecorder;
use crate::health::Readiness;
use crate::index::{Handlers, Informers};
use crate::informer::Synced;
use kube::Client;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Which controllers to run, and with what settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Flag values.
    pub settings: Settings,
    /// Run the v1 Endpoints controller (`endpoint`).
    pub endpoints: bool,
    /// Run the EndpointSlice controller (`endpointslice`).
    pub endpoint_slices: bool,
}

/// Why the controllers could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Registering metrics failed (a name registered twice).
    #[error("registering metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

/// Runs the enabled controllers against `client` until `shutdown` is cancelled, then lets
/// in-flight syncs finish and returns. `readiness` turns true once every informer synced.
pub async fn run(
    client: Client,
    options: &Options,
    registry: &prometheus::Registry,
    readiness: Readiness,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    let background = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    let informers = Informers::new(&client);
    let stores = informers.stores.clone();
    let settings = &options.settings;

    // The label index goes first: handlers that queue work run after it is up to date.
    let label_index = Arc::new(stores.labels.clone());
    let mut handlers = Handlers {
        pods: vec![label_index.clone()],
        services: vec![label_index],
        nodes: vec![],
        slices: vec![],
        endpoints: vec![],
    };
    let slice_controller = if options.endpoint_slices {
        let (recorder, sender) = EventRecorder::new(
            client.clone(),
            "endpoint-slice-controller",
            background.clone(),
        );
        tasks.spawn(sender);
        let c = EndpointSliceController::new(
            client.clone(),
            stores.clone(),
            registry,
            recorder,
            settings.max_endpoints_per_slice as usize,
            settings.endpointslice_updates_batch_period,
        )?;
        let queuer = c.service_queuer();
        handlers.pods.push(queuer.clone());
        handlers.services.push(queuer);
        handlers.nodes.push(c.clone());
        handlers.slices.push(c.clone());
        Some(c)
    } else {
        None
    };
    let endpoints_controller = if options.endpoints {
        let (recorder, sender) =
            EventRecorder::new(client.clone(), "endpoint-controller", background.clone());
        tasks.spawn(sender);
        let c = EndpointsController::new(
            client.clone(),
            stores.clone(),
            registry,
            recorder,
            settings.endpoint_updates_batch_period,
        )?;
        let queuer = c.service_queuer();
        handlers.pods.push(queuer.clone());
        handlers.services.push(queuer);
        handlers.endpoints.push(c.clone());
        Some(c)
    } else {
        None
    };

    let synced = informers.synced();
    tasks.spawn(informers.run(handlers, background.clone()));
    let all_synced = tokio::select! {
        ok = Synced::wait_all(synced) => ok,
        () = shutdown.cancelled() => false,
    };
    if all_synced {
        tracing::info!("caches synced; starting workers");
        readiness.set(true);
        let mut workers = tokio::task::JoinSet::new();
        if let Some(c) = &slice_controller {
            c.check_topology();
            workers.spawn(
                Arc::clone(c).run_workers(settings.concurrent_service_endpoint_syncs as usize),
            );
        }
        if let Some(c) = &endpoints_controller {
            c.queue_leftovers();
            workers.spawn(Arc::clone(c).run_workers(settings.concurrent_endpoint_syncs as usize));
        }
        shutdown.cancelled().await;
        tracing::info!("shutting down: finishing in-flight syncs");
        if let Some(c) = &slice_controller {
            c.shut_down().await;
        }
        if let Some(c) = &endpoints_controller {
            c.shut_down().await;
        }
        while workers.join_next().await.is_some() {}
    }
    readiness.set(false);
    background.cancel();
    while tasks.join_next().await.is_some() {}
    Ok(())
}
