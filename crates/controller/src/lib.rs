//! The live Endpoints, EndpointSlice and EndpointSlice mirroring controllers.
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
//! In the layout: [`informer`] (watch, projection, store, synthesised deletes) -> [`index`]
//! and [`label_index`] -> [`service_queuer`] and each controller's `handlers.rs` (which keys
//! to queue) -> [`queue`] -> [`service_workers`] and [`worker`] (the shell both controllers
//! share) -> `endpoints/sync.rs`, `endpointslice/sync.rs` (read the stores, call
//! `reconcile`) -> `endpoints/writer.rs`, `endpointslice/writer.rs` (apply the plan, in
//! upstream's order) -> [`events`], [`metrics`]. [`api_errors`] classifies the API's
//! answers for both writers; [`activity`] tells callers when there is nothing left to do.
//! Our writes carry the field manager [`field_manager::FIELD_MANAGER`], and the
//! [`migration_guard`], a slice and Endpoints handler, reports another manager's writes to
//! the objects we manage (kube-controller-manager still running its own controllers).
//!
//! [`run`] wires it together: informers for pods, services, nodes, slices and Endpoints are
//! shared by both controllers; no worker starts before every informer has synced.
//! [`Clients`] gives the informers and each controller a client with a request budget of its
//! own, as kube-controller-manager does; [`rest_metrics`] counts every request they send.

pub mod activity;
pub mod api_errors;
pub mod client;
pub mod clients;
pub mod config;
pub mod endpoints;
pub mod endpointslice;
pub mod events;
pub mod field_manager;
pub mod followed_version;
pub mod health;
pub mod index;
pub mod informer;
pub mod instruments;
pub mod label_index;
pub mod leader;
pub mod metrics;
pub mod migration_guard;
pub mod mirroring;
pub mod profiling;
pub mod queue;
pub mod replica;
pub mod rest_metrics;
pub mod secure_serving;
pub mod service_accounts;
pub mod service_queuer;
pub mod service_workers;
pub mod shadow;
pub mod slice_writer;
pub mod stale_cache;
pub mod state_lock;
pub mod token_bucket;
pub mod wire;
pub mod worker;
pub mod write_latency;
pub mod written;

pub use activity::Activity;

use crate::config::Settings;
use crate::endpoints::EndpointsController;
use crate::endpointslice::EndpointSliceController;
use crate::events::EventRecorder;
use crate::health::Readiness;
use crate::index::{Handlers, Informers};
use crate::informer::Synced;
use crate::mirroring::MirroringController;
use crate::service_queuer::ServiceQueuer;
use crate::service_workers::{ControllerParts, ServiceSync};
pub use clients::{Clients, InformerClients};
use service_accounts::Identity;
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
    /// Shadow mode: plan every sync but write nothing (no objects, no Events), and record in
    /// this where the controllers would write something else than the cluster holds.
    pub shadow: Option<Arc<shadow::Shadow>>,
    /// Run the EndpointSlice mirroring controller (`endpointslice-mirroring`).
    pub mirroring: bool,
}

/// What [`run`] builds the controllers from, and where their background work goes.
struct Assembly {
    clients: Clients,
    rules: reconcile::VersionRules,
    stores: index::Stores,
    activity: Activity,
    latency: write_latency::WriteLatency,
    /// Stops the Event senders and the informers, once the workers are done.
    background: CancellationToken,
    tasks: tokio::task::JoinSet<()>,
}

impl Assembly {
    /// A recorder of Events under `component`, sent through `controller`'s client by a task
    /// of its own; `activity` knows of the Events it holds.
    fn recorder(&mut self, controller: Identity, component: &'static str) -> EventRecorder {
        let (recorder, sender) = EventRecorder::new(
            self.clients.of(controller).clone(),
            component,
            self.background.clone(),
        );
        self.activity.watch_events(recorder.in_flight());
        self.tasks.spawn(sender);
        recorder
    }

    /// The parts of `controller`, whose non-Service events wait `batch_period`.
    fn parts(
        &mut self,
        controller: Identity,
        batch_period: std::time::Duration,
    ) -> ControllerParts {
        ControllerParts {
            client: self.clients.of(controller).clone(),
            wire: self.clients.wire.clone(),
            stores: self.stores.clone(),
            events: self.recorder(controller, controller.event_component()),
            batch_period,
            rules: self.rules,
            latency: self.latency.of(controller.controller_name()),
        }
    }

    /// Has the Service controllers' queues filled from Service and Pod events by one
    /// queuer, and watched for activity.
    fn queue_services(
        &self,
        handlers: &mut Handlers,
        workers: &[&service_workers::ServiceWorkers],
    ) {
        if workers.is_empty() {
            return;
        }
        for w in workers {
            self.activity.watch(w.queue());
        }
        let queuer = ServiceQueuer::new(
            self.stores.clone(),
            workers.iter().map(|w| w.queued_by()).collect(),
        );
        handlers.pods.push(queuer.clone());
        handlers.services.push(queuer);
    }
}

