//! `diff` of two snapshots, by the same facts the fleet report compares: what matters first
//! (driver, GPUs, toolkits, builds and packages, NCCL, loaded libraries), then the findings that
//! appeared or went away, then the runtime measurements, and the raw field changes last.

use std::collections::BTreeMap;

use cudoctor_analyse::Finding;
use cudoctor_snapshot::Snapshot;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::facts::{stack_facts, Fact, Topic};

/// A measurement that moved less than this fraction is noise, not a change.
pub const MEASUREMENT_NOISE: f64 = 0.10;

/// One fact that differs; `None` where a side does not have it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactChange {
    pub topic: Topic,
    pub name: String,
    pub before: Option<String>,
    pub after: Option<String>,
    /// For measurements: (after - before) / before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<f64>,
}

pub use cudoctor_report::FindingRef;

/// A field of the snapshot's JSON that differs, by its flattened path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawChange {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffReport {
    pub before: String,
    pub after: String,
    /// Changed facts in topic order (measurements of `--deep` last among them).
    pub changes: Vec<FactChange>,
    pub findings_appeared: Vec<FindingRef>,
    pub findings_gone: Vec<FindingRef>,
    /// Every changed JSON field, noise (timestamps, memory in use, process lists) left out.
    pub raw: Vec<RawChange>,
}

impl DiffReport {
    /// Something that matters changed: a fact, or a finding appeared or went away. Raw field
    /// changes alone do not count.
    pub fn changed(&self) -> bool {
        !self.changes.is_empty()
            || !self.findings_appeared.is_empty()
            || !self.findings_gone.is_empty()
    }
}

/// Compares `a` (before) with `b` (after), with their findings.
pub fn diff(
    before: (&str, &Snapshot, &[Finding]),
    after: (&str, &Snapshot, &[Finding]),
) -> DiffReport {
    let (label_a, a, fa) = before;
    let (label_b, b, fb) = after;
    let facts_a = by_key(stack_facts(a));
    let facts_b = by_key(stack_facts(b));
    let mut changes = Vec::new();
    let keys: std::collections::BTreeSet<&(Topic, String)> =
        facts_a.keys().chain(facts_b.keys()).collect();
    for key in keys {
        let x = facts_a.get(key);
        let y = facts_b.get(key);
        let change = |relative| FactChange {
            topic: key.0,
            name: key.1.clone(),
            before: x.map(|f| f.value.clone()),
            after: y.map(|f| f.value.clone()),
            relative,
        };
        match (x, y) {
            (Some(x), Some(y)) => match (x.measured, y.measured) {
                (Some(m), Some(n)) => {
                    let rel = if m == 0.0 {
                        f64::INFINITY
                    } else {
                        (n - m) / m.abs()
                    };
                    if m != n && rel.abs() >= MEASUREMENT_NOISE {
                        changes.push(change(Some(rel)));
                    }
                }
                _ if x.value != y.value => changes.push(change(None)),
                _ => {}
            },
            _ => changes.push(change(None)),
        }
    }

    let key = |f: &Finding| (f.code.clone(), f.title.clone());
    let in_a: std::collections::HashSet<_> = fa.iter().map(key).collect();
    let in_b: std::collections::HashSet<_> = fb.iter().map(key).collect();
    let as_ref = FindingRef::from;
    let findings_appeared = fb
        .iter()
        .filter(|f| !in_a.contains(&key(f)))
        .map(as_ref)
        .collect();
    let findings_gone = fa
        .iter()
        .filter(|f| !in_b.contains(&key(f)))
        .map(as_ref)
        .collect();

    DiffReport {
        before: label_a.to_string(),
        after: label_b.to_string(),
        changes,
        findings_appeared,
        findings_gone,
        raw: raw_changes(a, b),
    }
}

fn by_key(facts: Vec<Fact>) -> BTreeMap<(Topic, String), Fact> {
    facts
        .into_iter()
        .map(|f| ((f.topic, f.name.clone()), f))
        .collect()
}

/// Facts that change on every run and say nothing about the stack.
const NOISE: &[&str] = &[
    "collected_at",
    "tool_version",
    "attempts",
    "processes",
    "memory_used_mib",
];

/// Every JSON field that differs, by flattened path.
pub fn raw_changes(a: &Snapshot, b: &Snapshot) -> Vec<RawChange> {
    let to_value = |s: &Snapshot| serde_json::to_value(s).unwrap_or(Value::Null);
    let fa = flatten(&to_value(a));
    let fb = flatten(&to_value(b));
    let mut out = Vec::new();
    for (k, va) in &fa {
        match fb.get(k) {
            None => out.push(RawChange {
                path: k.clone(),
                before: Some(va.clone()),
                after: None,
            }),
            Some(vb) if vb != va => out.push(RawChange {
                path: k.clone(),
                before: Some(va.clone()),
                after: Some(vb.clone()),
            }),
            _ => {}
        }
    }
    for (k, vb) in &fb {
        if !fa.contains_key(k) {
            out.push(RawChange {
                path: k.clone(),
                before: None,
                after: Some(vb.clone()),
            });
        }
    }
    out.sort_by(|x, y| x.path.cmp(&y.path));
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::device_snapshot;

    #[test]
    fn one_package_changed_is_the_only_change() {
        let a = device_snapshot("2026-11-30-h200x2/check.json");
        let mut b = a.clone();
        for p in &mut b.python_envs[0].packages {
            if p.name == "torchvision" {
                p.version = "0.27.0".into();
            }
        }
        let d = diff(("a", &a, &[]), ("b", &b, &[]));
        assert_eq!(d.changes.len(), 1, "{:#?}", d.changes);
        assert_eq!(
            d.changes[0].name,
            "torchvision in torch/.venv (Python 3.12)"
        );
        assert_eq!(d.changes[0].before.as_deref(), Some("0.26.0"));
        assert_eq!(d.changes[0].after.as_deref(), Some("0.27.0"));
        assert!(d.changed());
        assert_eq!(d.raw.len(), 1);
    }

    #[test]
    fn measurements_change_only_beyond_noise() {
        let a = device_snapshot("2026-11-30-h200x1/deep.json");
        let mut b = a.clone();
        let mut c = a.clone();
        fn dev(s: &mut Snapshot) -> &mut cudoctor_snapshot::DeviceProbe {
            &mut s.deep.as_mut().unwrap().runs[0]
                .result
                .as_mut()
                .unwrap()
                .devices[0]
        }
        let ms = dev(&mut b).matmul_ms.unwrap();
        dev(&mut b).matmul_ms = Some(ms * 1.05);
        dev(&mut c).matmul_ms = Some(ms * 2.0);
        assert!(diff(("a", &a, &[]), ("b", &b, &[])).changes.is_empty());
        let d = diff(("a", &a, &[]), ("c", &c, &[]));
        assert_eq!(d.changes.len(), 1);
        assert_eq!(d.changes[0].topic, Topic::Deep);
        assert!((d.changes[0].relative.unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn identical_snapshots_have_no_change() {
        let a = device_snapshot("2026-11-30-h200x2/check.json");
        let d = diff(("a", &a, &[]), ("a", &a, &[]));
        assert!(!d.changed() && d.raw.is_empty());
    }
}
