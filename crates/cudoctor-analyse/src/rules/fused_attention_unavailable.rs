use super::deep_support::{first_line, probes, ProbeView};
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "ACC002",
    name: "fused-attention-unavailable",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "A fused attention backend (flash, memory-efficient, cuDNN) cannot run here, and why",
    docs: r#"## What it checks
With `--deep`, each fused backend of `scaled_dot_product_attention` is forced in turn on the
first GPU (bf16, or fp16 before compute capability 8.0). A backend that refuses is listed with
torch's own reason ("Flash attention kernel not used because: ..."). It is a warning when no fused
backend works at all, a note when at least one does.

## Why it matters
Without a fused backend, attention runs the math kernel: its memory grows with the square of the
sequence length, and it is tens of times slower at long sequences. When only some backends are
missing, the others usually cover, but the fastest one for this GPU may be among the missing.

## How to fix
Read torch's reason. A GPU architecture outside a backend's range cannot be helped by software
on this GPU. A torch build without a backend (older releases lack cuDNN attention) is helped by a
newer torch. Inputs in fp32, or an explicit attention mask, rule out some backends: use bf16 or
fp16 and `is_causal=True` where the model allows.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    probes(ctx).into_iter().filter_map(judge).collect()
}

fn judge(p: ProbeView) -> Option<Finding> {
    let sdpa = p.result.sdpa.as_ref()?;
    let missing: Vec<_> = sdpa
        .backends
        .iter()
        .filter(|b| b.backend.is_fused() && !b.available)
        .collect();
    if missing.is_empty() {
        return None;
    }
    let working = sdpa.working_fused();
    let names: Vec<&str> = missing.iter().map(|b| b.backend.short()).collect();
    let gpu = p
        .result
        .devices
        .iter()
        .find(|d| d.index == sdpa.device)
        .map(|d| {
            format!(
                "GPU {} ({}{})",
                d.index,
                d.name,
                d.capability
                    .as_deref()
                    .map(|c| format!(", compute capability {c}"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_else(|| format!("GPU {}", sdpa.device));
    let mut f = if working.is_empty() {
        Finding::new(
            &RULE,
            format!("no fused attention backend runs on {gpu} in {}", p.label()),
        )
        .cause("Every fused scaled_dot_product_attention backend refused this GPU and dtype, so attention always runs the math kernel: quadratic memory, far slower at long sequences.")
    } else {
        let ok: Vec<&str> = working.iter().map(|b| b.backend.short()).collect();
        Finding::new(
            &RULE,
            format!("{} attention unavailable on {gpu}; {} works", names.join(", "), ok.join(", ")),
        )
        .severity(Severity::Info)
        .cause("Some fused backends refuse this GPU or build; the default dispatch uses the ones that work.")
    };
    f = f.about(p.subject());
    f = f.evidence(format!(
        "inputs: {} batch {}, {} heads of {}, causal",
        sdpa.dtype, sdpa.batch, sdpa.heads, sdpa.head_dim
    ));
    for b in &missing {
        let why = b
            .error
            .as_deref()
            .map(first_line)
            .unwrap_or_else(|| "no reason given".into());
        f = f.evidence(format!("{}: {why}", b.backend.short()));
    }
    f = f.prose("torch's reasons above say what each backend needs; where it names the GPU architecture, this GPU cannot run it");
    if p.result.torch.as_ref().is_some_and(|t| {
        t.version.starts_with("2.0")
            || t.version.starts_with("2.1.")
            || t.version.starts_with("2.2.")
    }) {
        f = f.prose(
            "A newer torch brings more backends (cuDNN attention arrived in later releases)",
        );
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;
    use cudoctor_snapshot::SdpaBackend;

    #[test]
    fn all_working_says_nothing() {
        assert!(run(&RULE, &h200_deep()).is_empty());
    }

    #[test]
    fn one_missing_is_a_note_all_missing_a_warning() {
        let mut s = h200_deep();
        let sdpa = result_mut(&mut s).sdpa.as_mut().unwrap();
        let flash = sdpa
            .backends
            .iter_mut()
            .find(|b| b.backend == SdpaBackend::FlashAttention)
            .unwrap();
        flash.available = false;
        flash.error = Some("Flash attention only supports gpu architectures in the range [sm80, sm90]. Attempting to run on a sm 7.5 gpu.\nRuntimeError: No available kernel. Aborting execution.".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.starts_with("flash: Flash attention only supports")));
        for b in &mut result_mut(&mut s).sdpa.as_mut().unwrap().backends {
            if b.backend.is_fused() {
                b.available = false;
            }
        }
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].title.starts_with("no fused attention backend"));
    }
}
