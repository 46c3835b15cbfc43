//! One self-contained HTML file: the same sections as the text report, plus pictures where people
//! would rather look than read — attention time and memory against sequence length per backend,
//! all-reduce bandwidth per message size, and the GPU topology as a matrix. Inline CSS and SVG
//! only: no script, no external asset, so it opens anywhere and can be attached to a ticket.

use std::fmt::Write;

use cudoctor_analyse::{Confidence, Finding, Layer, Severity};
use cudoctor_snapshot::{
    AllReduceProbe, LinkClass, ProbeResult, ProbeRun, SdpaBackend, SdpaProbe, SdpaRun, Snapshot,
    Topology,
};

use crate::{layer_facts, plural, Fact, Report};

const CSS: &str = r#"
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dee8; --bg:#ffffff; --card:#f6f8fb;
        --err:#c62828; --warn:#b26a00; --info:#1565c0; --ok:#2e7d32; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1100px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 16px 0 6px; }
.summary { color: var(--muted); margin-bottom: 8px; }
.mark { display: inline-block; width: 1.3em; font-weight: 700; }
.mark.error { color: var(--err); } .mark.warning { color: var(--warn); } .mark.ok { color: var(--ok); }
table { border-collapse: collapse; margin: 6px 0 10px; }
td, th { padding: 3px 10px 3px 0; vertical-align: top; text-align: left; }
th { color: var(--muted); font-weight: 600; }
table.facts td:first-child { color: var(--muted); white-space: nowrap; }
table.grid td, table.grid th { border-bottom: 1px solid var(--line); padding: 3px 10px; }
table.grid td.num { text-align: right; font-variant-numeric: tabular-nums; }
.finding { border-left: 4px solid var(--line); background: var(--card); padding: 8px 12px; margin: 10px 0; border-radius: 3px; }
.finding.error { border-left-color: var(--err); } .finding.warning { border-left-color: var(--warn); }
.finding.info { border-left-color: var(--info); }
.sev { font-weight: 700; text-transform: uppercase; font-size: 11px; letter-spacing: .04em; }
.sev.error { color: var(--err); } .sev.warning { color: var(--warn); } .sev.info { color: var(--info); }
.code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; color: var(--muted); }
.title { font-weight: 600; }
.finding ul { margin: 4px 0; padding-left: 18px; }
pre { background: #eef1f6; padding: 6px 10px; border-radius: 3px; overflow-x: auto; margin: 4px 0;
      font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; } figcaption { color: var(--muted); font-size: 12px; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.note { color: var(--muted); font-size: 12px; }
"#;

/// Backend colours, the same in every plot.
fn colour(b: Option<SdpaBackend>) -> &'static str {
    match b {
        Some(SdpaBackend::FlashAttention) => "#1565c0",
        Some(SdpaBackend::EfficientAttention) => "#2e7d32",
        Some(SdpaBackend::CudnnAttention) => "#6a1b9a",
        Some(SdpaBackend::Math) => "#c62828",
        Some(SdpaBackend::Unknown) => "#777777",
        None => "#111111",
    }
}

/// The HTML report.
pub fn render_html(report: &Report) -> String {
    let s = report.snapshot;
    let sum = report.summary();
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
    let verdict = match report.first_broken_layer() {
        Some(l) => format!("The first broken link: {l}."),
        None if sum.warnings > 0 => "No errors; see the warnings below.".into(),
        None => "No problems found.".into(),
    };
    let _ = writeln!(
        out,
        "<p class=\"summary\">{}, {}, {}. {}</p>",
        plural(sum.errors, "error", "errors"),
        plural(sum.warnings, "warning", "warnings"),
        plural(sum.infos, "note", "notes"),
        esc(&verdict)
    );
    for layer in Layer::ALL {
        let mut facts = layer_facts(layer, s);
        // Once `layer_facts` itself lists the deep facts, they must not show twice.
        for f in deep_layer_facts(layer, s) {
            if !facts.contains(&f) {
                facts.push(f);
            }
        }
        let findings: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.layer == layer)
            .collect();
        let pictures = pictures(layer, s);
        if facts.is_empty() && findings.is_empty() && pictures.is_empty() {
            continue;
        }
        let (class, mark) = match findings.iter().map(|f| f.severity).min() {
            Some(Severity::Error) => ("error", "✗"),
            Some(Severity::Warning) => ("warning", "!"),
            _ => ("ok", "✓"),
        };
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h2><span class=\"mark {class}\">{mark}</span>{}</h2>",
            layer.name(),
            esc(layer.title())
        );
        if !facts.is_empty() {
            out.push_str("<table class=\"facts\">\n");
            for f in &facts {
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
        for f in findings {
            write_finding(&mut out, f);
        }
        out.push_str("</section>\n");
    }
    out.push_str("<p class=\"note\">Details of any code: <code>cudoctor rule CODE</code>. Timings are medians; memory is what a call added at its peak.</p>\n");
    out.push_str("</body>\n</html>\n");
    out
}

