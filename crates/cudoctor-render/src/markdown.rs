//! A report to paste into a GitHub issue: headings per layer, facts as a table, fixes in code blocks.

use std::fmt::Write;

use crate::Report;

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
            let _ = writeln!(out, "- **{}** `{}` {}", f.severity.name(), f.code, f.title);
            for e in &f.evidence {
                let _ = writeln!(out, "  - evidence: {}", inline(e));
            }
            if !f.cause.is_empty() {
                let _ = writeln!(out, "  - why: {}", f.cause);
            }
            if !f.fix.is_empty() {
                let _ = writeln!(out, "  - fix:\n\n    ```sh");
                for fix in &f.fix {
                    let _ = writeln!(out, "    {fix}");
                }
                let _ = writeln!(out, "    ```\n");
            }
        }
        let _ = writeln!(out);
    }
    out
}

/// A table cell: pipes escaped, code-formatted when it looks like a path or version.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn inline(s: &str) -> String {
    format!("`{}`", s.replace('`', "'"))
}
