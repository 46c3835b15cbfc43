//! The terminal report: one section per layer, in checking order, each with what was found and
//! what is wrong, why, and what to run.

use std::fmt::Write;

use cudoctor_analyse::{Confidence, Finding, Layer, Severity};

use crate::{layer_facts, plural, Report};

/// Whether to colour. Decided by the caller (TTY, NO_COLOR), never here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    fn severity(&self, sev: Severity) -> String {
        match sev {
            Severity::Error => self.paint("1;31", "error"),
            Severity::Warning => self.paint("1;33", "warning"),
            Severity::Info => self.paint("1;36", "info"),
        }
    }
}

pub fn render_text(report: &Report, style: Style) -> String {
    let mut out = String::new();
    let s = report.snapshot;
    let _ = writeln!(
        out,
        "{}",
        style.bold(&format!("cudoctor {} — CUDA stack check", s.tool_version))
    );
    for layer in Layer::ALL {
        let facts = layer_facts(layer, s);
        let findings: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.layer == layer)
            .collect();
        if facts.is_empty() && findings.is_empty() {
            continue;
        }
        let mark = match findings.iter().map(|f| f.severity).min() {
            Some(Severity::Error) => style.paint("31", "✗"),
            Some(Severity::Warning) => style.paint("33", "!"),
            _ => style.paint("32", "✓"),
        };
        let _ = writeln!(out, "\n{mark} {}", style.bold(layer.title()));
        let width = facts
            .iter()
            .map(|f| f.label.chars().count())
            .max()
            .unwrap_or(0);
        for f in &facts {
            let _ = writeln!(out, "    {:width$}  {}", f.label, f.value, width = width);
        }
        for f in findings {
            write_finding(&mut out, f, style);
        }
    }
    let sum = report.summary();
    let _ = writeln!(out);
    let verdict = match report.first_broken_layer() {
        Some(layer) => format!("The first broken link: {layer}."),
        None if sum.warnings > 0 => "No errors; see the warnings above.".to_string(),
        None => "No problems found.".to_string(),
    };
    let _ = writeln!(
        out,
        "{} {}, {}, {}. {verdict}",
        style.bold("Summary:"),
        plural(sum.errors, "error", "errors"),
        plural(sum.warnings, "warning", "warnings"),
        plural(sum.infos, "note", "notes"),
    );
    if !report.findings.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            style.dim("Details of any code: cudoctor rule CODE")
        );
    }
    out
}

fn write_finding(out: &mut String, f: &Finding, style: Style) {
    let unsure = match f.confidence {
        Confidence::Certain => "",
        Confidence::Likely => " (likely)",
        Confidence::Unsure => " (unsure)",
    };
    let _ = writeln!(
        out,
        "\n  {}[{}] {}{}",
        style.severity(f.severity),
        f.code,
        style.bold(&f.title),
        unsure
    );
    for e in &f.evidence {
        let _ = writeln!(out, "      {} {e}", style.dim("evidence:"));
    }
    if !f.cause.is_empty() {
        let _ = writeln!(out, "      {} {}", style.dim("why:"), f.cause);
    }
    for (i, fix) in f.fix.iter().enumerate() {
        let label = if i == 0 { "fix:" } else { "    " };
        let _ = writeln!(out, "      {} {}", style.dim(label), style.paint("32", fix));
    }
}
