use super::deep_support::{probes, ProbeView};
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "ACC004",
    name: "cuda-unavailable-at-runtime",
    layer: Layer::Acceleration,
    severity: Severity::Error,
    summary: "A CUDA build of torch says torch.cuda.is_available() is False, and why",
    docs: r#"## What it checks
With `--deep`, the probe imports torch in the environment's own interpreter and calls
`torch.cuda.is_available()`, keeping torch's warnings; when it is False it forces
`torch.cuda.init()` to get the driver's own error text. CPU-only builds are left to FRM rules.

## Why it matters
This is the symptom users see first: training silently runs on the CPU, or `.cuda()` raises.
torch alone does not say why; the reason text names the broken link (no driver loaded, driver too
old for the wheel's CUDA, devices hidden, a container without GPUs).

## How to fix
The reason text is torch's own; `cudoctor explain` maps it to a cause, and the driver, framework
and platform findings of this report usually name the fix. If CUDA_VISIBLE_DEVICES is set, check
that it names GPUs that exist.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let driver_gpus = ctx.snap.driver.gpus.len();
    probes(ctx)
        .into_iter()
        .filter_map(|p| judge(p, driver_gpus, ctx.snap.env.get("CUDA_VISIBLE_DEVICES")))
        .collect()
}

fn judge(p: ProbeView, driver_gpus: usize, visible: Option<&String>) -> Option<Finding> {
    let torch = p.result.torch.as_ref()?;
    torch.cuda.as_ref()?;
    let cuda = p.result.cuda.as_ref()?;
    if cuda.available {
        return None;
    }
    let reason = cuda
        .unavailable_reason
        .clone()
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "torch gave no reason".into());
    let mut f = Finding::new(
        &RULE,
        format!("torch.cuda.is_available() is False in {}", p.label()),
    )
    .evidence(format!("torch {} built for CUDA {}", torch.version, torch.cuda.as_deref().unwrap_or("?")))
    .evidence(format!("torch says: {}", reason.trim()))
    .evidence(format!("GPUs the driver reports: {driver_gpus}"))
    .cause("torch is a CUDA build but cannot initialise CUDA in this process; the text above is its own reason, unchanged.")
    .fix(format!("cudoctor explain <<'EOF'\n{}\nEOF", reason.trim()));
    if let Some(v) = visible {
        f = f.evidence(format!("CUDA_VISIBLE_DEVICES={v:?}"));
        if driver_gpus > 0 {
            f = f.fix("unset CUDA_VISIBLE_DEVICES  # or list GPUs that exist (nvidia-smi -L)");
        }
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;

    #[test]
    fn available_cuda_says_nothing() {
        assert!(run(&RULE, &h200_deep()).is_empty());
    }

    #[test]
    fn the_reason_is_kept_word_for_word() {
        let mut s = h200_deep();
        let cuda = result_mut(&mut s).cuda.as_mut().unwrap();
        cuda.available = false;
        cuda.device_count = Some(0);
        let why = "CUDA initialization: The NVIDIA driver on your system is too old (found version 12020).";
        cuda.unavailable_reason = Some(why.into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].evidence.iter().any(|e| e.ends_with(why)));
    }

    #[test]
    fn cpu_builds_are_left_to_other_rules() {
        let mut s = h200_deep();
        let r = result_mut(&mut s);
        r.torch.as_mut().unwrap().cuda = None;
        r.cuda.as_mut().unwrap().available = false;
        assert!(run(&RULE, &s).is_empty());
    }
}
