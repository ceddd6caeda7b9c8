//! What the controllers would write for a cluster state, found by running them.
//!
//! `plan` and `conformance` do not model the controllers: they load the manifests into an
//! in-process embedded API server and run the very controllers `run` runs against it, until
//! they have nothing left to do. What they wrote is read back from the server: the writes
//! from its request log, the objects and Events from its API. So a behaviour fixed in the
//! controllers is fixed here too, and `plan` cannot pass where `run` would fail.
//!
//! Output is repeatable: the server stamps names and uids from a seed (each drawn for its own
//! purpose, so the interleaving of two controllers' requests does not matter) and one fixed
//! time, each controller runs one worker, and writes are reported per Service in the order
//! that Service's sync sent them.

use crate::settle::{settle, Controllers, Quiet};
use anyhow::{bail, Context, Result};
use k8s_openapi::api::core::v1::{Endpoints, Event, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::Api;
use reconcile::labels::SERVICE_NAME;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// When a run counts as settled (see [`crate::settle`]): the controllers idle, with nothing
/// due within half a second (what a 250 ms quiet window with a 250 ms horizon waited for;
/// longer waits, such as the one-second delay of a slice write's echo, are not waited for),
/// within ten minutes.
const QUIET: Quiet = Quiet::on_writes(Duration::from_millis(250), Duration::from_secs(600));

/// What to run.
#[derive(Debug, Clone)]
pub struct PlanSettings {
    /// Which controllers run, and with which flags.
    pub options: controller::Options,
    /// The server's clock: every creation time it stamps.
    pub now: Timestamp,
}

impl PlanSettings {
    /// The three controllers with kube-controller-manager's defaults. (A run always uses one
    /// worker each and no batching, see [`plan`].)
    pub fn new(now: Timestamp) -> Self {
        Self {
            options: controller::Options {
                settings: controller::config::Settings::default(),
                endpoints: true,
                endpoint_slices: true,
                shadow: None,
                mirroring: true,
            },
            now,
        }
    }
}

/// One write a controller sent and the server accepted.
#[derive(Debug, Clone, Serialize)]
pub struct Action {
    /// create, update, patch or delete.
    pub verb: String,
    /// Endpoints or EndpointSlice.
    pub kind: &'static str,
    /// Namespace.
    pub namespace: String,
    /// Name (for creates, the name the server generated).
    pub name: String,
    /// The object as the server stored it (absent for deletes), as JSON text: a run keeps
    /// every write until it prints them, and parsed values would take ten times the memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Box<RawValue>>,
    /// The Service the write was for (from the slice's label, or the Endpoints' name).
    #[serde(skip)]
    pub service: String,
}

/// The object an event is about.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct InvolvedObject {
    /// Service or Endpoints.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// An event a controller recorded.
#[derive(Debug, Clone, Serialize)]
pub struct RecordedEvent {
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub type_: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
    /// What it is about.
    #[serde(rename = "involvedObject")]
    pub involved_object: InvolvedObject,
    /// The component that recorded it.
    pub source: String,
}

/// Per-service figures, for the human-readable output.
#[derive(Debug, Clone, Default)]
pub struct ServiceSummary {
    /// Slices after the run.
    pub slices: usize,
    /// Endpoints over all slices.
    pub slice_endpoints: usize,
    /// Addresses in the Endpoints object.
    pub addresses: usize,
    /// Writes made.
    pub writes: usize,
}

/// What a run did and left.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Writes, grouped by kind (Endpoints first) and Service, each Service's in the order sent.
    pub actions: Vec<Action>,
    /// Events, by involved object.
    pub events: Vec<RecordedEvent>,
    /// Every Endpoints object afterwards, by namespace and name.
    pub endpoints: Vec<Endpoints>,
    /// Every EndpointSlice afterwards, by namespace and name.
    pub slices: Vec<EndpointSlice>,
    /// Per Service (namespace/name).
    pub summaries: BTreeMap<String, ServiceSummary>,
    /// Input objects the API server refused, with why; they were left out.
    pub refused: Vec<String>,
}

/// How many changes the plan server's watch history keeps. The informers list after the load
/// and watch from there, so the history only needs the controllers' own writes; the default
/// window would mostly hold superseded copies of loaded objects.
const HISTORY_WINDOW: usize = 2_000;

/// Loads `objects` (manifests as JSON, as [`crate::manifests::into_values`] gives them) into a
/// fresh in-process API server, runs the controllers until they settle, and reports what
/// they did. Each controller runs one worker, without batching.
pub async fn plan(objects: Vec<Value>, settings: &PlanSettings) -> Result<Outcome> {
    let server = apiserver::ApiServer::new(apiserver::Config {
        fixed_time: Some(settings.now),
        record_requests: true,
        history_window: HISTORY_WINDOW,
        version: embedded_server_version(&settings.options.settings),
        ..apiserver::Config::default()
    });
    let report = server.load_objects(objects);
    let refused = report.refused.iter().map(|e| error_chain(e)).collect();
    drop(report);
    // Loading a pod writes it twice (created, then its status): the history would keep the
    // superseded copies of the last loaded objects, which no watch needs, since the informers
    // start with a list after this point.
    server.compact_history();
    let client = kube::Client::new(server.service(), "default");
    let slice_services = slice_services(&client).await?;
    run_until_settled(&server, client.clone(), &repeatable(&settings.options)).await?;

    let mut outcome = read_back(&client, &settings.options).await?;
    outcome.refused = refused;
    outcome.actions = actions(server.take_request_log(), slice_services);
    for action in &outcome.actions {
        if let Some(summary) = outcome
            .summaries
            .get_mut(&format!("{}/{}", action.namespace, action.service))
        {
            summary.writes += 1;
        }
    }
    Ok(outcome)
}

