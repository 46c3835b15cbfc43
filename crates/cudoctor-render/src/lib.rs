//! Turns a snapshot and its findings into text (for a terminal), JSON (for programs) and Markdown
//! (for a bug report). Renderers format; they decide nothing.

mod compare;
mod doc;
mod explain_report;
mod facts;
mod html;
mod kernels_report;
pub mod layout;
mod libs_report;
mod markdown;
mod plan_report;
mod prometheus;
pub mod redact;
mod rules_list;
mod run_report;
mod text;
mod verify_report;

use cudoctor_analyse::{Confidence, Finding, FixStep, Layer, Severity};
use cudoctor_snapshot::{Snapshot, SCHEMA_VERSION};
use serde::Serialize;

pub use compare::{
    render_diff_html, render_diff_json, render_diff_markdown, render_diff_text, render_fleet_html,
    render_fleet_json, render_fleet_markdown, render_fleet_text,
};
pub use explain_report::{render_explain_markdown, render_explain_text};
pub use facts::{layer_facts, Fact};
pub use html::{deep_layer_facts, render_html, render_run_html};
pub use kernels_report::{kernels_verdict, render_kernels_markdown, render_kernels_text};
pub use libs_report::{
    libs_verdict, render_libs_json, render_libs_markdown, render_libs_report_markdown,
    render_libs_report_text, render_libs_text, FrameworkLibs,
};
pub use markdown::{render_issue_markdown, render_markdown};
pub use plan_report::{render_plan_markdown, render_plan_text, render_reverse_text};
pub use prometheus::{escape_label_value, render_prometheus};
pub use rules_list::{
    render_rule_doc, render_rule_json, render_rules_json, render_rules_markdown, render_rules_text,
};
pub use run_report::{render_run_markdown, render_run_text};
pub use text::{fix_lines, render_text, FixLine, Style};
pub use verify_report::{render_verify_text, verify_line};

/// Everything a report shows.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    pub snapshot: &'a Snapshot,
    pub findings: &'a [Finding],
}

/// Counts by severity of the root causes, and how many findings follow from them.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// Findings that follow from another one (`caused_by`), counted apart from the above.
    pub consequences: usize,
    /// The id of the first root-cause error (else warning), in checking order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_root_cause: Option<String>,
    /// The id of every root-cause error (no `caused_by`), ordered by layer: each needs its own
    /// fix (a container without GPUs and a torchvision of another release are two).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub root_causes: Vec<String>,
}

impl Summary {
    /// "1 error, 0 warnings, 2 notes (and 3 consequences)": the counts as every report's
    /// summary line words them.
    pub(crate) fn counts(&self) -> String {
        let mut s = format!(
            "{}, {}, {}",
            plural(self.errors, "error", "errors"),
            plural(self.warnings, "warning", "warnings"),
            plural(self.infos, "note", "notes"),
        );
        if self.consequences > 0 {
            s.push_str(&format!(
                " (and {})",
                plural(self.consequences, "consequence", "consequences")
            ));
        }
        s
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

    /// The findings that follow from `cause` (its `caused_by_id` names it).
    pub(crate) fn consequences_of(&self, cause: &Finding) -> Vec<&'a Finding> {
        self.findings
            .iter()
            .filter(|f| {
                f.caused_by_id.as_deref() == Some(cause.id.as_str()) && !cause.id.is_empty()
            })
            .collect()
    }

