use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "FW001",
    name: "cpu-only-torch",
    layer: Layer::Framework,
    severity: Severity::Error,
    summary: "A CPU-only torch build is installed on a machine with an NVIDIA GPU",
    docs: r#"## What it checks
`torch/version.py`: a build with `cuda = None` (and no ROCm) is CPU-only, whatever the machine has.

## Why it matters
`torch.cuda.is_available()` is False and "Torch not compiled with CUDA enabled" is raised at the
first `.cuda()`. It happens when pip picked the CPU wheel (Windows and macOS default, a
`+cpu` index, or a dependency that pinned `torch` and pulled it from PyPI's CPU build).

## How to fix
Reinstall torch from the index of a CUDA variant this driver runs; `cudoctor plan` prints the
exact command.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.driver.gpus.is_empty() && !ctx.snap.driver.driver_found() {
        return Vec::new();
    }
    ctx.torch_envs()
        .into_iter()
        .filter(|t| t.torch.cuda.is_none() && t.torch.hip.is_none())
        .map(|t| {
            let mut f = Finding::new(&RULE, format!("{} is a CPU-only build", t.label()))
                .evidence(format!("{}/version.py: cuda = None", t.torch.path))
                .evidence(ctx.driver_evidence())
                .cause("This torch has no CUDA support compiled in: torch.cuda.is_available() is False and .cuda() raises \"Torch not compiled with CUDA enabled\".");
            for g in ctx.gpus() {
                f = f.evidence(g.label());
            }
            let variant = suggest_variant(ctx);
            f.fix(format!(
                "{}/bin/python -m pip install --force-reinstall torch=={} --index-url https://download.pytorch.org/whl/{variant}",
                t.env.prefix,
                t.torch.public_version()
            ))
            .fix("cudoctor plan   # for the full set of matching torchvision/torchaudio pins")
        })
        .collect()
}

/// The newest CUDA variant of any release the driver runs, else the PyPI default's.
fn suggest_variant(ctx: &Context) -> String {
    ctx.driver_version()
        .and_then(|d| {
            ctx.kb
                .variants_for_driver(&d)
                .first()
                .map(|(_, v, _)| v.tag.clone())
        })
        .unwrap_or_else(|| "cu126".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn cpu_torch_on_a_gpu_machine_is_an_error() {
        let mut s = h200();
        s.python_envs[0] = torch_env("/v", "2.11.0+cpu", None, &[]);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].fix[0].contains("--index-url https://download.pytorch.org/whl/cu1"),
            "{:?}",
            f[0].fix
        );
        assert!(run(&RULE, &h200()).is_empty());
    }

    #[test]
    fn cpu_torch_on_a_cpu_machine_is_fine() {
        let mut s = machine(None, &[]);
        s.python_envs.push(torch_env("/v", "2.11.0+cpu", None, &[]));
        assert!(run(&RULE, &s).is_empty());
    }
}
