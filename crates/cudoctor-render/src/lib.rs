//! Turns a snapshot and its findings into text (for a terminal), JSON (for programs) and Markdown
//! (for a bug report). Renderers format; they decide nothing.

mod facts;
mod html;
mod markdown;
mod prometheus;
mod text;

use cudoctor_analyse::{Confidence, Finding, Layer, Severity};
use cudoctor_snapshot::{Snapshot, SCHEMA_VERSION};
use serde::Serialize;

pub use facts::{layer_facts, Fact};
pub use html::{deep_layer_facts, render_html};
pub use markdown::render_markdown;
pub use prometheus::{escape_label_value, render_prometheus};
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

impl Summary {
    /// "1 error, 0 warnings, 2 notes": the counts as every report's summary line words them.
    pub(crate) fn counts(&self) -> String {
        format!(
            "{}, {}, {}",
            plural(self.errors, "error", "errors"),
            plural(self.warnings, "warning", "warnings"),
            plural(self.infos, "note", "notes"),
        )
    }
}

/// One layer's part of a report: what was found there and what is wrong there.
pub(crate) struct Section<'a> {
    pub layer: Layer,
    pub facts: Vec<Fact>,
    pub findings: Vec<&'a Finding>,
}

impl Section<'_> {
    /// No fact and no finding: renderers leave such a layer out.
    pub(crate) fn is_empty(&self) -> bool {
        self.facts.is_empty() && self.findings.is_empty()
    }

    /// The most severe finding's severity; None when the layer has no finding.
    pub(crate) fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).min()
    }
}

impl<'a> Report<'a> {
    /// Every layer in checking order with its facts and findings, empty layers included.
    pub(crate) fn sections(&self) -> impl Iterator<Item = Section<'a>> {
        let report = *self;
        Layer::ALL.into_iter().map(move |layer| Section {
            layer,
            facts: layer_facts(layer, report.snapshot),
            findings: report
                .findings
                .iter()
                .filter(|f| f.layer == layer)
                .collect(),
        })
    }

    /// The summary's closing sentence; `warnings_at` says where the warnings stand relative to
    /// it on the page ("above", "below").
    pub(crate) fn verdict(&self, warnings_at: &str) -> String {
        match self.first_broken_layer() {
            Some(layer) => format!("The first broken link: {layer}."),
            None if self.summary().warnings > 0 => {
                format!("No errors; see the warnings {warnings_at}.")
            }
            None => "No problems found.".to_string(),
        }
    }

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

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What follows a finding's title when it is not certain.
pub(crate) fn confidence_note(c: Confidence) -> &'static str {
    match c {
        Confidence::Certain => "",
        Confidence::Likely => " (likely)",
        Confidence::Unsure => " (unsure)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(layer: Layer, severity: Severity) -> Finding {
        Finding {
            code: "TST001".into(),
            layer,
            severity,
            title: "t".into(),
            evidence: vec![],
            cause: String::new(),
            fix: vec![],
            confidence: Confidence::Certain,
        }
    }

    #[test]
    fn summary_counts_and_verdict() {
        let s = Snapshot::new("0.1.0", "/");
        let warned = [finding(Layer::Toolkit, Severity::Warning)];
        let r = Report {
            snapshot: &s,
            findings: &warned,
        };
        assert_eq!(r.summary().counts(), "0 errors, 1 warning, 0 notes");
        assert_eq!(r.verdict("above"), "No errors; see the warnings above.");
        let broken = [
            finding(Layer::Framework, Severity::Info),
            finding(Layer::Driver, Severity::Error),
            finding(Layer::Driver, Severity::Error),
        ];
        let r = Report {
            snapshot: &s,
            findings: &broken,
        };
        assert_eq!(r.summary().counts(), "2 errors, 0 warnings, 1 note");
        assert_eq!(r.verdict("below"), "The first broken link: Driver.");
        let r = Report {
            snapshot: &s,
            findings: &[],
        };
        assert_eq!(r.verdict("below"), "No problems found.");
    }

    #[test]
    fn sections_cover_every_layer_with_its_own_findings() {
        let s = Snapshot::new("0.1.0", "/");
        let found = [
            finding(Layer::Driver, Severity::Warning),
            finding(Layer::Driver, Severity::Error),
        ];
        let r = Report {
            snapshot: &s,
            findings: &found,
        };
        let sections: Vec<Section> = r.sections().collect();
        assert_eq!(sections.len(), Layer::ALL.len());
        for sec in &sections {
            let expected = usize::from(sec.layer == Layer::Driver) * 2;
            assert_eq!(sec.findings.len(), expected, "{:?}", sec.layer);
        }
        let driver = sections.iter().find(|sec| sec.layer == Layer::Driver);
        assert_eq!(driver.and_then(Section::worst), Some(Severity::Error));
    }
}
