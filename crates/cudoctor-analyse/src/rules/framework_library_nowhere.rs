use cudoctor_ldso::{cuda_library, CudaFamily};
use cudoctor_snapshot::{Framework, NeedKind, UnresolvedNeed};
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

A library a framework opens by bare name at run time (CTranslate2's `libcublas.so.12`, named
in its read-only data) is found only where glibc's loader searches from the opening library:
its RPATH/RUNPATH, LD_LIBRARY_PATH, the loader's cache and default directories, or a library
of that name the process already loaded. A wheel's copy in site-packages is not found
otherwise, so it is reported even where that wheel is installed. Where the environment's
`import torch` loads a library of that name, it is an info: a program that imports torch
first finds it.

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
before the first session (or `import torch` first), as its own documentation says. A library
opened by name needs its wheel's directory on LD_LIBRARY_PATH (the route CTranslate2's and
faster-whisper's installation notes give; the fix names the directory), or torch imported
first where torch's import loads it.
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

/// The CUDA libraries a framework needs that resolve nowhere, in the two ways it asks for them.
struct Nowhere<'a> {
    /// Linked (DT_NEEDED) and in no installed wheel: a linked library some wheel has is left to
    /// the framework, which may load it by path itself.
    linked: Vec<&'a UnresolvedNeed>,
    /// Opened by bare name: found only where the loader searches from the opening object, so
    /// a wheel's copy elsewhere does not count.
    opened: Vec<&'a UnresolvedNeed>,
}

impl<'a> Nowhere<'a> {
    /// The libraries of `v` that resolve nowhere, those the framework documents as optional
    /// left out; `None` when there are none.
    fn of(v: &FrameworkView<'a>) -> Option<Self> {
        let wanted = |u: &&UnresolvedNeed| !optional(v.build.framework, &u.soname);
        let of_kind = |kind: NeedKind| v.build.unresolved.iter().filter(move |u| u.kind == kind);
        let linked: Vec<&UnresolvedNeed> = of_kind(NeedKind::Linked)
            .filter(|u| u.in_env.is_empty())
            .filter(wanted)
            .collect();
        let opened: Vec<&UnresolvedNeed> = of_kind(NeedKind::OpenedByName).filter(wanted).collect();
        (!linked.is_empty() || !opened.is_empty()).then_some(Nowhere { linked, opened })
    }

    fn all(&self) -> impl Iterator<Item = &'a UnresolvedNeed> + '_ {
        self.linked.iter().chain(&self.opened).copied()
    }

    /// The sonames of the needs `keep` selects, sorted, each once.
    fn sonames(&self, keep: impl Fn(&UnresolvedNeed) -> bool) -> Vec<&'a str> {
        let mut sonames: Vec<&str> = self
            .all()
            .filter(|u| keep(u))
            .map(|u| u.soname.as_str())
            .collect();
        sonames.sort();
        sonames.dedup();
        sonames
    }

    /// Every library is opened by name and torch's import in this environment loads one of
    /// that soname: a program that imports torch first finds them.
    fn only_with_torch(&self) -> bool {
        self.linked.is_empty() && self.opened.iter().all(|u| preloaded(u).is_some())
    }
}

/// The library of that soname torch's import in this environment loads (the collector marks
/// it on the framework's own process, which `cudoctor libs` shows): a process that imports
/// torch first has it, and a dlopen() by that name finds the loaded one.
fn preloaded(u: &UnresolvedNeed) -> Option<&str> {
    u.after_import.as_ref().map(|a| a.path.as_str())
}

fn judge(ctx: &Context, v: FrameworkView) -> Option<Finding> {
    let nowhere = Nowhere::of(&v)?;
    let only_with_torch = nowhere.only_with_torch();
    let mut f = Finding::new(&RULE, title(&v, &nowhere)).about(Subject::Package {
        env: v.env.prefix.clone(),
        name: v.build.package.clone(),
    });
    if only_with_torch {
        f = f.severity(Severity::Info);
    }
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
    f = with_evidence(f, &nowhere);
    f = f.cause(cause(&v, &nowhere));
    f = with_install_fix(ctx, f, &v, &nowhere, major);
    f = with_loader_path_fix(ctx, f, &v, &nowhere, major);
    if v.build.framework == Framework::OnnxRuntime {
        f = f.prose("then call onnxruntime.preload_dlls() before the first InferenceSession (or import torch first): the provider finds the nvidia wheels' libraries only once they are loaded");
    }
    Some(f)
}

