use cudoctor_fatbin::compat::Verdict;
use cudoctor_kb::ComputeCapability;
use cudoctor_snapshot::LibraryImages;

use crate::context::{library_verdict, GpuView, TorchEnv};
use crate::{Confidence, Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "KRN001",
    name: "torch-lacks-gpu-arch",
    layer: Layer::Kernels,
    severity: Severity::Error,
    summary: "torch carries no kernel image (SASS or PTX) a present GPU can run",
    docs: r#"## What it checks
For each GPU, whether torch's libtorch_cuda.so carries machine code (SASS) the GPU runs — its own
architecture, or an older minor of the same major, but an `a` (arch-specific) image only on
exactly its architecture — or PTX of an older architecture the driver can JIT. The architectures
are read from the fat binaries inside the library; without a scan, from the build's
TORCH_CUDA_ARCH_LIST in the knowledge base (then the finding says "likely").

## Why it matters
Without an image, every kernel launch fails: "CUDA error: no kernel image is available for
execution on the device", or torch warns "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is
not compatible with the current PyTorch installation". New GPUs on old wheels (sm_120 on cu124)
and old GPUs on new wheels (sm_61 on cu128) hit this. A PTX-only match works but compiles every
kernel at first launch, and fails when the PTX is newer than the driver.

## How to fix
Install a torch CUDA variant whose arch list includes the GPU (the report names one).
"#,
    check,
};

/// Its findings are about one environment's torch build, whose chooser's command set repairs them: rank 2 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::TorchBuild,
    rank: 2,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let gpus = ctx.gpus();
    let mut out = Vec::new();
    for t in ctx.torch_envs().into_iter().filter(|t| t.cuda().is_some()) {
        for g in &gpus {
            out.extend(judge(ctx, t, g));
        }
    }
    out
}

/// torch's main CUDA library as scanned, when a scan ran.
fn scanned_torch<'a>(ctx: &Context<'a>, t: TorchEnv<'a>) -> Option<&'a LibraryImages> {
    ctx.snap
        .kernel_images
        .as_ref()?
        .torch_cuda_libraries(t.torch)
        .find(|l| l.error.is_none())
}

fn judge(ctx: &Context, t: TorchEnv, g: &GpuView) -> Option<Finding> {
    let cc = g.cc?;
    let driver_cuda = ctx.driver_max_cuda().map(|(c, _)| c);
    let (verdict, source, archs, confidence) = match scanned_torch(ctx, t) {
        Some(lib) => (
            library_verdict(lib, cc, driver_cuda),
            format!("fat binaries of {}", lib.path),
            lib.sass.iter().chain(&lib.ptx).cloned().collect::<Vec<_>>(),
            Confidence::Certain,
        ),
        None => {
            let release = ctx.kb.torch(t.torch.public_version())?;
            let variant = release.variant(t.torch.local_label()?)?;
            let list = variant.arch_list.clone()?;
            let lib = arch_list_images(&list);
            (
                library_verdict(&lib, cc, driver_cuda),
                format!(
                    "TORCH_CUDA_ARCH_LIST of torch {} {} (knowledge base)",
                    release.version, variant.tag
                ),
                list,
                Confidence::Likely,
            )
        }
    };
    let mut f = Finding::new(&RULE, "")
        .about(Subject::Gpu { index: g.gpu.index })
        .confidence(confidence)
        .evidence(format!(
            "{} (compute capability from {})",
            g.label(),
            g.cc_source
        ))
        .evidence(format!("{source}: {}", archs.join(" ")));
    match verdict {
        Verdict::Native { .. } => return None,
        Verdict::PtxJit { via } => {
            f.title = format!("{} runs torch only through PTX JIT from {via}", g.label());
            f = f.severity(Severity::Warning).cause(format!(
                "torch has no machine code {} can run, only PTX ({via}): the driver compiles every kernel at first launch (minutes of start-up, a large JIT cache), and fails if the PTX is newer than the driver.",
                cc.sm()
            ));
        }
        Verdict::PtxTooNewForDriver {
            via,
            ptx_isa,
            needs_cuda,
            driver_cuda,
            ..
        } => {
            f.title = format!(
                "{} could only JIT torch's PTX {via}, which is too new for the driver",
                g.label()
            );
            f = f.cause(format!(
                "No machine code for {}; the PTX {via} (ISA {ptx_isa}) needs a driver for CUDA {needs_cuda}, and this one supports {driver_cuda}: \"the provided PTX was compiled with an unsupported toolchain\".",
                cc.sm()
            ));
        }
        Verdict::NoImage => {
            f.title = format!("{} has no kernel image in {}", g.label(), t.label());
            f = f.cause(format!(
                "torch carries no SASS for {} and no PTX it could JIT: every CUDA kernel fails with \"no kernel image is available for execution on the device\".",
                cc.sm()
            ));
        }
    }
    let seen = confidence == Confidence::Certain;
    Some(with_variant_fix(ctx, t, cc, f, seen))
}

