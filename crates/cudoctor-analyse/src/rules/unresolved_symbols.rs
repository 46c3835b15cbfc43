use cudoctor_ldso::{CudaFamily, SymbolProvider};
use cudoctor_snapshot::{LibraryLinks, PythonEnv};

use crate::declared::BuiltForTorch;
use crate::views::paths::short;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "LIB004",
    name: "unresolved-symbols",
    layer: Layer::Libraries,
    severity: Severity::Error,
    summary: "An extension needs symbols that nothing in the process provides",
    docs: r#"## What it checks
The undefined dynamic symbols (with their GNU versions) of each CUDA extension, against the
symbols exported by everything loaded with it: the interpreter, torch, the CUDA libraries.
Weak symbols are ignored. Each missing symbol is attributed to the library that would provide
it, and the finding follows the provider:
- the driver's entry points (`cu*` of libcuda, `nvml*` of NVML): on a machine without a driver,
  or where the process does not load libcuda before the extension, they are the driver's to
  provide at run time, and no finding of this rule (the driver finding, DRV001, is the cause);
  with the driver's libcuda loaded and still lacking them, the driver is older than the
  extension needs;
- a CUDA library of another major (a symbol versioned `@libcudart.so.12` where the process
  loads CUDA 13's): the extension was built for that CUDA;
- torch's own C++ symbols (`c10::`, `at::`, `torch::`): the extension was built for another
  torch release, the one its metadata names (`Requires-Dist: torch==2.7.1`, xformers'
  `cpp_lib.json`, a `+pt25` version label).

## Why it matters
An extension compiled against one torch release calls C++ functions by their mangled names;
another torch release renames or removes some, and the import fails with "undefined symbol:
_ZN3c10..." (the most common cause: torch was upgraded after the extension was built, or a
prebuilt wheel for another torch was installed). A missing versioned symbol such as
GLIBCXX_3.4.32 means the extension was built with a newer compiler than the system's libstdc++.

## How to fix
Install the matching pair, never a source build first: the prebuilt build of the extension for
the installed torch (`--only-binary`, so no source build is started), or the torch release the
extension was built for (with its paired torchvision/torchaudio). Where the metadata names no
torch, a source build against the installed torch, in the environment's own installer
(`--force-reinstall --no-deps --no-build-isolation --no-binary <pkg> --no-cache-dir` with pip,
`--reinstall ... --no-cache` with uv): without `--no-binary` and the cache option the installer
reinstalls the same wheel or its cached build; `--no-deps` keeps torch.
"#,
    check,
};

/// Its findings are about one package built for another torch or CUDA: rank 2 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::Package,
    rank: 2,
};

/// Whether the process of `env` loads a library of `family`.
fn process_loads(ctx: &Context, env: &str, family: CudaFamily) -> bool {
    ctx.loaded_objects().into_iter().any(|(e, o)| {
        e == env && cudoctor_ldso::cuda_library(&o.path).is_some_and(|l| l.family == family)
    })
}

/// The soname major of the library of `family` the process of `env` loads.
fn loaded_major(ctx: &Context, env: &str, family: CudaFamily) -> Option<u32> {
    ctx.loaded_objects().into_iter().find_map(|(e, o)| {
        let l = cudoctor_ldso::cuda_library(o.soname.as_deref().unwrap_or(&o.path))?;
        (e == env && l.family == family)
            .then(|| l.major?.parse().ok())
            .flatten()
    })
}

/// The undefined symbols of `o` this rule judges, each with its provider: a driver entry
/// point is left to the driver when there is none, or when libcuda/NVML is not in the process
/// (torch opens the driver's library when CUDA starts). The rest, and how many were left.
fn judged<'o>(
    ctx: &Context,
    env: &str,
    o: &'o LibraryLinks,
) -> (Vec<(&'o String, SymbolProvider)>, Vec<&'o String>) {
    let no_driver = !ctx.snap.driver.driver_found();
    let mut judged = Vec::new();
    let mut left = Vec::new();
    for s in &o.unresolved_symbols {
        let p = SymbolProvider::of(s);
        match &p {
            SymbolProvider::Driver { family } if no_driver || !process_loads(ctx, env, *family) => {
                left.push(s)
            }
            _ => judged.push((s, p)),
        }
    }
    (judged, left)
}

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.loaded_objects()
        .into_iter()
        .filter(|(_, o)| o.symbols_checked && !o.unresolved_symbols.is_empty())
        // Without an optional system library (libsox) its symbols are missing too: LIB001
        // already says that feature is unavailable.
        .filter(|(_, o)| !o.lacks_optional_library())
        .filter_map(|(env, o)| judge(ctx, env, o))
        .collect()
}

