//! `kubectl-endpoints plan`: what the controllers would write for a set of manifests.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use kube_endpoints::flags::OutputFlags;
use kubectl_endpoints::manifests::{into_values, load_paths};
use kubectl_endpoints::plan::{plan, PlanSettings};
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
/// existing Endpoints and EndpointSlices; other kinds are skipped with a note). They are
/// loaded into an in-process embedded API server, the live controllers run against it until
/// they have nothing left to do, and what they wrote is reported. Objects the API server
/// would refuse are skipped with a warning.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A manifest file or directory (YAML or JSON; multi-document and `kind: List` too).
    /// Repeat for several.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// kube-controller-manager's flags that decide what is written.
    #[command(flatten)]
    pub flags: OutputFlags,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    pub output: Format,
    /// The time the offline API server stamps on objects without a creationTimestamp
    /// (RFC 3339). Defaults to now.
    #[arg(long)]
    pub now: Option<Timestamp>,
}

/// Runs the command.
pub fn run(args: PlanArgs) -> Result<()> {
    let now = args.now.unwrap_or_else(Timestamp::now);
    let mut settings = PlanSettings::new(now);
    args.flags.apply(&mut settings.options)?;
    let loaded = load_paths(&args.files)?;
    for note in &loaded.notes {
        eprintln!("note: {note}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let objects = into_values(loaded.objects).context("re-encoding a manifest")?;
    let outcome = runtime.block_on(plan(objects, &settings))?;
    for refused in &outcome.refused {
        eprintln!("warning: skipped, the API server refuses it: {refused}");
    }
    let objects: Vec<serde_json::Value> = outcome
        .endpoints
        .iter()
        .map(serde_json::to_value)
        .chain(outcome.slices.iter().map(serde_json::to_value))
        .collect::<serde_json::Result<_>>()
        .context("encoding the objects")?;
    // Thousands of objects: one buffered write each, not a write per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
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
    out.flush()?;
    Ok(())
}
