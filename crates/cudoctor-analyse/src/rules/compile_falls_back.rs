use super::deep_support::{first_line, probes, ProbeView};
use crate::context::recorded_torch_version;
use crate::{Context, Finding, Layer, Rule, Severity};
use cudoctor_snapshot::CompileFallbackCause;

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
Read the reason: a missing `triton` is installed by asking pip for the installed torch from its
own index (pip keeps torch and adds the triton it requires); a broken one is reinstalled alone,
at its version, with `--no-deps`; "Failed to find C compiler" needs `gcc`; TORCH_COMPILE_DISABLE or
TORCHDYNAMO_DISABLE set in the environment switch compilation off. `TORCH_LOGS=+dynamo,+inductor`
shows each decision.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    probes(ctx)
        .into_iter()
        .filter_map(|p| judge(ctx, p))
        .collect()
}

fn judge(ctx: &Context, p: ProbeView) -> Option<Finding> {
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
    // The knowledge base's GPU floor of torch.compile (ACC010 says it on its own too).
    for floor in ctx
        .kb
        .torch_floors()
        .iter()
        .filter(|fl| fl.feature == "torch.compile")
    {
        if let Some(min) = floor.min_cc {
            for g in ctx
                .gpus()
                .iter()
                .filter(|g| g.cc.is_some_and(|cc| cc < min))
            {
                f = f.evidence(format!(
                    "{} is below torch.compile's floor of compute capability {min} ({})",
                    g.label(),
                    floor.source
                ));
            }
        }
    }
    f = f.cause("Inductor did not produce or run a Triton kernel for a trivial function, so compiled models in this environment run eagerly or fail.");
    let has = |cause| c.fallback_causes.contains(&cause);
    let target = ctx.probe_target(p.run);
    if has(CompileFallbackCause::TritonMissing) {
        f = f.shell(bring_triton(ctx, &target, &p));
    } else if has(CompileFallbackCause::TritonBroken) || has(CompileFallbackCause::Ptxas) {
        // triton is there but broken: reinstall that one package, leaving torch alone.
        f = f.shell(
            match installed_triton(ctx, &p, c.triton_version.as_deref()) {
                Some((dist, version)) => format!(
                    "{}   # reinstalls only triton",
                    target.install(&cudoctor_plan::Install {
                        pins: vec![format!("{dist}=={version}")],
                        reinstall: true,
                        no_deps: true,
                        ..Default::default()
                    })
                ),
                None => bring_triton(ctx, &target, &p),
            },
        );
    }
    if has(CompileFallbackCause::NoCCompiler) {
        f = f.shell("sudo apt-get install -y gcc  # Triton compiles a small C launcher");
    }
    if has(CompileFallbackCause::Ptxas) {
        f = f
            .prose("or point Triton at a CUDA toolkit's ptxas:")
            .shell("export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas");
    }
    for var in &c.disabled_by {
        f = f.shell(format!("unset {var}"));
    }
    Some(f.prose("To see why it fell back, run your program with TORCH_LOGS=+dynamo,+inductor"))
}

/// The command that installs the triton the installed torch requires and nothing else: the
/// installer is asked for the torch that is already there (so it keeps it), as its installer
/// recorded it, from the index it came from (so a missing triton comes from there, as torch's
/// own did).
fn bring_triton(ctx: &Context, target: &cudoctor_plan::TargetEnv, p: &ProbeView) -> String {
    let recorded = p
        .run
        .env_prefix
        .as_deref()
        .and_then(|prefix| ctx.env_at(prefix))
        .and_then(|e| Some(recorded_torch_version(e, e.torch.as_ref()?)));
    let op = match recorded.or(p.result.torch.as_ref().map(|t| t.version.as_str())) {
        Some(version) => cudoctor_plan::Install::keep_torch(version),
        None => cudoctor_plan::Install::pins(["torch"]),
    };
    format!(
        "{}   # torch is kept; the installer adds the triton it requires",
        target.install(&op)
    )
}

/// The installed triton distribution (`triton`, or `pytorch-triton` for builds that take
/// theirs from the PyTorch index) and its version.
fn installed_triton(
    ctx: &Context,
    p: &ProbeView,
    probed: Option<&str>,
) -> Option<(String, String)> {
    let env = p
        .run
        .env_prefix
        .as_deref()
        .and_then(|prefix| ctx.env_at(prefix));
    let from_env = env.and_then(|e| {
        ["pytorch-triton", "triton"]
            .into_iter()
            .find_map(|n| e.package(n))
            .map(|pkg| (pkg.name.clone(), pkg.version.clone()))
    });
    from_env.or_else(|| probed.map(|v| ("triton".to_string(), v.to_string())))
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
            disabled_by: vec!["TORCH_COMPILE_DISABLE".into()],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix.iter().any(|x| x == "unset TORCH_COMPILE_DISABLE"));
        result_mut(&mut s).compile = Some(CompileProbe {
            ok: false,
            fallback_reason: Some("BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Failed to find C compiler. Please specify via CC environment variable.".into()),
            fallback_causes: vec![CompileFallbackCause::NoCCompiler],
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

    #[test]
    fn a_missing_triton_comes_from_torchs_index_without_touching_torch() {
        let mut s = h200_deep();
        result_mut(&mut s).compile = Some(CompileProbe {
            ok: false,
            fallback_reason: Some("BackendCompilerFailed: backend='inductor' raised:\nModuleNotFoundError: No module named 'triton'".into()),
            fallback_causes: vec![CompileFallbackCause::TritonMissing],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        let fix = &f[0].fix[0];
        assert!(
            fix.ends_with("-m pip install torch==2.11.0+cu130 --index-url https://download.pytorch.org/whl/cu130   # torch is kept; the installer adds the triton it requires"),
            "{fix}"
        );
        assert!(!fix.contains("--force-reinstall"), "{fix}");
    }

    #[test]
    fn a_broken_triton_is_reinstalled_alone_at_its_version() {
        let mut s = h200_deep();
        result_mut(&mut s).compile = Some(CompileProbe {
            ok: false,
            triton_version: Some("3.6.0".into()),
            fallback_reason: Some("triton cannot be imported: ImportError: libtriton.so: cannot open shared object file".into()),
            fallback_causes: vec![CompileFallbackCause::TritonBroken],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert!(
            f[0].fix[0].ends_with("-m pip install --force-reinstall --no-deps triton==3.6.0   # reinstalls only triton"),
            "{:?}",
            f[0].fix
        );
    }
}
