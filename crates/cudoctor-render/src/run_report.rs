//! `cudoctor run`'s report as text (the summary printed when the command ends) and Markdown.

use std::fmt::Write;

use cudoctor_analyse::{Finding, Severity};
use cudoctor_run::compare::{describe, value};

use crate::{fix_parts, FixPart};
use cudoctor_run::{backend_name, shell_words, RunReport, Trend};

/// One line per key number: attention backends, steps, memory, compile, collectives.
pub fn run_key_lines(r: &RunReport) -> Vec<(String, String)> {
    let s = &r.summary;
    let mut lines = Vec::new();
    let mut procs = format!("{} Python", s.processes);
    if s.processes != s.torch_processes {
        procs.push_str(&format!(", {} with torch", s.torch_processes));
    }
    lines.push(("processes".to_string(), procs));
    // Records not read (past a cap, damaged): the report is of the others. With no record at
    // all, RUN005 names them.
    if s.processes > 0 {
        if let Some(first) = r.facts.unreadable.first() {
            let more = r.facts.unreadable.len() - 1;
            let rest = if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            };
            lines.push(("not read".to_string(), format!("{first}{rest}")));
        }
    }
    if s.attention_calls > 0 {
        let shares: Vec<String> = s
            .backends
            .iter()
            .map(|b| format!("{} {:.0}%", backend_name(b.backend), b.share * 100.0))
            .collect();
        lines.push((
            "attention".to_string(),
            format!("{} calls: {}", s.attention_calls, shares.join(", ")),
        ));
    }
    if s.extension_calls > 0 {
        let mut parts: Vec<String> = Vec::new();
        for p in &r.facts.processes {
            for e in &p.extensions {
                let t = format!("{}.{} ({})", e.library, e.function, e.dtype);
                if !parts.contains(&t) {
                    parts.push(t);
                }
            }
        }
        lines.push((
            "extensions".to_string(),
            format!("{} calls: {}", s.extension_calls, parts.join(", ")),
        ));
    }
    if s.steps > 0 {
        let mut t = format!("{} ({})", s.steps, s.step_source);
        if let Some(m) = s.median_step_ms {
            t.push_str(&format!(", median {}", value(m, "ms")));
        }
        if let Some(p) = s.p90_step_ms {
            t.push_str(&format!(", p90 {}", value(p, "ms")));
        }
        lines.push(("steps".to_string(), t));
    }
    if let Some(ms) = s.observer_ms_per_step {
        let own = if ms < 1.0 {
            format!("{:.0} µs", ms * 1000.0)
        } else {
            value(ms, "ms")
        };
        let mut t = format!("{own} of its own per step");
        if let Some(share) = s.observer_share_of_step {
            t.push_str(&format!(" ({:.1}% of the median step)", share * 100.0));
        }
        let sites: Vec<String> = s
            .observer_sites
            .iter()
            .filter(|x| x.us_per_step >= 0.5)
            .take(3)
            .map(|x| format!("{} {:.0} µs", x.site.replace('_', " "), x.us_per_step))
            .collect();
        if !sites.is_empty() {
            t.push_str(&format!(": {}", sites.join(", ")));
        }
        lines.push(("observer".to_string(), t));
    }
    if let Some(p) = s.peak_allocated_mib {
        lines.push((
            "CUDA memory".to_string(),
            format!(
                "peak {} allocated, {} reserved",
                value(p, "MiB"),
                s.peak_reserved_mib
                    .map(|x| value(x, "MiB"))
                    .unwrap_or_else(|| "?".into())
            ),
        ));
    }
    if let Some(c) = r
        .facts
        .processes
        .iter()
        .filter_map(|p| p.compile.as_ref())
        .max_by_key(|c| c.compilations)
    {
        let mut t = format!(
            "{} graphs, {} graph break{}, {} recompilation{}",
            s.compiled_graphs,
            s.graph_breaks,
            if s.graph_breaks == 1 { "" } else { "s" },
            s.recompilations,
            if s.recompilations == 1 { "" } else { "s" }
        );
        if let Some(k) = c.generated_kernels {
            t.push_str(&format!(", {k} kernels generated"));
        }
        if let Some(secs) = c.compile_s {
            t.push_str(&format!(", {secs:.1} s compiling"));
        }
        lines.push(("torch.compile".to_string(), t));
    }
    if let Some(n) = s.nccl_ms_per_step {
        lines.push(("NCCL".to_string(), format!("{} per step", value(n, "ms"))));
    }
    lines
}

