use crate::views::paths::short;
use cudoctor_ldso::{cuda_library, CudaFamily};

use crate::context::{pip_package_for_cuda, recorded_torch_version};
use cudoctor_snapshot::{LibraryLinks, LinkedLibrary};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "LIB001",
    name: "missing-library",
    layer: Layer::Libraries,
    severity: Severity::Error,
    summary: "A library torch or an extension needs cannot be found by the dynamic loader",
    docs: r#"## What it checks
Every DT_NEEDED entry of torch's libraries and each CUDA extension, resolved exactly as glibc's
ld.so would (RPATH, LD_LIBRARY_PATH, RUNPATH, /etc/ld.so.cache, default directories).

## Why it matters
A missing library stops the import: "ImportError: libcudart.so.12: cannot open shared object
file: No such file or directory", "libcudnn.so.9: cannot open shared object file". It happens
when the nvidia-* wheels torch depends on were removed or are of another CUDA major, when an
extension was built against a system toolkit that is not on the loader path, or when libcuda
(the driver) is missing.

## How to fix
Install the package that provides the library (the report names it), or add its directory to the
loader path; for libcuda, install the driver or start the container with GPUs.
"#,
    check,
};

/// Its findings are about one package built for another torch or CUDA: rank 1 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::Package,
    rank: 1,
};

/// An optional system library a package's feature needs: the import works without it.
fn optional_missing(env: &str, o: &LibraryLinks, name: &str) -> Finding {
    let by = o
        .opened_by
        .as_ref()
        .map(|b| b.by.clone())
        .unwrap_or_else(|| short(&o.path).to_string());
    Finding::new(
        &RULE,
        format!("{name} is not installed: the parts of {by} that need it are unavailable"),
    )
    .severity(Severity::Info)
    .evidence(format!(
        "{} needs {name} (DT_NEEDED), which no loader search step finds",
        o.path
    ))
    .evidence(format!(
        "{} opens {} only when that feature is used; {name} is an optional system library (process emulated in {env})",
        by,
        short(&o.path)
    ))
    .cause(format!(
        "{name} is an optional dependency of {by}: importing works, and only the feature that needs it fails."
    ))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for (env, o) in ctx.loaded_objects() {
        for n in o
            .needed
            .iter()
            .filter(|n| n.via == cudoctor_types::Via::Missing)
        {
            // One finding per soname: every object that needs it fails the same way.
            if out
                .iter()
                .any(|f| f.title.contains(&format!("{} ", n.name)))
            {
                continue;
            }
            if let Some(f) = missing_finding(ctx, env, o, n) {
                out.push(f);
            }
        }
    }
    out
}

/// The finding about one library that `o` needs and the loader does not find in `env`, with
/// the fix its kind calls for: the driver, a CUDA library of torch's wheels, or another one.
fn missing_finding(
    ctx: &Context,
    env: &str,
    o: &LibraryLinks,
    n: &LinkedLibrary,
) -> Option<Finding> {
    let lib = cuda_library(&n.name);
    let driver_lib = lib
        .as_ref()
        .is_some_and(|l| matches!(l.family, CudaFamily::CudaDriver | CudaFamily::NvidiaMl));
    if driver_lib && ctx.snap.driver.version.is_none() {
        // No driver at all: DRV001 says so once.
        return None;
    }
    if n.optional {
        return Some(optional_missing(env, o, &n.name));
    }
    let mut f = Finding::new(
        &RULE,
        format!("{} cannot be found: needed by {}", n.name, short(&o.path)),
    )
    .evidence(format!(
        "{} needs {} (DT_NEEDED), which no loader search step finds",
        o.path, n.name
    ))
    .evidence(format!("process emulated: `import torch` in {env}"));
    if let Some(e) = &n.error {
        f = f.evidence(format!("ld.so would stop with: {e}"));
    }
    f = f.about(crate::Subject::MissingLibrary {
        env: env.to_string(),
        soname: n.name.clone(),
    });
    let owner = ctx.package_subject(&o.path);
    let owner_pkg = match &owner {
        Some(crate::Subject::Package { name, .. }) => Some(name.clone()),
        _ => None,
    };
    let owner_name = owner_pkg.clone().filter(|n| n != "torch");
    // torch and its companions link what torch's CUDA wheels ship.
    let needed_by_torch = owner_pkg
        .as_deref()
        .is_some_and(|p| matches!(p, "torch" | "torchvision" | "torchaudio"));
    if let Some(s) = owner {
        f = f.about(s);
    }
    match lib.as_ref().map(|l| l.family) {
        Some(CudaFamily::CudaDriver | CudaFamily::NvidiaMl) => {
            f = f
                .cause("libcuda is the NVIDIA driver's own library: without it no CUDA program starts.")
                .prose("Install the NVIDIA driver, or in a container start it with GPUs (docker run --gpus all)");
        }
        Some(family) => {
            let soname_major = lib.as_ref().and_then(|l| soname_major(l, family));
            let torch_major = torch_in(ctx, env).and_then(|t| t.cuda()).map(|c| c.major);
            // An extension that links another CUDA major than torch's was built for another
            // CUDA: no wheel of torch's major provides its file; it needs a build for torch's
            // CUDA.
            if let (Some(pkg), Some(m), Some(t)) = (&owner_name, soname_major, torch_major) {
                if m != t {
                    return Some(built_for_other_major(ctx, f, env, &n.name, pkg, m, t));
                }
            }
            f = wheel_fix(ctx, f, env, &n.name, family, soname_major, needed_by_torch);
        }
        None => {
            f = f
                .cause(format!(
                    "The import fails with \"{}: cannot open shared object file\".",
                    n.name
                ))
                .prose(format!(
                    "Install the package that provides {} or add its directory to LD_LIBRARY_PATH",
                    n.name
                ));
        }
    }
    if !o.stage.is_import() {
        f = f.severity(Severity::Warning).evidence(format!(
            "{} is opened only when its feature is first used: the import itself works",
            short(&o.path)
        ));
    }
    Some(f)
}

