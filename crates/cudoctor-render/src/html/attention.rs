//! The attention section: per-backend time and memory plots against sequence length, and the
//! same numbers as a table.

use std::fmt::Write;

use cudoctor_snapshot::{ProbeResult, SdpaBackend, SdpaProbe, SdpaRun};

use super::esc;
use super::plots::{log_plot, Series};

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

pub(super) fn attention_section(r: &ProbeResult, sdpa: &SdpaProbe) -> String {
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
