//! `import torch` on Windows trees laid out from the real wheels (the real-wheel tier, on when
//! CUDOCTOR_WINDOWS_WHEELS names `scripts/windows/fetch-wheels.sh`'s directory): a ComfyUI
//! portable layout (`python_embeded\` with the interpreter's own vcruntime140*.dll, torch and
//! torchvision in its `Lib\site-packages`), with and without the Visual C++ runtime in System32,
//! with an older runtime, and with another Python's runtime on PATH.
//!
//! The oracle of the healthy tree is a dependency walk by binutils' objdump (docs/windows.md):
//! from every `torch\lib\*.dll`, `torch\_C.pyd` and torchvision's extensions, each `DLL Name` of
//! the import tables, followed through the files of the tree; the emulation must load exactly
//! the DLLs that walk reaches, each from the directory the search order gives its kind.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cudoctor_pe::loader::{is_api_set, Found, LoadFailure, LoaderEnv};
use cudoctor_pe::torch::{import_torch, PythonLayout, TorchImport, TorchImportInput};
use cudoctor_pe::winfs::{WinFs, WinPath};
use cudoctor_pe::Machine;

const PORTABLE: &str = r"C:\ComfyUI_windows_portable";

fn wheels() -> Option<PathBuf> {
    let dir = std::env::var_os("CUDOCTOR_WINDOWS_WHEELS")?;
    Some(PathBuf::from(dir))
}

fn wheel(wheels: &Path, prefix: &str) -> PathBuf {
    std::fs::read_dir(wheels)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}* under {}", wheels.display()))
}

