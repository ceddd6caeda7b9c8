//! Comparing what our controllers write with what upstream kube-controller-manager wrote.
//!
//! A case directory holds `input.yaml` (a cluster state), optionally `flags` (extra
//! kube-controller-manager flags) and `upstream.json` (the Endpoints, EndpointSlices and
//! Events upstream wrote once settled). Some of what upstream writes depends on Go map order
//! or on the UIDs its API server assigned, so the two are compared by the corpus rules of
//! `shared/conformance/README.md`, which [`reconcile::compare`] holds.
//!
//! A case with a `steps.yaml` is dynamic: it runs live only ([`run_dynamic`]), changes are
//! applied after the controllers settled, and both the objects left (by the looser dynamic
//! rules, [`Rules::Dynamic`]) and the number of writes ([`crate::dynamic`]) are compared.
//!
//! Each recording names the kube-controller-manager version that wrote it, and a case is run
//! following that version's rules: offline with `--emulated-version`, live on an embedded
//! API server that reports that version (and refuses what it refuses). The recordings of
//! older versions (`versions/v1.3X/CASE/upstream.json`) hold only what upstream wrote; their
//! input, flags, steps and write budget are those of the same case under `cases/`.

use crate::dynamic::{parse_steps, run_steps, Step, Writes};
use crate::manifests::{load_paths, to_values, Object};
use crate::plan::{plan, run_until_settled, PlanSettings};
use anyhow::{bail, Context, Result};
use k8s_openapi::api::core::v1::{Endpoints, Event};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube_endpoints::flags::CaseFlags;
use reconcile::compare::{self, Objects, Sides};
use reconcile::KubeVersion;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use reconcile::compare::Rules;

/// One case, loaded.
#[derive(Debug)]
pub struct Case {
    /// The directory name.
    pub name: String,
    /// Objects of `input.yaml`.
    pub objects: Vec<Object>,
    /// The kube-controller-manager flags of `flags` (their defaults when absent).
    pub flags: CaseFlags,
    /// `upstream.json`, if recorded.
    pub upstream: Option<Value>,
    /// `steps.yaml`, for a dynamic case.
    pub steps: Option<Vec<Step>>,
    /// The Kubernetes version that wrote `upstream.json` (v1.36 when it does not say).
    pub version: KubeVersion,
}

/// What a controller run wrote, as the API would return it.
#[derive(Debug, Default, Clone)]
pub struct Written {
    /// Endpoints objects.
    pub endpoints: Vec<Endpoints>,
    /// EndpointSlices.
    pub endpoint_slices: Vec<EndpointSlice>,
    /// Events.
    pub events: Vec<compare::Event>,
}

impl Written {
    /// What a `plan` run left: its Endpoints, EndpointSlices and Events.
    pub fn from_outcome(outcome: crate::plan::Outcome) -> Result<Self> {
        Ok(Self {
            events: outcome
                .events
                .into_iter()
                .map(|e| compare::Event {
                    namespace: e.involved_object.namespace,
                    name: e.involved_object.name,
                    type_: e.type_,
                    reason: e.reason,
                    message: e.message,
                })
                .collect(),
            endpoints: outcome.endpoints,
            endpoint_slices: outcome.slices,
        })
    }

    /// The same without its Events, for comparisons with a side that has none.
    pub fn without_events(self) -> Self {
        Self {
            events: Vec::new(),
            ..self
        }
    }

    /// The objects, as the comparison reads them.
    pub fn objects(&self) -> Objects<'_> {
        Objects::new(&self.endpoints, &self.endpoint_slices).with_events(&self.events)
    }
}

/// Where a case's input lies: in its own directory, or for a recording of another version
/// (`versions/v1.3X/CASE/`) in the same case under `cases/` beside `versions/`.
fn input_dir(dir: &Path) -> Option<PathBuf> {
    if dir.join("input.yaml").is_file() {
        return Some(dir.to_owned());
    }
    let name = dir.file_name()?;
    let corpus = dir.parent()?.parent()?.parent()?;
    let base = corpus.join("cases").join(name);
    base.join("input.yaml").is_file().then_some(base)
}