/// torch in the environment at `env`, if it has one.
fn torch_in<'a>(ctx: &Context<'a>, env: &str) -> Option<crate::context::TorchEnv<'a>> {
    ctx.torch_envs().into_iter().find(|t| t.env.prefix == env)
}

/// The CUDA major a library's soname names, for the families whose soname major is the CUDA
/// major (cudart, cuBLAS, NVRTC, nvJitLink): the wheel must be of torch's CUDA major, and this
/// is the fallback when torch's is unknown.
fn soname_major(lib: &cudoctor_ldso::CudaLibrary, family: CudaFamily) -> Option<u32> {
    lib.major
        .as_deref()
        .and_then(|m| m.parse::<u32>().ok())
        .filter(|_| {
            matches!(
                family,
                CudaFamily::Cudart
                    | CudaFamily::Cublas
                    | CudaFamily::CublasLt
                    | CudaFamily::Nvrtc
                    | CudaFamily::NvJitLink
            )
        })
}

/// An extension `pkg` built for CUDA `m` beside torch's CUDA `t`: the torch its build record
/// names (a pair that loads), or a rebuild for torch's CUDA. Installing CUDA `m` libraries
/// beside torch's is no fix: two CUDA runtimes in one process.
fn built_for_other_major(
    ctx: &Context,
    mut f: Finding,
    env: &str,
    soname: &str,
    pkg: &str,
    m: u32,
    t: u32,
) -> Finding {
    f = f
        .evidence(format!("torch in {env} is built for CUDA {t}"))
        .cause(format!(
            "{pkg} was built for CUDA {m} (it links {soname}), but torch here is a CUDA {t} build: its import fails with \"{soname}: cannot open shared object file\". Installing CUDA {m} libraries beside torch's would put two CUDA runtimes in one process.",
        ));
    // Its build record names a torch of its own CUDA (xformers' cpp_lib.json: 2.10.0+cu128):
    // that torch is a pair that loads, before a source build.
    let recorded = torch_in(ctx, env).and_then(|tv| {
        let b = ctx.built_for_torch(tv.env, pkg)?;
        let label = b.version.split_once('+')?.1;
        let digits = label.strip_prefix("cu")?;
        (digits.len() >= 3 && digits[..digits.len() - 1].parse::<u32>().ok() == Some(m))
            .then_some((tv, b))
    });
    if let Some((tv, b)) = recorded {
        for e in &b.evidence {
            f = f.evidence(e.clone());
        }
        f = f.prose(format!(
            "Install the torch {pkg} was built for (CUDA {m}), with its CUDA {m} libraries:"
        ));
        f = ctx.torch_built_for(f, tv.env, &b.version, &tv.torch.version);
        f = f.prose(format!("or build {pkg} for torch's CUDA {t}:"));
    }
    f.shell(format!(
        "{}   # rebuilds {pkg} against torch's CUDA {t}",
        ctx.target(env)
            .install(&cudoctor_plan::Install::rebuild(pkg))
    ))
}

