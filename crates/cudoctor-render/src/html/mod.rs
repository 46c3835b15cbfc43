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
    let _ = writeln!(
        out,
        "<h1>cudoctor {} — CUDA stack check</h1>",
        esc(&s.tool_version)
    );
    let _ = writeln!(
        out,
        "<p class=\"summary\">{}. {}</p>",
        report.summary().counts(),
        esc(&report.verdict("below"))
    );
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
                    "<div class=\"finding {sev} consequence\"><span class=\"sev {sev}\">{sev}</span> <span class=\"code\">[{}]</span> <span class=\"title\">{}</span> (because of {}, shown under it)</div>",
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
    out.push_str("</body>\n</html>\n");
    out
}

fn write_finding(out: &mut String, f: &Finding, consequences: &[&Finding]) {
    let sev = f.severity.name();
    let _ = writeln!(
        out,
        "<div class=\"finding {sev}\"><span class=\"sev {sev}\">{sev}</span> <span class=\"code\">[{}]</span> <span class=\"title\">{}{}</span>",
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