/// The images a TORCH_CUDA_ARCH_LIST such as ["8.0", "9.0+PTX"] produces.
fn arch_list_images(list: &[String]) -> LibraryImages {
    let req = cudoctor_fatbin::compat::parse_torch_arch_list(&list.join(";"));
    LibraryImages {
        sass: req.sass.iter().map(|a| a.name()).collect(),
        ptx: req.ptx.iter().map(|a| a.name()).collect(),
        ..Default::default()
    }
}

/// Adds the chooser's command set: the installed release in a variant that covers every GPU
/// and that the driver runs (else the newest such release), with the paired companions.
fn with_variant_fix(
    ctx: &Context,
    t: TorchEnv,
    cc: ComputeCapability,
    f: Finding,
    seen: bool,
) -> Finding {
    let f = f.about(Subject::TorchBuild {
        env: t.env.prefix.clone(),
    });
    let remedy = if seen {
        ctx.torch_remedy_away(t)
    } else {
        ctx.torch_remedy(t)
    };
    match remedy {
        Some(r) => ctx.with_torch_repair(f, t, r),
        None => f.prose(format!(
            "No known torch build covers {} on this driver: build torch from source with TORCH_CUDA_ARCH_LIST={cc}",
            cc.sm()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::KernelImages;

    fn with_torch_lib(sass: &[&str], ptx: &[&str]) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![LibraryImages {
                path: "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so".into(),
                sass: sass.iter().map(|x| x.to_string()).collect(),
                ptx: ptx.iter().map(|x| x.to_string()).collect(),
                ..Default::default()
            }],
        });
        s
    }

    #[test]
    fn hopper_on_cu130_is_covered() {
        assert!(run(&RULE, &h200()).is_empty());
        assert!(run(&RULE, &with_torch_lib(&["sm_80", "sm_90"], &[])).is_empty());
    }

    #[test]
    fn a_scanned_library_without_the_arch_is_an_error() {
        let f = run(&RULE, &with_torch_lib(&["sm_80", "sm_86"], &[]));
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[0].confidence, Confidence::Certain);
        assert!(f[0].fix[0].contains("whl/cu1"), "{:?}", f[0].fix);
    }

    #[test]
    fn ptx_only_coverage_is_a_warning() {
        let f = run(&RULE, &with_torch_lib(&["sm_80"], &["compute_80"]));
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn an_arch_specific_image_does_not_run_on_a_later_minor() {
        // sm_90a runs on 9.0 only; here the GPU is 9.0, so it runs.
        assert!(run(&RULE, &with_torch_lib(&["sm_90a"], &[])).is_empty());
        let mut s = with_torch_lib(&["sm_100a"], &[]);
        s.driver.gpus[0].compute_capability = Some("10.3".into());
        s.driver.gpus.truncate(1);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "sm_100a must not serve a 10.3 GPU: {f:?}");
    }

    #[test]
    fn without_a_scan_the_knowledge_base_list_is_used_and_marked_likely() {
        let mut s = machine(
            Some(("580.159.04", "13.0")),
            &[("NVIDIA GeForce GTX 1080 Ti", "6.1")],
        );
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].confidence, Confidence::Likely);
        assert!(f[0].fix[0].contains("cu126"), "{:?}", f[0].fix);
    }
}
