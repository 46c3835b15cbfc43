use crate::context::TorchEnv;
use crate::{Context, Finding, Layer, Rule, Severity, Subject};

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

/// Its findings are about one environment's torch build, whose chooser's command set repairs them: rank 0 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::TorchBuild,
    rank: 0,
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
                .evidence(format!("{}: cuda = None", t.torch.file("version.py")))
                .evidence(ctx.driver_evidence())
                .cause("This torch has no CUDA support compiled in: torch.cuda.is_available() is False and .cuda() raises \"Torch not compiled with CUDA enabled\".");
            for g in ctx.gpus() {
                f = f.evidence(g.label());
            }
            install(ctx, t, f)
        })
        .collect()
}

/// The chooser's command set: the installed release (else the newest) in a CUDA variant the
/// driver runs and whose arch list covers every GPU, with the paired companions the env has.
fn install(ctx: &Context, t: TorchEnv, f: Finding) -> Finding {
    let f = f.about(Subject::TorchBuild {
        env: t.env.prefix.clone(),
    });
    match ctx.torch_remedy(t) {
        Some(r) => ctx.with_torch_repair(f, t, r),
        None => f.prose("cudoctor plan prints every build that fits this machine"),
    }
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
    fn cpu_torch_of_a_windows_environment_is_fixed_in_powershell() {
        let mut s = h200();
        s.host.os = "windows".into();
        s.python_envs[0] = windows_torch_env(
            r"C:\Users\Me O'Neil\ComfyUI\python_embeded",
            "2.11.0+cpu",
            None,
            &[("torchvision", "0.26.0+cpu")],
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        let cmd = &f[0].fix[0];
        assert!(
            matches!(cmd, cudoctor_plan::FixStep::PowerShell(_)),
            "{:?}",
            f[0].fix
        );
        assert!(
            cmd.starts_with(
                r"& 'C:\Users\Me O''Neil\ComfyUI\python_embeded\python.exe' -m pip install torch==2.11.0+cu1"
            ),
            "{cmd}"
        );
        assert!(
            cmd.contains("torchvision==0.26.0+cu1")
                && cmd.contains("--index-url https://download.pytorch.org/whl/cu1"),
            "{cmd}"
        );
        assert_eq!(
            f[0].evidence[0],
            r"C:\Users\Me O'Neil\ComfyUI\python_embeded\Lib\site-packages\torch\version.py: cuda = None"
        );
    }

    #[test]
    fn cpu_torch_on_a_cpu_machine_is_fine() {
        let mut s = machine(None, &[]);
        s.python_envs.push(torch_env("/v", "2.11.0+cpu", None, &[]));
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn the_fix_pins_a_variant_the_installed_release_has() {
        // torch 2.5.1 has no cu13x variant: the fix must not pair it with the driver's newest.
        let mut s = h200();
        s.python_envs[0] = torch_env("/v", "2.5.1+cpu", None, &[("torchvision", "0.20.1+cpu")]);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        let kb = cudoctor_kb::Kb::embedded();
        let release = kb.torch("2.5.1").expect("2.5.1 in the knowledge base");
        let fix = &f[0].fix[0];
        let tag = fix.rsplit("/whl/").next().unwrap_or_default();
        assert!(release.variant(tag).is_some(), "{fix}");
        assert!(fix.contains("torch==2.5.1+"), "{fix}");
        assert!(fix.contains("torchvision==0.20.1"), "{fix}");
        assert!(!fix.contains("torchaudio"), "{fix}");
    }
}
