//! One self-contained HTML file: the same sections as the text report, plus pictures where people
//! would rather look than read — attention time and memory against sequence length per backend,
//! all-reduce bandwidth per message size, and the GPU topology as a matrix. Inline CSS and SVG
//! only: no script, no external asset, so it opens anywhere and can be attached to a ticket.

mod attention;
mod deep_facts;
mod plots;
mod run;
mod style;
mod topology;

use std::fmt::Write;

use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::{DeepFacts, Snapshot};

use crate::{confidence_note, fix_parts, FixPart, Report};

pub use deep_facts::deep_layer_facts;
pub use run::render_run_html;

use attention::attention_section;
use plots::allreduce_svg;
use style::CSS;
use topology::topology_svg;

/// The HTML report.
pub fn render_html(report: &Report) -> String {
    let s = report.snapshot;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>cudoctor {} report</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&s.tool_version)
    );
    // The verdict first, large, in the colour of the worst finding; then which machine, when.
    let tone = match report.findings.iter().map(|f| f.severity).min() {
        Some(Severity::Error) => "error",
        Some(Severity::Warning) => "warning",
        _ => "ok",
    };
    let _ = writeln!(
        out,
        "<h1 class=\"verdict {tone}\">{}. {}</h1>",
        report.summary().counts(),
        esc(&report.verdict("below"))
    );
    let mut meta = format!("cudoctor {} — CUDA stack check", esc(&s.tool_version));
    if let Some(host) = &s.host.hostname {
        let _ = write!(meta, " · host <b>{}</b>", esc(host));
    }
    if let Some(at) = s.collected_at {
        let _ = write!(meta, " · collected {}", utc_time(at));
    }
    let _ = writeln!(out, "<p class=\"meta\">{meta}</p>");
    for section in report.sections() {
        let pictures = pictures(section.layer, s);
        if section.is_empty() && pictures.is_empty() {
            continue;
        }
        let (class, mark) = match section.worst() {
            Some(Severity::Error) => ("error", "✗"),
            Some(Severity::Warning) => ("warning", "!"),
            _ => ("ok", "✓"),
        };
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h2><span class=\"mark {class}\">{mark}</span>{}</h2>",
            section.layer.name(),
            esc(section.layer.title())
        );
        if !section.facts.is_empty() {
            out.push_str("<table class=\"facts\">\n");
            for f in &section.facts {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td></tr>",
                    esc(f.label.trim()),
                    esc(&f.value)
                );
            }
            out.push_str("</table>\n");
        }
        out.push_str(&pictures);
        for f in section.findings {
            if let Some(code) = &f.caused_by {
                let sev = f.severity.name();
                let _ = writeln!(
                    out,
                    "<div class=\"finding {sev} consequence\"><span class=\"sev {sev}\">{sev}</span> <a class=\"code\" href=\"#rule-{}\">[{}]</a> <span class=\"title\">{}</span> (because of {}, shown under it)</div>",
                    esc(&f.code),
                    esc(&f.code),
                    esc(&f.title),
                    esc(code)
                );
                continue;
            }
            write_finding(&mut out, f, &report.consequences_of(f));
        }
        out.push_str("</section>\n");
    }
    out.push_str("<p class=\"note\">Details of any code: <code>cudoctor rule CODE</code>. Timings are medians; memory is what a call added at its peak.</p>\n");
    rule_pages(&mut out, report.findings);
    out.push_str("</body>\n</html>\n");
    out
}

/// Each finding's rule, once, as the page `cudoctor rule CODE` prints (what it checks, why it
/// matters, how to fix), inside the file: a finding's code links here (`#rule-CODE`).
fn rule_pages(out: &mut String, findings: &[Finding]) {
    let mut codes: Vec<&str> = findings.iter().map(|f| f.code.as_str()).collect();
    codes.sort_unstable();
    codes.dedup();
    let pages: Vec<(&str, &cudoctor_analyse::Rule)> = codes
        .into_iter()
        .filter_map(|c| cudoctor_analyse::rule_by_code(c).map(|r| (c, r)))
        .collect();
    if pages.is_empty() {
        return;
    }
    out.push_str("<section id=\"rules\">\n<h2>Rules</h2>\n");
    for (code, r) in pages {
        let _ = writeln!(
            out,
            "<div class=\"rule\" id=\"rule-{}\">\n<h3>{} ({}) — {}</h3>",
            esc(code),
            esc(code),
            esc(r.name),
            esc(r.summary)
        );
        let mut paragraph: Vec<&str> = Vec::new();
        let flush = |out: &mut String, p: &mut Vec<&str>| {
            if !p.is_empty() {
                let _ = writeln!(out, "<p>{}</p>", esc(&p.join(" ")));
                p.clear();
            }
        };
        for line in r.docs.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                flush(out, &mut paragraph);
                let _ = writeln!(out, "<h4>{}</h4>", esc(h));
            } else if line.trim().is_empty() {
                flush(out, &mut paragraph);
            } else {
                paragraph.push(line.trim());
            }
        }
        flush(out, &mut paragraph);
        out.push_str("</div>\n");
    }
    out.push_str("</section>\n");
}