/// The title: found only after torch's import, provided by nothing here, or installed where
/// the loader does not look.
fn title(v: &FrameworkView, nowhere: &Nowhere) -> String {
    let name = v.build.framework.name();
    let version = &v.build.version;
    let sonames = nowhere.sonames(|_| true).join(", ");
    let prefix = &v.env.prefix;
    let has_copies = nowhere.opened.iter().any(|u| !u.in_env.is_empty());
    if nowhere.only_with_torch() {
        format!("{name} {version} finds {sonames} only in a process that imported torch first ({prefix})")
    } else if !has_copies {
        format!("{name} {version} needs {sonames} that nothing here provides ({prefix})")
    } else {
        format!(
            "{name} {version} cannot open {sonames}: the installed wheel's copy is not where the loader looks ({prefix})"
        )
    }
}

/// Each library, how it is asked for and where it is not found; the copies the loader does not
/// search; the library of that name torch's import loads.
fn with_evidence(mut f: Finding, nowhere: &Nowhere) -> Finding {
    for u in &nowhere.linked {
        f = f.evidence(format!(
            "{} needs {}: not on the loader's search path, and no installed wheel has it",
            u.needed_by, u.soname
        ));
    }
    for u in &nowhere.opened {
        f = f.evidence(format!(
            "{} opens {} by name (dlopen): the loader finds it neither on that library's RPATH/RUNPATH, LD_LIBRARY_PATH, the loader's cache and default directories, nor loaded by the framework's own import",
            u.needed_by, u.soname
        ));
        for copy in &u.in_env {
            f = f.evidence(format!(
                "{copy} is installed, but in a directory that dlopen() does not search"
            ));
        }
        if let Some(path) = preloaded(u) {
            f = f.evidence(format!(
                "import torch loads {path}: a dlopen() of {} after it finds that library",
                u.soname
            ));
        }
    }
    f
}

/// What fails, in the framework's own terms.
fn cause(v: &FrameworkView, nowhere: &Nowhere) -> String {
    let opened = &nowhere.opened;
    match v.build.framework {
        Framework::OnnxRuntime => "ONNX Runtime imports, but its CUDA provider cannot be loaded: sessions asking for CUDAExecutionProvider fall back to the CPU.".to_string(),
        fw if !opened.is_empty() => format!(
            "{} imports, and opens {} by name only when a GPU is first used; the loader never searches the nvidia wheels in site-packages on its own, so that use fails{}{}.",
            fw.name(),
            opened.iter().map(|u| u.soname.as_str()).collect::<Vec<_>>().join(", "),
            if fw == Framework::CTranslate2 {
                " (\"Library libcublas.so.12 is not found or cannot be loaded\")"
            } else {
                ""
            },
            if nowhere.only_with_torch() {
                " in a program that does not import torch first"
            } else {
                ""
            }
        ),
        fw => format!("{} imports, and fails where it first needs these libraries (an ImportError or a backend that does not start).", fw.name()),
    }
}

/// What to install: the libraries no wheel here has, through the framework's own extra where
/// its metadata has one, else the nvidia wheels of those libraries for its CUDA major.
fn with_install_fix(
    ctx: &Context,
    mut f: Finding,
    v: &FrameworkView,
    nowhere: &Nowhere,
    major: Option<u32>,
) -> Finding {
    let missing = nowhere.sonames(|u| u.in_env.is_empty());
    if missing.is_empty() {
        return f;
    }
    let target = ctx.target_env(v.env);
    let extras = cuda_extras(&v.build.needs);
    let args: Vec<String> = if extras.is_empty() {
        let mut pkgs: Vec<String> = missing
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
            missing.join(", "),
            major.map_or("(unknown)".to_string(), |m| m.to_string())
        ));
    } else {
        f = f.command(&target, cudoctor_plan::install::install(&target, &args));
    }
    f
}

