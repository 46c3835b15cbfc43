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
    // Commands after a `$ ` prompt (in green), exactly as they are to be run, a command's
    // further lines two columns deeper; prose in plain words, never after a prompt. So a
    // reader (or a test) tells which lines to paste: see [`fix_lines`].
    for (i, step) in f.fix.iter().enumerate() {
        let label = if i == 0 { "fix:" } else { "    " };
        let text = match step {
            FixStep::Shell(c) => {
                let c = inert::text(c);
                let mut lines = c.lines();
                let mut shown = format!("$ {}", lines.next().unwrap_or_default());
                for more in lines {
                    let _ = write!(shown, "\n{indent}           {more}");
                }
                style.paint("32", &shown)
            }
            FixStep::Prose(p) => inert::line(p).into_owned(),
        };
        let _ = writeln!(out, "{indent}    {} {text}", style.dim(label));
    }
}

/// A fix line of a plain-text report, read back: a command (after its `$ ` prompt, with its
/// further lines) or prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixLine {
    Shell(String),
    Prose(String),
}

/// The fixes of a plain-text report (without colour), in order, typed as they were written:
/// the inverse of the report's fix layout, for tests and tools that read the text.
pub fn fix_lines(report: &str) -> Vec<FixLine> {
    let mut fixes = Vec::new();
    // The column fix texts start at, while inside one finding's fix list.
    let mut column: Option<usize> = None;
    for line in report.lines() {
        let lead = line.len() - line.trim_start().len();
        let body = line.trim_start();
        if let Some(rest) = body.strip_prefix("fix: ") {
            column = Some(lead + "fix: ".len());
            fixes.push(typed(rest));
            continue;
        }
        let Some(col) = column else { continue };
        if body.is_empty() || lead < col {
            column = None;
        } else if lead == col {
            fixes.push(typed(body));
        } else if lead >= col + 2 {
            if let Some(FixLine::Shell(c)) = fixes.last_mut() {
                c.push('\n');
                c.push_str(&line[col + 2..]);
            } else {
                column = None;
            }
        } else {
            column = None;
        }
    }
    fixes
}

fn typed(text: &str) -> FixLine {
    match text.strip_prefix("$ ") {
        Some(c) => FixLine::Shell(c.to_string()),
        None => FixLine::Prose(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_analyse::{Confidence, Layer};
    use cudoctor_snapshot::Snapshot;

    fn finding(code: &str, fix: Vec<FixStep>, caused_by: Option<&str>) -> Finding {
        Finding {
            code: code.into(),
            layer: Layer::Framework,
            severity: Severity::Error,
            title: "t".into(),
            evidence: vec!["e".into()],
            cause: "c".into(),
            fix,
            confidence: Confidence::Certain,
            id: code.into(),
            caused_by: caused_by.map(Into::into),
            caused_by_id: caused_by.map(Into::into),
            about: vec![],
        }
    }

    /// What the text shows of each fix step reads back as the same typed step, also for a
    /// root's folded consequence and for a command of several lines.
    #[test]
    fn fix_lines_read_back_as_written() {
        let s = Snapshot::new("0.1.0", "/");
        let root = vec![
            FixStep::Shell("uv pip install --python '/v/bin/python' 'torch==2.9.1'".into()),
            FixStep::Prose("Then restart the kernel.".into()),
            FixStep::Shell("cat <<'END' > '/etc/x'\n  indented line\nEND".into()),
        ];
        let findings = [
            finding("FW002", root.clone(), None),
            finding("LIB001", vec![], Some("FW002")),
            finding(
                "FW004",
                vec![FixStep::Prose("$5 is not a prompt".into())],
                None,
            ),
        ];
        let r = Report {
            snapshot: &s,
            findings: &findings,
        };
        let text = render_text(&r, Style { color: false });
        assert!(text.contains("fix: $ uv pip install"), "{text}");
        let got = fix_lines(&text);
        assert_eq!(
            got,
            vec![
                FixLine::Shell("uv pip install --python '/v/bin/python' 'torch==2.9.1'".into()),
                FixLine::Prose("Then restart the kernel.".into()),
                FixLine::Shell("cat <<'END' > '/etc/x'\n  indented line\nEND".into()),
                FixLine::Prose("$5 is not a prompt".into()),
            ],
            "{text}"
        );
    }
}
