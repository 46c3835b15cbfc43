use super::deep_support::{first_line, probes, ProbeView};
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "ACC003",
    name: "compile-falls-back",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "torch.compile does not run a Triton kernel here: it fails or falls back to eager",
    docs: r#"## What it checks
With `--deep`, the probe compiles a small elementwise function with `torch.compile`
(inductor, caches off) on the first GPU, runs it, compares it with eager, and asks the profiler
whether an inductor-generated `triton_*` kernel really ran.

## Why it matters
`torch.compile` often degrades silently: with errors suppressed, or with compilation switched off
by an environment variable, the model runs eagerly and the expected speed-up never comes. When
it fails outright (no C compiler for Triton's launcher, a triton that does not match torch,
ptxas missing), training scripts that compile crash at the first step.

## How to fix
Read the reason: a missing `triton` is installed with the matching torch wheel (reinstall torch
from the same index); "Failed to find C compiler" needs `gcc`; TORCH_COMPILE_DISABLE or
TORCHDYNAMO_DISABLE set in the environment switch compilation off. `TORCH_LOGS=+dynamo,+inductor`
shows each decision.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    probes(ctx).into_iter().filter_map(judge).collect()
}

fn judge(p: ProbeView) -> Option<Finding> {
    let c = p.result.compile.as_ref()?;
    if c.ok || c.skipped.is_some() {
        return None;
    }
    let reason = c
        .fallback_reason
        .clone()
        .unwrap_or_else(|| "no reason recorded".into());
    let mut f = Finding::new(
        &RULE,
        format!("torch.compile does not run Triton kernels in {}", p.label()),
    )
    .evidence(format!("reason: {}", first_line(&reason)));
    if let Some(t) = &c.triton_version {
        f = f.evidence(format!("triton {t}"));
    }
    if let Some(n) = c.triton_kernels_ran {
        f = f.evidence(format!("triton kernels seen running: {n}"));
    }
    if let Some(n) = c.kernels_generated {
        f = f.evidence(format!("kernels inductor generated: {n}"));
    }
    for b in c.graph_breaks.iter().take(3) {
        f = f.evidence(format!("graph break: {b}"));
    }
    if c.correct == Some(false) {
        f = f
            .severity(Severity::Error)
            .evidence("the compiled function's result differs from eager");
    }
    f = f.cause("Inductor did not produce or run a Triton kernel for a trivial function, so compiled models in this environment run eagerly or fail.");
    let lower = reason.to_ascii_lowercase();
    if lower.contains("triton cannot be imported") || lower.contains("no module named 'triton'") {
        let version = p.result.torch.as_ref().map(|t| {
            t.version
                .split('+')
                .next()
                .unwrap_or(&t.version)
                .to_string()
        });
        f = f.fix(match version {
            Some(v) => format!("{}/bin/python -m pip install --force-reinstall torch=={v}  # brings the triton it was built with", p.run.env_prefix.as_deref().unwrap_or("<env>")),
            None => "reinstall torch from its index to get the matching triton".into(),
        });
    }
    if lower.contains("c compiler") || lower.contains("gcc") || lower.contains("cc1") {
        f = f.fix("sudo apt-get install -y gcc  # Triton compiles a small C launcher");
    }
    if lower.contains("ptxas") {
        f = f.fix("triton's bundled ptxas is missing or cannot run: reinstall triton, or set TRITON_PTXAS_PATH to a CUDA toolkit's ptxas");
    }
    for var in [
        "TORCH_COMPILE_DISABLE",
        "TORCHDYNAMO_DISABLE",
        "TORCHDYNAMO_SUPPRESS_ERRORS",
    ] {
        if reason.contains(var) {
            f = f.fix(format!("unset {var}"));
        }
    }
    Some(f.fix("TORCH_LOGS=+dynamo,+inductor python your_script.py  # shows why it fell back"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;
    use cudoctor_snapshot::CompileProbe;

    #[test]
    fn a_working_or_skipped_compile_says_nothing() {
        let mut s = h200_deep();
        assert!(run(&RULE, &s).is_empty());
        result_mut(&mut s).compile = Some(CompileProbe {
            ok: true,
            triton_kernels_ran: Some(1),
            ..Default::default()
        });
        assert!(run(&RULE, &s).is_empty());
        result_mut(&mut s).compile = Some(CompileProbe {
            skipped: Some("no GPU".into()),
            ..Default::default()
        });
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn eager_fallback_and_compiler_errors_get_their_fixes() {
        let mut s = h200_deep();
        result_mut(&mut s).compile = Some(CompileProbe {
            ok: false,
            triton_kernels_ran: Some(0),
            fallback_reason: Some("no Triton kernel ran: the compiled call fell back to eager (set: TORCH_COMPILE_DISABLE=1)".into()),
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix.iter().any(|x| x == "unset TORCH_COMPILE_DISABLE"));
        result_mut(&mut s).compile = Some(CompileProbe {
            ok: false,
            fallback_reason: Some("BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Failed to find C compiler. Please specify via CC environment variable.".into()),
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert!(
            f[0].fix
                .iter()
                .any(|x| x.contains("apt-get install -y gcc")),
            "{:?}",
            f[0].fix
        );
    }
}
