use cudoctor_snapshot::windows::{LoadFailure, WinPath, WindowsFacts, WindowsTorchEnv};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT020",
    name: "windows-torch-dll-fails",
    layer: Layer::Platform,
    severity: Severity::Error,
    summary: "On Windows, import torch fails: one of torch's DLLs cannot be loaded",
    docs: r#"## What it checks
On a Windows machine (or a Windows tree given with `--root`), what `import torch` loads, step by
step as torch's `__init__.py` does it: its DLL directories, its Visual C++ runtime check, every
`torch\lib\*.dll` with the loader's search (and torch's fallback through PATH), `torch\_C.pyd`.
The loader is emulated from the DLLs' import tables; nothing is run.

## Why it matters
A DLL that cannot be loaded makes `import torch` raise `OSError: [WinError 126] The specified
module could not be found. Error loading "...\torch\lib\c10.dll" or one of its dependencies`
(or WinError 127 when a DLL lacks a function). The most common cause is the Visual C++ runtime:
missing (`MSVCP140.dll`), or older than the one torch was built with (`VCRUNTIME140_THREADS.dll`,
`MSVCP140_ATOMIC_WAIT.dll`, or a function missing from `msvcp140.dll`).

## How to fix
Install the current Visual C++ Redistributable (x64), the one torch's own message names:
`winget install --id Microsoft.VCRedist.2015+.x64 --exact`, or
https://aka.ms/vs/17/release/vc_redist.x64.exe. For a file of torch that is missing, reinstall
torch in that environment.
"#,
    check,
};

/// The CUDA libraries torch's CUDA builds import on Windows, as their wheels ship them in
/// `torch\\lib`: the runtime (`cudart64_12.dll`), cuDNN (`cudnn64_9.dll`), the math libraries
/// (`cublas64_12.dll`, `cublasLt64_12.dll`, `cufft64_11.dll`, `curand64_10.dll`,
/// `cusolver64_11.dll`, `cusparse64_12.dll`), NVRTC, nvJitLink, CUPTI and NVTX.
pub fn is_cuda_library(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "cudart64_",
        "cudnn",
        "cublas",
        "cufft",
        "curand",
        "cusolver",
        "cusparse",
        "nvrtc",
        "nvjitlink",
        "cupti",
        "nvtoolsext",
    ]
    .iter()
    .any(|p| n.starts_with(p))
        && n.ends_with(".dll")
}

/// DLLs of the Visual C++ runtime (the redistributable installs them in System32).
pub fn is_vc_runtime(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["vcruntime140", "msvcp140", "concrt140", "vcomp140"]
        .iter()
        .any(|p| n.starts_with(p))
        && n.ends_with(".dll")
}

