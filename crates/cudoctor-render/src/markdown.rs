//! A report to paste into a GitHub issue: headings per layer, facts as a table, fixes in code blocks.

use std::fmt::Write;

use cudoctor_types::inert;

use crate::{fix_parts, FixPart, Report};

pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    let s = report.snapshot;
    let _ = writeln!(out, "## cudoctor {} report\n", s.tool_version);
    let _ = writeln!(
        out,
        "**{}**{}\n",
        report.summary().counts(),
        report
            .first_broken_layer()
            .map(|l| format!(" — first broken link: {l}"))
            .unwrap_or_default()
    );
    let roots = report.root_cause_lines();
    if !roots.is_empty() {
        let _ = writeln!(out, "Root causes, each with its own fix:\n");
        for l in &roots {
            let _ = writeln!(out, "- {}", inert::markdown(l));
        }
        let _ = writeln!(out);
    } else if let Some(root) = report.first_root_cause() {
        let _ = writeln!(
            out,
            "Root cause: `{}` {}\n",
            root.code,
            inert::markdown(&root.title)
        );
    }
    for section in report.sections().filter(|sec| !sec.is_empty()) {
        let _ = writeln!(out, "### {}\n", section.layer.title());
        if !section.facts.is_empty() {
            let _ = writeln!(out, "| | |\n|---|---|");
            for f in &section.facts {
                let _ = writeln!(out, "| {} | {} |", cell(f.label.trim()), cell(&f.value));
            }
            let _ = writeln!(out);
        }
        for f in section.findings {
            if let Some(code) = &f.caused_by {
                let _ = writeln!(
                    out,
                    "- **{}** `{}` {} (because of `{code}`, shown under it)",
                    f.severity.name(),
                    f.code,
                    inert::markdown(&f.title)
                );
                continue;
            }
            write_finding(&mut out, f, "");
            for c in report.consequences_of(f) {
                let _ = writeln!(out, "  - because of `{}`, also:", f.code);
                write_finding(&mut out, c, "    ");
            }
        }
        let _ = writeln!(out);
    }
    out
}

/// The report as a block for a GitHub issue: the verdict on the line shown while collapsed
/// (`<details>`), the layers inside; `build` names the build that judged ("cudoctor 0.1.0
/// (commit ..., ...)").
pub fn render_issue_markdown(report: &Report, build: &str) -> String {
    let verdict = format!(
        "{}{}",
        report.summary().counts(),
        report
            .first_broken_layer()
            .map(|l| format!(" — first broken link: {l}"))
            .unwrap_or_default()
    );
    format!(
        "<details>\n<summary><b>cudoctor check</b>: {}</summary>\n\n{}\n<sub>{}</sub>\n\n</details>\n",
        inert::markdown(&verdict),
        render_markdown(report).trim_end(),
        inert::markdown(build)
    )
}

fn write_finding(out: &mut String, f: &cudoctor_analyse::Finding, indent: &str) {
    let _ = writeln!(
        out,
        "{indent}- **{}** `{}` {}",
        f.severity.name(),
        f.code,
        inert::markdown(&f.title)
    );
    for e in &f.evidence {
        let _ = writeln!(out, "{indent}  - evidence: {}", inline(e));
    }
    if !f.cause.is_empty() {
        let _ = writeln!(out, "{indent}  - why: {}", inert::markdown(&f.cause));
    }
    if f.fix.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}  - fix:");
    // Commands go into code blocks that hold nothing else, so each block pastes into a shell.
    for part in fix_parts(&f.fix) {
        let lang = if matches!(part, FixPart::PowerShell(_)) {
            "powershell"
        } else {
            "sh"
        };
        match part {
            FixPart::Prose(p) => {
                let _ = writeln!(out, "{indent}    - {}", inert::markdown(p));
            }
            FixPart::Commands(cmds) | FixPart::PowerShell(cmds) => {
                // A fence longer than any backtick run inside, so no command line ends it.
                let fence = inert::markdown_fence(&cmds.concat());
                let _ = writeln!(out, "\n{indent}    {fence}{lang}");
                for c in cmds {
                    for line in c.lines() {
                        let _ = writeln!(out, "{indent}    {}", inert::line(line));
                    }
                }
                let _ = writeln!(out, "{indent}    {fence}\n");
            }
        }
    }
}

/// A table cell: one line, rendering as its literal text.
fn cell(s: &str) -> String {
    inert::markdown(s)
}

fn inline(s: &str) -> String {
    inert::markdown_code(s)
}