/// The kube-apiserver an embedded server imitates for controllers with these settings: the
/// version of `--emulated-version` (v1.36 without it), with `--feature-gates`. The
/// controllers then read that version from its `/version`, as from a real cluster's.
pub fn embedded_server_version(
    settings: &controller::config::Settings,
) -> apiserver::ServerVersion {
    apiserver::ServerVersion::of(offline_version(settings))
        .with_feature_gates(&settings.feature_gates)
}

/// The version an offline run follows: `--emulated-version`, v1.36 without it.
fn offline_version(settings: &controller::config::Settings) -> reconcile::KubeVersion {
    settings
        .emulated_version
        .unwrap_or(reconcile::KubeVersion::NEWEST)
}

/// The rules controllers with these settings follow on an embedded server
/// ([`embedded_server_version`]): those of its version with `--feature-gates`.
pub fn followed_rules(settings: &controller::config::Settings) -> Result<reconcile::VersionRules> {
    Ok(settings.rules_of(offline_version(settings))?)
}

/// The options with one worker per controller and no batching, whatever the flags said:
/// neither changes what is finally written, only when, and one worker makes the order of
/// writes, and so the reported actions, the same on every run.
fn repeatable(options: &controller::Options) -> controller::Options {
    let mut options = options.clone();
    let s = &mut options.settings;
    s.concurrent_endpoint_syncs = 1;
    s.concurrent_service_endpoint_syncs = 1;
    s.mirroring_concurrent_service_endpoint_syncs = 1;
    s.endpoint_updates_batch_period = Duration::ZERO;
    s.endpointslice_updates_batch_period = Duration::ZERO;
    s.mirroring_endpointslice_updates_batch_period = Duration::ZERO;
    options
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Runs the controllers against `client` until they have settled, then stops them.
pub async fn run_until_settled(
    server: &apiserver::ApiServer,
    clients: impl Into<controller::Clients>,
    options: &controller::Options,
) -> Result<()> {
    let clients: controller::Clients = clients.into();
    let registry = prometheus::Registry::new();
    let readiness = controller::health::Readiness::new();
    let activity = controller::Activity::new();
    let token = tokio_util::sync::CancellationToken::new();
    let task = {
        let (options, readiness, activity, token) = (
            options.clone(),
            readiness.clone(),
            activity.clone(),
            token.clone(),
        );
        tokio::spawn(async move {
            controller::run(clients, &options, &registry, readiness, activity, token).await
        })
    };
    let controllers = Controllers::InProcess {
        readiness: &readiness,
        activity: &activity,
    };
    let settled = settle(server, &controllers, &QUIET).await;
    token.cancel();
    match task.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => bail!("the controllers failed: {e}"),
        Err(e) => bail!("the controllers' task failed: {e}"),
    }
    if !settled {
        bail!(
            "the controllers did not settle within {}s",
            QUIET.deadline.as_secs()
        );
    }
    Ok(())
}

/// The Service each existing slice belongs to, by (namespace, name), so a delete of a slice
/// the run never wrote can still be reported under its Service.
async fn slice_services(client: &kube::Client) -> Result<BTreeMap<(String, String), String>> {
    let slices = Api::<EndpointSlice>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing the loaded EndpointSlices")?;
    Ok(slices
        .items
        .iter()
        .filter_map(|s| {
            let service = s.metadata.labels.as_ref()?.get(SERVICE_NAME)?.clone();
            Some((
                (s.metadata.namespace.clone()?, s.metadata.name.clone()?),
                service,
            ))
        })
        .collect())
}

