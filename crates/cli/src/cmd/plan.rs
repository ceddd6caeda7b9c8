//! `kube-endpoints plan`: what the controllers would write for a set of manifests.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use kube_endpoints::manifests::load_paths;
use kube_endpoints::offline::{OfflineCluster, OfflineSettings};
use reconcile::slice::MAX_ENDPOINTS_PER_SLICE_LIMIT;
use reconcile::Timestamp;
use std::io::Write;
use std::path::PathBuf;

/// Output formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// The resulting objects as a YAML stream; a summary per Service on stderr.
    Yaml,
    /// One JSON document: `{"actions": [...], "events": [...], "objects": [...]}`.
    Json,
}

/// Show offline which Endpoints and EndpointSlices the controllers would write.
///
/// The manifests are the cluster's current state (Namespaces, Nodes, Services, Pods, and
/// existing Endpoints and EndpointSlices; other kinds are skipped with a note). Each Service
/// gets one sync of each controller, through the same code the live controllers run, and the
/// writes are applied to that state.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A manifest file or directory (YAML or JSON; multi-document and `kind: List` too).
    /// Repeat for several.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// Maximum endpoints per EndpointSlice (1 to 1000), as kube-controller-manager's flag.
    #[arg(long, default_value_t = 100)]
    pub max_endpoints_per_slice: usize,
    /// Controllers to run: `endpoint` (v1 Endpoints), `endpointslice`, or `*` for both.
    #[arg(long, value_delimiter = ',', default_value = "endpoint,endpointslice")]
    pub controllers: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    pub output: Format,
    /// The time the offline API server stamps on objects without a creationTimestamp
    /// (RFC 3339). Defaults to now.
    #[arg(long)]
    pub now: Option<Timestamp>,
}

/// Which of the two controllers a `--controllers` list enables, as kube-controller-manager
/// reads it (`*` is all, `-name` disables).
pub fn enabled_controllers(list: &[String]) -> Result<(bool, bool)> {
    let (mut endpoints, mut slices) = (false, false);
    for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        match item {
            "*" => (endpoints, slices) = (true, true),
            "endpoint" | "endpoints" => endpoints = true,
            "endpointslice" | "endpointslices" => slices = true,
            "-endpoint" | "-endpoints" => endpoints = false,
            "-endpointslice" | "-endpointslices" => slices = false,
            other => bail!(
                "--controllers: unknown controller {other:?} (known: endpoint, endpointslice, *)"
            ),
        }
    }
    Ok((endpoints, slices))
}

/// Runs the command.
pub fn run(args: PlanArgs) -> Result<()> {
    if !(1..=MAX_ENDPOINTS_PER_SLICE_LIMIT).contains(&args.max_endpoints_per_slice) {
        bail!("--max-endpoints-per-slice must be between 1 and {MAX_ENDPOINTS_PER_SLICE_LIMIT}, got {}", args.max_endpoints_per_slice);
    }
    let (endpoints, endpoint_slices) = enabled_controllers(&args.controllers)?;
    let loaded = load_paths(&args.files)?;
    for note in &loaded.notes {
        eprintln!("note: {note}");
    }
    let now = args.now.unwrap_or_else(Timestamp::now);
    let mut cluster = OfflineCluster::new(now);
    for warning in cluster.load(loaded.objects) {
        eprintln!("warning: {warning}");
    }
    let settings = OfflineSettings {
        endpoints,
        endpoint_slices,
        max_endpoints_per_slice: args.max_endpoints_per_slice,
    };
    let outcome = cluster.sync_all(&settings);

    let mut objects: Vec<serde_json::Value> = Vec::new();
    if endpoints {
        objects.extend(
            cluster
                .endpoints()
                .map(|e| serde_json::to_value(e).unwrap_or_default()),
        );
    }
    if endpoint_slices {
        objects.extend(
            cluster
                .endpoint_slices()
                .map(|s| serde_json::to_value(s).unwrap_or_default()),
        );
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.output {
        Format::Json => {
            let doc = serde_json::json!({
                "actions": outcome.actions,
                "events": outcome.events,
                "objects": objects,
            });
            serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON")?;
            writeln!(out)?;
        }
        Format::Yaml => {
            for object in &objects {
                writeln!(out, "---")?;
                out.write_all(
                    serde_norway::to_string(object)
                        .context("writing YAML")?
                        .as_bytes(),
                )?;
            }
            for (service, s) in &outcome.summaries {
                eprintln!(
                    "{service}: {} slice(s) with {} endpoint(s), Endpoints with {} address(es), {} write(s)",
                    s.slices, s.slice_endpoints, s.addresses, s.writes
                );
            }
            for e in &outcome.events {
                eprintln!(
                    "event {} {} {}/{}: {}",
                    e.type_,
                    e.reason,
                    e.involved_object.namespace,
                    e.involved_object.name,
                    e.message
                );
            }
        }
    }
    Ok(())
}