    /// The first root cause: the first error without a cause, else the first such warning.
    pub fn first_root_cause(&self) -> Option<&'a Finding> {
        let roots = || self.findings.iter().filter(|f| !f.is_consequence());
        roots()
            .find(|f| f.severity == Severity::Error)
            .or_else(|| roots().find(|f| f.severity == Severity::Warning))
    }

    /// Every root-cause error (no `caused_by`), ordered by layer (checking order within one).
    pub fn root_causes(&self) -> Vec<&'a Finding> {
        let mut roots: Vec<&Finding> = self
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error && !f.is_consequence())
            .collect();
        roots.sort_by_key(|f| Layer::ALL.iter().position(|l| *l == f.layer));
        roots
    }

    /// One line per root cause when there are several ("PLT001 This docker container has no
    /// GPU access (Platform)"); empty for one or none (the verdict names it).
    pub(crate) fn root_cause_lines(&self) -> Vec<String> {
        let roots = self.root_causes();
        if roots.len() < 2 {
            return Vec::new();
        }
        roots
            .iter()
            .map(|f| {
                format!(
                    "{} {} ({})",
                    f.code,
                    cudoctor_types::inert::line(f.title.trim_end_matches('.')),
                    f.layer.title()
                )
            })
            .collect()
    }

    /// The summary's closing sentence; `warnings_at` says where the warnings stand relative to
    /// it on the page ("above", "below").
    pub(crate) fn verdict(&self, warnings_at: &str) -> String {
        let roots = self.root_causes().len();
        match self.first_broken_layer() {
            Some(layer) if roots > 1 => {
                format!(
                    "The first broken link: {layer}. {roots} root causes, each with its own fix:"
                )
            }
            Some(layer) => match self.first_root_cause() {
                Some(root) => format!(
                    "The first broken link: {layer}. Root cause: {} {}.",
                    root.code,
                    cudoctor_types::inert::line(root.title.trim_end_matches('.'))
                ),
                None => format!("The first broken link: {layer}."),
            },
            None if self.summary().warnings > 0 => {
                format!("No errors; see the warnings {warnings_at}.")
            }
            None => "No problems found.".to_string(),
        }
    }

    pub fn summary(&self) -> Summary {
        let count = |s| {
            self.findings
                .iter()
                .filter(|f| f.severity == s && !f.is_consequence())
                .count()
        };
        Summary {
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            infos: count(Severity::Info),
            consequences: self.findings.iter().filter(|f| f.is_consequence()).count(),
            first_root_cause: self.first_root_cause().map(id_of),
            root_causes: self.root_causes().into_iter().map(id_of).collect(),
        }
    }

    /// The first layer, in checking order, with an error: where the chain breaks.
    pub fn first_broken_layer(&self) -> Option<&'static str> {
        self.findings
            .iter()
            .find(|f| f.severity == Severity::Error && !f.is_consequence())
            .map(|f| f.layer.title())
    }
}

/// A finding's id in the summary: its id, else its code.
fn id_of(f: &Finding) -> String {
    if f.id.is_empty() {
        f.code.clone()
    } else {
        f.id.clone()
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

/// Consecutive fix steps grouped: runs of shell commands (for one code block each) and prose
/// sentences, in order.
pub(crate) enum FixPart<'a> {
    Commands(Vec<&'a str>),
    /// PowerShell commands, in their own block.
    PowerShell(Vec<&'a str>),
    Prose(&'a str),
}

pub(crate) fn fix_parts(steps: &[FixStep]) -> Vec<FixPart<'_>> {
    let mut parts: Vec<FixPart> = Vec::new();
    for s in steps {
        match s {
            FixStep::Shell(c) => match parts.last_mut() {
                Some(FixPart::Commands(v)) => v.push(c),
                _ => parts.push(FixPart::Commands(vec![c])),
            },
            FixStep::PowerShell(c) => match parts.last_mut() {
                Some(FixPart::PowerShell(v)) => v.push(c),
                _ => parts.push(FixPart::PowerShell(vec![c])),
            },
            FixStep::Prose(p) => parts.push(FixPart::Prose(p)),
        }
    }
    parts
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
            id: String::new(),
            caused_by: None,
            caused_by_id: None,
            about: vec![],
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
        // Two root causes: the verdict says so, one line each, ordered by layer.
        assert_eq!(
            r.verdict("below"),
            "The first broken link: Driver. 2 root causes, each with its own fix:"
        );
        assert_eq!(r.root_cause_lines(), vec!["TST001 t (Driver)"; 2]);
        assert_eq!(r.summary().root_causes, vec!["TST001", "TST001"]);
        let mut platform = finding(Layer::Platform, Severity::Error);
        platform.code = "TST002".into();
        let two = [finding(Layer::Framework, Severity::Error), platform];
        let r = Report {
            snapshot: &s,
            findings: &two,
        };
        assert_eq!(r.summary().root_causes, vec!["TST002", "TST001"]);
        let one = [finding(Layer::Driver, Severity::Error)];
        let r = Report {
            snapshot: &s,
            findings: &one,
        };
        assert_eq!(
            r.verdict("below"),
            "The first broken link: Driver. Root cause: TST001 t."
        );
        assert!(r.root_cause_lines().is_empty());
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
