use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::{RunFacts, SdpaBackend, SdpaGroup};

use super::support::{mib, ms};
use crate::rule::RunRule;

pub static RULE: RunRule = RunRule {
    code: "RUN001",
    name: "attention-runs-math",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "scaled_dot_product_attention calls of the program ran the math kernel",
    docs: r#"## What it checks
`cudoctor run` wraps `torch.nn.functional.scaled_dot_product_attention` in every process of the
program and groups the calls by device, dtype, shapes, mask and backend switches. For the first
call of each group (and every thousandth after) it records the aten operators torch really
dispatched: each fused backend has its own (`_scaled_dot_product_flash_attention`,
`_scaled_dot_product_efficient_attention`, `_scaled_dot_product_cudnn_attention`); the math path
dispatches matmuls and a softmax. For a math group on a GPU it asks torch why each fused backend
refused (`torch.backends.cuda.can_use_*_attention(params, debug=True)`, whose warnings are kept
word for word), and measures the call once more on copies of its inputs, without autograd: math
as called, then the fused backends with bf16 (or fp16) inputs. The rule fires when any call ran
math; on a CPU only as a note.

## Why it matters
Nothing errors: the program is just slow and memory-hungry. The math path materialises the
sequence-by-sequence score matrix (memory O(N²) instead of O(N)); long sequences run out of
memory and throughput collapses.

## How to fix
Read torch's reasons in the evidence. The usual ones: float32 inputs (flash and cuDNN take only
fp16/bf16; run the model under `torch.autocast("cuda", dtype=torch.bfloat16)` or cast it), an
explicit causal `attn_mask` where `is_causal=True` would do (flash takes no mask), grouped-query
attention in fp32 (the memory-efficient kernel does not take `enable_gqa`), a head size a kernel
does not support, or a backend switched off with `torch.backends.cuda.enable_*_sdp(False)` or
`sdpa_kernel`.
"#,
    check,
};

/// A group that ran math, with its process's label.
struct MathGroup<'a> {
    process: String,
    group: &'a SdpaGroup,
}

fn check(facts: &RunFacts) -> Vec<Finding> {
    let total: u64 = facts.processes.iter().map(|p| p.sdpa.calls).sum();
    let math: Vec<MathGroup> = facts
        .processes
        .iter()
        .flat_map(|p| {
            p.sdpa.groups.iter().map(move |g| MathGroup {
                process: p.label(),
                group: g,
            })
        })
        .filter(|m| m.group.backend() == Some(SdpaBackend::Math))
        .collect();
    if math.is_empty() || total == 0 {
        return Vec::new();
    }
    let gpu: Vec<&MathGroup> = math.iter().filter(|m| m.group.on_gpu()).collect();
    let (shown, severity): (Vec<&MathGroup>, Severity) = if gpu.is_empty() {
        (math.iter().collect(), Severity::Info)
    } else {
        (gpu, Severity::Warning)
    };
    let math_calls: u64 = shown.iter().map(|m| m.group.calls).sum();
    let pct = 100.0 * math_calls as f64 / total as f64;
    // GPU advice (dtype, switches) would mislead for CPU calls.
    let causes = if severity == Severity::Info {
        Vec::new()
    } else {
        causes(&shown)
    };
    let cost = shown.iter().find_map(|m| cost_ratio(m.group));
    let mut title = format!("{} of attention calls ran math", percent(pct));
    if let Some(c) = causes.first() {
        title.push_str(&format!(": {}", c.short));
        if let Some(fix) = c.fix_short {
            title.push_str(&format!("; {fix}"));
        }
    }
    if let Some((ratio, backend)) = &cost {
        title.push_str(&format!(" — math used {ratio:.0}× the memory of {backend}"));
    }
    let mut f = RULE.finding(title).severity(severity).evidence(format!(
        "{math_calls} of {total} scaled_dot_product_attention calls ran the math path (aten operators dispatched: matmuls and a softmax, no fused attention operator)"
    ));
    for m in shown.iter().take(4) {
        let g = m.group;
        f = f.evidence(format!(
            "{}: {} calls of {} ran {}",
            m.process,
            g.calls,
            g.describe(),
            g.dispatched_ops.join(", ")
        ));
        for r in &g.rejections {
            for reason in r.reasons.iter().take(2) {
                f = f.evidence(format!("torch: {} refused: {reason}", r.backend.short()));
            }
        }
        if g.rejections.is_empty() {
            if let Some(raised) = &g.reasons_unavailable {
                f = f.evidence(format!(
                    "torch gave no reason per backend: with the math path off the call raised `{raised}` and warned nothing; the reasons below are read from the inputs"
                ));
            }
        }
        if let Some(sw) = g.enabled {
            let off: Vec<&str> = [
                (sw.flash, "flash"),
                (sw.mem_efficient, "mem-efficient"),
                (sw.cudnn, "cuDNN"),
            ]
            .into_iter()
            .filter(|(on, _)| !on)
            .map(|(_, n)| n)
            .collect();
            if !off.is_empty() {
                f = f.evidence(format!("switched off at the call: {}", off.join(", ")));
            }
        }
        if let Some(c) = &g.cost {
            f = f.evidence(cost_line(c));
        }
    }
    if shown.len() > 4 {
        f = f.evidence(format!("and {} more groups", shown.len() - 4));
    }
    let cause = if severity == Severity::Info {
        "On the CPU, torch's fused attention kernel refuses some inputs (dropout, some masks) and runs the math path; on a GPU this would cost memory and time.".to_string()
    } else {
        let mut c = "torch's dispatcher refused every fused kernel for these inputs and fell back to the math path, which materialises the full score matrix.".to_string();
        for x in &causes {
            c.push(' ');
            c.push_str(x.long);
        }
        c
    };
    f = f.cause(cause);
    for x in &causes {
        if let Some(fix) = x.fix {
            f = f.prose(fix);
        }
    }
    vec![f.shell("python -c \"import torch; print(torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.mem_efficient_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled())\"  # the switches, in the program's environment")]
}

