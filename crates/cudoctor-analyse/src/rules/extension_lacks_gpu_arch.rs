use cudoctor_fatbin::compat::Verdict;

use crate::context::library_verdict;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "KRN002",
    name: "extension-lacks-gpu-arch",
    layer: Layer::Kernels,
    severity: Severity::Error,
    summary: "An installed CUDA extension has no kernel image for a present GPU",
    docs: r#"## What it checks
Every CUDA library of torch's companions and extensions (flash-attn, xformers, vLLM, bitsandbytes,
apex, DeepSpeed ops, torchvision...) read from its fat binaries, against each GPU: machine code
it runs, PTX it can JIT (warning), or nothing (error).

## Why it matters
An extension built for other GPUs imports fine and fails at its first kernel: "no kernel image
is available for execution on the device", "CUDA error: invalid device function", or
"FlashAttention only supports Ampere GPUs or newer". Prebuilt wheels often target only the
data-center archs of their release; source builds target only the GPU of the machine they were
built on.

## How to fix
Install a build of the package that includes the GPU's architecture, or rebuild it from source
with `TORCH_CUDA_ARCH_LIST` naming every GPU you run on (the report prints the command).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(images) = &ctx.snap.kernel_images else {
        return Vec::new();
    };
    let gpus = ctx.gpus();
    let driver_cuda = ctx.driver_max_cuda().map(|(c, _)| c);
    let torches: Vec<&cudoctor_snapshot::TorchBuild> =
        ctx.torch_envs().iter().map(|t| t.torch).collect();
    let all_ccs: Vec<String> = {
        let mut v: Vec<String> = gpus
            .iter()
            .filter_map(|g| g.cc.map(|c| c.to_string()))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let mut out = Vec::new();
    for lib in &images.libraries {
        // torch's own libraries are KRN001's; libraries without device code are not extensions.
        if lib.error.is_some()
            || (lib.sass.is_empty() && lib.ptx.is_empty())
            || torches.iter().any(|t| t.owns(&lib.path))
        {
            continue;
        }
        for g in &gpus {
            let Some(cc) = g.cc else { continue };
            let verdict = library_verdict(lib, cc, driver_cuda);
            let package = lib.package.as_deref().unwrap_or("the extension");
            let (severity, title, cause) = match &verdict {
                Verdict::Native { .. } => continue,
                Verdict::PtxJit { via } => (
                    Severity::Warning,
                    format!("{package} runs on {} only through PTX JIT ({via})", g.label()),
                    "No machine code for this GPU: its kernels are compiled by the driver at first launch (slow start) and fail with a driver older than the PTX.".to_string(),
                ),
                Verdict::PtxTooNewForDriver { via, needs_cuda, .. } => (
                    Severity::Error,
                    format!("{package} has only PTX for {}, too new for the driver", g.label()),
                    format!("Its PTX {via} needs a driver for CUDA {needs_cuda}: launching fails with \"the provided PTX was compiled with an unsupported toolchain\"."),
                ),
                Verdict::NoImage => (
                    Severity::Error,
                    format!("{package} has no kernel image for {}", g.label()),
                    format!("The library carries code for {} only: its kernels fail on {} with \"no kernel image is available for execution on the device\" (or \"invalid device function\").", lib.sass.iter().chain(&lib.ptx).cloned().collect::<Vec<_>>().join(" "), cc.sm()),
                ),
            };
            let mut f = Finding::new(&RULE, title)
                .severity(severity)
                .evidence(format!(
                    "{} (compute capability from {})",
                    g.label(),
                    g.cc_source
                ))
                .evidence(format!(
                    "{}: SASS {} PTX {}",
                    lib.path,
                    list(&lib.sass),
                    list(&lib.ptx)
                ))
                .cause(cause);
            if let Some(pkg) = &lib.package {
                f = f.fix(format!(
                    "TORCH_CUDA_ARCH_LIST=\"{}\" MAX_JOBS=4 pip install --no-build-isolation --no-binary {pkg} --force-reinstall --no-deps {pkg}   # rebuild for every GPU here",
                    all_ccs.join(";")
                ));
            }
            out.push(f);
        }
    }
    out
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{KernelImages, LibraryImages};

    #[test]
    fn an_extension_built_for_ampere_only_fails_on_hopper() {
        let mut s = h200();
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![
                LibraryImages {
                    path: "/opt/venv/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so".into(),
                    package: Some("flash-attn".into()),
                    sass: vec!["sm_80".into(), "sm_86".into()],
                    ..Default::default()
                },
                LibraryImages {
                    path: "/opt/venv/lib/python3.12/site-packages/xformers/_C.so".into(),
                    package: Some("xformers".into()),
                    sass: vec!["sm_80".into(), "sm_90".into()],
                    ..Default::default()
                },
            ],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].title.contains("flash-attn"));
        assert!(
            f[0].fix[0].contains("TORCH_CUDA_ARCH_LIST=\"9.0\""),
            "{:?}",
            f[0].fix
        );
    }

    #[test]
    fn packages_named_like_torch_are_extensions_too() {
        let mut s = h200();
        let torch_dir = s.python_envs[0].torch.as_ref().unwrap().path.clone();
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![LibraryImages {
                path: format!("{torch_dir}_scatter/_scatter_cuda.so"),
                package: Some("torch-scatter".into()),
                sass: vec!["sm_80".into()],
                ..Default::default()
            }],
        });
        assert_eq!(run(&RULE, &s).len(), 2, "torch_scatter is not torch");
    }
}