/// A library opened by name loads once the loader searches the wheel's directory: that
/// directory on LD_LIBRARY_PATH (the route CTranslate2's and faster-whisper's installation
/// notes give), or torch imported first where it loads that library.
fn with_loader_path_fix(
    ctx: &Context,
    mut f: Finding,
    v: &FrameworkView,
    nowhere: &Nowhere,
    major: Option<u32>,
) -> Finding {
    let opened = &nowhere.opened;
    if opened.is_empty() || ctx.target_env(v.env).windows {
        return f;
    }
    let mut dirs: Vec<String> = Vec::new();
    let mut unknown: Vec<&str> = Vec::new();
    for u in opened {
        let dir = match u.in_env.first() {
            Some(copy) => copy.rsplit_once('/').map(|(d, _)| d.to_string()),
            None => cuda_library(&u.soname)
                .zip(major)
                .and_then(|(l, m)| wheel_lib_dir(l.family, m))
                .map(|rel| format!("{}/{rel}", v.build.location.trim_end_matches('/'))),
        };
        match dir {
            Some(d) if !dirs.contains(&d) => dirs.push(d),
            Some(_) => {}
            None => unknown.push(&u.soname),
        }
    }
    if !dirs.is_empty() {
        let current = ctx.snap.env.get("LD_LIBRARY_PATH").map(String::as_str);
        let mut entries = dirs.clone();
        entries.extend(
            current
                .into_iter()
                .flat_map(|c| c.split(':'))
                .filter(|e| !e.is_empty() && !dirs.iter().any(|d| d == e))
                .map(str::to_string),
        );
        f = f.shell(format!(
            "export LD_LIBRARY_PATH={}",
            cudoctor_plan::quote(&entries.join(":"))
        ));
    }
    if !unknown.is_empty() {
        f = f.prose(format!(
            "then add the directory of the installed {} to LD_LIBRARY_PATH",
            unknown.join(", ")
        ));
    }
    let preloads: Vec<&str> = opened.iter().copied().filter_map(preloaded).collect();
    if !preloads.is_empty() {
        f = f.prose(format!(
            "or import torch before {} in the program: torch's import loads {}",
            v.build.package,
            preloads.join(", ")
        ));
    }
    f
}

