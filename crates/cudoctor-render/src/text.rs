//! The terminal report: one section per layer, in checking order, each with what was found and
//! what is wrong, why, and what to run.

use std::fmt::Write;

use cudoctor_analyse::{Finding, FixStep, Severity};
use cudoctor_types::inert;

use crate::{confidence_note, Report};

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
    for section in report.sections().filter(|sec| !sec.is_empty()) {
        let mark = match section.worst() {
            Some(Severity::Error) => style.paint("31", "✗"),
            Some(Severity::Warning) => style.paint("33", "!"),
            _ => style.paint("32", "✓"),
        };
        let _ = writeln!(out, "\n{mark} {}", style.bold(section.layer.title()));
        let width = section
            .facts
            .iter()
            .map(|f| inert::line(&f.label).chars().count())
            .max()
            .unwrap_or(0);
        for f in &section.facts {
            let _ = writeln!(
                out,
                "    {:width$}  {}",
                inert::line(&f.label),
                inert::line(&f.value),
                width = width
            );
        }
        for f in section.findings {
            match (&f.caused_by, &f.caused_by_id) {
                (Some(code), _) => {
                    let _ = writeln!(
                        out,
                        "\n  {}[{}] {} {}",
                        style.severity(f.severity),
                        f.code,
                        inert::line(&f.title),
                        style.dim(&format!("(because of {code}; shown under it)"))
                    );
                }
                _ => {
                    write_finding(&mut out, f, style, "  ");
                    for c in report.consequences_of(f) {
                        let _ = writeln!(
                            out,
                            "      {}",
                            style.dim(&format!("because of {}, also:", f.code))
                        );
                        write_finding(&mut out, c, style, "        ");
                    }
                }
            }
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} {}. {}",
        style.bold("Summary:"),
        report.summary().counts(),
        report.verdict("above"),
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

fn write_finding(out: &mut String, f: &Finding, style: Style, indent: &str) {
    let _ = writeln!(
        out,
        "\n{indent}{}[{}] {}{}",
        style.severity(f.severity),
        f.code,
        style.bold(&inert::line(&f.title)),
        confidence_note(f.confidence)
    );
    for e in &f.evidence {
        let _ = writeln!(
            out,
            "{indent}    {} {}",
            style.dim("evidence:"),
            inert::line(e)
        );
    }
    if !f.cause.is_empty() {
        let _ = writeln!(
            out,
            "{indent}    {} {}",
            style.dim("why:"),
            inert::line(&f.cause)
        );
    }
    // Commands in green, each line exactly as it is to be run; prose in plain words.
    for (i, step) in f.fix.iter().enumerate() {
        let label = if i == 0 { "fix:" } else { "    " };
        let text = match step {
            FixStep::Shell(c) => style.paint("32", &inert::text(c)),
            FixStep::Prose(p) => inert::line(p).into_owned(),
        };
        let _ = writeln!(out, "{indent}    {} {text}", style.dim(label));
    }
}
