use cudoctor_kb::{ArchEntry, ComputeCapability, Coverage};

use crate::context::{GpuView, TorchEnv};
use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "KRN001",
    name: "torch-lacks-gpu-arch",
    layer: Layer::Kernels,
    severity: Severity::Error,
    summary: "torch carries no kernel image (SASS or PTX) a present GPU can run",
    docs: r#"## What it checks
For each GPU, whether torch's CUDA libraries carry machine code (SASS) for its compute capability
(or an older minor of the same major), or PTX of an older architecture the driver can JIT. The
architectures come from the fat binaries inside libtorch_cuda.so when they were scanned, else
from the build's TORCH_CUDA_ARCH_LIST in the knowledge base.

## Why it matters
Without an image, every kernel launch fails: "CUDA error: no kernel image is available for
execution on the device", or torch warns "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is
not compatible with the current PyTorch installation". New GPUs on old wheels (sm_120 on cu124)
and old GPUs on new wheels (sm_61 on cu128) hit this.

## How to fix
Install a torch CUDA variant whose arch list includes the GPU (the report names one).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let gpus = ctx.gpus();
    ctx.torch_envs()
        .into_iter()
        .filter(|t| t.cuda().is_some())
        .flat_map(|t| {
            let gpus = gpus.clone();
            gpus.into_iter().filter_map(move |g| judge(ctx, t, &g))
        })
        .collect()
}

/// Architectures of torch's own libraries from a scan, when one ran.
fn scanned_archs(ctx: &Context, t: TorchEnv) -> Option<(Vec<ArchEntry>, String)> {
    let images = ctx.snap.kernel_images.as_ref()?;
    let lib = images.libraries.iter().find(|l| {
        l.path.starts_with(&t.torch.path) && l.path.contains("libtorch_cuda") && l.error.is_none()
    })?;
    let mut entries = Vec::new();
    for s in &lib.sass {
        if let Ok(cc) = s
            .trim_start_matches("sm_")
            .trim_end_matches(['a', 'f'])
            .parse::<ComputeCapability>()
        {
            entries.push(ArchEntry { cc, ptx: false });
        }
    }
    for p in &lib.ptx {
        if let Ok(cc) = p
            .trim_start_matches("compute_")
            .trim_end_matches(['a', 'f'])
            .parse::<ComputeCapability>()
        {
            entries.push(ArchEntry { cc, ptx: true });
        }
    }
    Some((entries, format!("fat binaries of {}", lib.path)))
}

fn judge(ctx: &Context, t: TorchEnv, g: &GpuView) -> Option<Finding> {
    let cc = g.cc?;
    let release = ctx.kb.torch(t.torch.public_version());
    let variant = release.and_then(|r| r.variant(t.torch.local_label()?));
    let (entries, source, confidence) = match scanned_archs(ctx, t) {
        Some((e, s)) => (e, s, Confidence::Certain),
        None => {
            let v = variant?;
            (
                v.archs()?,
                format!(
                    "TORCH_CUDA_ARCH_LIST of torch {} {} (knowledge base)",
                    t.torch.public_version(),
                    v.tag
                ),
                Confidence::Likely,
            )
        }
    };
    let coverage = cudoctor_kb::coverage(&entries, cc);
    let list: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
    let mut f = Finding::new(&RULE, "")
        .confidence(confidence)
        .evidence(format!(
            "{} (compute capability from {})",
            g.label(),
            g.cc_source
        ))
        .evidence(format!("{}: {}", source, list.join(" ")));
    match coverage {
        Coverage::Native | Coverage::BinaryCompatible { .. } => None,
        Coverage::PtxJit { from } => {
            f.title = format!(
                "{} runs torch only through PTX JIT from {}",
                g.label(),
                from.compute()
            );
            f = f
                .severity(Severity::Warning)
                .cause(format!("torch has no machine code for {} but PTX for {}: the driver compiles kernels at first launch (slow start, large JIT cache) and fails if the PTX is newer than the driver.", cc.sm(), from.compute()));
            Some(with_variant_fix(ctx, t, cc, f))
        }
        Coverage::Missing => {
            f.title = format!("{} has no kernel image in {}", g.label(), t.label());
            f = f.cause(format!(
                "torch carries no SASS for {} and no PTX it could JIT: every CUDA kernel fails with \"no kernel image is available for execution on the device\".",
                cc.sm()
            ));
            Some(with_variant_fix(ctx, t, cc, f))
        }
    }
}

/// Adds the newest variant (same release first) that covers `cc` and that the driver runs.
fn with_variant_fix(ctx: &Context, t: TorchEnv, cc: ComputeCapability, mut f: Finding) -> Finding {
    let driver = ctx.driver_version();
    let runs = |c| {
        driver
            .as_ref()
            .map_or(true, |d| ctx.kb.driver_support(d, c).runs() != Some(false))
    };
    let mut best = None;
    for release in ctx.kb.torch_releases().iter().rev() {
        for v in release.variants.iter().rev() {
            if v.covers(cc) == Some(true) && runs(v.cuda) {
                let same = release.version == t.torch.public_version();
                if best.is_none() || same {
                    best = Some((release.version.clone(), v.tag.clone()));
                }
                if same {
                    break;
                }
            }
        }
    }
    if let Some((version, tag)) = best {
        f = f.fix(format!(
            "{}/bin/python -m pip install --force-reinstall torch=={version} --index-url https://download.pytorch.org/whl/{tag}",
            t.env.prefix
        ));
    } else {
        f = f.fix(format!("No known torch build covers {} on this driver: build torch from source with TORCH_CUDA_ARCH_LIST={}", cc.sm(), cc));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{KernelImages, LibraryImages};

    #[test]
    fn hopper_on_cu130_is_covered() {
        assert!(run(&RULE, &h200()).is_empty());
    }

    #[test]
    fn a_scanned_library_without_the_arch_is_an_error() {
        let mut s = h200();
        s.kernel_images = Some(KernelImages {
            libraries: vec![LibraryImages {
                path: "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so".into(),
                sass: vec!["sm_80".into(), "sm_86".into()],
                ptx: vec![],
                ..Default::default()
            }],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[0].confidence, Confidence::Certain);
        assert!(f[0].fix[0].contains("whl/cu1"), "{:?}", f[0].fix);
    }

    #[test]
    fn ptx_only_coverage_is_a_warning() {
        let mut s = h200();
        s.kernel_images = Some(KernelImages {
            libraries: vec![LibraryImages {
                path: "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so".into(),
                sass: vec!["sm_80".into()],
                ptx: vec!["compute_80".into()],
                ..Default::default()
            }],
        });
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Warning);
    }
}