/// A CUDA library of the kind torch's wheels take from an nvidia-* wheel: the distribution
/// that provides it, and for torch's own needs torch reinstalled with its CUDA libraries.
fn wheel_fix(
    ctx: &Context,
    mut f: Finding,
    env: &str,
    soname: &str,
    family: CudaFamily,
    soname_major: Option<u32>,
    needed_by_torch: bool,
) -> Finding {
    let torch = torch_in(ctx, env);
    let torch_major = torch.and_then(|t| t.cuda()).map(|c| c.major);
    f = f.cause(format!(
        "The import fails with \"{soname}: cannot open shared object file\". torch wheels take this library from an nvidia-* wheel; it was removed, or is of another CUDA major than this build needs.",
    ));
    let target = ctx.target(env);
    let registered = match provider(
        ctx,
        env,
        soname,
        family,
        soname_major,
        torch_major,
        needed_by_torch,
    ) {
        Provider::Registered {
            package,
            version,
            evidence,
        } => {
            f = f.evidence(evidence).shell(format!(
                "{}   # its files are gone though it is registered; puts {} back",
                target.install(&cudoctor_plan::Install::exact(&package, &version)),
                cudoctor_plan::comment(soname)
            ));
            true
        }
        Provider::Wheel(pkg) => {
            f = f.shell(format!(
                "{}   # provides {}",
                target.install(&cudoctor_plan::Install::pins([pkg.as_str()])),
                cudoctor_plan::comment(soname)
            ));
            false
        }
        Provider::Unknown(why) => {
            f = f.prose(format!(
                "Install the package that provides {soname} ({why})"
            ));
            false
        }
    };
    // Its own wheel named and registered: that reinstall alone puts the file back. Otherwise
    // torch's own dependencies are the other way.
    if let Some(t) = torch.filter(|_| needed_by_torch && !registered) {
        f = f.prose("or reinstall torch with the CUDA libraries it depends on:");
        let op = cudoctor_plan::Install {
            reinstall: true,
            ..cudoctor_plan::Install::keep_torch(recorded_torch_version(t.env, t.torch))
        };
        f = f.shell(format!(
            "{}   # reinstalls torch with the CUDA libraries it depends on",
            target.install(&op)
        ));
    }
    f
}

/// What puts a missing soname back in an environment.
enum Provider {
    /// An installed distribution whose RECORD lists the file, which is gone: reinstall it as is.
    Registered {
        package: String,
        version: String,
        evidence: String,
    },
    /// The wheel that ships this soname for its CUDA major, not installed.
    Wheel(String),
    /// No wheel can be named with certainty; why.
    Unknown(String),
}

