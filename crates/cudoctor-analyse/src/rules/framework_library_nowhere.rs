use cudoctor_ldso::{cuda_library, CudaFamily};
use cudoctor_snapshot::Framework;
use cudoctor_types::Requirement;

use crate::context::pip_package_for_cuda;
use crate::frameworks::FrameworkView;
use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "FW023",
    name: "framework-library-nowhere",
    layer: Layer::Framework,
    severity: Severity::Warning,
    summary: "A framework's CUDA libraries need a library that is nowhere: not on the loader's path, in no installed wheel",
    docs: r#"## What it checks
The shared objects a framework other than torch ships (ONNX Runtime's CUDA provider, CuPy's
library modules, JAX's plugin), loaded the way glibc's loader would (`cudoctor libs` shows each):
the CUDA libraries they need that resolve nowhere on the loader's search path and of which no
installed nvidia wheel has a copy either. Driver libraries (libcuda, libnvidia-ml) are the
driver layer's, and a library the framework documents as optional (CuPy's NCCL, cuTENSOR,
cuSPARSELt, which its `[ctk]` extra does not install) is not asked for.

## Why it matters
Such a framework imports, and fails only where it needs the library: ONNX Runtime's CUDA
provider does not load ("Failed to load library libonnxruntime_providers_cuda.so ...
libcublasLt.so.13: cannot open shared object file") and the session falls back to the CPU; CuPy's
`cupy.random` or `cupy.linalg` raise ImportError. A library some installed wheel has is left out:
the framework may load it by path itself (cuda-pathfinder, `onnxruntime.preload_dlls()`).

## How to fix
Install what provides them: the framework's own extra where its metadata has one for its CUDA
libraries (`onnxruntime-gpu[cuda,cudnn]`, `cupy-cuda13x[ctk]`), else the nvidia wheels of those
libraries for the framework's CUDA major. ONNX Runtime then needs `onnxruntime.preload_dlls()`
before the first session (or `import torch` first), as its own documentation says.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.other_frameworks()
        .into_iter()
        .filter_map(|v| judge(ctx, v))
        .collect()
}

/// Libraries a framework documents as optional, which its install extra does not bring and
/// which only one feature needs (the module that links it is imported when that feature is
/// used): CuPy's installation guide lists NCCL (`cupy.cuda.nccl`, multi-GPU), cuTENSOR and
/// cuSPARSELt as optional libraries, and its `[ctk]` extra installs none of them.
const OPTIONAL: &[(Framework, &[CudaFamily])] =
    &[(Framework::Cupy, &[CudaFamily::Nccl, CudaFamily::CusparseLt])];

/// True for a soname `framework` documents as optional ([`OPTIONAL`]; cuTENSOR by its name,
/// which the loader's families do not list).
fn optional(framework: Framework, soname: &str) -> bool {
    let family = cuda_library(soname).map(|l| l.family);
    OPTIONAL.iter().any(|(f, families)| {
        *f == framework
            && (family.is_some_and(|fam| families.contains(&fam))
                || (framework == Framework::Cupy && soname.starts_with("libcutensor")))
    })
}

fn judge(ctx: &Context, v: FrameworkView) -> Option<Finding> {
    let nowhere: Vec<_> = v
        .build
        .unresolved
        .iter()
        .filter(|u| u.in_env.is_empty())
        .filter(|u| !optional(v.build.framework, &u.soname))
        .collect();
    if nowhere.is_empty() {
        return None;
    }
    let mut sonames: Vec<&str> = nowhere.iter().map(|u| u.soname.as_str()).collect();
    sonames.sort();
    sonames.dedup();
    let name = v.build.framework.name();
    let mut f = Finding::new(
        &RULE,
        format!(
            "{name} {} needs {} that nothing here provides ({})",
            v.build.version,
            sonames.join(", "),
            v.env.prefix
        ),
    )
    .about(Subject::Package {
        env: v.env.prefix.clone(),
        name: v.build.package.clone(),
    });
    // A build of another CUDA major than the one its environment keeps: FW020's mixed env is
    // the cause, and FW020's fix moves this build.
    let major = v.build.cuda.as_ref().map(|c| c.major);
    if crate::frameworks::cuda_majors(v.env).len() > 1
        && major.is_some()
        && major != ctx.env_cuda_major(v.env).2
    {
        f = f.about(Subject::MixedCudaMajors {
            env: v.env.prefix.clone(),
        });
    }
    for u in &nowhere {
        f = f.evidence(format!(
            "{} needs {}: not on the loader's search path, and no installed wheel has it",
            u.needed_by, u.soname
        ));
    }
    f = f.cause(match v.build.framework {
        Framework::OnnxRuntime => "ONNX Runtime imports, but its CUDA provider cannot be loaded: sessions asking for CUDAExecutionProvider fall back to the CPU.".to_string(),
        fw => format!("{} imports, and fails where it first needs these libraries (an ImportError or a backend that does not start).", fw.name()),
    });
    let target = ctx.target_env(v.env);
    let extras = cuda_extras(&v.build.needs);
    let args: Vec<String> = if extras.is_empty() {
        let mut pkgs: Vec<String> = sonames
            .iter()
            .filter_map(|s| pip_package_for_cuda(cuda_library(s)?.family, major?))
            .collect();
        pkgs.sort();
        pkgs.dedup();
        pkgs
    } else {
        vec![format!("{}[{}]", v.build.package, extras.join(","))]
    };
    if args.is_empty() {
        f = f.prose(format!(
            "Install the packages that provide {} for CUDA {}",
            sonames.join(", "),
            major.map_or("(unknown)".to_string(), |m| m.to_string())
        ));
    } else {
        f = f.command(&target, cudoctor_plan::install::install(&target, &args));
    }
    if v.build.framework == Framework::OnnxRuntime {
        f = f.prose("then call onnxruntime.preload_dlls() before the first InferenceSession (or import torch first): the provider finds the nvidia wheels' libraries only once they are loaded");
    }
    Some(f)
}