struct Cause {
    short: &'static str,
    long: &'static str,
    fix_short: Option<&'static str>,
    fix: Option<&'static str>,
}

fn causes(groups: &[&MathGroup]) -> Vec<Cause> {
    let mut out = Vec::new();
    let any = |p: &dyn Fn(&SdpaGroup) -> bool| groups.iter().any(|m| p(m.group));
    let reasons_say = |needle: &str| {
        groups.iter().any(|m| {
            m.group
                .rejections
                .iter()
                .flat_map(|r| &r.reasons)
                .any(|r| r.to_ascii_lowercase().contains(needle))
        })
    };
    if any(&|g| g.dtype == "float32" || g.dtype == "float64") {
        out.push(Cause {
            short: "fp32 inputs",
            long: "The inputs are float32 (or float64): flash and cuDNN take only fp16/bf16.",
            fix_short: Some("cast to bf16"),
            fix: Some("run the model under torch.autocast(\"cuda\", dtype=torch.bfloat16) (or model.to(torch.bfloat16)) so q, k and v reach attention in bf16"),
        });
    }
    if any(&|g| g.gqa) {
        out.push(Cause {
            short: "grouped-query attention",
            long: "enable_gqa=True: the memory-efficient kernel does not take it.",
            fix_short: None,
            fix: Some("keep grouped-query attention in bf16/fp16 (flash takes it), or repeat k and v to the query's heads (repeat_interleave) before the call"),
        });
    }
    if any(&|g| g.mask != "none" && !g.mask.is_empty()) && reasons_say("mask") {
        out.push(Cause {
            short: "an explicit attn_mask",
            long: "An explicit attn_mask was passed: flash takes no mask.",
            fix_short: None,
            fix: Some("when the mask is only causal, pass is_causal=True and no attn_mask"),
        });
    }
    if any(&|g| {
        g.enabled
            .is_some_and(|s| !s.flash || !s.mem_efficient || !s.cudnn)
    }) {
        out.push(Cause {
            short: "fused backends switched off",
            long: "Fused backends were switched off when the calls were made.",
            fix_short: None,
            fix: Some("find the switch in the program and its libraries: calls of enable_flash_sdp, enable_mem_efficient_sdp, enable_cudnn_sdp or sdpa_kernel"),
        });
    }
    out
}

/// How much more memory math took than the fused backend on the same call, and that backend.
fn cost_ratio(g: &SdpaGroup) -> Option<(f64, &'static str)> {
    let c = g.cost.as_ref()?;
    let (m, f) = (c.math_peak_mib?, c.fused_peak_mib?);
    if f <= 0.0 || m <= 0.0 {
        return None;
    }
    let backend = SdpaBackend::from_dispatched_ops(&c.fused_ops)
        .map(SdpaBackend::short)
        .unwrap_or("a fused kernel");
    Some((m / f, backend))
}

