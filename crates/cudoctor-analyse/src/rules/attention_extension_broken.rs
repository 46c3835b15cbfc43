use super::deep_support::{first_line, probes, ProbeView};
use crate::{Context, Finding, Layer, Rule, Severity};
use cudoctor_snapshot::ExtensionFailure;

pub static RULE: Rule = Rule {
    code: "ACC007",
    name: "attention-extension-broken",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "flash_attn or xformers is installed but fails to import or to run",
    docs: r#"## What it checks
With `--deep`, when `flash_attn` or `xformers` is installed, the probe imports it and runs one
attention call (fp16, 1024 tokens, 16 heads of 128) on the first GPU.

## Why it matters
These packages are compiled against one torch and one CUDA. After a torch upgrade they fail to
import ("undefined symbol"), and models that try them either crash or quietly fall back to slower
attention. A GPU older than the package supports fails at the first call.

## How to fix
Rebuild the package against the installed torch. The report prints the command in the
environment's own installer; with pip it reads
`<env>/bin/python -m pip install --force-reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache-dir flash-attn`,
in a uv-made venv `uv pip install --python <env>/bin/python --reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache flash-attn`
(`--no-deps` keeps torch as it is; `--no-binary` and the cache option keep the installer from
reinstalling the same wheel or its cached build; a build needs nvcc matching torch's CUDA
major), or install the xformers release made for this torch.
"#,
    check,
};

/// Its findings are about one package built for another torch or CUDA: rank 5 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::Package,
    rank: 5,
};

fn check(ctx: &Context) -> Vec<Finding> {
    probes(ctx)
        .into_iter()
        .flat_map(|p| judge(ctx.probe_target(p.run), p))
        .collect()
}

fn judge(target: cudoctor_plan::TargetEnv, p: ProbeView) -> Vec<Finding> {
    let torch = p
        .result
        .torch
        .as_ref()
        .map(|t| t.version.clone())
        .unwrap_or_default();
    p.result
        .extensions
        .iter()
        .filter(|e| !e.imported || e.call_ok == Some(false))
        .map(|e| {
            let version = e.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
            let what = if e.imported { "fails to run" } else { "fails to import" };
            let error = e.error.as_deref().map(first_line).unwrap_or_else(|| "no error text".into());
            let pip_name = e.name.replace('_', "-");
            let mut f = Finding::new(&RULE, format!("{}{version} {what} in {}", e.name, p.label()))
                .about(p.subject())
                .evidence(error.clone())
                .cause(if e.failure == Some(ExtensionFailure::UndefinedSymbol) {
                    "The package's compiled extension was built against another torch: its C++ symbols do not match this one."
                } else {
                    "The package is installed but cannot be used here; models that try it crash or fall back to slower attention."
                })
                .shell(format!(
                    "{}   # rebuilds it against torch {}",
                    target.install(&cudoctor_plan::Install::rebuild(&pip_name)),
                    cudoctor_plan::comment(&torch)
                ));
            if let Some(env) = &p.run.env_prefix {
                f = f.about(crate::Subject::Package {
                    env: env.clone(),
                    name: pip_name.clone(),
                });
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;
    use cudoctor_snapshot::ExtensionProbe;

    #[test]
    fn working_extensions_pass_and_abi_breaks_are_explained() {
        let mut s = h200_deep();
        result_mut(&mut s).extensions = vec![ExtensionProbe {
            name: "xformers".into(),
            imported: true,
            call_ok: Some(true),
            ..Default::default()
        }];
        assert!(run(&RULE, &s).is_empty());
        result_mut(&mut s).extensions.push(ExtensionProbe {
            name: "flash_attn".into(),
            imported: false,
            error: Some("ImportError: /opt/venv/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs".into()),
            failure: Some(ExtensionFailure::UndefinedSymbol),
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].cause.contains("built against another torch"));
        assert_eq!(
            f[0].fix[0],
            "/opt/venv/bin/python -m pip install --force-reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache-dir flash-attn   # rebuilds it against torch 2.11.0+cu130"
        );
    }
}
