//! `cudoctor fleet FILES..`: nodes side by side; a value that differs from most nodes is drift.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cudoctor_analyse::{analyse, Severity};
use cudoctor_snapshot::Snapshot;

use crate::cli::{Format, MachineArgs};
use crate::output::{knowledge_base, read_snapshot};
use crate::Outcome;

const COLUMNS: &[&str] = &["driver", "max CUDA", "GPUs", "torch", "nvcc", "errors"];

pub fn run(files: &[PathBuf], format: Format) -> anyhow::Result<Outcome> {
    crate::output::text_json_or_markdown(format)?;
    let kb = knowledge_base(&MachineArgs {
        root: None,
        timeout: 5.0,
        kb: None,
    })?;
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for f in files {
        let snap = read_snapshot(f)?;
        let findings = analyse(&snap, &kb);
        let errors: Vec<String> = findings
            .iter()
            .filter(|x| x.severity == Severity::Error)
            .map(|x| x.code.clone())
            .collect();
        let node = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| f.display().to_string());
        rows.push((node, facts(&snap, &errors)));
    }
    // The most common value of each column; anything else is drift.
    let majority: Vec<String> = (0..COLUMNS.len())
        .map(|c| {
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, r) in &rows {
                *counts.entry(r[c].as_str()).or_default() += 1;
            }
            counts
                .into_iter()
                .max_by_key(|(_, n)| *n)
                .map(|(v, _)| v.to_string())
                .unwrap_or_default()
        })
        .collect();
    let failing = rows.iter().filter(|(_, r)| r[5] != "0").count();
    match format {
        Format::Json => {
            let nodes: Vec<serde_json::Value> = rows
                .iter()
                .map(|(node, r)| {
                    let drift: Vec<&str> = (0..COLUMNS.len() - 1)
                        .filter(|&c| r[c] != majority[c])
                        .map(|c| COLUMNS[c])
                        .collect();
                    let facts: BTreeMap<&str, &String> =
                        COLUMNS.iter().copied().zip(r.iter()).collect();
                    serde_json::json!({"node": node, "facts": facts, "drift": drift})
                })
                .collect();
            crate::outln!(
                "{}",
                serde_json::to_string_pretty(
                    &serde_json::json!({"nodes": nodes, "failing": failing})
                )?
            );
        }
        Format::Text | Format::Markdown | Format::Html | Format::Prometheus => {
            let mut widths: Vec<usize> = COLUMNS.iter().map(|c| c.len()).collect();
            let name_w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(4).max(4);
            for (_, r) in &rows {
                for (c, v) in r.iter().enumerate() {
                    widths[c] = widths[c].max(v.len() + 1);
                }
            }
            crate::out!("{:name_w$}", "node");
            for (c, h) in COLUMNS.iter().enumerate() {
                crate::out!("  {:w$}", h, w = widths[c]);
            }
            crate::outln!();
            for (node, r) in &rows {
                crate::out!("{node:name_w$}");
                for (c, v) in r.iter().enumerate() {
                    let mark = if c < COLUMNS.len() - 1 && *v != majority[c] {
                        "*"
                    } else {
                        ""
                    };
                    crate::out!("  {:w$}", format!("{v}{mark}"), w = widths[c]);
                }
                crate::outln!();
            }
            crate::outln!(
                "\n* differs from most nodes. {failing} of {} nodes have errors.",
                rows.len()
            );
        }
    }
    Ok(if failing > 0 {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

fn facts(s: &Snapshot, errors: &[String]) -> Vec<String> {
    let gpus = {
        let mut names: BTreeMap<&str, usize> = BTreeMap::new();
        for g in &s.driver.gpus {
            *names.entry(g.name.as_str()).or_default() += 1;
        }
        names
            .iter()
            .map(|(n, c)| format!("{c}x {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    vec![
        or_dash(s.driver.version.as_ref().map(|v| v.value.clone())),
        or_dash(s.driver.max_cuda.as_ref().map(|v| v.value.clone())),
        if gpus.is_empty() { "-".into() } else { gpus },
        or_dash(
            s.primary_env()
                .and_then(|e| e.torch.as_ref())
                .map(|t| t.version.clone()),
        ),
        or_dash(
            s.toolkit
                .nvcc_on_path
                .as_ref()
                .and_then(|n| n.version.clone()),
        ),
        if errors.is_empty() {
            "0".into()
        } else {
            format!("{} ({})", errors.len(), errors.join(","))
        },
    ]
}