/// The distribution that provides `soname` in `env`: first the RECORD of an installed one that
/// lists it (missing), then NVIDIA's wheel of the library's CUDA major. That major is the
/// soname's own where it follows the CUDA major (libcudart.so.12 is CUDA 12's runtime, shipped
/// by nvidia-cuda-runtime-cu12), else torch's when torch itself needs the file (its CUDA
/// wheels ship what it links). A wheel that is installed and whose RECORD was read without the
/// file listed does not provide it, so it is not named.
fn provider(
    ctx: &Context,
    env: &str,
    soname: &str,
    family: CudaFamily,
    soname_major: Option<u32>,
    torch_major: Option<u32>,
    needed_by_torch: bool,
) -> Provider {
    let py_env = ctx.env_at(env);
    let check = py_env.and_then(|e| e.wheel_check.as_ref());
    if let Some(d) = check.and_then(|w| {
        w.damaged.iter().find(|d| {
            d.problem == cudoctor_snapshot::FileProblem::Missing && short(&d.path) == soname
        })
    }) {
        return Provider::Registered {
            package: d.package.clone(),
            version: d.version.clone(),
            evidence: format!(
                "{} {}'s RECORD lists {}, which is missing",
                d.package, d.version, d.path
            ),
        };
    }
    let major = soname_major.or(torch_major.filter(|_| needed_by_torch));
    let Some(pkg) = major.and_then(|m| pip_package_for_cuda(family, m)) else {
        return Provider::Unknown(match torch_major {
            Some(_) => "which CUDA major's wheel ships it is not known from its name".into(),
            None => "torch's CUDA major is unknown".into(),
        });
    };
    let installed = py_env.and_then(|e| e.package(&pkg));
    match installed {
        None => Provider::Wheel(pkg),
        Some(p) => {
            let record_read = check.is_some_and(|w| {
                w.packages
                    .iter()
                    .any(|x| x == &format!("{} {}", p.name, p.version))
            });
            if record_read {
                // Its RECORD was read and does not list the file as missing: it does not ship it.
                Provider::Unknown(format!(
                    "{} {} is installed and intact, and its RECORD has no {soname}",
                    p.name, p.version
                ))
            } else {
                Provider::Registered {
                    package: p.name.clone(),
                    version: p.version.clone(),
                    evidence: format!(
                        "{} {} is registered in {env}, yet {soname} is not found",
                        p.name, p.version
                    ),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{LibraryLinks, LinkedLibrary, LoaderFacts, ProcessLinks};

    fn missing(s: &mut cudoctor_snapshot::Snapshot, lib: &str) {
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![LibraryLinks {
                    path: "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"
                        .into(),
                    needed: vec![LinkedLibrary {
                        name: lib.into(),
                        via: cudoctor_types::Via::Missing,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                shadowed: vec![],
                runtime_dirs: vec![],
            }],
            ..Default::default()
        });
    }

    #[test]
    fn a_missing_cudnn_is_an_error_naming_the_wheel() {
        let mut s = h200();
        missing(&mut s, "libcudnn.so.9");
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].fix[0],
            "/opt/venv/bin/python -m pip install nvidia-cudnn-cu13   # provides libcudnn.so.9"
        );
        assert!(run(&RULE, &h200()).is_empty());
    }

    #[test]
    fn the_wheel_is_of_torchs_cuda_major_and_torch_comes_back_from_its_index() {
        // cuFFT's soname major (12) is not the CUDA major: torch cu130 takes it from the
        // unsuffixed CUDA 13 wheel.
        let mut s = h200();
        missing(&mut s, "libcufft.so.12");
        let f = run(&RULE, &s);
        assert!(
            f[0].fix[0].starts_with("/opt/venv/bin/python -m pip install nvidia-cufft "),
            "{:?}",
            f[0].fix
        );
        assert!(
            f[0].fix[2].starts_with("/opt/venv/bin/python -m pip install --force-reinstall torch==2.11.0+cu130 --index-url https://download.pytorch.org/whl/cu130 "),
            "{:?}",
            f[0].fix
        );
        assert!(f[0].fix.iter().all(|x| !x.contains('<')), "{:?}", f[0].fix);

        // A cu128 torch needs the -cu12 wheels, cuDNN included.
        let mut s = h200();
        s.python_envs[0] = torch_env("/opt/venv", "2.9.1+cu128", Some("12.8"), &[]);
        missing(&mut s, "libnccl.so.2");
        let f = run(&RULE, &s);
        assert!(
            f[0].fix[0].contains("pip install nvidia-nccl-cu12 "),
            "{:?}",
            f[0].fix
        );
        assert!(f[0].fix[2].contains("--index-url https://download.pytorch.org/whl/cu128"));

        // A PyPI build (no local label) is reinstalled from PyPI: no index is named.
        let mut s = h200();
        s.python_envs[0] = torch_env("/opt/venv", "2.9.1", Some("12.8"), &[]);
        missing(&mut s, "libcublas.so.12");
        let f = run(&RULE, &s);
        assert!(f[0].fix[0].contains("pip install nvidia-cublas-cu12 "));
        assert!(!f[0].fix[2].contains("--index-url"), "{:?}", f[0].fix);
        assert!(f[0].fix[2].contains("torch==2.9.1 "), "{:?}", f[0].fix);
    }

    fn needed_by(s: &mut cudoctor_snapshot::Snapshot, needer: &str, lib: &str) {
        missing(s, lib);
        s.loader.as_mut().unwrap().processes[0].objects[0].path = needer.into();
    }

    #[test]
    fn a_cuda12_soname_is_the_cuda12_wheel_beside_a_cuda13_torch() {
        // libcudart.so.12 is CUDA 12's runtime whatever torch is: the unsuffixed CUDA 13 wheel
        // ships libcudart.so.13 and must not be named.
        let mut s = h200();
        needed_by(
            &mut s,
            "/opt/venv/lib/python3.12/site-packages/somepkg_ext.so",
            "libcudart.so.12",
        );
        let f = run(&RULE, &s);
        assert_eq!(
            f[0].fix[0],
            "/opt/venv/bin/python -m pip install nvidia-cuda-runtime-cu12   # provides libcudart.so.12"
        );
        // cuFFT's soname major is not a CUDA major: for a file torch does not need, no wheel
        // is named.
        let mut s = h200();
        needed_by(
            &mut s,
            "/opt/venv/lib/python3.12/site-packages/somepkg_ext.so",
            "libcufft.so.11",
        );
        let f = run(&RULE, &s);
        assert!(f[0].fix.iter().all(|x| !x.is_shell()), "{:?}", f[0].fix);
    }

    #[test]
    fn an_extension_whose_record_names_a_torch_of_its_cuda_gets_that_torch_before_a_rebuild() {
        // xformers 0.0.35 from PyPI (Requires-Dist torch>=2.10; cpp_lib.json: torch
        // 2.10.0+cu128) beside the index's torch 2.15.0+cu132, as the sweep installed them:
        // `import xformers` says it cannot load its C++/CUDA extensions (libcudart.so.12).
        let mut s = h200();
        s.python_envs[0] = torch_env(
            "/opt/venv",
            "2.15.0+cu132",
            Some("13.2"),
            &[("xformers", "0.0.35")],
        );
        s.python_envs[0]
            .declared
            .push(cudoctor_snapshot::DeclaredRequirements {
                package: "xformers".into(),
                version: "0.0.35".into(),
                requires: vec!["torch>=2.10".into()],
                built_for_torch: Some(cudoctor_snapshot::RecordedTorch {
                    version: "2.10.0+cu128".into(),
                    source: "xformers/cpp_lib.json".into(),
                }),
            });
        needed_by(
            &mut s,
            "/opt/venv/lib/python3.12/site-packages/xformers/_C.so",
            "libcudart.so.12",
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.contains("cpp_lib.json: built for torch 2.10.0+cu128")),
            "{:?}",
            f[0].evidence
        );
        let shells: Vec<String> = f[0]
            .fix
            .iter()
            .filter(|x| x.is_shell())
            .map(|x| x.to_string())
            .collect();
        assert!(
            shells[0].contains("torch==2.10.0+cu128")
                && shells[0].contains("--index-url https://download.pytorch.org/whl/cu128"),
            "{shells:?}"
        );
        // The source build stays, last.
        assert!(
            shells.last().unwrap().contains("--no-binary xformers"),
            "{shells:?}"
        );
        // A record of torch's own CUDA (or none) changes nothing: the rebuild alone.
        s.python_envs[0].declared[0].built_for_torch = None;
        let f = run(&RULE, &s);
        let shells: Vec<_> = f[0].fix.iter().filter(|x| x.is_shell()).collect();
        assert_eq!(shells.len(), 1, "{:?}", f[0].fix);
    }

    #[test]
    fn a_registered_wheel_whose_file_is_gone_is_reinstalled_exactly_in_the_envs_installer() {
        let mut s = h200();
        missing(&mut s, "libcudnn.so.9");
        let sp = s.python_envs[0].site_packages[0].clone();
        s.python_envs[0].installer = Some(cudoctor_snapshot::EnvInstaller {
            kind: cudoctor_snapshot::Installer::Uv,
            ..Default::default()
        });
        s.python_envs[0].packages.push(cudoctor_snapshot::Package {
            name: "nvidia-cudnn-cu13".into(),
            version: "9.19.0.56".into(),
            location: sp.clone(),
        });
        s.python_envs[0].wheel_check = Some(cudoctor_snapshot::WheelCheck {
            packages: vec!["nvidia-cudnn-cu13 9.19.0.56".into()],
            damaged: vec![cudoctor_snapshot::DamagedFile {
                package: "nvidia-cudnn-cu13".into(),
                version: "9.19.0.56".into(),
                path: format!("{sp}/nvidia/cudnn/lib/libcudnn.so.9"),
                problem: cudoctor_snapshot::FileProblem::Missing,
                ..Default::default()
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(
            f[0].fix,
            vec![cudoctor_plan::FixStep::Shell("uv pip install --python /opt/venv/bin/python --reinstall --no-deps nvidia-cudnn-cu13==9.19.0.56   # its files are gone though it is registered; puts libcudnn.so.9 back".into())]
        );
        assert!(f[0].evidence.iter().any(|e| e.contains("RECORD lists")));
        // Registered, its RECORD read, and the file not among its missing ones: it does not
        // ship this file, so it is not named.
        s.python_envs[0]
            .wheel_check
            .as_mut()
            .unwrap()
            .damaged
            .clear();
        let f = run(&RULE, &s);
        assert!(
            f[0].fix
                .iter()
                .all(|x| !x.is_shell() || !x.contains("nvidia-cudnn-cu13")),
            "{:?}",
            f[0].fix
        );
    }
}