/// The version a recording names in its `version` key ("Kubernetes v1.34.9", or
/// "v1.36.2+..."); v1.36 when it names none.
fn recorded_version(upstream: Option<&Value>) -> Result<KubeVersion> {
    let Some(text) = upstream
        .and_then(|u| u.get("version"))
        .and_then(Value::as_str)
    else {
        return Ok(KubeVersion::NEWEST);
    };
    let start = text
        .find("v1.")
        .with_context(|| format!("upstream.json: version {text:?} names no v1.x version"))?;
    let version: KubeVersion = text[start..]
        .parse()
        .with_context(|| format!("upstream.json: version {text:?}"))?;
    anyhow::ensure!(
        version.is_supported(),
        "upstream.json: {version} is outside the versions followed ({} to {})",
        KubeVersion::OLDEST,
        KubeVersion::NEWEST
    );
    Ok(version)
}

/// Loads a case directory.
pub fn load_case(dir: &Path) -> Result<Case> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("case")
        .to_owned();
    let recording = dir;
    let dir = &input_dir(dir).with_context(|| {
        format!(
            "case {name}: no input.yaml in {} nor in the same case under cases/",
            recording.display()
        )
    })?;
    let loaded = load_paths(&[dir.join("input.yaml")]).with_context(|| format!("case {name}"))?;
    let flags = match std::fs::read_to_string(dir.join("flags")) {
        Ok(text) => CaseFlags::from_text(&text)
            .with_context(|| format!("case {name}: {}", dir.join("flags").display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => CaseFlags::default(),
        Err(e) => {
            return Err(e)
                .with_context(|| format!("case {name}: reading {}", dir.join("flags").display()))
        }
    };
    let read_upstream = |dir: &Path| -> Result<Option<Value>> {
        match std::fs::read_to_string(dir.join("upstream.json")) {
            Ok(text) => Ok(Some(serde_json::from_str(&text).with_context(|| {
                format!("case {name}: {}", dir.join("upstream.json").display())
            })?)),
            Err(_) => Ok(None),
        }
    };
    let mut upstream = read_upstream(recording)?;
    if recording != dir {
        // An older version's recording carries no write counts: the budget is the one
        // recorded with the case itself.
        let base = read_upstream(dir)?;
        if let (Some(Value::Object(ours)), Some(writes)) = (
            upstream.as_mut(),
            base.as_ref().and_then(|b| b.get("writes")),
        ) {
            ours.entry("writes").or_insert_with(|| writes.clone());
        }
    }
    let version = recorded_version(upstream.as_ref()).with_context(|| format!("case {name}"))?;
    let steps = match std::fs::read_to_string(dir.join("steps.yaml")) {
        Ok(text) => Some(parse_steps(&text).with_context(|| format!("case {name}: steps.yaml"))?),
        Err(_) => None,
    };
    Ok(Case {
        name,
        objects: loaded.objects,
        flags,
        upstream,
        steps,
        version,
    })
}

/// The case directories under `root` (a directory holding an `input.yaml` is itself a case,
/// and so is another version's recording of a case under `cases/`).
pub fn find_cases(root: &Path) -> Result<Vec<PathBuf>> {
    if root.join("input.yaml").is_file() {
        return Ok(vec![root.to_owned()]);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .with_context(|| format!("reading {}", root.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| input_dir(p).is_some())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        bail!(
            "{}: no case directories (with an input.yaml) found",
            root.display()
        );
    }
    Ok(dirs)
}

/// Runs a case through the path `plan` uses: the controllers on an in-process API server,
/// one worker each.
pub async fn run_offline(case: &Case) -> Result<Written> {
    let mut settings = PlanSettings::new(reconcile::Timestamp::now());
    case.flags
        .offline(&mut settings.options)
        .with_context(|| format!("case {}: flags", case.name))?;
    let pinned = &mut settings.options.settings.emulated_version;
    pinned.get_or_insert(case.version);
    let outcome = plan(to_values(&case.objects)?, &settings)
        .await
        .with_context(|| format!("case {}", case.name))?;
    Written::from_outcome(outcome)
}

/// Reads the upstream recording into the same shape: its Endpoints, EndpointSlices and the
/// Events of the three endpoint controllers.
pub fn upstream_written(upstream: &Value) -> Result<Written> {
    fn list<T: serde::de::DeserializeOwned>(upstream: &Value, key: &str) -> Result<Vec<T>> {
        upstream
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, v)| T::deserialize(v).with_context(|| format!("upstream.json: {key}[{i}]")))
            .collect()
    }
    let events: Vec<Event> = list(upstream, "events")?;
    Ok(Written {
        endpoints: list(upstream, "endpoints")?,
        endpoint_slices: list(upstream, "endpointslices")?,
        events: events
            .iter()
            .filter(|e| {
                matches!(
                    e.source.as_ref().and_then(|s| s.component.as_deref()),
                    Some(
                        "endpoint-slice-controller"
                            | "endpoint-controller"
                            | reconcile::mirroring::EVENT_COMPONENT
                    ) | None
                )
            })
            .map(compare::Event::from)
            .collect(),
    })
}