fn judge(ctx: &Context, env: &str, o: &LibraryLinks) -> Option<Finding> {
    let (judged, left) = judged(ctx, env, o);
    if judged.is_empty() {
        return None;
    }
    let the_env = ctx.env_at(env);
    let torch_version = the_env
        .and_then(|e| e.torch.as_ref())
        .map(|t| t.version.clone())
        .unwrap_or_else(|| "?".into());
    let installed = ctx.installed_package_of(&o.path);
    let package = installed
        .or(ctx.owner_of(&o.path))
        .unwrap_or(short(&o.path))
        .to_string();
    let shown: Vec<&str> = judged.iter().take(5).map(|(s, _)| s.as_str()).collect();
    let first = shown[0];
    let torch_abi = judged
        .iter()
        .filter(|(_, p)| *p == SymbolProvider::Torch)
        .count();
    let mut f = Finding::new(
        &RULE,
        format!(
            "{package} needs {} symbol(s) nothing provides",
            judged.len()
        ),
    )
    .evidence(format!(
        "{}: undefined {}{}",
        o.path,
        shown.join(", "),
        if judged.len() > 5 { ", ..." } else { "" }
    ))
    .evidence(format!("torch {torch_version} in {env}"));
    if !left.is_empty() {
        f = f.evidence(format!(
            "{} more are the NVIDIA driver's entry points ({}{}), which the driver provides when CUDA starts",
            left.len(),
            left.iter().take(3).map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
            if left.len() > 3 { ", ..." } else { "" }
        ));
    }
    if let Some(s) = ctx.package_subject(&o.path) {
        f = f.about(s);
    }
    // torch's own symbols: the torch it was built for, from its metadata.
    if torch_abi > 0 {
        let built = match (the_env, installed) {
            (Some(e), Some(pkg)) => ctx.built_for_torch(e, pkg),
            _ => None,
        };
        if let (Some(e), Some(pkg), Some(b)) = (the_env, installed, built) {
            if b.matches(&torch_version) == Some(false) {
                return Some(built_for_another_torch(
                    ctx,
                    f,
                    e,
                    pkg,
                    &b,
                    &torch_version,
                    torch_abi,
                    first,
                ));
            }
        }
        f = f.cause(format!("{torch_abi} of them are torch's own C++ symbols: {package} was built against another torch release, and importing it fails with \"undefined symbol: {first}\"."));
        return Some(rebuild(ctx, f, env, installed, &o.path, &torch_version));
    }
    // A CUDA library of another major than the process loads.
    let other_major = judged.iter().find_map(|(_, p)| match p {
        SymbolProvider::CudaLibrary {
            family,
            major: Some(m),
        } if loaded_major(ctx, env, *family) != Some(*m) => Some((*family, *m)),
        _ => None,
    });
    if let Some((family, major)) = other_major {
        let loaded = loaded_major(ctx, env, family)
            .map(|m| format!("the process loads lib{}.so.{m}", family.as_str()))
            .unwrap_or_else(|| format!("the process loads no lib{}", family.as_str()));
        f = f.cause(format!(
            "Its symbols are versioned for lib{}.so.{major}: {package} was built for CUDA {major}, and {loaded}; importing it fails with \"undefined symbol: {first}\".",
            family.as_str()
        ));
        return Some(match installed {
            Some(pkg) => f.prose(format!(
                "Install the {pkg} build for the CUDA of the installed torch {torch_version} (its index or wheel name names the CUDA), or a torch of CUDA {major}"
            )),
            None => f.prose(format!(
                "Replace {} with a build for the CUDA of torch {torch_version}",
                o.path
            )),
        });
    }
    // The driver's libcuda is loaded and lacks entry points: a driver older than the build.
    if judged.iter().all(|(_, p)| p.is_driver()) {
        return Some(
            f.cause(format!(
                "The driver's library is loaded and lacks these entry points: the NVIDIA driver is older than the CUDA {package} was built with, and importing it fails with \"undefined symbol: {first}\"."
            ))
            .about(crate::Subject::Driver)
            .prose("Update the NVIDIA driver (`cudoctor plan` names the branch for this GPU)"),
        );
    }
    f = f.cause(format!("Importing it fails with \"undefined symbol: {first}\": a library it was linked against is missing or of another version."));
    Some(rebuild(ctx, f, env, installed, &o.path, &torch_version))
}

