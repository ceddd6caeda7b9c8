//! `kubectl-endpoints explain`: why each pod is, or is not, an endpoint of a Service.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use kubectl_endpoints::explain::{explain, find_service, render, Explanation, Output, Source};
use kubectl_endpoints::manifests::load_paths;
use kubectl_endpoints::snapshot::Snapshot;
use std::io::Write;
use std::path::PathBuf;

/// Output formats besides the default table.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// The table with more columns: the EndpointSlice holding each pod's endpoint, its place
    /// in the Endpoints object, its zone and, when the Service asks for hints, its hints.
    Wide,
    /// The whole explanation as YAML, with the field names of the JSON.
    Yaml,
    /// The whole explanation as one JSON document: `{"service": "NS/NAME", "pods": [{"name",
    /// "verdict", "ready", ...}], ...}`.
    Json,
    /// Pods grouped by verdict, a paragraph each, the most likely cause first when nothing is
    /// ready.
    Text,
}

impl From<Format> for Output {
    fn from(format: Format) -> Self {
        match format {
            Format::Wide => Output::Wide,
            Format::Yaml => Output::Yaml,
            Format::Json => Output::Json,
            Format::Text => Output::Text,
        }
    }
}

/// Explain why each pod is, or is not, an endpoint of a Service.
///
/// Lists every pod the Service's selector matches, and every pod it nearly matches (one
/// label differs or is missing), each with one verdict: ready endpoint, not-ready endpoint,
/// serving but terminating, terminating, port does not resolve, excluded (pod Failed or
/// Succeeded, no IP, no IP of the Service's family, node unknown), selector does not match,
/// Service not managed. Then the mirroring of a selector-less Service, the hints, the
/// Endpoints object's truncation, the events the controllers record, and whether the cluster
/// holds what the controllers would write.
///
/// The answer comes from the controllers themselves: they run on an in-process copy of the
/// cluster state (as `plan` does), and a pod they leave out is explained by the rule of
/// theirs that left it out. With `-f` the state is read from manifests; otherwise from the
/// cluster, with get and list requests only: nothing is ever written.
///
/// Exits 0 when the Service has at least one ready endpoint, 3 when it has none, 2 on a usage
/// error, 1 on any other error.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The Service: NAME (in `-n`'s namespace, default `default`) or NAMESPACE/NAME.
    pub service: String,
    /// The Service's namespace.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Read the cluster state from these manifests (files or directories, YAML or JSON)
    /// instead of a cluster. Repeat for several.
    #[arg(short = 'f', long = "filename")]
    pub files: Vec<PathBuf>,
    /// kubeconfig to use; without it, the in-cluster config or the default kubeconfig.
    #[arg(long, conflicts_with = "files")]
    pub kubeconfig: Option<PathBuf>,
    /// The kube-controller-manager flags the cluster's controllers run with (those that
    /// decide what is written).
    #[command(flatten)]
    pub flags: kube_endpoints::flags::OutputFlags,
    /// Output format. Without it, a table: the Service in a few lines, then one line per pod
    /// (NAME, IP, NODE, ENDPOINT: ready, not ready, terminating or no, and a one-line REASON).
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,
}

/// A usage error: exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The Service's `namespace/name` from the argument and `-n`.
pub fn service_key(service: &str, namespace: Option<&str>) -> Result<String> {
    let key = match (service.split_once('/'), namespace) {
        (Some((ns, _)), Some(n)) if ns != n => {
            return Err(UsageError(format!(
                "the Service {service:?} names namespace {ns:?}, but -n says {n:?}"
            ))
            .into())
        }
        (Some((ns, name)), _) => {
            if ns.is_empty() || name.is_empty() || name.contains('/') {
                return Err(UsageError(format!(
                    "{service:?} is not a Service name or NAMESPACE/NAME"
                ))
                .into());
            }
            service.to_owned()
        }
        (None, n) => {
            if service.is_empty() {
                return Err(UsageError("the Service name is empty".to_owned()).into());
            }
            format!("{}/{service}", n.unwrap_or("default"))
        }
    };
    Ok(key)
}

/// Runs the command; the explanation's exit code (0 or 3) on success.
pub async fn run(args: ExplainArgs) -> Result<Explanation> {
    let key = service_key(&args.service, args.namespace.as_deref())?;
    let namespace = key.split('/').next().unwrap_or_default().to_owned();
    let source = if args.files.is_empty() {
        Source::Cluster
    } else {
        Source::Manifests
    };
    let mut flags = args.flags.clone();
    let snapshot = if args.files.is_empty() {
        let client = super::connect(args.kubeconfig.clone()).await?;
        kubectl_endpoints::cluster_version::follow_cluster(&client, &mut flags).await?;
        Snapshot::read(&client, Some(&namespace)).await?
    } else {
        let loaded = load_paths(&args.files)?;
        for note in &loaded.notes {
            eprintln!("note: {note}");
        }
        Snapshot::from_objects(loaded.objects)
    };
    // An unknown Service fails before the controllers run.
    find_service(&snapshot, &key)?;
    let mut explanations = explain(&snapshot, source, std::slice::from_ref(&key), &flags).await?;
    let Some(explanation) = explanations.pop() else {
        bail!("no explanation for {key}");
    };
    let output = args.output.map_or(Output::Table, Output::from);
    let mut out = std::io::stdout().lock();
    out.write_all(render(&explanation, output)?.as_bytes())?;
    out.flush()?;
    Ok(explanation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_take_their_namespace_from_the_name_or_the_flag() {
        assert_eq!(service_key("web", None).unwrap(), "default/web");
        assert_eq!(service_key("web", Some("shop")).unwrap(), "shop/web");
        assert_eq!(service_key("shop/web", None).unwrap(), "shop/web");
        assert_eq!(service_key("shop/web", Some("shop")).unwrap(), "shop/web");
        for bad in ["shop/web extra/x", "/web", "shop/", ""] {
            let err = service_key(bad, None).unwrap_err();
            assert!(err.downcast_ref::<UsageError>().is_some(), "{bad}");
        }
        let conflict = service_key("shop/web", Some("other")).unwrap_err();
        assert!(conflict.to_string().contains("-n says"), "{conflict}");
    }
}
