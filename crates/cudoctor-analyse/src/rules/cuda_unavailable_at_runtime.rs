use super::deep_support::{probes, ProbeView};
use crate::views::explained::with_explanation;
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
The reason text is torch's own. It is run through the explain engine: when that knows the
message, its cause and fixes are added here (evidence `explain: <category> (<signature>)`). The
driver, framework and platform findings of this report usually name the fix too. If
CUDA_VISIBLE_DEVICES is set, check that it names GPUs that exist.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let driver_gpus = ctx.snap.driver.gpus.len();
    probes(ctx)
        .into_iter()
        .filter_map(|p| {
            let target = ctx.probe_target(p.run);
            judge(
                p,
                driver_gpus,
                ctx.snap.env.get("CUDA_VISIBLE_DEVICES"),
                &target,
            )
        })
        .collect()
}

fn judge(
    p: ProbeView,
    driver_gpus: usize,
    visible: Option<&String>,
    target: &cudoctor_plan::TargetEnv,
) -> Option<Finding> {
    let torch = p.result.torch.as_ref()?;
    torch.cuda.as_ref()?;
    let cuda = p.result.cuda.as_ref()?;
    if cuda.available {
        return None;
    }
    let given = cuda
        .unavailable_reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    let reason = given.unwrap_or("torch gave no reason");
    let mut f = Finding::new(
        &RULE,
        format!("torch.cuda.is_available() is False in {}", p.label()),
    )
    .about(p.subject())
    .evidence(format!("torch {} built for CUDA {}", torch.version, torch.cuda.as_deref().unwrap_or("?")))
    .evidence(format!("torch says: {reason}"))
    .evidence(format!("GPUs the driver reports: {driver_gpus}"))
    .cause("torch is a CUDA build but cannot initialise CUDA in this process; the text above is its own reason, unchanged.")
    .shell(cudoctor_plan::heredoc("cudoctor explain", reason));
    if let Some(text) = given {
        f = with_explanation(f, text, target);
    }
    if let Some(v) = visible {
        f = f.evidence(format!("CUDA_VISIBLE_DEVICES={v:?}"));
        if driver_gpus > 0 {
            f = f.shell("unset CUDA_VISIBLE_DEVICES  # or list GPUs that exist (nvidia-smi -L)");
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

    fn unavailable_because(why: &str) -> Vec<Finding> {
        let mut s = h200_deep();
        let cuda = result_mut(&mut s).cuda.as_mut().unwrap();
        cuda.available = false;
        cuda.device_count = Some(0);
        cuda.unavailable_reason = Some(why.into());
        run(&RULE, &s)
    }

    #[test]
    fn a_known_reason_gets_the_explained_cause_and_fixes() {
        // What the probe records with CUDA_VISIBLE_DEVICES="" (torch.cuda.init()'s error).
        let f = unavailable_because("RuntimeError: No CUDA GPUs are available");
        assert_eq!(f.len(), 1);
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e == "explain: driver_missing (torch-no-cuda-gpus)"),
            "{:?}",
            f[0].evidence
        );
        assert!(
            f[0].cause.starts_with("torch is a CUDA build"),
            "{}",
            f[0].cause
        );
        assert!(
            f[0].cause.contains("CUDA counted zero devices"),
            "{}",
            f[0].cause
        );
        assert!(
            f[0].fix[0].contains("CUDA_VISIBLE_DEVICES"),
            "{:?}",
            f[0].fix
        );
        // The rule's own fix stays, after the explained ones.
        assert!(f[0].fix.last().unwrap().starts_with("cudoctor explain"));

        let f = unavailable_because("CUDA initialization: The NVIDIA driver on your system is too old (found version 12020).");
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e == "explain: driver_too_old (torch-driver-too-old)"),
            "{:?}",
            f[0].evidence
        );
        assert!(f[0].cause.contains("12.2"), "{}", f[0].cause);
    }

    #[test]
    fn an_unknown_reason_is_left_as_it_is() {
        let f = unavailable_because("something no signature knows");
        assert!(!f[0].evidence.iter().any(|e| e.starts_with("explain:")));
        assert_eq!(f[0].fix.len(), 1);
        assert!(f[0].fix[0].starts_with("cudoctor explain"));
        assert!(f[0].cause.ends_with("its own reason, unchanged."));
        let mut s = h200_deep();
        result_mut(&mut s).cuda.as_mut().unwrap().available = false;
        let f = run(&RULE, &s);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.ends_with("torch gave no reason")));
        assert!(!f[0].evidence.iter().any(|e| e.starts_with("explain:")));
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