fn runtime_versions(w: &WindowsFacts) -> String {
    w.vc_runtime
        .iter()
        .filter(|d| d.path.file_name().eq_ignore_ascii_case("msvcp140.dll"))
        .map(|d| {
            format!(
                "{} {}",
                d.path,
                d.version.as_deref().unwrap_or("(version unreadable)")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(w) = &ctx.snap.windows else {
        return Vec::new();
    };
    w.torch_envs
        .iter()
        .filter_map(|env| finding(ctx, w, env))
        .collect()
}

fn finding(ctx: &Context, w: &WindowsFacts, env: &WindowsTorchEnv) -> Option<Finding> {
    let (dll, failure) = env.import.raised.as_ref()?;
    let version = env.torch_version.as_deref().unwrap_or("torch");
    let f = Finding::new(
        &RULE,
        format!(
            "import torch fails in {}: {} cannot be loaded",
            env.python,
            dll.file_name()
        ),
    )
    .evidence(format!("{version} in {}", env.torch_dir))
    .about(crate::finding::Subject::WindowsTorchImport {
        python: env.python.to_string(),
    })
    .evidence(format!(
        "loading {dll} fails with error {}{}",
        failure.win32_error(),
        if env.import.patched_path.is_some() {
            ", also after torch's fallback through PATH"
        } else {
            ""
        }
    ));
    let runtime_installed = runtime_versions(w);
    Some(match failure {
        LoadFailure::NotFound { name, wanted_by } => {
            let by = wanted_by.as_ref().map_or_else(
                || dll.file_name().to_string(),
                |w| w.file_name().to_string(),
            );
            let f = f.evidence(format!(
                "{name}, imported by {by}, is in none of the directories searched"
            ));
            if is_vc_runtime(name) {
                runtime_not_installed(f, name, &runtime_installed)
            } else {
                file_missing(ctx, f, env, name, version)
            }
        }
        LoadFailure::MissingProcedures {
            dll: from,
            names,
            wanted_by,
        } => procedures_missing(f, from, names, wanted_by, &runtime_installed),
        LoadFailure::BadImage { path, reason } => f
            .evidence(format!("{path}: {reason}"))
            .cause("The loader found a file it cannot map: a DLL for another machine (32-bit, ARM64) or a damaged one.")
            .prose("Remove or replace that file; reinstall the package it belongs to"),
    })
}

/// The fix for a Visual C++ runtime that is missing or too old: the redistributable.
fn with_runtime_fix(f: Finding) -> Finding {
    // The package ID of the Visual C++ 2015-2022 Redistributable (x64) in winget's own
    // repository (microsoft/winget-pkgs: manifests/m/Microsoft/VCRedist/2015+/x64/, e.g.
    // 14.38.33135.0, `PackageIdentifier: Microsoft.VCRedist.2015+.x64`).
    f.powershell("winget install --id Microsoft.VCRedist.2015+.x64 --exact")
        .prose("Or install https://aka.ms/vs/17/release/vc_redist.x64.exe (the Visual C++ Redistributable torch's own message names), then start Python again")
}

/// A DLL of the Visual C++ runtime is in none of the directories searched: the runtime is not
/// installed, or the installed one is older than torch's build.
fn runtime_not_installed(f: Finding, name: &str, runtime_installed: &str) -> Finding {
    let f = if runtime_installed.is_empty() {
        f.evidence("no msvcp140.dll in System32").cause(format!(
            "The Visual C++ runtime is not installed: {name} is part of it, and torch's DLLs import it. Python ships only its own vcruntime140.dll."
        ))
    } else {
        f.evidence(format!("installed runtime: {runtime_installed}")).cause(format!(
            "The installed Visual C++ runtime is older than the one torch was built with: it has no {name}, which newer redistributables ship."
        ))
    };
    with_runtime_fix(f)
}

/// Another DLL is in none of the directories searched: a file of torch's install (or of a
/// package it needs) is missing; the fix reinstalls the same torch.
fn file_missing(
    ctx: &Context,
    mut f: Finding,
    env: &WindowsTorchEnv,
    name: &str,
    version: &str,
) -> Finding {
    // The environment as cudoctor-collect reads it, for its own record of the file
    // (FW010 names it when its wheel's RECORD lists it, and is then the root: its
    // reinstall puts the file back) and its installed torch.
    let python_env = ctx.snap.python_envs.iter().find(|e| {
        e.windows
            && e.interpreter
                .as_deref()
                .is_some_and(|i| WinPath::new(i).same_as(&env.python))
    });
    if let Some(e) = python_env {
        f = f.about(crate::finding::Subject::MissingLibrary {
            env: e.prefix.clone(),
            soname: name.to_ascii_lowercase(),
        });
    }
    f = f.cause(if is_cuda_library(name) {
        format!(
            "{name} is a CUDA library this CUDA build of torch loads: torch's CUDA wheels (PyTorch's index) carry it in torch\\lib, and none of the directories searched has it (a torch install whose files are incomplete, or a torch\\lib mixed from two builds)."
        )
    } else {
        format!(
            "{name} is missing: a file of this torch install (or of a package it needs) is not there."
        )
    });
    // The same torch again, from the index its local label names (a `+cu129`
    // build from PyTorch's), written by the one command writer.
    let installed = python_env
        .and_then(|e| e.package("torch"))
        .map(|p| p.version.as_str())
        .unwrap_or(version);
    let target = python_env.map_or_else(
        || cudoctor_plan::TargetEnv {
            python: env.python.to_string(),
            windows: true,
            ..Default::default()
        },
        crate::context::target_env,
    );
    f = f.command(
        &target,
        target.install(&cudoctor_plan::Install::exact("torch", installed)),
    );
    if !installed.contains('+') {
        f = f
            .prose("If torch came from another index (a CUDA build), reinstall it from that index");
    }
    f
}

/// A DLL lacks functions another imports from it: an older Visual C++ runtime, or a DLL of
/// another build.
fn procedures_missing(
    mut f: Finding,
    from: &WinPath,
    names: &[String],
    wanted_by: &WinPath,
    runtime_installed: &str,
) -> Finding {
    let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
    f = f.evidence(format!(
        "{} imports from {from} what it does not export: {}{}",
        wanted_by.file_name(),
        shown.join(", "),
        if names.len() > 3 {
            format!(" and {} more", names.len() - 3)
        } else {
            String::new()
        }
    ));
    if is_vc_runtime(from.file_name()) {
        if !runtime_installed.is_empty() {
            f = f.evidence(format!("installed runtime: {runtime_installed}"));
        }
        with_runtime_fix(f.cause(format!(
            "The {} loaded is older than the one torch was built with.",
            from.file_name()
        )))
    } else {
        f.cause(format!(
            "{from} is another build than the one {} was linked with.",
            wanted_by.file_name()
        ))
        .prose("Make sure the DLL comes from this environment's own torch\\lib (see PLT021 for one found through PATH)")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::windows::{TorchImport, WinPath, WindowsPythonKind};

    pub fn windows_env(raised: Option<(WinPath, LoadFailure)>) -> cudoctor_snapshot::Snapshot {
        let mut s = machine(None, &[]);
        let embeded = WinPath::new(r"C:\ComfyUI_windows_portable\python_embeded");
        s.windows = Some(WindowsFacts {
            windows_dir: Some(WinPath::new(r"C:\Windows")),
            path: vec![],
            vc_runtime: vec![],
            toolkits: vec![],
            known_dlls: None,
            msvc: None,
            torch_envs: vec![WindowsTorchEnv {
                python: embeded.join("python.exe"),
                kind: WindowsPythonKind::Embedded,
                torch_dir: embeded.join(r"Lib\site-packages\torch"),
                torch_version: Some("2.15.0+cpu".into()),
                cuda: None,
                import: TorchImport {
                    dll_dirs: vec![],
                    runtime_checks: vec![],
                    runtime_message: raised.is_some(),
                    patched_path: None,
                    raised,
                    loads: vec![],
                    modules: vec![],
                },
            }],
        });
        s
    }

    fn lib(name: &str) -> WinPath {
        WinPath::new(r"C:\ComfyUI_windows_portable\python_embeded\Lib\site-packages\torch\lib")
            .join(name)
    }

    #[test]
    fn a_missing_runtime_is_named_with_its_powershell_fix() {
        assert!(run(&RULE, &windows_env(None)).is_empty());
        let s = windows_env(Some((
            lib("c10.dll"),
            LoadFailure::NotFound {
                name: "MSVCP140.dll".into(),
                wanted_by: Some(lib("c10.dll")),
            },
        )));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].cause.contains("not installed"), "{}", f[0].cause);
        assert!(f[0].fix.iter().any(|s| matches!(s, cudoctor_plan::FixStep::PowerShell(c) if c.contains("Microsoft.VCRedist.2015+.x64"))));
    }

    #[test]
    fn an_older_runtime_and_a_missing_torch_file_are_told_apart() {
        let mut s = windows_env(Some((
            lib("shm.dll"),
            LoadFailure::NotFound {
                name: "VCRUNTIME140_THREADS.dll".into(),
                wanted_by: Some(lib("torch_cpu.dll")),
            },
        )));
        s.windows.as_mut().unwrap().vc_runtime = vec![cudoctor_snapshot::windows::RuntimeDll {
            path: WinPath::new(r"C:\Windows\System32\msvcp140.dll"),
            version: Some("14.34.31931.0".into()),
        }];
        let f = run(&RULE, &s);
        assert!(f[0].cause.contains("older"), "{}", f[0].cause);
        assert!(f[0].evidence.iter().any(|e| e.contains("14.34.31931.0")));
        let s = windows_env(Some((
            lib("shm.dll"),
            LoadFailure::NotFound {
                name: "torch_cpu.dll".into(),
                wanted_by: Some(lib("shm.dll")),
            },
        )));
        let f = run(&RULE, &s);
        assert!(
            f[0].cause.contains("torch_cpu.dll is missing"),
            "{}",
            f[0].cause
        );
        let reinstall = f[0]
            .fix
            .iter()
            .find(|s| s.contains("--force-reinstall"))
            .unwrap();
        assert!(
            reinstall.contains(r"& 'C:\ComfyUI_windows_portable\python_embeded\python.exe' -m pip"),
            "{reinstall:?}"
        );
    }
}