/// Where the nvidia wheel of `family` for CUDA `major` puts its library, under site-packages:
/// `nvidia/<component>/lib` for the `-cu12` (and older) wheels, `nvidia/cu13/lib` for the CUDA
/// 13 ones (as the wheels' RECORDs list them: nvidia-cublas-cu12 12.9 `nvidia/cublas/lib/
/// libcublas.so.12`, nvidia-cublas 13.x `nvidia/cu13/lib/libcublas.so.13`). Only the families
/// a framework opens by name; unknown elsewhere.
fn wheel_lib_dir(family: CudaFamily, major: u32) -> Option<String> {
    let component = match family {
        CudaFamily::Cudart => "cuda_runtime",
        CudaFamily::Cublas | CudaFamily::CublasLt => "cublas",
        CudaFamily::Nvrtc => "cuda_nvrtc",
        CudaFamily::NvJitLink => "nvjitlink",
        _ => return None,
    };
    Some(if major >= 13 {
        format!("nvidia/cu{major}/lib")
    } else {
        format!("nvidia/{component}/lib")
    })
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
    use cudoctor_snapshot::{CudaBinding, FrameworkBuild, PythonEnv};

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
                        ..Default::default()
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
            ..Default::default()
        }];
        assert!(run(&RULE, &s).is_empty());
        // A library it needs is still asked for, without the optional one.
        s.python_envs[0].frameworks[0]
            .unresolved
            .push(UnresolvedNeed {
                needed_by: "/opt/ort/lib/python3.12/site-packages/cupy/cuda/cufft.so".into(),
                soname: "libcufft.so.11".into(),
                ..Default::default()
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

    /// CTranslate2 4.8.5 as the real env `ctranslate2-numba-cuda` reads: `libctranslate2`
    /// opens libcublas.so.12 by name, with `copy` the nvidia-cublas-cu12 wheel's file if
    /// installed.
    fn ct2_env(copy: Option<&str>) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        let sp = "/v/lib/python3.11/site-packages";
        s.python_envs = vec![PythonEnv {
            prefix: "/v".into(),
            site_packages: vec![sp.into()],
            frameworks: vec![FrameworkBuild {
                framework: Framework::CTranslate2,
                version: "4.8.5".into(),
                package: "ctranslate2".into(),
                location: sp.into(),
                cuda: Some(CudaBinding {
                    major: 12,
                    minor: None,
                    read: "12.x".into(),
                    source: "the CUDA libraries it opens".into(),
                }),
                unresolved: vec![UnresolvedNeed {
                    needed_by: format!("{sp}/ctranslate2.libs/libctranslate2-a7a60d30.so.4.8.5"),
                    soname: "libcublas.so.12".into(),
                    in_env: copy.into_iter().map(str::to_string).collect(),
                    kind: NeedKind::OpenedByName,
                    after_import: None,
                }],
                ..Default::default()
            }],
            ..Default::default()
        }];
        s
    }

    const CT2_CUBLAS: &str = "/v/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12";

    #[test]
    fn a_library_opened_by_name_and_nowhere_is_installed_then_put_on_the_loaders_path() {
        let f = run(&RULE, &ct2_env(None));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].title.contains("needs libcublas.so.12 that nothing"),
            "{f:?}"
        );
        assert_eq!(
            f[0].fix[0], "/v/bin/python -m pip install nvidia-cublas-cu12",
            "{f:?}"
        );
        // Installing the wheel alone is not enough: its directory is where dlopen() looks.
        assert_eq!(
            f[0].fix[1],
            format!(
                "export LD_LIBRARY_PATH={}",
                CT2_CUBLAS.trim_end_matches("/libcublas.so.12")
            ),
        );
    }

    #[test]
    fn a_wheels_copy_of_a_library_opened_by_name_is_not_found_by_the_loader() {
        // The state after installing nvidia-cublas-cu12 alone: a real dlopen still fails.
        let f = run(&RULE, &ct2_env(Some(CT2_CUBLAS)));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].title.contains("cannot open libcublas.so.12"), "{f:?}");
        assert!(
            f[0].evidence.iter().any(|e| e.starts_with(CT2_CUBLAS)),
            "{f:?}"
        );
        // Nothing to install: the directory goes on LD_LIBRARY_PATH, before what is there.
        let mut s = ct2_env(Some(CT2_CUBLAS));
        s.env.insert(
            "LD_LIBRARY_PATH".into(),
            "/opt/x/lib::/usr/local/lib".into(),
        );
        let f = run(&RULE, &s);
        assert_eq!(
            f[0].fix,
            vec![
                "export LD_LIBRARY_PATH=/v/lib/python3.11/site-packages/nvidia/cublas/lib:/opt/x/lib:/usr/local/lib"
                    .to_string()
            ]
        );
    }

    #[test]
    fn a_library_opened_by_name_that_torchs_import_loads_is_an_info() {
        // The collector marks it on the framework's process (libraries::mark_after_import),
        // which `cudoctor libs` shows the same way.
        let mut s = ct2_env(Some(CT2_CUBLAS));
        let loaded =
            "/v/lib/python3.11/site-packages/torch/lib/../../nvidia/cublas/lib/libcublas.so.12";
        s.python_envs[0].frameworks[0].unresolved[0].after_import =
            Some(cudoctor_snapshot::AfterImport {
                framework: Framework::Torch,
                path: loaded.into(),
                real_path: None,
            });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info, "{f:?}");
        assert!(
            f[0].title
                .contains("only in a process that imported torch first"),
            "{f:?}"
        );
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.starts_with(&format!("import torch loads {loaded}"))),
            "{f:?}"
        );
        assert!(
            f[0].fix
                .iter()
                .any(|x| x.contains("import torch before ctranslate2")),
            "{f:?}"
        );
    }

    #[test]
    fn wheel_library_directories() {
        assert_eq!(
            wheel_lib_dir(CudaFamily::Cublas, 12).as_deref(),
            Some("nvidia/cublas/lib")
        );
        assert_eq!(
            wheel_lib_dir(CudaFamily::Cudart, 12).as_deref(),
            Some("nvidia/cuda_runtime/lib")
        );
        assert_eq!(
            wheel_lib_dir(CudaFamily::Cublas, 13).as_deref(),
            Some("nvidia/cu13/lib")
        );
        assert_eq!(wheel_lib_dir(CudaFamily::Cudnn, 12), None);
    }
}
