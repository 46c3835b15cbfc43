//! `cudoctor run`'s HTML report: the key numbers, the memory curve per step, the step-time
//! distribution, the attention backends' shares, the findings and the baseline comparison.

use std::fmt::Write;

use cudoctor_run::compare::value;
use cudoctor_run::{backend_name, shell_words, summary::workers, RunReport, Trend};
use cudoctor_snapshot::ProcessRecord;

use super::plots::{open_figure, tick};
use super::style::CSS;
use super::{esc, write_finding};
use crate::run_report::{exit_words, run_key_lines};

const COLOURS: [&str; 4] = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a"];

pub fn render_run_html(r: &RunReport) -> String {
    let mut out = String::new();
    let command = shell_words(&r.facts.command);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>cudoctor run: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&command)
    );
    let _ = writeln!(out, "<h1>cudoctor run: <code>{}</code></h1>", esc(&command));
    let _ = writeln!(
        out,
        "<p class=\"summary\">{}, {:.1} s, cudoctor {}.</p>",
        esc(&exit_words(r)),
        r.facts.wall_s,
        esc(&r.tool_version)
    );
    out.push_str("<table class=\"facts\">\n");
    for (k, v) in run_key_lines(r) {
        let _ = writeln!(out, "<tr><td>{}</td><td>{}</td></tr>", esc(&k), esc(&v));
    }
    out.push_str("</table>\n");
    let workers = workers(&r.facts);
    let mut plots = String::new();
    plots.push_str(&memory_svg(&workers));
    if let Some(busiest) = workers.iter().max_by_key(|p| p.steps.count) {
        plots.push_str(&step_histogram(&busiest.steps.durations_ms));
    }
    plots.push_str(&backend_bars(r));
    if !plots.is_empty() {
        let _ = writeln!(out, "<div class=\"plots\">{plots}</div>");
    }
    let groups = crate::run_report::attention_groups(r);
    if !groups.is_empty() {
        out.push_str("<h2>Attention calls</h2>\n<table class=\"grid\"><tr><th>process</th><th>inputs</th><th>calls</th><th>backend</th><th>operators torch dispatched</th></tr>\n");
        for (p, g) in groups {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
                esc(&p.label()),
                esc(&g.describe()),
                g.calls,
                esc(backend_name(g.backend())),
                esc(&g.dispatched_ops.join(", "))
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("<h2>Findings</h2>\n");
    if r.findings.is_empty() {
        out.push_str("<p>None.</p>\n");
    }
    for f in &r.findings {
        write_finding(&mut out, f, &[]);
    }
    if let Some(c) = &r.comparison {
        let _ = writeln!(
            out,
            "<h2>Against the baseline: {}</h2>\n<p class=\"summary\">Baseline: <code>{}</code></p>\n<table class=\"grid\"><tr><th>metric</th><th>before</th><th>after</th><th></th></tr>",
            esc(c.verdict.word()),
            esc(&shell_words(&c.baseline_command))
        );
        for ch in &c.changes {
            let v = |x: Option<f64>| x.map(|x| value(x, &ch.unit)).unwrap_or_else(|| "?".into());
            let (class, word) = match ch.trend {
                Trend::Worse => ("error", "worse"),
                Trend::Better => ("ok", "better"),
                Trend::Same => ("", "same"),
                Trend::Unknown => ("", "?"),
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"mark {class}\">{word}</td></tr>",
                esc(&ch.metric),
                esc(&v(ch.before)),
                esc(&v(ch.after))
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("<p class=\"note\">Details of any code: <code>cudoctor rule CODE</code>. Step times are the wall time between optimizer steps (or top-level forward calls); memory is the caching allocator's.</p>\n</body>\n</html>\n");
    out
}

/// Peak and allocated CUDA memory at the end of each step, per process (up to four).
fn memory_svg(workers: &[&ProcessRecord]) -> String {
    let shown: Vec<&&ProcessRecord> = workers
        .iter()
        .filter(|p| !p.steps.memory.is_empty())
        .take(COLOURS.len())
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    let (w, h, left, right, top, bottom) = (515.0, 280.0, 62.0, 130.0, 26.0, 40.0);
    let xmax = shown
        .iter()
        .flat_map(|p| p.steps.memory.iter().map(|m| m.step as f64))
        .fold(1.0, f64::max);
    let ymax = shown
        .iter()
        .flat_map(|p| {
            p.steps
                .memory
                .iter()
                .map(|m| m.peak_mib.max(m.allocated_mib))
        })
        .fold(1.0, f64::max)
        * 1.08;
    let px = |x: f64| left + x / xmax * (w - left - right);
    let py = |y: f64| top + (1.0 - y / ymax) * (h - top - bottom);
    let mut svg = open_figure(w, h, "CUDA memory per step");
    let _ = write!(
        svg,
        "<text x=\"{left}\" y=\"16\" style=\"font-weight:600\">CUDA memory per step (MiB)</text><rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"#fbfcfe\" stroke=\"#d9dee8\"/>",
        w - left - right,
        h - top - bottom
    );
    for i in 0..=4 {
        let y = ymax * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#e6e9f0\"/><text x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\">{4:.0}</text>",
            py(y),
            w - right,
            left - 6.0,
            py(y) + 4.0,
            y
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" style=\"fill:#5b6475\">step (last: {})</text>",
        left + (w - left - right) / 2.0,
        h - 10.0,
        tick(xmax)
    );
    for (i, p) in shown.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        for (dashed, pick) in [(false, 0), (true, 1)] {
            let pts: Vec<String> = p
                .steps
                .memory
                .iter()
                .map(|m| {
                    let y = if pick == 0 {
                        m.peak_mib
                    } else {
                        m.allocated_mib
                    };
                    format!("{:.1},{:.1}", px(m.step as f64), py(y))
                })
                .collect();
            let _ =
                write!(
                svg,
                "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{} points=\"{}\"/>",
                if dashed { " stroke-dasharray=\"5 4\"" } else { "" },
                pts.join(" ")
            );
        }
        let ly = top + 12.0 + 32.0 * i as f64;
        let lx = w - right + 10.0;
        let _ = write!(
            svg,
            "<line x1=\"{lx:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{} peak</text><line x1=\"{lx:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"2\" stroke-dasharray=\"5 4\"/><text x=\"{:.1}\" y=\"{:.1}\">at step end</text>",
            lx + 16.0,
            lx + 20.0,
            ly + 4.0,
            esc(&p.label()),
            ly + 14.0,
            lx + 16.0,
            ly + 14.0,
            lx + 20.0,
            ly + 18.0
        );
    }
    svg.push_str("</svg><figcaption>highest allocation during each step (solid) and what stays allocated at its end (dashed)</figcaption></figure>");
    svg
}

/// The distribution of step times, as a histogram of 20 bins.
fn step_histogram(durations: &[f64]) -> String {
    let xs: Vec<f64> = durations
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if xs.len() < 2 {
        return String::new();
    }
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let bins = 20usize;
    let width = ((hi - lo) / bins as f64).max(1e-9);
    let mut counts = vec![0u64; bins];
    for x in &xs {
        let i = (((x - lo) / width) as usize).min(bins - 1);
        counts[i] += 1;
    }
    let cmax = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let (w, h, left, top, bottom) = (420.0, 240.0, 40.0, 26.0, 40.0);
    let bw = (w - left - 10.0) / bins as f64;
    let mut svg = open_figure(w, h, "step time distribution");
    let _ = write!(
        svg,
        "<text x=\"{left}\" y=\"16\" style=\"font-weight:600\">Step time distribution ({} steps)</text>",
        xs.len()
    );
    for (i, c) in counts.iter().enumerate() {
        let bh = (h - top - bottom) * (*c as f64) / cmax;
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#1565c0\"><title>{c} steps of {}–{}</title></rect>",
            left + bw * i as f64,
            h - bottom - bh,
            (bw - 1.0).max(1.0),
            value(lo + width * i as f64, "ms"),
            value(lo + width * (i + 1) as f64, "ms")
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{left}\" y=\"{:.1}\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{cmax:.0}</text>",
        h - bottom + 14.0,
        esc(&value(lo, "ms")),
        w - 10.0,
        h - bottom + 14.0,
        esc(&value(hi, "ms")),
        left - 4.0,
        top + 8.0
    );
    svg.push_str("</svg><figcaption>wall time between consecutive steps; a long tail is stalls or recompilation</figcaption></figure>");
    svg
}

/// Each backend's share of the attention calls.
fn backend_bars(r: &RunReport) -> String {
    let s = &r.summary;
    if s.attention_calls == 0 || s.backends.is_empty() {
        return String::new();
    }
    let (w, bar_h, left, top) = (420.0, 22.0, 110.0, 30.0);
    let h = top + (bar_h + 8.0) * s.backends.len() as f64 + 20.0;
    let mut svg = open_figure(w, h, "attention backends");
    let _ = write!(
        svg,
        "<text x=\"4\" y=\"16\" style=\"font-weight:600\">Attention backends ({} calls)</text>",
        s.attention_calls
    );
    for (i, b) in s.backends.iter().enumerate() {
        let y = top + (bar_h + 8.0) * i as f64;
        let len = (w - left - 60.0) * b.share;
        let colour = if b.backend == Some(cudoctor_snapshot::SdpaBackend::Math) {
            "#c62828"
        } else {
            "#2e7d32"
        };
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><rect x=\"{left}\" y=\"{y:.1}\" width=\"{len:.1}\" height=\"{bar_h}\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\">{:.0}% ({})</text>",
            left - 6.0,
            y + bar_h / 2.0 + 4.0,
            esc(backend_name(b.backend)),
            left + len + 4.0,
            y + bar_h / 2.0 + 4.0,
            b.share * 100.0,
            b.calls
        );
    }
    svg.push_str("</svg><figcaption>from the aten operators torch dispatched in sampled calls of each input group</figcaption></figure>");
    svg
}