/// "exit 0", "exit 3", "killed by signal 15".
/// Each attention call group of the run, with the process that made it, process by process.
pub fn attention_groups(
    r: &RunReport,
) -> Vec<(
    &cudoctor_snapshot::ProcessRecord,
    &cudoctor_snapshot::SdpaGroup,
)> {
    r.facts
        .processes
        .iter()
        .flat_map(|p| p.sdpa.groups.iter().map(move |g| (p, g)))
        .collect()
}

pub fn exit_words(r: &RunReport) -> String {
    let e = &r.facts.exit;
    match (e.code, e.signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "exit unknown".to_string(),
    }
}

/// The summary printed when the command ends.
pub fn render_run_text(r: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "cudoctor run: {} — {}, {:.1} s",
        shell_words(&r.facts.command),
        exit_words(r),
        r.facts.wall_s
    );
    for (k, v) in run_key_lines(r) {
        let _ = writeln!(out, "  {k:<14}{v}");
    }
    if r.findings.is_empty() {
        let _ = writeln!(out, "  no findings");
    }
    for f in &r.findings {
        let mark = match f.severity {
            Severity::Error => "✗",
            Severity::Warning => "!",
            Severity::Info => "i",
        };
        let _ = writeln!(out, "  {mark} [{}] {}", f.code, f.title);
        for e in &f.evidence {
            let _ = writeln!(out, "      {e}");
        }
        if !f.cause.is_empty() {
            let _ = writeln!(out, "      why: {}", f.cause);
        }
        for x in &f.fix {
            let _ = writeln!(out, "      fix: {}", x.text());
        }
    }
    if let Some(c) = &r.comparison {
        let _ = writeln!(
            out,
            "  against the baseline ({}): {}",
            shell_words(&c.baseline_command),
            c.verdict.word().to_uppercase()
        );
        for ch in &c.changes {
            let mark = match ch.trend {
                Trend::Worse => "worse",
                Trend::Better => "better",
                Trend::Same => "same",
                Trend::Unknown => "?",
            };
            let _ = writeln!(out, "      {mark:<7}{}", describe(ch));
        }
    }
    out
}

/// The Markdown report, for pasting into an issue.
pub fn render_run_markdown(r: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# cudoctor run: `{}`\n", shell_words(&r.facts.command));
    let _ = writeln!(
        out,
        "{}, {:.1} s, cudoctor {}.\n",
        exit_words(r),
        r.facts.wall_s,
        r.tool_version
    );
    out.push_str("| | |\n|---|---|\n");
    for (k, v) in run_key_lines(r) {
        let _ = writeln!(out, "| {k} | {} |", cudoctor_types::inert::markdown(&v));
    }
    out.push('\n');
    let groups = attention_groups(r);
    if !groups.is_empty() {
        out.push_str("## Attention calls\n\n| process | inputs | calls | backend | operators torch dispatched |\n|---|---|---|---|---|\n");
        for (p, g) in groups {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | `{}` |",
                p.label(),
                g.describe(),
                g.calls,
                backend_name(g.backend()),
                g.dispatched_ops.join(", ")
            );
        }
        out.push('\n');
    }
    out.push_str("## Findings\n\n");
    if r.findings.is_empty() {
        out.push_str("None.\n\n");
    }
    for f in &r.findings {
        markdown_finding(&mut out, f);
    }
    if let Some(c) = &r.comparison {
        let _ = writeln!(
            out,
            "## Against the baseline: **{}**\n\nBaseline: `{}`\n\n| metric | before | after | |\n|---|---|---|---|",
            c.verdict.word(),
            shell_words(&c.baseline_command)
        );
        for ch in &c.changes {
            let v = |x: Option<f64>| x.map(|x| value(x, &ch.unit)).unwrap_or_else(|| "?".into());
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:?} |",
                ch.metric,
                v(ch.before),
                v(ch.after),
                ch.trend
            );
        }
        out.push('\n');
    }
    out
}

fn markdown_finding(out: &mut String, f: &Finding) {
    let _ = writeln!(out, "### {} [{}] {}\n", f.severity.name(), f.code, f.title);
    for e in &f.evidence {
        let _ = writeln!(out, "- {e}");
    }
    if !f.cause.is_empty() {
        let _ = writeln!(out, "\n{}\n", f.cause);
    }
    for part in fix_parts(&f.fix) {
        match part {
            FixPart::Prose(p) => {
                let _ = writeln!(out, "{p}\n");
            }
            FixPart::Commands(cmds) => {
                let _ = writeln!(out, "```sh\n{}\n```\n", cmds.join("\n"));
            }
            FixPart::PowerShell(cmds) => {
                let _ = writeln!(out, "```powershell\n{}\n```\n", cmds.join("\n"));
            }
        }
    }
}
