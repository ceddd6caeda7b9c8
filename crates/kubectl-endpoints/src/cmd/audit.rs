//! `kubectl-endpoints audit`: compare what our controllers would write with what a cluster holds.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use kubectl_endpoints::audit::{audit, AuditScope};
use std::io::Write;
use std::path::PathBuf;

/// Output formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// One line per Service (`same`, or `differs` with the differences under it) and a summary.
    Table,
    /// One JSON document: `{"services": [...], "same": N, "differ": N}`.
    Json,
}

/// Read-only check of a cluster: for every Service, would these controllers write the
/// Endpoints and EndpointSlices the cluster holds now?
///
/// The cluster is only listed, never written. Its Namespaces, Nodes, Services and Pods are
/// copied into an in-process embedded API server, the controllers run there from scratch (the
/// code path `run` uses), and the result is compared with the cluster's objects by the
/// conformance corpus' rules: generated names, uids, resourceVersions, timestamps and what
/// upstream writes in map order are ignored. In the differences, "plan" is what these
/// controllers would write and "cluster" what the cluster holds. Exits 0 when every Service
/// is the same, 1 otherwise.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// kubeconfig to use; without it, the in-cluster config or the default kubeconfig.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Audit only this namespace.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The kube-controller-manager flags the cluster's controllers run with (those that
    /// decide what is written).
    #[command(flatten)]
    pub flags: kube_endpoints::flags::OutputFlags,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

/// Runs the command; true when every Service is the same.
pub async fn run(args: AuditArgs) -> Result<bool> {
    let client = super::connect(args.kubeconfig.clone()).await?;
    let scope = AuditScope {
        namespace: args.namespace.clone(),
        flags: args.flags.clone(),
    };
    let report = audit(&client, &scope).await?;
    let mut out = std::io::stdout().lock();
    match args.output {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &report).context("writing JSON")?;
            writeln!(out)?;
        }
        Format::Table => {
            for service in &report.services {
                if service.reasons.is_empty() {
                    writeln!(out, "{}: {}", service.service, service.result)?;
                } else {
                    let reasons = service.reasons.join("; ");
                    writeln!(out, "{}: {}: {reasons}", service.service, service.result)?;
                }
                for difference in &service.differences {
                    writeln!(out, "    {difference}")?;
                }
            }
            writeln!(out, "{}", report.summary())?;
        }
    }
    Ok(report.differ == 0)
}
