//! Turns a snapshot and its findings into text (for a terminal), JSON (for programs) and Markdown
//! (for a bug report). Renderers format; they decide nothing.

mod facts;
mod html;
mod markdown;
mod text;

use cudoctor_analyse::{Finding, Severity};
use cudoctor_snapshot::{Snapshot, SCHEMA_VERSION};
use serde::Serialize;

pub use facts::{layer_facts, Fact};
pub use html::{deep_layer_facts, render_html};
pub use markdown::render_markdown;
pub use text::{render_text, Style};

/// Everything a report shows.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    pub snapshot: &'a Snapshot,
    pub findings: &'a [Finding],
}

/// Counts by severity.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
}

impl Report<'_> {
    pub fn summary(&self) -> Summary {
        let count = |s| self.findings.iter().filter(|f| f.severity == s).count();
        Summary {
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            infos: count(Severity::Info),
        }
    }

    /// The first layer, in checking order, with an error: where the chain breaks.
    pub fn first_broken_layer(&self) -> Option<&'static str> {
        self.findings
            .iter()
            .find(|f| f.severity == Severity::Error)
            .map(|f| f.layer.title())
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    schema_version: u32,
    tool_version: &'a str,
    summary: Summary,
    findings: &'a [Finding],
    snapshot: &'a Snapshot,
}

/// The JSON report: `{schema_version, tool_version, summary, findings, snapshot}`.
pub fn render_json(report: &Report) -> String {
    let doc = JsonReport {
        schema_version: SCHEMA_VERSION,
        tool_version: &report.snapshot.tool_version,
        summary: report.summary(),
        findings: report.findings,
        snapshot: report.snapshot,
    };
    // Serialising plain data with string keys cannot fail.
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