fn write_finding(out: &mut String, f: &Finding) {
    let sev = f.severity.name();
    let unsure = match f.confidence {
        Confidence::Certain => "",
        Confidence::Likely => " (likely)",
        Confidence::Unsure => " (unsure)",
    };
    let _ = writeln!(
        out,
        "<div class=\"finding {sev}\"><span class=\"sev {sev}\">{sev}</span> <span class=\"code\">[{}]</span> <span class=\"title\">{}{}</span>",
        esc(&f.code),
        esc(&f.title),
        unsure
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
        let _ = writeln!(
            out,
            "<div><b>Fix:</b></div><pre>{}</pre>",
            esc(&f.fix.join("\n"))
        );
    }
    out.push_str("</div>\n");
}

/// Facts of the acceleration and multi-GPU layers (the runtime probes and the topology), for
/// every renderer that lists facts per layer.
pub fn deep_layer_facts(layer: Layer, s: &Snapshot) -> Vec<Fact> {
    let fact = |l: &str, v: String| Fact {
        label: l.to_string(),
        value: v,
    };
    let mut out = Vec::new();
    match layer {
        Layer::Acceleration => {
            let Some(deep) = &s.deep else {
                return out;
            };
            for run in &deep.runs {
                out.push(fact("probe", probe_line(run)));
                let Some(r) = &run.result else { continue };
                if let Some(t) = &r.torch {
                    let mut line = t.version.clone();
                    if let Some(c) = &t.cuda {
                        line.push_str(&format!(", CUDA {c}"));
                    }
                    if let Some(c) = t.cudnn {
                        line.push_str(&format!(", cuDNN {c}"));
                    }
                    if let Some(n) = &t.nccl {
                        line.push_str(&format!(", NCCL {n}"));
                    }
                    out.push(fact("  torch", line));
                }
                if let Some(c) = &r.cuda {
                    let v = if c.available {
                        format!("available, {} device(s)", c.device_count.unwrap_or(0))
                    } else {
                        format!(
                            "not available: {}",
                            c.unavailable_reason.as_deref().unwrap_or("no reason given")
                        )
                    };
                    out.push(fact("  CUDA", v));
                }
                for d in &r.devices {
                    let mut line = d.name.clone();
                    if let Some(c) = &d.capability {
                        line.push_str(&format!("  cc {c}"));
                    }
                    if let Some(b) = d.bf16_supported {
                        line.push_str(if b { "  bf16" } else { "  no bf16" });
                    }
                    if let Some(ms) = d.matmul_ms {
                        line.push_str(&format!("  matmul {ms:.3} ms"));
                    }
                    if d.matmul_ok == Some(false) {
                        line.push_str("  WRONG RESULT");
                    }
                    if let Some(e) = &d.error {
                        line.push_str(&format!("  error: {e}"));
                    }
                    out.push(fact(&format!("  GPU {}", d.index), line));
                }
                if let Some(st) = &r.settings {
                    let b = |x: Option<bool>| x.map_or("?", |v| if v { "on" } else { "off" });
                    out.push(fact(
                        "  TF32",
                        format!(
                            "matmul {}, cuDNN {}, float32 matmul precision {}",
                            b(st.matmul_allow_tf32),
                            b(st.cudnn_allow_tf32),
                            st.float32_matmul_precision.as_deref().unwrap_or("?")
                        ),
                    ));
                }
                if let Some(sdpa) = &r.sdpa {
                    let picked = sdpa
                        .default
                        .as_ref()
                        .and_then(|d| d.picked)
                        .map_or("could not tell", |b| b.short());
                    let works: Vec<&str> = sdpa
                        .backends
                        .iter()
                        .map(|b| if b.available { b.backend.short() } else { "" })
                        .filter(|x| !x.is_empty())
                        .collect();
                    out.push(fact(
                        "  attention",
                        format!(
                            "default runs {picked}; working: {}{}",
                            works.join(", "),
                            if sdpa.forced_fallback {
                                " (fused backends forced off for the test)"
                            } else {
                                ""
                            }
                        ),
                    ));
                }
                for e in &r.extensions {
                    let state = match (e.imported, e.call_ok) {
                        (false, _) => "import fails",
                        (true, Some(false)) => "call fails",
                        (true, Some(true)) => "works",
                        (true, None) => "imports",
                    };
                    out.push(fact(
                        &format!("  {}", e.name),
                        format!("{} {state}", e.version.as_deref().unwrap_or("")),
                    ));
                }
                if let Some(c) = &r.compile {
                    let v = match (&c.skipped, c.ok) {
                        (Some(why), _) => format!("skipped: {why}"),
                        (None, true) => format!(
                            "Triton kernel ran{}",
                            c.compile_s
                                .map(|t| format!(" (first call {t:.1} s)"))
                                .unwrap_or_default()
                        ),
                        (None, false) => format!(
                            "falls back: {}",
                            c.fallback_reason.as_deref().unwrap_or("?")
                        ),
                    };
                    out.push(fact("  torch.compile", v));
                }
            }
        }
        Layer::Multigpu => {
            if let Some(m) = &s.multigpu {
                if let Some(t) = &m.topology {
                    for p in &t.pairs {
                        out.push(fact(
                            &format!("GPU {} - GPU {}", p.a, p.b),
                            format!(
                                "{}{}",
                                p.label(),
                                match p.p2p_ok() {
                                    Some(true) => ", P2P ok",
                                    Some(false) => ", no P2P",
                                    None => "",
                                }
                            ),
                        ));
                    }
                }
                for lib in &m.nccl_libraries {
                    out.push(fact(
                        "NCCL",
                        format!(
                            "{} {}  [{}]",
                            lib.version.as_deref().unwrap_or("?"),
                            lib.path,
                            lib.origin
                        ),
                    ));
                }
            }
            for (k, v) in s
                .env
                .iter()
                .filter(|(k, _)| k.starts_with("NCCL_") || *k == "CUDA_VISIBLE_DEVICES")
            {
                out.push(fact(k, v.clone()));
            }
            if let Some(deep) = &s.deep {
                for r in deep.runs.iter().filter_map(|r| r.result.as_ref()) {
                    let Some(ar) = &r.all_reduce else { continue };
                    let v = if let Some(e) = &ar.error {
                        format!("fails: {e}")
                    } else if let Some(why) = &ar.skipped {
                        format!("skipped: {why}")
                    } else {
                        ar.results
                            .iter()
                            .filter_map(|x| {
                                x.busbw_gbps
                                    .map(|b| format!("{} MiB {b:.1} GB/s", x.size_mib))
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    out.push(fact(&format!("all-reduce ({} GPUs)", ar.world), v));
                }
            }
        }
        _ => {}
    }
    out
}

fn probe_line(run: &ProbeRun) -> String {
    let mut line = format!("{}: {}", run.interpreter, run.status.name());
    if let Some(t) = run.elapsed_s {
        line.push_str(&format!(" in {t:.1} s"));
    }
    if !run.detail.is_empty() {
        line.push_str(&format!(" — {}", run.detail));
    }
    line
}

/// The plots of a layer.
fn pictures(layer: Layer, s: &Snapshot) -> String {
    let mut out = String::new();
    match layer {
        Layer::Acceleration => {
            for r in s
                .deep
                .iter()
                .flat_map(|d| d.runs.iter())
                .filter_map(|r| r.result.as_ref())
            {
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
                .flat_map(|d| d.runs.iter())
                .filter_map(|r| r.result.as_ref()?.all_reduce.as_ref())
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

/// One series of a plot: name, colour, dashed, points (x, y).
struct Series {
    name: String,
    colour: &'static str,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

fn attention_section(r: &ProbeResult, sdpa: &SdpaProbe) -> String {
    let mut out = String::new();
    let gpu = r
        .devices
        .iter()
        .find(|d| d.index == sdpa.device)
        .map(|d| d.name.clone())
        .unwrap_or_else(|| format!("GPU {}", sdpa.device));
    let _ = writeln!(
        out,
        "<h3>scaled_dot_product_attention on {} ({}, batch {}, {} heads of {}, {})</h3>",
        esc(&gpu),
        esc(&sdpa.dtype),
        sdpa.batch,
        sdpa.heads,
        sdpa.head_dim,
        if sdpa.causal { "causal" } else { "not causal" }
    );
    let mut series: Vec<(Option<SdpaBackend>, String, bool, &[SdpaRun])> = sdpa
        .backends
        .iter()
        .filter(|b| b.available)
        .map(|b| {
            (
                Some(b.backend),
                b.backend.short().to_string(),
                false,
                b.runs.as_slice(),
            )
        })
        .collect();
    if let Some(d) = &sdpa.default {
        let name = match d.picked {
            Some(b) => format!("default (ran {})", b.short()),
            None => "default".to_string(),
        };
        series.push((None, name, true, d.runs.as_slice()));
    }
    let build = |metric: fn(&SdpaRun) -> Option<f64>| -> Vec<Series> {
        series
            .iter()
            .map(|(b, name, dashed, runs)| Series {
                name: name.clone(),
                colour: colour(*b),
                dashed: *dashed,
                points: runs
                    .iter()
                    .filter_map(|r| {
                        metric(r)
                            .filter(|v| *v > 0.0)
                            .map(|v| (f64::from(r.seq_len), v))
                    })
                    .collect(),
            })
            .collect()
    };
    let time = build(|r| r.ms);
    let memory = build(|r| r.peak_mib);
    let _ = writeln!(
        out,
        "<div class=\"plots\">{}{}</div>",
        log_plot("Time per call", "sequence length (tokens)", "ms", &time),
        log_plot(
            "Peak memory added",
            "sequence length (tokens)",
            "MiB",
            &memory
        )
    );
    out.push_str(&attention_table(sdpa));
    out
}

fn attention_table(sdpa: &SdpaProbe) -> String {
    let mut lens: Vec<u32> = sdpa
        .backends
        .iter()
        .flat_map(|b| b.runs.iter().map(|r| r.seq_len))
        .chain(
            sdpa.default
                .iter()
                .flat_map(|d| d.runs.iter().map(|r| r.seq_len)),
        )
        .collect();
    lens.sort_unstable();
    lens.dedup();
    let mut out = String::from("<table class=\"grid\"><tr><th>backend</th>");
    for l in &lens {
        let _ = write!(out, "<th>{l} tokens</th>");
    }
    out.push_str("</tr>\n");
    let cell = |r: Option<&SdpaRun>| -> String {
        match r {
            None => "<td></td>".into(),
            Some(r) => match (r.ms, r.peak_mib, &r.skipped, &r.error) {
                (Some(ms), Some(m), _, _) => {
                    format!("<td class=\"num\">{ms:.3} ms · {m:.0} MiB</td>")
                }
                (_, _, Some(why), _) => format!("<td title=\"{}\">skipped</td>", esc(why)),
                (_, _, _, Some(e)) => format!("<td title=\"{}\">error</td>", esc(e)),
                _ => "<td>?</td>".into(),
            },
        }
    };
    for b in &sdpa.backends {
        let _ = write!(out, "<tr><td>{}</td>", esc(b.backend.short()));
        if b.available {
            for l in &lens {
                out.push_str(&cell(b.runs.iter().find(|r| r.seq_len == *l)));
            }
        } else {
            let why = b.error.as_deref().unwrap_or("unavailable");
            let _ = write!(
                out,
                "<td colspan=\"{}\">unavailable: {}</td>",
                lens.len().max(1),
                esc(why.lines().next().unwrap_or(why))
            );
        }
        out.push_str("</tr>\n");
    }
    if let Some(d) = &sdpa.default {
        let _ = write!(
            out,
            "<tr><td><b>default</b> ({})</td>",
            d.picked.map_or("?", |b| b.short())
        );
        for l in &lens {
            out.push_str(&cell(d.runs.iter().find(|r| r.seq_len == *l)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A log-log line plot as inline SVG.
fn log_plot(title: &str, xlabel: &str, unit: &str, series: &[Series]) -> String {
    let (w, h) = (515.0, 300.0);
    let (left, right, top, bottom) = (58.0, 140.0, 26.0, 42.0);
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    if pts.is_empty() {
        return String::new();
    }
    let lx = |v: f64| v.log10();
    let (mut x0, mut x1) = bounds(pts.iter().map(|p| lx(p.0)));
    let (mut y0, mut y1) = bounds(pts.iter().map(|p| lx(p.1)));
    if x1 - x0 < 1e-9 {
        x0 -= 0.5;
        x1 += 0.5;
    }
    y0 = y0.floor();
    y1 = y1.ceil().max(y0 + 1.0);
    let pad = (x1 - x0) * 0.06;
    let (x0, x1) = (x0 - pad, x1 + pad);
    let px = |v: f64| left + (lx(v) - x0) / (x1 - x0) * (w - left - right);
    let py = |v: f64| top + (1.0 - (lx(v) - y0) / (y1 - y0)) * (h - top - bottom);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\">",
        esc(title)
    );
    let _ = write!(
        svg,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"#fbfcfe\" stroke=\"#d9dee8\"/>",
        w - left - right,
        h - top - bottom
    );
    let _ = write!(
        svg,
        "<text x=\"{left}\" y=\"16\" style=\"font-weight:600\">{} ({})</text>",
        esc(title),
        esc(unit)
    );
    // Decade grid lines on y.
    let mut d = y0 as i32;
    while f64::from(d) <= y1 {
        let v = 10f64.powi(d);
        let y = py(v);
        let _ = write!(
            svg,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#e6e9f0\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            w - right,
            left - 6.0,
            y + 4.0,
            tick(v)
        );
        d += 1;
    }
    // x ticks at the measured lengths.
    let mut xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    for x in &xs {
        let _ = write!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#e6e9f0\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>",
            px(*x),
            top,
            h - bottom,
            h - bottom + 14.0,
            tick(*x)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" style=\"fill:#5b6475\">{}</text>",
        left + (w - left - right) / 2.0,
        h - 8.0,
        esc(xlabel)
    );
    for (i, s) in series.iter().enumerate() {
        if s.points.is_empty() {
            continue;
        }
        let path: Vec<String> = s
            .points
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>",
            s.colour,
            if s.dashed {
                " stroke-dasharray=\"5 4\""
            } else {
                ""
            },
            path.join(" ")
        );
        for (x, y) in &s.points {
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"><title>{}: {} at {} tokens</title></circle>",
                px(*x),
                py(*y),
                s.colour,
                esc(&s.name),
                value_text(*y, unit),
                x
            );
        }
        let ly = top + 12.0 + 16.0 * i as f64;
        let lx0 = w - right + 10.0;
        let _ = write!(
            svg,
            "<line x1=\"{lx0:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{}\" stroke-width=\"2\"{}/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            lx0 + 16.0,
            s.colour,
            if s.dashed { " stroke-dasharray=\"5 4\"" } else { "" },
            lx0 + 20.0,
            ly + 4.0,
            esc(&s.name)
        );
    }
    svg.push_str("</svg>");
    let _ = write!(
        svg,
        "<figcaption>{} against sequence length, both axes logarithmic</figcaption></figure>",
        esc(title)
    );
    svg
}

fn value_text(v: f64, unit: &str) -> String {
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 1.0 {
        format!("{v:.2} {unit}")
    } else {
        format!("{v:.3} {unit}")
    }
}

fn bounds(it: impl Iterator<Item = f64>) -> (f64, f64) {
    it.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// 1024 -> "1k", 16384 -> "16k", 0.01 -> "0.01", 1000 -> "1000".
fn tick(v: f64) -> String {
    if v >= 1024.0 && (v / 1024.0).fract() == 0.0 {
        format!("{}k", v / 1024.0)
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').to_string()
    }
}

/// The GPU-by-GPU matrix of `nvidia-smi topo -m`, coloured by link class.
fn topology_svg(t: &Topology) -> String {
    let n = t.gpus.len();
    let cell = 56.0;
    let (left, top) = (64.0, 40.0);
    // Wide enough for the legend below a small matrix.
    let w = (left + cell * n as f64 + 12.0).max(290.0);
    let h = top + cell * n as f64 + 40.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"GPU topology\">"
    );
    let _ = write!(
        svg,
        "<text x=\"4\" y=\"16\" style=\"font-weight:600\">GPU topology (NVML)</text>"
    );
    for (i, g) in t.gpus.iter().enumerate() {
        let x = left + cell * i as f64 + cell / 2.0;
        let _ = write!(
            svg,
            "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\"><title>{}</title>GPU{}</text>",
            top - 6.0,
            esc(&g.name),
            g.index
        );
        let y = top + cell * i as f64 + cell / 2.0 + 4.0;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{y:.1}\" text-anchor=\"end\">GPU{}</text>",
            left - 6.0,
            g.index
        );
    }
    for (i, a) in t.gpus.iter().enumerate() {
        for (j, b) in t.gpus.iter().enumerate() {
            let (x, y) = (left + cell * j as f64, top + cell * i as f64);
            let (label, fill, tip) = if i == j {
                ("X".to_string(), "#eceff4", "self".to_string())
            } else {
                match t.pair(a.index, b.index) {
                    Some(p) => {
                        let fill = match p.link_class() {
                            LinkClass::NvLink => "#c8e6c9",
                            LinkClass::Pcie(_) if p.p2p_ok() == Some(false) => "#ffcdd2",
                            LinkClass::Pcie(_) => "#fff3c4",
                            LinkClass::Unknown => "#eeeeee",
                        };
                        let p2p = match p.p2p_ok() {
                            Some(true) => "P2P ok",
                            Some(false) => "no P2P",
                            None => "P2P unknown",
                        };
                        (
                            p.label(),
                            fill,
                            format!("GPU{} - GPU{}: {}, {p2p}", p.a, p.b, p.label()),
                        )
                    }
                    None => ("?".to_string(), "#eeeeee", "unknown".to_string()),
                }
            };
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{c:.1}\" height=\"{c:.1}\" fill=\"{fill}\" stroke=\"#ffffff\" stroke-width=\"2\"><title>{}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                esc(&tip),
                x + cell / 2.0,
                y + cell / 2.0 + 4.0,
                esc(&label),
                c = cell
            );
        }
    }
    let ly = top + cell * n as f64 + 20.0;
    let legend = [
        ("#c8e6c9", "NVLink"),
        ("#fff3c4", "PCIe, P2P"),
        ("#ffcdd2", "no P2P"),
    ];
    for (k, (fill, name)) in legend.iter().enumerate() {
        let x = 4.0 + 92.0 * k as f64;
        let _ = write!(
            svg,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{fill}\"/><text x=\"{:.1}\" y=\"{ly:.1}\">{name}</text>",
            ly - 10.0,
            x + 16.0
        );
    }
    svg.push_str("</svg><figcaption>Links between GPU pairs, as nvidia-smi topo -m labels them</figcaption></figure>");
    svg
}

/// Bus bandwidth per message size, as bars.
fn allreduce_svg(ar: &AllReduceProbe) -> String {
    let rows: Vec<(u64, f64)> = ar
        .results
        .iter()
        .filter_map(|r| r.busbw_gbps.map(|b| (r.size_mib, b)))
        .collect();
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1.0);
    let (w, bar_h, left, top) = (420.0, 22.0, 80.0, 30.0);
    let h = top + (bar_h + 8.0) * rows.len() as f64 + 24.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"all-reduce bus bandwidth\">"
    );
    let _ = write!(
        svg,
        "<text x=\"4\" y=\"16\" style=\"font-weight:600\">NCCL all-reduce over {} GPUs{}: bus bandwidth (GB/s)</text>",
        ar.world,
        ar.nccl_version.as_deref().map(|v| format!(", NCCL {}", esc(v))).unwrap_or_default()
    );
    for (i, (size, bw)) in rows.iter().enumerate() {
        let y = top + (bar_h + 8.0) * i as f64;
        let len = (w - left - 70.0) * bw / max;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{size} MiB</text><rect x=\"{left}\" y=\"{y:.1}\" width=\"{len:.1}\" height=\"{bar_h}\" fill=\"#1565c0\"/><text x=\"{:.1}\" y=\"{:.1}\">{bw:.1}</text>",
            left - 6.0,
            y + bar_h / 2.0 + 4.0,
            left + len + 4.0,
            y + bar_h / 2.0 + 4.0
        );
    }
    svg.push_str("</svg><figcaption>busbw = bytes / time × 2(n−1)/n, as nccl-tests reports it</figcaption></figure>");
    svg
}

/// Escapes text for HTML content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_analyse::Finding;
    use cudoctor_snapshot::{
        AllReduceRun, DeepFacts, GpuPair, MultiGpuFacts, P2pStatus, PathLevel, ProbeStatus,
        SdpaBackendProbe, SdpaDefault, TopologyGpu,
    };

    fn run(seq_len: u32, ms: f64, peak: f64) -> SdpaRun {
        SdpaRun {
            seq_len,
            ms: Some(ms),
            peak_mib: Some(peak),
            ..Default::default()
        }
    }

    /// The real 2xH200 numbers (shared/fixtures/real: sdpa.txt, nccl_probe.txt).
    fn h200() -> Snapshot {
        let mut s = Snapshot::new("0.1.0", "/");
        let backend = |b, runs| SdpaBackendProbe {
            backend: b,
            available: true,
            error: None,
            runs,
        };
        let result = ProbeResult {
            complete: true,
            sdpa: Some(SdpaProbe {
                dtype: "bfloat16".into(),
                batch: 1,
                heads: 16,
                head_dim: 128,
                causal: true,
                backends: vec![
                    backend(
                        SdpaBackend::FlashAttention,
                        vec![
                            run(1024, 0.046, 4.1),
                            run(4096, 0.322, 16.3),
                            run(16384, 3.395, 65.0),
                        ],
                    ),
                    backend(
                        SdpaBackend::CudnnAttention,
                        vec![
                            run(1024, 0.027, 4.0),
                            run(4096, 0.158, 16.0),
                            run(16384, 1.71, 64.0),
                        ],
                    ),
                    backend(
                        SdpaBackend::Math,
                        vec![
                            run(1024, 0.545, 212.0),
                            run(4096, 6.674, 2496.1),
                            run(16384, 100.489, 38400.3),
                        ],
                    ),
                    SdpaBackendProbe {
                        backend: SdpaBackend::EfficientAttention,
                        available: false,
                        error: Some(
                            "Memory efficient kernel not used because: <reason & more>".into(),
                        ),
                        runs: vec![],
                    },
                ],
                default: Some(SdpaDefault {
                    picked: Some(SdpaBackend::CudnnAttention),
                    runs: vec![
                        run(1024, 0.048, 8.0),
                        run(4096, 0.217, 28.0),
                        run(16384, 1.721, 112.0),
                    ],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            all_reduce: Some(AllReduceProbe {
                world: 2,
                nccl_version: Some("2.28.9".into()),
                results: [(1, 38.5), (64, 265.2), (1024, 327.1)]
                    .iter()
                    .map(|(m, b)| AllReduceRun {
                        size_mib: *m,
                        busbw_gbps: Some(*b),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        s.deep = Some(DeepFacts {
            runs: vec![ProbeRun {
                interpreter: "/opt/venv/bin/python".into(),
                status: ProbeStatus::Ok,
                result: Some(result),
                ..Default::default()
            }],
        });
        s.multigpu = Some(MultiGpuFacts {
            topology: Some(Topology {
                source: "nvml".into(),
                gpus: (0..2)
                    .map(|i| TopologyGpu {
                        index: i,
                        name: "NVIDIA H200".into(),
                        ..Default::default()
                    })
                    .collect(),
                pairs: vec![GpuPair {
                    a: 0,
                    b: 1,
                    level: Some(PathLevel::System),
                    nvlinks: 18,
                    p2p_read: Some(P2pStatus::Ok),
                    ..Default::default()
                }],
            }),
            ..Default::default()
        });
        s
    }

    fn html_of(s: &Snapshot, findings: &[Finding]) -> String {
        render_html(&Report {
            snapshot: s,
            findings,
        })
    }

    #[test]
    fn is_one_self_contained_document() {
        let html = html_of(&h200(), &[]);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
        for banned in [
            "<script",
            "src=\"http",
            "href=\"http",
            "<link ",
            "@import",
            "url(",
        ] {
            assert!(
                !html.contains(banned),
                "external or active content: {banned}"
            );
        }
        assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
        // Two attention plots, the topology matrix, the all-reduce bars.
        assert_eq!(html.matches("<svg").count(), 4);
    }

    #[test]
    fn plots_carry_every_measured_backend_and_the_topology() {
        let html = html_of(&h200(), &[]);
        assert!(html.contains("default (ran cuDNN)"));
        for name in [">flash<", ">cuDNN<", ">math<"] {
            assert!(html.contains(name), "{name}");
        }
        // 16k math point: 100 ms.
        assert!(
            html.contains("math: 100 ms at 16384 tokens"),
            "tooltip of the math point"
        );
        assert!(html.contains(">NV18<"));
        assert!(html.contains(">327.1<"));
        // The unavailable backend's reason is escaped.
        assert!(html.contains("&lt;reason &amp; more&gt;"));
    }

    #[test]
    fn findings_are_escaped_and_sectioned() {
        let f = Finding {
            code: "ACC001".into(),
            layer: Layer::Acceleration,
            severity: Severity::Error,
            title: "attention falls back <math>".into(),
            evidence: vec!["a \"quoted\" fact".into()],
            cause: "because".into(),
            fix: vec!["unset X && run".into()],
            confidence: Confidence::Certain,
        };
        let html = html_of(&h200(), &[f]);
        assert!(html.contains("attention falls back &lt;math&gt;"));
        assert!(html.contains("unset X &amp;&amp; run"));
        assert!(html.contains("<section id=\"acceleration\">"));
        assert!(
            html.contains("first broken link: Accelerated paths")
                || html.contains("The first broken link: Accelerated paths")
        );
    }

    #[test]
    fn a_snapshot_without_deep_facts_still_renders() {
        let s = Snapshot::new("0.1.0", "/");
        let html = html_of(&s, &[]);
        assert!(html.contains("No problems found."));
        assert!(!html.contains("<svg"));
    }

    #[test]
    fn ticks_read_like_sequence_lengths() {
        assert_eq!(tick(1024.0), "1k");
        assert_eq!(tick(16384.0), "16k");
        assert_eq!(tick(0.01), "0.01");
        assert_eq!(tick(100.0), "100");
    }

    #[test]
    fn deep_facts_summarise_the_probe() {
        let facts = deep_layer_facts(Layer::Acceleration, &h200());
        assert!(facts
            .iter()
            .any(|f| f.value.starts_with("default runs cuDNN")));
        let facts = deep_layer_facts(Layer::Multigpu, &h200());
        assert!(facts.iter().any(|f| f.value == "NV18, P2P ok"));
        assert!(facts
            .iter()
            .any(|f| f.value.contains("1024 MiB 327.1 GB/s")));
    }
}