/// The extras of a framework's metadata that bring its CUDA wheels (`Requires-Dist:
/// nvidia-cublas~=13.0; extra == "cuda"` gives `cuda`), in the order written.
fn cuda_extras(needs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in needs {
        let Ok(r) = line.parse::<Requirement>() else {
            continue;
        };
        for e in r.marker_extras() {
            if !out.contains(&e) {
                out.push(e);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{CudaBinding, FrameworkBuild, PythonEnv, UnresolvedNeed};

    fn ort_env(in_env: Vec<String>) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        let sp = "/opt/ort/lib/python3.12/site-packages";
        let provider = format!("{sp}/onnxruntime/capi/libonnxruntime_providers_cuda.so");
        s.python_envs = vec![PythonEnv {
            prefix: "/opt/ort".into(),
            site_packages: vec![sp.into()],
            frameworks: vec![FrameworkBuild {
                framework: Framework::OnnxRuntime,
                version: "1.31.1".into(),
                package: "onnxruntime-gpu".into(),
                location: sp.into(),
                cuda: Some(CudaBinding {
                    major: 13,
                    minor: Some(0),
                    read: "13.0".into(),
                    source: "onnxruntime/capi/build_and_package_info.py".into(),
                }),
                // As onnxruntime-gpu 1.31.1's METADATA writes them.
                needs: vec![
                    "nvidia-cuda-runtime~=13.0; extra == \"cuda\"".into(),
                    "nvidia-cublas~=13.0; extra == \"cuda\"".into(),
                    "nvidia-cudnn-cu13~=9.0; extra == \"cudnn\"".into(),
                ],
                unresolved: ["libcublasLt.so.13", "libcudart.so.13"]
                    .into_iter()
                    .map(|n| UnresolvedNeed {
                        needed_by: provider.clone(),
                        soname: n.into(),
                        in_env: in_env.clone(),
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }];
        s
    }

    #[test]
    fn an_onnx_runtime_without_its_cuda_wheels_gets_its_own_extras() {
        let f = run(&RULE, &ort_env(Vec::new()));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].title.contains("libcublasLt.so.13, libcudart.so.13"),
            "{f:?}"
        );
        assert_eq!(
            f[0].fix[0],
            "/opt/ort/bin/python -m pip install 'onnxruntime-gpu[cuda,cudnn]'"
        );
        assert!(f[0].fix[1].contains("onnxruntime.preload_dlls()"), "{f:?}");
    }

    #[test]
    fn cupys_optional_libraries_are_not_asked_for() {
        // cupy-cuda12x[ctk] 14.2.0 (the sweep's cupy-cuda12x-ctk env): its [ctk] extra brings
        // every CUDA library but NCCL, which only cupy.cuda.nccl needs.
        let mut s = ort_env(Vec::new());
        let b = &mut s.python_envs[0].frameworks[0];
        b.framework = Framework::Cupy;
        b.package = "cupy-cuda12x".into();
        b.unresolved = vec![UnresolvedNeed {
            needed_by: "/opt/ort/lib/python3.12/site-packages/cupy_backends/cuda/libs/nccl.so"
                .into(),
            soname: "libnccl.so.2".into(),
            in_env: vec![],
        }];
        assert!(run(&RULE, &s).is_empty());
        // A library it needs is still asked for, without the optional one.
        s.python_envs[0].frameworks[0]
            .unresolved
            .push(UnresolvedNeed {
                needed_by: "/opt/ort/lib/python3.12/site-packages/cupy/cuda/cufft.so".into(),
                soname: "libcufft.so.11".into(),
                in_env: vec![],
            });
        let f = run(&RULE, &s);
        assert!(f[0].title.contains("needs libcufft.so.11 that"), "{f:?}");
        assert!(optional(Framework::Cupy, "libcutensor.so.2"));
        assert!(!optional(Framework::OnnxRuntime, "libnccl.so.2"));
    }

    #[test]
    fn a_library_some_wheel_has_is_left_to_the_framework() {
        let copy = "/opt/ort/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13";
        assert!(run(&RULE, &ort_env(vec![copy.into()])).is_empty());
    }

    #[test]
    fn without_extras_the_nvidia_wheels_of_the_libraries_are_named() {
        let mut s = ort_env(Vec::new());
        s.python_envs[0].frameworks[0].needs.clear();
        let f = run(&RULE, &s);
        assert_eq!(
            f[0].fix[0],
            "/opt/ort/bin/python -m pip install nvidia-cublas nvidia-cuda-runtime"
        );
    }
}