/// Differences between our run and upstream's by the rules of a static case, one readable
/// line each.
pub fn compare(ours: &Written, upstream: &Written) -> Vec<String> {
    compare_by(ours, upstream, Rules::Static)
}

/// [`compare`](fn@compare) under the given rules.
pub fn compare_by(ours: &Written, upstream: &Written, rules: Rules) -> Vec<String> {
    compare::differences(&ours.objects(), &upstream.objects(), rules, Sides::UPSTREAM)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The embedded API server over TCP, loaded with a case's input the way the corpus was
/// recorded, and how to reach it.
struct LiveServer {
    handle: apiserver::ApiServerHandle,
    /// The server's client configuration.
    config: kube::config::Config,
    /// An unthrottled client, for the steps and for reading back.
    client: kube::Client,
}

impl LiveServer {
    async fn start(case: &Case, config: apiserver::Config) -> Result<Self> {
        let handle = apiserver::ApiServer::start(config)
            .await
            .context("starting the embedded API server")?;
        handle
            .apply_objects(to_values(&case.objects)?)
            .with_context(|| format!("case {}: loading input", case.name))?;
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&handle.kubeconfig())
            .context("reading the server's kubeconfig")?;
        let config = kube::config::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .context("configuring the client")?;
        let client = kube::Client::try_from(config.clone()).context("building the client")?;
        Ok(Self {
            handle,
            config,
            client,
        })
    }

    /// The controllers' clients as `run` builds them: one per controller, each with the
    /// `--kube-api-qps`/`--kube-api-burst` budget kube-controller-manager gives it. A burst
    /// of changes is then throttled as upstream's recorder saw it throttled.
    fn controller_clients(&self, options: &controller::Options) -> Result<controller::Clients> {
        let mut clients = controller::Clients::try_from_fn(|| {
            controller::client::client_from_config(self.config.clone(), &options.settings.client)
        })
        .context("building the controllers' clients")?;
        clients.wire = controller::wire::Negotiated::new(options.settings.client.encoding);
        Ok(clients)
    }
}

/// The embedded API server of a live run: of the version that recorded the case, with the
/// case's feature gates. The controllers follow the version its `/version` reports.
fn live_server_config(case: &Case, options: &controller::Options) -> apiserver::Config {
    let mut settings = options.settings.clone();
    settings.emulated_version.get_or_insert(case.version);
    apiserver::Config {
        version: crate::plan::embedded_server_version(&settings),
        ..apiserver::Config::default()
    }
}

/// The three controllers with the case's flags and kube-controller-manager's defaults for
/// the rest.
fn live_options(case: &Case) -> Result<controller::Options> {
    let mut options = controller::Options {
        settings: controller::config::Settings::default(),
        endpoints: true,
        endpoint_slices: true,
        mirroring: true,
        shadow: None,
    };
    case.flags
        .live(&mut options)
        .with_context(|| format!("case {}: flags", case.name))?;
    Ok(options)
}

/// Runs a case through the live controllers as `dev` runs them: the embedded API server
/// over TCP, loaded the way the corpus was recorded (objects, then status through the status
/// subresource, terminating pods held by a finalizer and deleted), the controllers with the
/// case's flags and kube-controller-manager's default worker counts, until the cluster is
/// quiet; what they wrote is read back through the API.
pub async fn run_live(case: &Case) -> Result<Written> {
    run_live_in(case, controller::wire::Encoding::default()).await
}

