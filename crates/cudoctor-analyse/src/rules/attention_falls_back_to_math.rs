use cudoctor_snapshot::{SdpaBackend, SdpaProbe, SdpaRun};

use super::deep_support::{mib, ms, probes, ProbeView};
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "ACC001",
    name: "attention-falls-back-to-math",
    layer: Layer::Acceleration,
    severity: Severity::Error,
    summary: "scaled_dot_product_attention runs the math kernel although a fused kernel works here",
    docs: r#"## What it checks
With `--deep`, the probe calls `torch.nn.functional.scaled_dot_product_attention` (bf16, batch 1,
16 heads of 128, causal) with each backend forced in turn, then with torch's default dispatch,
and reads from the profiler which backend the default really ran. The rule fires when the
default ran the math backend while a fused one (flash, memory-efficient or cuDNN) worked on the
same GPU, dtype and shape.

## Why it matters
Nothing errors: the job is just slow and memory-hungry. The math backend materialises the
sequence-by-sequence score matrix. Measured on an H200 at 16k tokens: 100 ms and 37.5 GiB for
math against 1.7 ms and 64 MiB for cuDNN's fused kernel. Longer sequences run out of memory.

## How to fix
Find what switches the fused backends off: calls to `torch.backends.cuda.enable_flash_sdp(False)`
(and `enable_mem_efficient_sdp`, `enable_cudnn_sdp`), an `sdpa_kernel(SDPBackend.MATH)` context
left around the model, or a library that sets them at import. The finding shows the switches'
state at start-up and torch's own reasons. Check with
`python -c "import torch; print(torch.backends.cuda.flash_sdp_enabled())"`.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    probes(ctx).into_iter().filter_map(judge).collect()
}

fn judge(p: ProbeView) -> Option<Finding> {
    let sdpa = p.result.sdpa.as_ref()?;
    let default = sdpa.default.as_ref()?;
    if default.picked != Some(SdpaBackend::Math) {
        return None;
    }
    let fused = sdpa.working_fused();
    if fused.is_empty() {
        return None;
    }
    let names: Vec<&str> = fused.iter().map(|b| b.backend.short()).collect();
    let mut f = Finding::new(
        &RULE,
        format!(
            "attention falls back to the math kernel in {} although {} {}",
            p.label(),
            names.join(", "),
            if names.len() == 1 { "works" } else { "work" }
        ),
    )
    .about(p.subject())
    .evidence(format!(
        "default dispatch ran the math backend ({} {}, {} heads of {}, causal)",
        sdpa.dtype,
        shape_note(sdpa),
        sdpa.heads,
        sdpa.head_dim
    ))
    .evidence(format!(
        "forced one at a time, these ran: {}",
        names.join(", ")
    ));
    if let Some(cost) = cost(sdpa, &default.runs) {
        f = f.evidence(cost);
    }
    let settings = p.result.settings.as_ref();
    let off: Vec<&str> = [
        (
            SdpaBackend::FlashAttention,
            settings.and_then(|s| s.flash_sdp_enabled),
        ),
        (
            SdpaBackend::EfficientAttention,
            settings.and_then(|s| s.mem_efficient_sdp_enabled),
        ),
        (
            SdpaBackend::CudnnAttention,
            settings.and_then(|s| s.cudnn_sdp_enabled),
        ),
    ]
    .into_iter()
    .filter(|(_, on)| *on == Some(false))
    .filter_map(|(b, _)| b.torch_switch())
    .collect();
    for w in default.warnings.iter().take(3) {
        f = f.evidence(format!("torch: {}", super::deep_support::first_line(w)));
    }
    if sdpa.forced_fallback {
        f = f
            .cause("The probe itself switched the fused backends off before measuring the default (CUDOCTOR_PROBE_DISABLE_FUSED=1 or --disable-fused): this is the check of this rule, not a problem of the machine.")
            .prose("Run again without CUDOCTOR_PROBE_DISABLE_FUSED");
    } else if !off.is_empty() {
        f = f
            .evidence(format!("switched off when the process starts: {}", off.join(", ")))
            .cause("The fused backends are switched off before any user code runs (a sitecustomize or .pth hook, or a package that calls the switches at import), so every model in this environment pays the math kernel's cost.")
            .prose("Find the call that switches them off:")
            .shell(format!(
                "grep -rn \"enable_flash_sdp\\|enable_mem_efficient_sdp\\|enable_cudnn_sdp\" {}",
                cudoctor_plan::quote(p.run.env_prefix.as_deref().unwrap_or("."))
            ));
    } else {
        f = f
            .cause("torch's dispatcher chose the math kernel for this call although a fused kernel accepts the same inputs; torch's warnings above give its reasons.")
            .shell("python -c \"import torch; print([torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.mem_efficient_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled()])\"");
    }
    Some(f)
}

