//! The terminal report: one section per layer, in checking order, each with what was found and
//! what is wrong, why, and what to run. Laid out for the terminal's width (`layout::width`): the verdict first, the
//! environments' directories once as a legend, prose wrapped, long commands continued.

use std::fmt::Write;

use cudoctor_analyse::{Finding, FixStep, Severity};
use cudoctor_types::inert;

use crate::layout::{continue_command, visible_len, width, wrap, Legend};
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
    let legend = env_legend(report);
    let _ = writeln!(
        out,
        "{}",
        style.bold(&format!("cudoctor {} — CUDA stack check", s.tool_version))
    );
    let verdict = format!("{}. {}", report.summary().counts(), report.verdict("below"));
    let _ = writeln!(
        out,
        "{}",
        wrap(
            &format!("{} ", style.bold("Verdict:")),
            "    ",
            &verdict,
            width()
        )
    );
    for l in report.root_cause_lines() {
        let _ = writeln!(out, "{}", wrap("  - ", "      ", &l, width()));
    }
    let sections: Vec<_> = report.sections().filter(|sec| !sec.is_empty()).collect();
    let shown: Vec<String> = sections
        .iter()
        .flat_map(|sec| {
            sec.facts
                .iter()
                .map(|f| f.value.clone())
                .chain(sec.findings.iter().flat_map(|f| {
                    f.evidence
                        .iter()
                        .cloned()
                        .chain([f.title.clone(), f.cause.clone()])
                        .chain(f.fix.iter().filter_map(|st| match st {
                            FixStep::Prose(p) => Some(p.clone()),
                            FixStep::Shell(_) | FixStep::PowerShell(_) => None,
                        }))
                }))
        })
        .collect();
    for l in legend.lines(shown.iter().map(String::as_str)) {
        let _ = writeln!(out, "{}", style.dim(&l));
    }
    for section in sections {
        let nothing_found = !section.facts.is_empty() && section.facts.iter().all(|f| f.absent);
        let mark = match section.worst() {
            Some(Severity::Error) => style.paint("31", "✗"),
            Some(Severity::Warning) => style.paint("33", "!"),
            _ if nothing_found => style.dim("–"),
            _ => style.paint("32", "✓"),
        };
        let _ = writeln!(out, "\n{mark} {}", style.bold(section.layer.title()));
        let label_width = section
            .facts
            .iter()
            .map(|f| inert::line(&f.label).chars().count())
            .max()
            .unwrap_or(0);
        let hang = " ".repeat(4 + label_width + 2);
        for f in &section.facts {
            let head = format!("    {:label_width$}  ", inert::line(&f.label));
            let _ = writeln!(
                out,
                "{}",
                wrap(
                    &head,
                    &hang,
                    &legend.shorten(&inert::line(&f.value)),
                    width()
                )
            );
        }
        for f in &section.findings {
            match (&f.caused_by, &f.caused_by_id) {
                (Some(code), _) => {
                    let head = format!("\n  {}[{}] ", style.severity(f.severity), f.code);
                    let title = format!(
                        "{} {}",
                        legend.shorten(&inert::line(&f.title)),
                        style.dim(&format!("(because of {code}; shown under it)"))
                    );
                    let _ = writeln!(out, "{}", wrap(&head, "      ", &title, width()));
                }
                _ => {
                    write_finding(&mut out, f, style, "  ", &legend);
                    for c in report.consequences_of(f) {
                        let _ = writeln!(
                            out,
                            "      {}",
                            style.dim(&format!("because of {}, also:", f.code))
                        );
                        write_finding(&mut out, c, style, "        ", &legend);
                    }
                }
            }
        }
    }
    let _ = writeln!(out);
    let summary = format!("{}. {}", report.summary().counts(), report.verdict("above"));
    let _ = writeln!(
        out,
        "{}",
        wrap(
            &format!("{} ", style.bold("Summary:")),
            "    ",
            &summary,
            width()
        )
    );
    for l in report.root_cause_lines() {
        let _ = writeln!(out, "{}", wrap("  - ", "      ", &l, width()));
    }
    if !report.findings.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            style.dim("Details of any code: cudoctor rule CODE")
        );
    }
    out
}

/// `<env>` for the environment torch is judged in (the first with torch, else the first),
/// `<env2>`.. for the others, and `<site>` for its site-packages directory.
fn env_legend(report: &Report) -> Legend {
    let s = report.snapshot;
    let mut envs: Vec<_> = s.python_envs.iter().collect();
    envs.sort_by_key(|e| e.torch.is_none());
    let mut legend = Legend::default();
    for (i, e) in envs.iter().enumerate() {
        let n = if i == 0 {
            String::new()
        } else {
            (i + 1).to_string()
        };
        legend.add(&format!("<env{n}>"), &e.prefix);
        if let Some(site) = e.site_packages.first() {
            legend.add(&format!("<site{n}>"), site);
        }
    }
    legend
}