/// Seconds since the Unix epoch as `2026-12-04 16:50 UTC`.
fn utc_time(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02} UTC")
}

fn write_finding(out: &mut String, f: &Finding, consequences: &[&Finding]) {
    let sev = f.severity.name();
    let _ = writeln!(
        out,
        "<div class=\"finding {sev}\"><span class=\"sev {sev}\">{sev}</span> <a class=\"code\" href=\"#rule-{}\">[{}]</a> <span class=\"title\">{}{}</span>",
        esc(&f.code),
        esc(&f.code),
        esc(&f.title),
        confidence_note(f.confidence)
    );
    if !f.evidence.is_empty() {
        out.push_str("<ul>");
        for e in &f.evidence {
            let _ = write!(out, "<li>{}</li>", esc(e));
        }
        out.push_str("</ul>\n");
    }
    if !f.cause.is_empty() {
        let _ = writeln!(out, "<div><b>Why:</b> {}</div>", esc(&f.cause));
    }
    if !f.fix.is_empty() {
        out.push_str("<div><b>Fix:</b></div>\n");
        // Each <pre> holds commands only, so it pastes into a shell as it is.
        for part in fix_parts(&f.fix) {
            match part {
                FixPart::Prose(p) => {
                    let _ = writeln!(out, "<p>{}</p>", esc(p));
                }
                FixPart::Commands(cmds) => {
                    let block = cmds.join("\n");
                    let _ = writeln!(
                        out,
                        "<pre>{}</pre>",
                        cudoctor_types::inert::html(&block, true)
                    );
                }
                FixPart::PowerShell(cmds) => {
                    let block = cmds.join("\n");
                    let _ = writeln!(
                        out,
                        "<pre class=\"powershell\">{}</pre>",
                        cudoctor_types::inert::html(&block, true)
                    );
                }
            }
        }
    }
    if !consequences.is_empty() {
        let _ = writeln!(out, "<div><b>Because of {}, also:</b></div>", esc(&f.code));
        for c in consequences {
            write_finding(out, c, &[]);
        }
    }
    out.push_str("</div>\n");
}

/// The plots of a layer.
fn pictures(layer: Layer, s: &Snapshot) -> String {
    let mut out = String::new();
    match layer {
        Layer::Acceleration => {
            for r in s.deep.iter().flat_map(DeepFacts::results).map(|(_, r)| r) {
                if let Some(sdpa) = &r.sdpa {
                    out.push_str(&attention_section(r, sdpa));
                }
            }
        }
        Layer::Multigpu => {
            let mut plots = String::new();
            if let Some(t) = s.multigpu.as_ref().and_then(|m| m.topology.as_ref()) {
                if t.gpus.len() >= 2 {
                    plots.push_str(&topology_svg(t));
                }
            }
            for ar in s
                .deep
                .iter()
                .flat_map(DeepFacts::results)
                .filter_map(|(_, r)| r.all_reduce.as_ref())
            {
                if ar.results.iter().any(|x| x.busbw_gbps.is_some()) {
                    plots.push_str(&allreduce_svg(ar));
                }
            }
            if !plots.is_empty() {
                let _ = writeln!(out, "<div class=\"plots\">{plots}</div>");
            }
        }
        _ => {}
    }
    out
}

/// Escapes text for HTML content and attribute values (markup as entities, control characters
/// and newlines as visible escapes).
pub(crate) fn esc(s: &str) -> String {
    cudoctor_types::inert::html(s, false)
}

#[cfg(test)]
mod tests;
