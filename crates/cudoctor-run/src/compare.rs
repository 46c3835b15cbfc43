//! The upgrade check: a run against a baseline run, metric by metric, with a verdict.

use cudoctor_snapshot::{RunFacts, SdpaBackend};
use serde::{Deserialize, Serialize};

use crate::summary::{backend_name, RunSummary};

/// Step time may move this much (relative) before it counts: run-to-run noise.
const STEP_TOLERANCE: f64 = 0.05;
/// Peak memory: relative and absolute slack.
const MEMORY_TOLERANCE: f64 = 0.10;
const MEMORY_SLACK_MIB: f64 = 64.0;
/// Attention shares: absolute change in share.
const SHARE_TOLERANCE: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    Better,
    Worse,
    Same,
    /// One side lacks the number.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Regressed,
    Improved,
    Unchanged,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MetricChange {
    /// `peak memory`, `median step time`, `attention on math`...
    pub metric: String,
    /// The unit of `before` and `after`: `MiB`, `ms`, `%`, `count`.
    pub unit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<f64>,
    pub trend: Trend,
}

impl MetricChange {
    /// "+12%" of the change, when both sides are known and before is not zero.
    pub fn relative(&self) -> Option<f64> {
        match (self.before, self.after) {
            (Some(b), Some(a)) if b != 0.0 => Some((a - b) / b),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    /// The baseline's command.
    pub baseline_command: Vec<String>,
    pub changes: Vec<MetricChange>,
    pub verdict: Verdict,
    /// One line per worse metric, for the summary.
    pub reasons: Vec<String>,
}

/// Compares `after` with the baseline (`before`, from `baseline`'s facts).
pub fn compare(baseline: &RunFacts, before: &RunSummary, after: &RunSummary) -> Comparison {
    let mut changes = vec![
        lower_is_better(
            "peak memory",
            "MiB",
            before.peak_allocated_mib,
            after.peak_allocated_mib,
            |b, a| a > b * (1.0 + MEMORY_TOLERANCE) && a - b > MEMORY_SLACK_MIB,
            |b, a| a < b * (1.0 - MEMORY_TOLERANCE) && b - a > MEMORY_SLACK_MIB,
        ),
        lower_is_better(
            "median step time",
            "ms",
            before.median_step_ms,
            after.median_step_ms,
            |b, a| a > b * (1.0 + STEP_TOLERANCE),
            |b, a| a < b * (1.0 - STEP_TOLERANCE),
        ),
    ];
    let attention = before.attention_calls > 0 || after.attention_calls > 0;
    if attention {
        let known = |s: &RunSummary| (s.attention_calls > 0).then_some(());
        for b in [
            SdpaBackend::Math,
            SdpaBackend::FlashAttention,
            SdpaBackend::EfficientAttention,
            SdpaBackend::CudnnAttention,
        ] {
            let (x, y) = (
                known(before).map(|_| before.share_of(b) * 100.0),
                known(after).map(|_| after.share_of(b) * 100.0),
            );
            if x.unwrap_or(0.0) == 0.0 && y.unwrap_or(0.0) == 0.0 {
                continue;
            }
            let tol = SHARE_TOLERANCE * 100.0;
            changes.push(if b == SdpaBackend::Math {
                lower_is_better(
                    &format!("attention on {}", backend_name(Some(b))),
                    "%",
                    x,
                    y,
                    |b, a| a - b > tol,
                    |b, a| b - a > tol,
                )
            } else {
                // A fused backend's share moving is neither better nor worse by itself.
                neutral(
                    &format!("attention on {}", backend_name(Some(b))),
                    "%",
                    x,
                    y,
                )
            });
        }
    }
    for (name, b, a) in [
        ("graph breaks", before.graph_breaks, after.graph_breaks),
        (
            "recompilations",
            before.recompilations,
            after.recompilations,
        ),
        (
            "frames run eagerly",
            before.eager_frames,
            after.eager_frames,
        ),
    ] {
        if b == 0 && a == 0 {
            continue;
        }
        changes.push(lower_is_better(
            name,
            "count",
            Some(b as f64),
            Some(a as f64),
            |b, a| a > b,
            |b, a| a < b,
        ));
    }
    let reasons: Vec<String> = changes
        .iter()
        .filter(|c| c.trend == Trend::Worse)
        .map(describe)
        .collect();
    let verdict = if !reasons.is_empty() {
        Verdict::Regressed
    } else if changes.iter().any(|c| c.trend == Trend::Better) {
        Verdict::Improved
    } else {
        Verdict::Unchanged
    };
    Comparison {
        baseline_command: baseline.command.clone(),
        changes,
        verdict,
        reasons,
    }
}

fn lower_is_better(
    metric: &str,
    unit: &str,
    before: Option<f64>,
    after: Option<f64>,
    worse: impl Fn(f64, f64) -> bool,
    better: impl Fn(f64, f64) -> bool,
) -> MetricChange {
    let trend = match (before, after) {
        (Some(b), Some(a)) if worse(b, a) => Trend::Worse,
        (Some(b), Some(a)) if better(b, a) => Trend::Better,
        (Some(_), Some(_)) => Trend::Same,
        _ => Trend::Unknown,
    };
    MetricChange {
        metric: metric.to_string(),
        unit: unit.to_string(),
        before,
        after,
        trend,
    }
}

fn neutral(metric: &str, unit: &str, before: Option<f64>, after: Option<f64>) -> MetricChange {
    MetricChange {
        metric: metric.to_string(),
        unit: unit.to_string(),
        before,
        after,
        trend: if before.is_some() && after.is_some() {
            Trend::Same
        } else {
            Trend::Unknown
        },
    }
}

/// "peak memory 1.2 GiB -> 4.5 GiB (+275%)".
pub fn describe(c: &MetricChange) -> String {
    let v = |x: Option<f64>| match x {
        None => "?".to_string(),
        Some(x) => value(x, &c.unit),
    };
    let mut s = format!("{} {} -> {}", c.metric, v(c.before), v(c.after));
    if c.unit != "%" {
        if let Some(r) = c.relative() {
            s.push_str(&format!(" ({:+.0}%)", r * 100.0));
        }
    }
    s
}

/// A value in its unit, as reports print it.
pub fn value(x: f64, unit: &str) -> String {
    match unit {
        "MiB" if x >= 1024.0 => format!("{:.2} GiB", x / 1024.0),
        "MiB" => format!("{x:.0} MiB"),
        "ms" if x >= 100.0 => format!("{x:.0} ms"),
        "ms" => format!("{x:.2} ms"),
        "%" => format!("{x:.0}%"),
        _ => format!("{x:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::BackendShare;

    fn summary(peak: f64, step: f64, math: f64, breaks: u64) -> RunSummary {
        RunSummary {
            attention_calls: 100,
            backends: vec![
                BackendShare {
                    backend: Some(SdpaBackend::Math),
                    calls: (math * 100.0) as u64,
                    share: math,
                },
                BackendShare {
                    backend: Some(SdpaBackend::FlashAttention),
                    calls: ((1.0 - math) * 100.0) as u64,
                    share: 1.0 - math,
                },
            ],
            median_step_ms: Some(step),
            peak_allocated_mib: Some(peak),
            graph_breaks: breaks,
            ..Default::default()
        }
    }

    #[test]
    fn a_fallback_to_math_is_a_regression_with_its_reasons() {
        let c = compare(
            &RunFacts::default(),
            &summary(2048.0, 50.0, 0.0, 0),
            &summary(9000.0, 80.0, 1.0, 1),
        );
        assert_eq!(c.verdict, Verdict::Regressed);
        assert!(
            c.reasons
                .contains(&"peak memory 2.00 GiB -> 8.79 GiB (+339%)".to_string()),
            "{:?}",
            c.reasons
        );
        assert!(c
            .reasons
            .contains(&"median step time 50.00 ms -> 80.00 ms (+60%)".to_string()));
        assert!(c
            .reasons
            .contains(&"attention on math 0% -> 100%".to_string()));
        assert!(
            c.reasons.contains(&"graph breaks 0 -> 1 (+0%)".to_string())
                || c.reasons
                    .iter()
                    .any(|r| r.starts_with("graph breaks 0 -> 1"))
        );
    }

    #[test]
    fn noise_is_unchanged_and_the_way_back_is_an_improvement() {
        let a = summary(2048.0, 50.0, 0.0, 0);
        let b = summary(2060.0, 51.0, 0.0, 0);
        assert_eq!(
            compare(&RunFacts::default(), &a, &b).verdict,
            Verdict::Unchanged
        );
        let worse = summary(9000.0, 80.0, 1.0, 1);
        assert_eq!(
            compare(&RunFacts::default(), &worse, &a).verdict,
            Verdict::Improved
        );
    }
}