fn write_finding(out: &mut String, f: &Finding, style: Style, indent: &str, legend: &Legend) {
    let head = format!("\n{indent}{}[{}] ", style.severity(f.severity), f.code);
    let title = format!(
        "{}{}",
        style.bold(&legend.shorten(&inert::line(&f.title))),
        confidence_note(f.confidence)
    );
    let _ = writeln!(
        out,
        "{}",
        wrap(&head, &format!("{indent}    "), &title, width())
    );
    let labelled = |out: &mut String, label: &str, text: &str| {
        let head = format!("{indent}    {} ", style.dim(label));
        let hang = " ".repeat(indent.len() + 4 + label.chars().count() + 1);
        let _ = writeln!(
            out,
            "{}",
            wrap(&head, &hang, &legend.shorten(&inert::line(text)), width())
        );
    };
    for e in &f.evidence {
        labelled(out, "evidence:", e);
    }
    if !f.cause.is_empty() {
        labelled(out, "why:", &f.cause);
    }
    // Commands after a `$ ` prompt (in green), exactly as they are to be run: a command's
    // further lines, and a long one-line command's continuations (` \`), deeper than the
    // prompt; never shortened by the legend. Prose in plain words, never after a prompt,
    // wrapped. So a reader (or a test) tells which lines to paste: see [`fix_lines`].
    for (i, step) in f.fix.iter().enumerate() {
        let label = if i == 0 { "fix:" } else { "    " };
        let head = format!("{indent}    {} ", style.dim(label));
        let hang = " ".repeat(indent.len() + 9);
        match step {
            FixStep::Shell(c) => {
                let c = inert::text(c);
                let pieces: Vec<String> = if c.contains('\n') {
                    c.lines()
                        .enumerate()
                        .map(|(j, l)| {
                            if j == 0 {
                                format!("$ {l}")
                            } else {
                                format!("  {l}")
                            }
                        })
                        .collect()
                } else {
                    let room = width().saturating_sub(visible_len(&head)).max(40);
                    continue_command("$ ", "    ", &c, room)
                };
                for (j, piece) in pieces.iter().enumerate() {
                    let lead = if j == 0 { head.as_str() } else { hang.as_str() };
                    let _ = writeln!(out, "{lead}{}", style.paint("32", piece));
                }
            }
            FixStep::PowerShell(c) => {
                // After PowerShell's own prompt, on one line (its continuation mark differs).
                let c = inert::line(c);
                let _ = writeln!(out, "{head}{}", style.paint("32", &format!("PS> {c}")));
            }
            FixStep::Prose(p) => {
                // Continued two columns deeper, as a command is: a new step starts at `hang`.
                let deeper = format!("{hang}  ");
                let _ = writeln!(
                    out,
                    "{}",
                    wrap(&head, &deeper, &legend.shorten(&inert::line(p)), width())
                );
            }
        }
    }
}

/// A fix line of a plain-text report, read back: a command (after its `$ ` prompt, with its
/// further lines) or prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixLine {
    Shell(String),
    /// A PowerShell command (after its `PS> ` prompt).
    PowerShell(String),
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
            // A command's further line (or its ` \` continuation), or wrapped prose.
            match fixes.last_mut() {
                Some(FixLine::Shell(c)) => {
                    c.push('\n');
                    c.push_str(&line[col + 2..]);
                }
                Some(FixLine::Prose(p)) => {
                    p.push(' ');
                    p.push_str(body);
                }
                Some(FixLine::PowerShell(_)) | None => column = None,
            }
        } else {
            column = None;
        }
    }
    fixes
}

fn typed(text: &str) -> FixLine {
    if let Some(c) = text.strip_prefix("PS> ") {
        return FixLine::PowerShell(c.to_string());
    }
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
        let long_prose = "Then restart the kernel, ".repeat(8);
        let long_prose = long_prose.trim_end();
        let long_command = format!(
            "uv pip install --python '/v/bin/python' {}",
            (0..12)
                .map(|i| format!("'nvidia-package-number-{i}==1.2.3'"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let wrapped = vec![
            FixStep::Prose(long_prose.into()),
            FixStep::Shell(long_command.clone()),
            FixStep::Prose("Done.".into()),
        ];
        let findings = [
            finding("FW002", root.clone(), None),
            finding("LIB001", vec![], Some("FW002")),
            finding(
                "FW004",
                vec![FixStep::Prose("$5 is not a prompt".into())],
                None,
            ),
            finding("FW005", wrapped, None),
        ];
        let r = Report {
            snapshot: &s,
            findings: &findings,
        };
        let text = render_text(&r, Style { color: false });
        assert!(text.contains("fix: $ uv pip install"), "{text}");
        let mut got = fix_lines(&text);
        assert_eq!(got.len(), 7, "{text}");
        // The long command was continued (` \`), and reads back as the same words.
        let FixLine::Shell(continued) = got.remove(5) else {
            panic!("{got:?}")
        };
        assert!(continued.contains(" \\\n"), "{text}");
        assert_eq!(
            continued
                .split_whitespace()
                .filter(|w| *w != "\\")
                .collect::<Vec<_>>(),
            long_command.split_whitespace().collect::<Vec<_>>()
        );
        assert!(text.lines().all(|l| l.chars().count() <= width()), "{text}");
        assert_eq!(
            got,
            vec![
                FixLine::Shell("uv pip install --python '/v/bin/python' 'torch==2.9.1'".into()),
                FixLine::Prose("Then restart the kernel.".into()),
                FixLine::Shell("cat <<'END' > '/etc/x'\n  indented line\nEND".into()),
                FixLine::Prose("$5 is not a prompt".into()),
                FixLine::Prose(long_prose.into()),
                FixLine::Prose("Done.".into()),
            ],
            "{text}"
        );
    }
}
