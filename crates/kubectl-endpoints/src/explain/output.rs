//! The forms an explanation is printed in, behind the one function the command calls.
//!
//! Tests render through [`render`] too, so what they check is what `-o` prints.

use super::{render_table, render_text, Explanation};
use anyhow::{Context, Result};

/// An output form, as `-o` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// One line per pod, as `kubectl get` prints (the default).
    Table,
    /// The table with the slice, the Endpoints placement, the zone and the hints of each pod.
    Wide,
    /// The whole explanation as YAML: every field the JSON has.
    Yaml,
    /// The whole explanation as JSON, with stable field names for scripts.
    Json,
    /// Pods grouped by verdict, a paragraph each, with every particular in words.
    Text,
}

/// Renders `e` in the form `output`, ending with a newline.
pub fn render(e: &Explanation, output: Output) -> Result<String> {
    Ok(match output {
        Output::Table => render_table(e, false),
        Output::Wide => render_table(e, true),
        Output::Yaml => serde_norway::to_string(e).context("writing YAML")?,
        Output::Json => {
            let mut json = serde_json::to_string_pretty(e).context("writing JSON")?;
            json.push('\n');
            json
        }
        Output::Text => render_text(e),
    })
}