fn cost_line(c: &cudoctor_snapshot::SdpaCost) -> String {
    if let Some(e) = &c.error {
        return format!("measured without autograd: {e}");
    }
    let fused = SdpaBackend::from_dispatched_ops(&c.fused_ops)
        .map(SdpaBackend::short)
        .unwrap_or("fused");
    let part = |peak: Option<f64>, t: Option<f64>| match (peak, t) {
        (Some(p), Some(t)) => format!("{} at peak, {} a call", mib(p), ms(t)),
        (Some(p), None) => format!("{} at peak", mib(p)),
        _ => "not measured".to_string(),
    };
    format!(
        "measured without autograd, each after a warm-up call: math {}; {fused} with {} inputs {}",
        part(c.math_peak_mib, c.math_ms),
        c.fused_dtype,
        part(c.fused_peak_mib, c.fused_ms)
    )
}

fn percent(p: f64) -> String {
    if p >= 1.0 || p == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::fixtures::*;
    use cudoctor_snapshot::{SdpaCost, SdpaRejection};

    #[test]
    fn a_call_torch_gives_no_reason_for_says_so_and_reads_the_inputs() {
        // torch 2.11 on an H200: fp32 grouped-query inputs with the math path off raise
        // "Invalid backend" and warn nothing (scripts/device/sdpa_reasons_probe.py).
        let mut p = process(1);
        p.sdpa.calls = 10;
        let mut m = group("float32", MATH, 10);
        m.gqa = true;
        m.reasons_unavailable = Some("RuntimeError: Invalid backend".into());
        p.sdpa.groups = vec![m];
        let f = (RULE.check)(&run_of(vec![p]));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].evidence.iter().any(|e| e.starts_with(
                "torch gave no reason per backend: with the math path off the call raised `RuntimeError: Invalid backend`"
            )),
            "{:?}",
            f[0].evidence
        );
        assert!(!f[0].evidence.iter().any(|e| e.starts_with("torch: ")));
        assert!(f[0].cause.contains("enable_gqa=True"), "{}", f[0].cause);
    }

    #[test]
    fn fused_calls_say_nothing() {
        let mut p = process(1);
        p.sdpa.calls = 100;
        p.sdpa.groups = vec![group("bfloat16", FLASH, 100)];
        assert!((RULE.check)(&run_of(vec![p])).is_empty());
    }

    #[test]
    fn fp32_math_is_named_with_torchs_reason_and_its_cost() {
        let mut p = process(1);
        p.sdpa.calls = 100;
        let mut m = group("float32", MATH, 38);
        m.mask = "float32".into();
        m.rejections = vec![SdpaRejection {
            backend: SdpaBackend::FlashAttention,
            reasons: vec!["Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: float, Key dtype: float, and Value dtype: float instead.".into()],
        }];
        m.cost = Some(SdpaCost {
            math_peak_mib: Some(4100.0),
            math_ms: Some(12.0),
            fused_dtype: "bfloat16".into(),
            fused_peak_mib: Some(100.0),
            fused_ms: Some(0.5),
            fused_ops: vec!["_scaled_dot_product_efficient_attention".into()],
            error: None,
        });
        p.sdpa.groups = vec![group("bfloat16", FLASH, 62), m];
        let f = (RULE.check)(&run_of(vec![p]));
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].title,
            "38% of attention calls ran math: fp32 inputs; cast to bf16 — math used 41× the memory of mem-efficient"
        );
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.starts_with("torch: flash refused: Expected query")));
        assert!(
            f[0].evidence.iter().any(|e| e
                == "measured without autograd, each after a warm-up call: math 4.0 GiB at peak, 12.0 ms a call; mem-efficient with bfloat16 inputs 100 MiB at peak, 0.500 ms a call"),
            "{:?}",
            f[0].evidence
        );
        assert!(f[0].fix[0].text().contains("torch.autocast"));
    }

    #[test]
    fn math_on_the_cpu_is_a_note() {
        let mut p = process(1);
        p.sdpa.calls = 4;
        let mut g = group("float32", MATH, 4);
        g.device = "cpu".into();
        g.dropout = true;
        p.sdpa.groups = vec![g];
        let f = (RULE.check)(&run_of(vec![p]));
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].title.starts_with("100% of attention calls ran math"));
    }
}
