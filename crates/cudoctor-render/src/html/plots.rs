//! Inline SVG charts: a log-log line plot (attention time and memory per sequence length) and
//! bars (all-reduce bandwidth per message size).

use std::fmt::Write;

use cudoctor_snapshot::AllReduceProbe;

use super::esc;

/// One series of a plot: name, colour, dashed, points (x, y).
pub(super) struct Series {
    pub name: String,
    pub colour: &'static str,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// A log-log line plot as inline SVG.
pub(super) fn log_plot(title: &str, xlabel: &str, unit: &str, series: &[Series]) -> String {
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
    let mut svg = open_figure(w, h, title);
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

/// Opens a figure holding one SVG picture of `w` by `h` pixels; `label` names it for screen
/// readers. The caller closes both elements.
pub(super) fn open_figure(w: f64, h: f64, label: &str) -> String {
    format!(
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\">",
        esc(label)
    )
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
pub(super) fn tick(v: f64) -> String {
    if v >= 1024.0 && (v / 1024.0).fract() == 0.0 {
        format!("{}k", v / 1024.0)
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').to_string()
    }
}

/// Bus bandwidth per message size, as bars.
pub(super) fn allreduce_svg(ar: &AllReduceProbe) -> String {
    let rows: Vec<(u64, f64)> = ar
        .results
        .iter()
        .filter_map(|r| r.busbw_gbps.map(|b| (r.size_mib, b)))
        .collect();
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1.0);
    let (w, bar_h, left, top) = (420.0, 22.0, 80.0, 30.0);
    let h = top + (bar_h + 8.0) * rows.len() as f64 + 24.0;
    let mut svg = open_figure(w, h, "all-reduce bus bandwidth");
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