fn shape_note(sdpa: &SdpaProbe) -> String {
    format!("batch {}", sdpa.batch)
}

/// The math default's cost against the best fused backend at the longest sequence both measured.
fn cost(sdpa: &SdpaProbe, default_runs: &[SdpaRun]) -> Option<String> {
    let mut best: Option<(u32, f64, f64, f64, f64, &'static str)> = None;
    for d in default_runs {
        let (Some(dms), Some(dmem)) = (d.ms, d.peak_mib) else {
            continue;
        };
        for b in sdpa.working_fused() {
            let Some(r) = b.run_at(d.seq_len) else {
                continue;
            };
            let (Some(fms), Some(fmem)) = (r.ms, r.peak_mib) else {
                continue;
            };
            let better = match best {
                None => true,
                Some((len, _, _, bms, _, _)) => d.seq_len > len || (d.seq_len == len && fms < bms),
            };
            if better {
                best = Some((d.seq_len, dms, dmem, fms, fmem, b.backend.short()));
            }
        }
    }
    let (len, dms, dmem, fms, fmem, name) = best?;
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.0}x", a / b)
        } else {
            "?".into()
        }
    };
    let mut line = format!(
        "cost at {len} tokens: math {} and {} at peak, {name} {} and {} ({} the time, {} the memory)",
        ms(dms), mib(dmem), ms(fms), mib(fmem), ratio(dms, fms), ratio(dmem, fmem)
    );
    let skipped: Vec<String> = default_runs
        .iter()
        .filter(|r| r.skipped.is_some() || r.error.is_some())
        .map(|r| format!("{} tokens", r.seq_len))
        .collect();
    if !skipped.is_empty() {
        line.push_str(&format!(
            "; not measurable at {} (too much memory or an error)",
            skipped.join(", ")
        ));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;

    #[test]
    fn the_healthy_h200_passes() {
        assert!(run(&RULE, &h200_deep()).is_empty());
    }

    #[test]
    fn a_forced_fallback_is_caught_with_its_cost() {
        let mut s = h200_deep();
        let sdpa = result_mut(&mut s).sdpa.as_mut().unwrap();
        sdpa.forced_fallback = true;
        let d = sdpa.default.as_mut().unwrap();
        d.picked = Some(SdpaBackend::Math);
        d.runs = math_runs();
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        let cost = f[0]
            .evidence
            .iter()
            .find(|e| e.starts_with("cost"))
            .unwrap();
        // 100.489 ms vs cuDNN's 1.71 ms; 38400 MiB vs 64 MiB.
        assert!(cost.contains("16384 tokens"), "{cost}");
        assert!(cost.contains("59x the time"), "{cost}");
        assert!(cost.contains("600x the memory"), "{cost}");
        assert!(f[0].cause.contains("CUDOCTOR_PROBE_DISABLE_FUSED"));
    }

    #[test]
    fn switches_off_at_start_are_named() {
        let mut s = h200_deep();
        let r = result_mut(&mut s);
        r.settings = Some(cudoctor_snapshot::MathSettings {
            flash_sdp_enabled: Some(false),
            mem_efficient_sdp_enabled: Some(false),
            cudnn_sdp_enabled: Some(false),
            ..Default::default()
        });
        r.sdpa.as_mut().unwrap().default.as_mut().unwrap().picked = Some(SdpaBackend::Math);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].evidence.iter().any(|e| e.contains("enable_flash_sdp")));
    }

    #[test]
    fn math_is_fine_when_nothing_fused_works() {
        let mut s = h200_deep();
        let sdpa = result_mut(&mut s).sdpa.as_mut().unwrap();
        for b in &mut sdpa.backends {
            if b.backend != SdpaBackend::Math {
                b.available = false;
            }
        }
        sdpa.default.as_mut().unwrap().picked = Some(SdpaBackend::Math);
        assert!(run(&RULE, &s).is_empty());
    }
}
