//! `cudoctor diff A B`: what changed between two snapshots, fact by fact, and which findings
//! appeared or went away.

use std::collections::BTreeMap;
use std::path::Path;

use cudoctor_analyse::analyse;
use serde_json::Value;

use crate::cli::{Format, MachineArgs};
use crate::output::{knowledge_base, read_snapshot};
use crate::Outcome;

/// Facts that change on every run and say nothing about the stack.
const NOISE: &[&str] = &[
    "collected_at",
    "tool_version",
    "attempts",
    "processes",
    "memory_used_mib",
];

pub fn run(before: &Path, after: &Path, format: Format) -> anyhow::Result<Outcome> {
    crate::output::text_json_or_markdown(format)?;
    let a = read_snapshot(before)?;
    let b = read_snapshot(after)?;
    let kb = knowledge_base(&MachineArgs {
        root: None,
        timeout: 5.0,
        kb: None,
    })?;
    let fa = flatten(&serde_json::to_value(&a)?);
    let fb = flatten(&serde_json::to_value(&b)?);
    let mut changes = Vec::new();
    for (k, va) in &fa {
        match fb.get(k) {
            None => changes.push(("-", k.clone(), va.clone(), String::new())),
            Some(vb) if vb != va => changes.push(("~", k.clone(), va.clone(), vb.clone())),
            _ => {}
        }
    }
    for (k, vb) in &fb {
        if !fa.contains_key(k) {
            changes.push(("+", k.clone(), String::new(), vb.clone()));
        }
    }
    changes.sort_by(|x, y| x.1.cmp(&y.1));
    let key = |f: &cudoctor_analyse::Finding| format!("{} {}", f.code, f.title);
    let findings_a: Vec<String> = analyse(&a, &kb).iter().map(key).collect();
    let findings_b: Vec<String> = analyse(&b, &kb).iter().map(key).collect();
    let appeared: Vec<&String> = findings_b
        .iter()
        .filter(|f| !findings_a.contains(f))
        .collect();
    let resolved: Vec<&String> = findings_a
        .iter()
        .filter(|f| !findings_b.contains(f))
        .collect();
    match format {
        Format::Json => {
            let rows: Vec<Value> = changes
                .iter()
                .map(|(op, k, va, vb)| serde_json::json!({"change": op, "fact": k, "before": va, "after": vb}))
                .collect();
            let doc = serde_json::json!({"changes": rows, "findings_appeared": appeared, "findings_resolved": resolved});
            crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
        }
        Format::Text | Format::Markdown | Format::Html | Format::Prometheus => {
            crate::outln!("{} -> {}", before.display(), after.display());
            if changes.is_empty() {
                crate::outln!("No facts changed.");
            }
            for (op, k, va, vb) in &changes {
                match *op {
                    "~" => crate::outln!("  ~ {k}: {va} -> {vb}"),
                    "-" => crate::outln!("  - {k}: {va}"),
                    _ => crate::outln!("  + {k}: {vb}"),
                }
            }
            for f in &appeared {
                crate::outln!("  new finding: {f}");
            }
            for f in &resolved {
                crate::outln!("  resolved:    {f}");
            }
        }
    }
    Ok(if appeared.is_empty() && changes.is_empty() {
        Outcome::Healthy
    } else {
        Outcome::ProblemsFound
    })
}

/// `driver.gpus[GPU-ab..].name` -> "NVIDIA H200". Arrays of records are keyed by their natural
/// identity (uuid, prefix, name, root, path) so a reordering is not a change.
pub fn flatten(v: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk("", v, &mut out);
    out
}

fn walk(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if NOISE.contains(&k.as_str()) {
                    continue;
                }
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                walk(&p, child, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let id = ["uuid", "prefix", "name", "root", "path", "index"]
                    .iter()
                    .find_map(|k| {
                        item.get(k).map(|x| {
                            x.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| x.to_string())
                        })
                    })
                    .unwrap_or_else(|| i.to_string());
                walk(&format!("{prefix}[{id}]"), item, out);
            }
        }
        Value::Null => {}
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}