/// Hard links (or copies) of every file of `from` under `to`.
fn lay_out(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            lay_out(&src, &dst);
        } else if std::fs::hard_link(&src, &dst).is_err() {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn link(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    if std::fs::hard_link(src, dst).is_err() {
        std::fs::copy(src, dst).unwrap();
    }
}

struct Tree {
    _dir: tempfile_dir::TempDir,
    root: PathBuf,
}

mod tempfile_dir {
    pub struct TempDir(pub std::path::PathBuf);
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The runtime of one msvc-runtime wheel: its `data` directory (what it installs to
/// sys.prefix: msvcp140*.dll, vcruntime140_threads.dll, ...) and `Scripts`.
fn runtime_dir(wheels: &Path, version: &str) -> PathBuf {
    let w = wheel(wheels, &format!("msvc_runtime-{version}"));
    w.join(format!("msvc_runtime-{version}.data/data"))
}

/// A portable tree: python_embeded with the interpreter's vcruntime140 DLLs (the current
/// runtime's), torch and torchvision; System32 holding `system32_runtime`'s DLLs if given.
fn portable(wheels: &Path, name: &str, system32_runtime: Option<&str>) -> Tree {
    let dir = std::env::temp_dir().join(format!("cudoctor-pe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.clone();
    let embeded = root.join("C/ComfyUI_windows_portable/python_embeded");
    let site = embeded.join("Lib/site-packages");
    lay_out(&wheel(wheels, "torch-").join("torch"), &site.join("torch"));
    lay_out(
        &wheel(wheels, "torchvision-").join("torchvision"),
        &site.join("torchvision"),
    );
    // The embeddable Python ships vcruntime140.dll and vcruntime140_1.dll beside python.exe.
    let current = runtime_dir(wheels, "14.51.36231").join("Scripts");
    for dll in ["vcruntime140.dll", "vcruntime140_1.dll"] {
        link(&current.join(dll), &embeded.join(dll));
    }
    // Stand-ins for the interpreter (not part of any wheel): python.exe and python312.dll are
    // taken as loaded, never read.
    std::fs::write(embeded.join("python.exe"), b"MZ").unwrap();
    std::fs::write(embeded.join("python312.dll"), b"MZ").unwrap();
    let sys32 = root.join("C/Windows/System32");
    std::fs::create_dir_all(&sys32).unwrap();
    if let Some(version) = system32_runtime {
        let data = runtime_dir(wheels, version);
        for e in std::fs::read_dir(data.join("Scripts")).unwrap().flatten() {
            link(&e.path(), &sys32.join(e.file_name()));
        }
    }
    Tree {
        _dir: tempfile_dir::TempDir(dir),
        root,
    }
}

fn input(path: &[&str]) -> (LoaderEnv, TorchImportInput) {
    let embeded = WinPath::new(&format!(r"{PORTABLE}\python_embeded"));
    let site = embeded.join("Lib").join("site-packages");
    let env = LoaderEnv {
        app_dir: embeded.clone(),
        windows_dir: WinPath::new(r"C:\Windows"),
        current_dir: Some(WinPath::new(PORTABLE)),
        path: path.iter().map(|p| WinPath::new(p)).collect(),
        known_dlls: BTreeSet::new(),
        machine: Machine::X64,
    };
    let tv = site.join("torchvision");
    let input = TorchImportInput {
        python: PythonLayout {
            executable: embeded.join("python.exe"),
            exec_prefix: embeded.clone(),
            base_exec_prefix: embeded.clone(),
            userbase: None,
        },
        torch_dir: site.join("torch"),
        cuda_version: None,
        env: BTreeMap::from([("PATH".to_string(), path.join(";"))]),
        extensions: vec![
            (tv.clone(), tv.join("_C_stable.pyd")),
            (tv.clone(), tv.join("image_stable.pyd")),
        ],
    };
    (env, input)
}

fn run(tree: &Tree, path: &[&str]) -> TorchImport {
    let (env, input) = input(path);
    import_torch(&WinFs::rooted(&tree.root), env, &input)
}

/// objdump's import names of a file of the tree.
fn objdump_dlls(host: &Path) -> Vec<String> {
    let out = std::process::Command::new("x86_64-w64-mingw32-objdump")
        .arg("-p")
        .arg(host)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("DLL Name: ").map(str::to_string))
        .collect()
}

fn skip(test: &str) -> Option<PathBuf> {
    let Some(w) = wheels() else {
        cudoctor_testkit::skip_opt_in(
            test,
            "CUDOCTOR_WINDOWS_WHEELS names the unpacked wheels (scripts/windows/fetch-wheels.sh)",
        );
        return None;
    };
    if std::process::Command::new("x86_64-w64-mingw32-objdump")
        .arg("--version")
        .output()
        .is_err()
    {
        cudoctor_testkit::skip_missing_tool(test, "no x86_64-w64-mingw32-objdump (mingw-w64)");
        return None;
    }
    Some(w)
}

#[test]
fn a_healthy_portable_tree_loads_what_an_objdump_walk_reaches() {
    let Some(w) = skip("a_healthy_portable_tree_loads_what_an_objdump_walk_reaches") else {
        return;
    };
    let tree = portable(&w, "healthy", Some("14.51.36231"));
    let result = run(&tree, &[r"C:\Windows\System32", r"C:\Windows"]);
    assert!(result.imported(), "{:?}", result.raised);
    assert!(!result.runtime_message);
    assert!(result.patched_path.is_none());
    for l in &result.loads {
        assert!(l.ok(), "{l:?}");
    }

    // The walk: from the DLLs torch and torchvision load, every DLL Name, through the tree's
    // directories as a name lookup (torch\lib, python_embeded, torchvision, System32).
    let embeded = tree.root.join("C/ComfyUI_windows_portable/python_embeded");
    let site = embeded.join("Lib/site-packages");
    let dirs = [
        site.join("torch/lib"),
        embeded.clone(),
        site.join("torchvision"),
        tree.root.join("C/Windows/System32"),
    ];
    let find = |name: &str| {
        dirs.iter().find_map(|d| {
            std::fs::read_dir(d).ok()?.flatten().find_map(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
                    .then(|| e.path())
            })
        })
    };
    let mut start: Vec<PathBuf> = std::fs::read_dir(site.join("torch/lib"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dll"))
        .collect();
    start.push(site.join("torch/_C.cp312-win_amd64.pyd"));
    start.push(site.join("torchvision/_C_stable.pyd"));
    start.push(site.join("torchvision/image_stable.pyd"));
    let mut reached: BTreeSet<String> = BTreeSet::new();
    let mut system: BTreeSet<String> = BTreeSet::new();
    let mut todo = start.clone();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    while let Some(f) = todo.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        reached.insert(
            f.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_ascii_lowercase(),
        );
        for dll in objdump_dlls(&f) {
            if is_api_set(&dll) {
                continue;
            }
            match find(&dll) {
                Some(p) => todo.push(p),
                None => {
                    system.insert(dll.to_ascii_lowercase());
                }
            }
        }
    }
    // The interpreter's DLL stands for itself: not walked.
    reached.remove("python312.dll");
    let loaded: BTreeSet<String> = result
        .modules
        .iter()
        .filter(|m| m.found != Found::WindowsComponent && m.path.file_name() != "python312.dll")
        .map(|m| m.path.file_name().to_ascii_lowercase())
        .collect();
    assert_eq!(
        loaded, reached,
        "files loaded against files the walk reaches"
    );
    let components: BTreeSet<String> = result
        .modules
        .iter()
        .filter(|m| m.found == Found::WindowsComponent)
        .map(|m| m.path.file_name().to_ascii_lowercase())
        .collect();
    assert_eq!(
        components, system,
        "Windows' own DLLs against names the walk left unresolved"
    );

    // Each from where the search order puts it.
    let from = |name: &str| {
        result
            .modules
            .iter()
            .find(|m| m.path.file_name().eq_ignore_ascii_case(name))
            .unwrap_or_else(|| panic!("{name} not loaded"))
    };
    let lib = WinPath::new(&format!(
        r"{PORTABLE}\python_embeded\Lib\site-packages\torch\lib"
    ));
    for dll in [
        "c10.dll",
        "torch_cpu.dll",
        "torch_python.dll",
        "libiomp5md.dll",
        "uv.dll",
    ] {
        assert!(from(dll).path.is_within(&lib), "{dll}: {:?}", from(dll));
    }
    assert_eq!(from("vcruntime140.dll").found, Found::AppDir);
    assert_eq!(from("msvcp140.dll").found, Found::System32);
    assert_eq!(from("vcruntime140_threads.dll").found, Found::System32);
    assert_eq!(from("c10.dll").found, Found::FullPath);
    assert_eq!(from("kernel32.dll").found, Found::WindowsComponent);
}

#[test]
fn without_the_visual_cpp_runtime_c10_fails_to_load_with_error_126() {
    let Some(w) = skip("without_the_visual_cpp_runtime_c10_fails_to_load_with_error_126") else {
        return;
    };
    let tree = portable(&w, "no-runtime", None);
    let result = run(&tree, &[r"C:\Windows\System32", r"C:\Windows"]);
    // vcruntime140.dll comes from python_embeded; msvcp140.dll is nowhere.
    assert!(result.runtime_message);
    assert_eq!(result.runtime_checks.len(), 2);
    assert!(result.runtime_checks[0].loaded.is_some());
    assert!(result.runtime_checks[1].loaded.is_none());
    let (dll, why) = result.raised.clone().expect("import torch fails");
    assert_eq!(dll.file_name(), "c10.dll");
    match why {
        LoadFailure::NotFound { name, wanted_by } => {
            assert_eq!(name, "MSVCP140.dll");
            assert_eq!(wanted_by.unwrap().file_name(), "c10.dll");
        }
        other => panic!("{other:?}"),
    }
    // The fallback with the patched PATH was tried before it raised.
    assert!(result.patched_path.is_some());
}

#[test]
fn an_older_visual_cpp_runtime_lacks_what_torch_cpu_needs() {
    let Some(w) = skip("an_older_visual_cpp_runtime_lacks_what_torch_cpu_needs") else {
        return;
    };
    let tree = portable(&w, "old-runtime", Some("14.34.31931"));
    let result = run(&tree, &[r"C:\Windows\System32", r"C:\Windows"]);
    assert!(!result.runtime_message, "{:?}", result.runtime_checks);
    let (dll, why) = result.raised.clone().expect("import torch fails");
    // In directory order shm.dll comes before torch_cpu.dll and needs it: torch_cpu.dll takes
    // thread functions from vcruntime140_threads.dll, which 14.34 lacks.
    assert_eq!(dll.file_name(), "shm.dll");
    let LoadFailure::NotFound { name, wanted_by } = why else {
        panic!("{why:?}");
    };
    assert_eq!(name, "VCRUNTIME140_THREADS.dll");
    assert_eq!(wanted_by.unwrap().file_name(), "torch_cpu.dll");
}

#[test]
fn another_pythons_runtime_on_path_is_what_the_fallback_loads() {
    let Some(w) = skip("another_pythons_runtime_on_path_is_what_the_fallback_loads") else {
        return;
    };
    let tree = portable(&w, "path-runtime", None);
    // A system Python whose Scripts directory holds msvc-runtime 14.34's DLLs, on PATH.
    let other = tree.root.join("C/Python38/Scripts");
    for e in std::fs::read_dir(runtime_dir(&w, "14.34.31931").join("Scripts"))
        .unwrap()
        .flatten()
    {
        link(&e.path(), &other.join(e.file_name()));
    }
    let result = run(
        &tree,
        &[
            r"C:\Windows\System32",
            r"C:\Windows",
            r"C:\Python38\Scripts",
        ],
    );
    assert!(
        result.runtime_message,
        "the flagged check does not search PATH"
    );
    let foreign = WinPath::new(r"C:\Python38\Scripts");
    let msvcp = result
        .modules
        .iter()
        .find(|m| m.path.file_name().eq_ignore_ascii_case("msvcp140.dll"))
        .expect("msvcp140.dll loaded through PATH");
    assert_eq!(msvcp.found, Found::Path);
    assert!(msvcp.path.is_within(&foreign), "{msvcp:?}");
    // c10.dll loaded with it; torch_cpu.dll (through shm.dll) still lacks vcruntime140_threads.
    assert!(result.loads.iter().any(|l| l.ok()
        && l.requested.ends_with("c10.dll")
        && l.mode == cudoctor_pe::loader::SearchMode::Standard));
    let (dll, why) = result.raised.clone().expect("import torch fails");
    assert_eq!(dll.file_name(), "shm.dll");
    assert!(
        matches!(why, LoadFailure::NotFound { ref name, .. } if name == "VCRUNTIME140_THREADS.dll"),
        "{why:?}"
    );
}