/// The accepted writes to Endpoints and EndpointSlices, grouped by kind and Service in a
/// stable order (each Service's writes keep the order they were sent in), objects without
/// their resourceVersion (which depends on how the controllers' requests interleaved).
fn actions(
    log: Vec<apiserver::RequestRecord>,
    mut slice_services: BTreeMap<(String, String), String>,
) -> Vec<Action> {
    let mut keyed: Vec<((u8, String, String), Action)> = Vec::new();
    for record in log {
        if !record.is_write() || !record.succeeded() || record.subresource.is_some() {
            continue;
        }
        let (rank, kind) = match (record.group.as_str(), record.resource.as_str()) {
            ("", "endpoints") => (0, "Endpoints"),
            ("discovery.k8s.io", "endpointslices") => (1, "EndpointSlice"),
            _ => continue,
        };
        let mut object = record.parsed_object();
        drop(record.object);
        if let Some(meta) = object
            .as_mut()
            .and_then(|o| o.get_mut("metadata"))
            .and_then(Value::as_object_mut)
        {
            meta.remove("resourceVersion");
            meta.remove("managedFields");
        }
        let namespace = record.namespace.unwrap_or_default();
        let name = record.name.unwrap_or_default();
        let service = if kind == "Endpoints" {
            name.clone()
        } else {
            let labelled = object
                .as_ref()
                .and_then(|o| o.pointer("/metadata/labels"))
                .and_then(|l| l.get(SERVICE_NAME))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let slice = (namespace.clone(), name.clone());
            match labelled {
                Some(service) => {
                    slice_services.insert(slice, service.clone());
                    service
                }
                None => slice_services.get(&slice).cloned().unwrap_or_default(),
            }
        };
        if record.verb == "delete" {
            // A delete may be answered with the object (while finalizers hold it): the
            // action is the delete, not what was left.
            object = None;
        }
        let object = object.and_then(|o| serde_json::value::to_raw_value(&o).ok());
        keyed.push((
            (rank, namespace.clone(), service.clone()),
            Action {
                verb: record.verb,
                kind,
                namespace,
                name,
                object,
                service,
            },
        ));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(_, action)| action).collect()
}

/// The objects and Events the run left, and the per-Service summaries.
async fn read_back(client: &kube::Client, options: &controller::Options) -> Result<Outcome> {
    let lp = ListParams::default();
    let mut endpoints = Api::<Endpoints>::all(client.clone())
        .list(&lp)
        .await
        .context("listing Endpoints")?
        .items;
    let mut slices = Api::<EndpointSlice>::all(client.clone())
        .list(&lp)
        .await
        .context("listing EndpointSlices")?
        .items;
    let services = Api::<Service>::all(client.clone())
        .list(&lp)
        .await
        .context("listing Services")?
        .items;
    let events = Api::<Event>::all(client.clone())
        .list(&lp)
        .await
        .context("listing Events")?
        .items;
    for meta in endpoints
        .iter_mut()
        .map(|e| &mut e.metadata)
        .chain(slices.iter_mut().map(|s| &mut s.metadata))
    {
        meta.resource_version = None;
        meta.managed_fields = None;
    }

    let mut summaries = BTreeMap::new();
    for service in &services {
        let (Some(ns), Some(name)) = (&service.metadata.namespace, &service.metadata.name) else {
            continue;
        };
        if ns == "default" && name == "kubernetes" {
            continue;
        }
        let owned: Vec<&EndpointSlice> = slices
            .iter()
            .filter(|s| {
                // A selector-less Service's slices are the mirrored ones.
                s.metadata.namespace.as_ref() == Some(ns)
                    && (reconcile::slice::is_managed_slice_of(s, name)
                        || reconcile::mirroring::is_mirrored_slice_of(s, name))
            })
            .collect();
        let addresses = endpoints
            .iter()
            .find(|e| {
                e.metadata.namespace.as_ref() == Some(ns) && e.metadata.name.as_ref() == Some(name)
            })
            .and_then(|e| e.subsets.as_ref())
            .map_or(0, |subsets| {
                subsets
                    .iter()
                    .map(|s| {
                        s.addresses.as_ref().map_or(0, Vec::len)
                            + s.not_ready_addresses.as_ref().map_or(0, Vec::len)
                    })
                    .sum()
            });
        summaries.insert(
            format!("{ns}/{name}"),
            ServiceSummary {
                slices: owned.len(),
                slice_endpoints: owned.iter().map(|s| s.endpoints.len()).sum(),
                addresses,
                writes: 0,
            },
        );
    }

    let mut events: Vec<RecordedEvent> = events
        .iter()
        .map(|e| RecordedEvent {
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
            involved_object: InvolvedObject {
                kind: e.involved_object.kind.clone().unwrap_or_default(),
                namespace: e.involved_object.namespace.clone().unwrap_or_default(),
                name: e.involved_object.name.clone().unwrap_or_default(),
            },
            source: e
                .source
                .as_ref()
                .and_then(|s| s.component.clone())
                .unwrap_or_default(),
        })
        .collect();
    events.sort_by(|a, b| {
        (
            &a.involved_object.namespace,
            &a.involved_object.name,
            &a.source,
            &a.reason,
        )
            .cmp(&(
                &b.involved_object.namespace,
                &b.involved_object.name,
                &b.source,
                &b.reason,
            ))
    });

    Ok(Outcome {
        actions: Vec::new(),
        events,
        endpoints: if options.endpoints {
            endpoints
        } else {
            Vec::new()
        },
        // Without the EndpointSlice controller, only the mirroring controller's slices are
        // this run's to show.
        slices: slices
            .into_iter()
            .filter(|s| {
                options.endpoint_slices
                    || (options.mirroring && reconcile::mirroring::is_mirrored(s))
            })
            .collect(),
        summaries,
        refused: Vec::new(),
    })
}
