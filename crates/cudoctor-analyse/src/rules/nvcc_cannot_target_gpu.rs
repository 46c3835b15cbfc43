use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "KRN004",
    name: "nvcc-cannot-target-gpu",
    layer: Layer::Kernels,
    severity: Severity::Warning,
    summary: "The selected nvcc cannot compile for a present GPU",
    docs: r#"## What it checks
The range of real architectures the selected toolkit's nvcc can compile for (knowledge base)
against each GPU: too new (sm_89 needs CUDA 11.8, sm_90 11.8, sm_100/sm_120 12.8) or too old
(CUDA 12 dropped Kepler, CUDA 13 dropped Maxwell, Pascal and Volta).

## Why it matters
Building an extension for that GPU stops with "nvcc fatal: Unsupported gpu architecture
'compute_120'", or builds without the GPU's code when the arch list is taken from elsewhere.

## How to fix
Select (or install) a toolkit whose range includes the GPU, matching torch's CUDA major.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(build) = ctx.build_toolkit() else {
        return Vec::new();
    };
    let Some(version) = build.cuda() else {
        return Vec::new();
    };
    let Some(range) = ctx.kb.nvcc_arch_range(version) else {
        return Vec::new();
    };
    ctx.gpus()
        .iter()
        .filter_map(|g| {
            let cc = g.cc?;
            if range.can_target(cc) != Some(false) {
                return None;
            }
            let limits = format!(
                "{}..{}",
                range.lowest.map_or("?".into(), |c| c.sm()),
                range.highest.map_or("?".into(), |c| c.sm())
            );
            Some(
                Finding::new(
                    &RULE,
                    format!("nvcc {version} cannot compile for {}", g.label()),
                )
                .evidence(format!(
                    "{} = {} -> CUDA Toolkit {}",
                    build.chosen_by,
                    build.home,
                    build.version.as_deref().unwrap_or("?")
                ))
                .evidence(format!(
                    "nvcc {version} targets {limits} (knowledge base: {})",
                    range.source
                ))
                .about(Subject::Gpu { index: g.gpu.index })
                .cause("Extension builds for this GPU fail with \"Unsupported gpu architecture\".")
                .prose(format!(
                    "Install or select a CUDA Toolkit that supports {} and set CUDA_HOME to it",
                    cc.sm()
                )),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn cuda_13_cannot_build_for_pascal() {
        let mut s = h200();
        assert!(run(&RULE, &s).is_empty());
        s.driver.gpus[0].compute_capability = Some("6.1".into());
        s.driver.gpus[0].name = "NVIDIA GeForce GTX 1080 Ti".into();
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
    }
}