/// The fix where nothing names the release the extension was built for: a source build
/// against the installed torch.
fn rebuild(
    ctx: &Context,
    f: Finding,
    env: &str,
    installed: Option<&str>,
    path: &str,
    torch_version: &str,
) -> Finding {
    match installed {
        Some(pkg) => f
            .shell(format!(
                "{}   # rebuilds it against torch {}",
                ctx.target(env).install(&cudoctor_plan::Install::rebuild(pkg)),
                cudoctor_plan::comment(torch_version)
            ))
            .prose(format!("or install the prebuilt {pkg} wheel made for torch {torch_version}")),
        None => f.prose(format!(
            "Rebuild {path} against torch {torch_version} (it belongs to no installed package cudoctor could find)"
        )),
    }
}

/// The finding of an extension whose metadata names the torch it was built for, another one
/// than installed: the fix is a matching pair, the package's prebuilt build for this torch or
/// that torch (with its paired companions), never a source build.
#[allow(clippy::too_many_arguments)]
fn built_for_another_torch(
    ctx: &Context,
    mut f: Finding,
    env: &PythonEnv,
    pkg: &str,
    b: &BuiltForTorch,
    torch_version: &str,
    torch_abi: usize,
    first: &str,
) -> Finding {
    let version = env.package(pkg).map(|p| p.version.as_str()).unwrap_or("?");
    f.title = format!(
        "{pkg} {version} was built for torch {}, but torch {torch_version} is installed ({})",
        b.version, env.prefix
    );
    for e in &b.evidence {
        f = f.evidence(e.clone());
    }
    f = f.cause(format!(
        "{torch_abi} of its undefined symbols are torch's own C++ symbols, which another torch release renames or removes: {pkg} was built for torch {}, and importing it fails with \"undefined symbol: {first}\".",
        b.version
    ));
    ctx.matching_torch_pair(f, env, pkg, &b.version, torch_version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{LibraryLinks, LoaderFacts, ProcessLinks};

    #[test]
    fn torch_symbols_mean_an_abi_mismatch() {
        let mut s = h200();
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![LibraryLinks {
                    path: "/opt/venv/lib/python3.12/site-packages/flash_attn_2_cuda.so".into(),
                    symbols_checked: true,
                    unresolved_symbols: vec!["_ZN3c104cuda9SetDeviceEi".into()],
                    ..Default::default()
                }],
                shadowed: vec![],
                runtime_dirs: vec![],
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].cause.contains("another torch release"));
        // No installed distribution owns the file: no pip command names one.
        assert!(
            f[0].fix[0].starts_with("Rebuild /opt/venv/"),
            "{:?}",
            f[0].fix
        );

        s.python_envs[0].packages.push(cudoctor_snapshot::Package {
            name: "flash-attn".into(),
            version: "2.8.3".into(),
            location: "/opt/venv/lib/python3.12/site-packages".into(),
        });
        let f = run(&RULE, &s);
        assert!(f[0].title.starts_with("flash-attn needs"), "{}", f[0].title);
        assert_eq!(
            f[0].fix[0],
            "/opt/venv/bin/python -m pip install --force-reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache-dir flash-attn   # rebuilds it against torch 2.11.0+cu130"
        );
    }
}