/// Why the controllers could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Registering metrics failed (a name registered twice).
    #[error("registering metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// No Kubernetes version could be followed.
    #[error(transparent)]
    Version(#[from] followed_version::VersionError),
}

/// Runs the enabled controllers until `shutdown` is cancelled, then lets in-flight syncs
/// finish and returns. Each controller writes (and records its Events) through its own
/// client in `clients`, the informers read through theirs; a plain `kube::Client` makes
/// them all share one. `readiness` turns true once every informer synced;
/// `activity` learns the controllers' queues, Event recorders and informers, to tell when
/// they have nothing left to do.
pub async fn run(
    clients: impl Into<Clients>,
    options: &Options,
    registry: &prometheus::Registry,
    readiness: Readiness,
    activity: Activity,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    let clients: Clients = clients.into();
    let settings = &options.settings;
    let Some(rules) =
        followed_version::follow(&clients.informers.services, settings, registry, &shutdown)
            .await?
    else {
        return Ok(());
    };
    let informers = Informers::new(&clients.informers, &clients.wire);
    let stores = informers.stores.clone();
    let mut assembly = Assembly {
        rules,
        clients,
        stores: stores.clone(),
        activity,
        latency: write_latency::WriteLatency::register(registry)?,
        background: CancellationToken::new(),
        tasks: tokio::task::JoinSet::new(),
    };

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
        let c = EndpointSliceController::new(
            assembly.parts(
                Identity::EndpointSlices,
                settings.endpointslice_updates_batch_period,
            ),
            registry,
            settings.max_endpoints_per_slice as usize,
            options.shadow.clone(),
        )?;
        handlers.nodes.push(c.clone());
        handlers.slices.push(c.clone());
        assembly.activity.watch(c.topology_queue());
        Some(c)
    } else {
        None
    };
    let endpoints_controller = if options.endpoints {
        let c = EndpointsController::new(
            assembly.parts(Identity::Endpoints, settings.endpoint_updates_batch_period),
            registry,
            options.shadow.clone(),
        )?;
        handlers.endpoints.push(c.clone());
        Some(c)
    } else {
        None
    };
    let service_controllers: Vec<&service_workers::ServiceWorkers> = [
        slice_controller.as_ref().map(|c| c.workers()),
        endpoints_controller.as_ref().map(|c| c.workers()),
    ]
    .into_iter()
    .flatten()
    .collect();
    assembly.queue_services(&mut handlers, &service_controllers);

    if options.mirroring && options.shadow.is_some() {
        // Shadow mode covers the Endpoints and EndpointSlice controllers; the mirroring
        // controller has no write-free mode, so it does not run at all rather than write.
        tracing::warn!("shadow mode: the EndpointSlice mirroring controller is not run");
    }
    let mirroring_controller = if options.mirroring && options.shadow.is_none() {
        let c = MirroringController::new(
            assembly.parts(
                Identity::Mirroring,
                settings.mirroring_endpointslice_updates_batch_period,
            ),
            registry,
            settings.mirroring_max_endpoints_per_subset as usize,
        )?;
        handlers.services.push(c.clone());
        handlers.endpoints.push(c.clone());
        handlers.slices.push(c.clone());
        assembly.activity.watch(c.workers().queue());
        Some(c)
    } else {
        None
    };

    // A shadow runs beside the controllers that write, on purpose: nothing to guard.
    if options.shadow.is_none() {
        let guarded = migration_guard::Guarded {
            slices: options.endpoint_slices,
            mirrored_slices: options.mirroring,
            endpoints: options.endpoints,
        };
        let guard = migration_guard::MigrationGuard::new(
            informers.managed_fields.clone(),
            stores.services.clone(),
            guarded,
            assembly.recorder(Identity::EndpointSlices, "kube-endpoints"),
            registry,
        )?;
        handlers.slices.push(guard.clone());
        handlers.endpoints.push(guard);
    }

    let Assembly {
        activity,
        background,
        mut tasks,
        ..
    } = assembly;
    let synced = informers.synced();
    for progress in informers.progress() {
        activity.watch_informer(progress);
    }
    let health = informer::WatchHealth::register(registry, readiness.clone())?;
    tasks.spawn(informers.run(handlers, health, background.clone()));
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
        if let Some(c) = &mirroring_controller {
            workers.spawn(
                Arc::clone(c)
                    .run_workers(settings.mirroring_concurrent_service_endpoint_syncs as usize),
            );
        }
        activity.set_running();
        shutdown.cancelled().await;
        tracing::info!("shutting down: finishing in-flight syncs");
        if let Some(c) = &slice_controller {
            c.shut_down().await;
        }
        if let Some(c) = &endpoints_controller {
            c.workers().shut_down().await;
        }
        if let Some(c) = &mirroring_controller {
            c.workers().shut_down().await;
        }
        while workers.join_next().await.is_some() {}
    }
    readiness.set(false);
    background.cancel();
    while tasks.join_next().await.is_some() {}
    Ok(())
}