/// [`run_live`], the controllers speaking `encoding` (`--kube-api-content-type`).
pub async fn run_live_in(case: &Case, encoding: controller::wire::Encoding) -> Result<Written> {
    let mut options = live_options(case)?;
    let server = LiveServer::start(case, live_server_config(case, &options)).await?;
    options.settings.client.encoding = encoding;
    let clients = server.controller_clients(&options)?;
    let wire = clients.wire.clone();
    run_until_settled(server.handle.server(), clients, &options)
        .await
        .with_context(|| format!("case {}", case.name))?;
    // The server speaks both encodings: a fall back to JSON would be a bug on one side.
    anyhow::ensure!(
        wire.current() == encoding,
        "case {}: the controllers were to speak {encoding:?} but ended in {:?}",
        case.name,
        wire.current()
    );
    let written = read_written(&server.client).await?;
    server
        .handle
        .shutdown()
        .await
        .context("stopping the embedded API server")?;
    Ok(written)
}

/// Runs a dynamic case live: the controllers settle on the input, each step is applied, and
/// what they wrote during the steps is counted. Returns the objects left and the writes.
pub async fn run_dynamic(case: &Case) -> Result<(Written, Writes)> {
    let steps = case.steps.as_deref().unwrap_or_default();
    let options = live_options(case)?;
    let config = apiserver::Config {
        record_requests: true,
        ..live_server_config(case, &options)
    };
    let server = LiveServer::start(case, config).await?;
    let (handle, client) = (&server.handle, &server.client);
    let registry = prometheus::Registry::new();
    let readiness = controller::health::Readiness::new();
    let activity = controller::Activity::new();
    let token = tokio_util::sync::CancellationToken::new();
    let task = {
        let (clients, readiness, activity, token) = (
            server.controller_clients(&options)?,
            readiness.clone(),
            activity.clone(),
            token.clone(),
        );
        tokio::spawn(async move {
            controller::run(clients, &options, &registry, readiness, activity, token).await
        })
    };
    let result = async {
        crate::dynamic::settle_step(handle.server(), &readiness, &activity).await?;
        run_steps(handle.server(), client, &readiness, &activity, steps).await
    }
    .await
    .with_context(|| format!("case {}", case.name));
    token.cancel();
    match task.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => bail!("case {}: the controllers failed: {e}", case.name),
        Err(e) => bail!("case {}: the controllers' task failed: {e}", case.name),
    }
    let writes = result?;
    let written = read_written(client).await?;
    server
        .handle
        .shutdown()
        .await
        .context("stopping the embedded API server")?;
    Ok((written, writes))
}

/// Every Endpoints, EndpointSlice and Event, read through the API.
async fn read_written(client: &kube::Client) -> Result<Written> {
    let events: Vec<Event> = crate::snapshot::list(client, None).await?;
    Ok(Written {
        endpoints: crate::snapshot::list(client, None).await?,
        endpoint_slices: crate::snapshot::list(client, None).await?,
        events: events.iter().map(compare::Event::from).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `value` without null fields and empty lists (the types write an absent list of
    /// endpoints as empty) and without `apiVersion` and `kind` (a list's items may leave them
    /// out).
    fn without_nulls_and_kinds(value: &Value) -> Value {
        let nothing = |v: &Value| v.is_null() || v.as_array().is_some_and(Vec::is_empty);
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, v)| !nothing(v) && *k != "apiVersion" && *k != "kind")
                    .map(|(k, v)| (k.clone(), without_nulls_and_kinds(v)))
                    .collect(),
            ),
            Value::Array(items) => {
                Value::Array(items.iter().map(without_nulls_and_kinds).collect())
            }
            other => other.clone(),
        }
    }

    /// The comparison reads upstream's recordings as typed objects: a field the types did not
    /// know would be dropped there, and a difference in it missed.
    #[test]
    fn every_recorded_endpoints_and_slice_reads_typed_without_losing_a_field() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/cases");
        let mut objects = 0;
        for dir in find_cases(&corpus).unwrap() {
            let text = std::fs::read_to_string(dir.join("upstream.json")).unwrap();
            let recorded: Value = serde_json::from_str(&text).unwrap();
            let written = upstream_written(&recorded).unwrap();
            let typed = [
                (
                    "endpoints",
                    serde_json::to_value(&written.endpoints).unwrap(),
                ),
                (
                    "endpointslices",
                    serde_json::to_value(&written.endpoint_slices).unwrap(),
                ),
            ];
            for (key, typed) in typed {
                let recorded = without_nulls_and_kinds(&recorded[key]);
                let typed = without_nulls_and_kinds(&typed);
                assert_eq!(typed, recorded, "{}: {key}", dir.display());
                objects += typed.as_array().map_or(0, Vec::len);
            }
        }
        assert!(objects > 100, "{objects}");
    }
}
