//! A Windows machine: the live one of a Windows build, or a Windows tree under `--root`
//! (`<root>/C/Windows` stands for `C:\Windows`, docs/windows.md). Its Visual C++ runtime in
//! System32, PATH, its Python environments with torch (embedded Pythons as ComfyUI portable
//! ships them, venvs, conda environments, installed Pythons), and for each, what `import torch`
//! loads: the DLL search emulated by cudoctor-pe. Nothing is run; files are only read.

use std::collections::{BTreeSet, HashSet};

use cudoctor_pe::loader::LoaderEnv;
use cudoctor_pe::torch::{import_torch, PythonLayout, TorchImportInput};
use cudoctor_pe::winfs::{WinFs, WinPath};
use cudoctor_pe::{Machine, PeFile, VersionInfo};
use cudoctor_snapshot::windows::{
    RuntimeDll, WindowsFacts, WindowsPythonKind, WindowsToolkit, WindowsTorchEnv,
};
use cudoctor_snapshot::{PythonEnv, PythonEnvKind};
use cudoctor_types::read_at::FileSource;

use crate::host::{split_windows_path_list, Host};

pub mod msvc;
pub mod registry;

/// How a Python registered in the registry (PEP 514) was found.
pub const FOUND_VIA_REGISTRY: &str = "registry (PEP 514)";

/// The Visual C++ runtime's DLLs whose presence and version are recorded.
const RUNTIME_DLLS: &[&str] = &[
    "vcruntime140.dll",
    "vcruntime140_1.dll",
    "vcruntime140_threads.dll",
    "msvcp140.dll",
    "msvcp140_1.dll",
    "msvcp140_2.dll",
    "msvcp140_atomic_wait.dll",
];

/// The Windows file system of `host`, when it is a Windows machine.
pub fn windows_fs(host: &Host) -> Option<WinFs> {
    if host.is_live_windows() {
        return Some(WinFs::live());
    }
    host.is_windows().then(|| WinFs::rooted(host.root()))
}

/// The facts of a Windows machine; `None` for any other.
pub fn collect(host: &Host, pythons: &[String]) -> Option<WindowsFacts> {
    let fs = windows_fs(host)?;
    let windows_dir = windows_dir(host);
    let path = path_of(host);
    let system32 = windows_dir.join("System32");
    let vc_runtime = RUNTIME_DLLS
        .iter()
        .filter_map(|name| fs.file_in(&system32, name))
        .map(|p| RuntimeDll {
            version: file_version(&fs, &p),
            path: p,
        })
        .collect();
    let known_dlls = registry::known_dlls(host);
    let mut torch_envs = Vec::new();
    for (python, _) in candidates(&fs, host, pythons, &path) {
        if let Some(env) = torch_env(&fs, host, &python, &windows_dir, &path, &known_dlls) {
            torch_envs.push(env);
        }
    }
    let msvc = msvc::collect(&fs, host, &path);
    Some(WindowsFacts {
        windows_dir: Some(windows_dir),
        path,
        vc_runtime,
        torch_envs,
        toolkits: toolkits(&fs, host),
        known_dlls: known_dlls.map(|k| k.into_iter().collect()),
        msvc: Some(msvc),
    })
}

/// `%SystemRoot%`, `C:\Windows` where it is not set (as in a tree without its variables).
pub(crate) fn windows_dir(host: &Host) -> WinPath {
    WinPath::new(host.var("SYSTEMROOT").unwrap_or(r"C:\Windows"))
}

/// `%ProgramFiles%`, `C:\Program Files` where it is not set.
pub(crate) fn program_files(host: &Host) -> WinPath {
    WinPath::new(host.var("PROGRAMFILES").unwrap_or(r"C:\Program Files"))
}

/// PATH's directories, in order.
fn path_of(host: &Host) -> Vec<WinPath> {
    split_windows_path_list(host.var("PATH").unwrap_or(""))
        .iter()
        .map(|p| WinPath::new(p))
        .collect()
}

/// The CUDA Toolkits the installer's layout, the variables and PATH show: every `v*` directory
/// under `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA`, each directory CUDA_PATH or a
/// CUDA_PATH_V<x>_<y> names (the installer sets both) or CUDA_HOME names, and the directory
/// above each PATH directory `bin` holding nvcc.exe, in that order.
fn toolkits(fs: &WinFs, host: &Host) -> Vec<WindowsToolkit> {
    let base = program_files(host)
        .join("NVIDIA GPU Computing Toolkit")
        .join("CUDA");
    let mut dirs: Vec<WinPath> = fs
        .list(&base)
        .into_iter()
        .filter(|n| n.starts_with('v') || n.starts_with('V'))
        .map(|n| base.join(&n))
        .filter(|d| fs.is_dir(d))
        .collect();
    let vars: Vec<(String, WinPath)> = host
        .env()
        .iter()
        .filter(|(k, _)| {
            // CUDA_HOME too: torch's extension builds read it before CUDA_PATH.
            k.as_str() == "CUDA_HOME" || k.as_str() == "CUDA_PATH" || k.starts_with("CUDA_PATH_V")
        })
        .map(|(k, v)| (k.clone(), WinPath::new(v)))
        .filter(|(_, v)| v.is_absolute())
        .collect();
    // torch's `_find_cuda_home` takes, without CUDA_HOME or CUDA_PATH, the directory above the
    // first nvcc.exe on PATH (`shutil.which`): a conda environment's `Library\bin` too.
    let on_path = path_of(host).into_iter().filter_map(|dir| {
        let is_bin = dir.file_name().eq_ignore_ascii_case("bin");
        (is_bin && fs.is_file(&dir.join("nvcc.exe")))
            .then(|| dir.parent())
            .flatten()
    });
    for v in vars.iter().map(|(_, v)| v.clone()).chain(on_path) {
        if !dirs.iter().any(|d| d.same_as(&v)) {
            dirs.push(v);
        }
    }
    dirs.into_iter()
        .map(|dir| {
            let version = read_text(fs, &dir.join("version.json"), 1 << 20)
                .and_then(|t| crate::toolkit::version_from_json(&t))
                .or_else(|| conda_nvcc_version(fs, &dir));
            WindowsToolkit {
                nvcc: fs.is_file(&dir.join("bin").join("nvcc.exe")),
                named_by: vars
                    .iter()
                    .filter(|(_, v)| v.same_as(&dir))
                    .map(|(k, _)| k.clone())
                    .collect(),
                missing: !fs.is_dir(&dir),
                version,
                path: dir,
            }
        })
        .collect()
}

/// The version of the nvcc a conda environment's `Library` holds (conda puts Windows programs
/// in `<prefix>\Library\bin`), from the record conda keeps of the package that installed it:
/// `<prefix>\conda-meta\<name>-<version>-<build>.json` of `cuda-nvcc` (the nvidia and
/// conda-forge channels' package), else of `cuda-nvcc-tools` or `cuda-nvcc-impl`, the packages
/// conda-forge splits it into.
fn conda_nvcc_version(fs: &WinFs, dir: &WinPath) -> Option<String> {
    if !dir.file_name().eq_ignore_ascii_case("Library") {
        return None;
    }
    let records = fs.list(&dir.parent()?.join("conda-meta"));
    let version_of = |package: &str| {
        records.iter().find_map(|f| {
            let stem = f.strip_suffix(".json")?;
            let (rest, _build) = stem.rsplit_once('-')?;
            let (name, version) = rest.rsplit_once('-')?;
            name.eq_ignore_ascii_case(package)
                .then(|| version.to_string())
        })
    };
    ["cuda-nvcc", "cuda-nvcc-tools", "cuda-nvcc-impl"]
        .into_iter()
        .find_map(version_of)
}

/// A text file of this Windows machine, at most `limit` bytes (lossy UTF-8); `None` when it
/// cannot be read (absent, outside the tree, not a regular file, too large).
fn read_text(fs: &WinFs, path: &WinPath, limit: u64) -> Option<String> {
    let host_path = fs.host_path(path)?;
    let bytes = cudoctor_types::regular_file::read(&host_path, limit).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The file version of a DLL, for the facts that only show it.
fn file_version(fs: &WinFs, path: &WinPath) -> Option<String> {
    let v = version_info(fs, path).ok()??.file_version?;
    Some(v.to_string())
}

/// The version resource of a PE file of this Windows machine; `None` when it has none, an
/// error (in words) when the file cannot be opened or is no readable PE image.
pub(crate) fn version_info(fs: &WinFs, path: &WinPath) -> Result<Option<VersionInfo>, String> {
    let host_path = fs
        .host_path(path)
        .ok_or_else(|| format!("{path} lies outside the tree"))?;
    let src = FileSource::open(&host_path).map_err(|e| e.to_string())?;
    let pe = PeFile::parse(src).map_err(|e| e.to_string())?;
    pe.version_info().map_err(|e| e.to_string())
}

/// Every python.exe worth looking at, with how it was found, in order: those given with
/// `--python`, the active venv's and conda environment's, those on PATH, those registered
/// (PEP 514, the live machine's registry), embedded Pythons of portable layouts (`<dir>\python_embeded`, one
/// level under `C:\` and under each user's home, Desktop, Downloads and Documents), installed
/// Pythons (`C:\Python3*`, `%LOCALAPPDATA%\Programs\Python\Python3*`).
fn candidates(
    fs: &WinFs,
    host: &Host,
    given: &[String],
    path: &[WinPath],
) -> Vec<(WinPath, &'static str)> {
    let mut out: Vec<(WinPath, &'static str)> = Vec::new();
    let mut push = |p: WinPath, via: &'static str| {
        if fs.is_file(&p) && !out.iter().any(|(o, _)| o.same_as(&p)) {
            out.push((p, via));
        }
    };
    for g in given {
        for p in given_python(&WinPath::new(g)) {
            push(p, cudoctor_snapshot::FOUND_VIA_PYTHON_OPTION);
        }
    }
    // The Python whose pip installed this cudoctor.exe (`python_embeded\Scripts\cudoctor.exe`
    // of a ComfyUI portable install, a venv's Scripts): the one the user means.
    if host.is_live_windows() {
        let exe = std::env::current_exe()
            .ok()
            .map(|p| WinPath::new(p.to_string_lossy().trim_start_matches(r"\\?\")));
        for p in exe.as_ref().map(installed_into).unwrap_or_default() {
            push(p, FOUND_VIA_INSTALLED_INTO);
        }
    }
    if let Some(v) = host.var("VIRTUAL_ENV") {
        push(
            WinPath::new(v).join("Scripts").join("python.exe"),
            "VIRTUAL_ENV",
        );
    }
    if let Some(c) = host.var("CONDA_PREFIX") {
        push(WinPath::new(c).join("python.exe"), "CONDA_PREFIX");
    }
    for dir in path {
        push(dir.join("python.exe"), "python.exe on PATH");
    }
    for p in registry::registered_pythons(host) {
        if let Some(i) = p.interpreter() {
            push(i, FOUND_VIA_REGISTRY);
        }
    }
    let c = WinPath::new(r"C:\");
    let mut roots = vec![c.clone()];
    let users = c.join("Users");
    for user in fs.list(&users) {
        let home = users.join(&user);
        roots.push(home.clone());
        for sub in ["Desktop", "Downloads", "Documents"] {
            roots.push(home.join(sub));
        }
        let programs = home
            .join("AppData")
            .join("Local")
            .join("Programs")
            .join("Python");
        for py in fs.list(&programs) {
            push(programs.join(&py).join("python.exe"), "installed Python");
        }
    }
    for r in roots {
        for name in fs.list(&r) {
            push(
                r.join(&name).join("python_embeded").join("python.exe"),
                "portable layout",
            );
        }
    }
    for name in fs.list(&c) {
        if name.to_ascii_lowercase().starts_with("python3") {
            push(c.join(&name).join("python.exe"), "installed Python");
        }
    }
    out
}

/// How the Python that pip installed this cudoctor.exe into is found.
pub const FOUND_VIA_INSTALLED_INTO: &str = "the Python cudoctor.exe is installed in";

/// The interpreters of the environment whose `Scripts` directory holds `exe`: `<prefix>\python.exe`
/// (an embedded or installed Python, conda) and `Scripts\python.exe` (a venv). None for a
/// cudoctor.exe outside a `Scripts` directory.
fn installed_into(exe: &WinPath) -> Vec<WinPath> {
    let Some(scripts) = exe.parent() else {
        return Vec::new();
    };
    if !scripts.file_name().eq_ignore_ascii_case("Scripts") {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(prefix) = scripts.parent() {
        out.push(prefix.join("python.exe"));
    }
    out.push(scripts.join("python.exe"));
    out
}

/// Why a Windows path given with `--python` names no Python of this Windows machine; `None`
/// when it does (an interpreter, or a directory with `python.exe` or `Scripts\python.exe`).
pub fn explicit_problem(host: &Host, path: &str) -> Option<String> {
    let Some(fs) = windows_fs(host) else {
        return Some(format!(
            "--python {path}: a Windows path, but this is not a Windows machine or tree"
        ));
    };
    let found = given_python(&WinPath::new(path))
        .iter()
        .any(|p| fs.is_file(p));
    (!found).then(|| {
        format!("--python {path}: no python.exe there (an interpreter, or a directory with python.exe or Scripts\\python.exe)")
    })
}

/// The interpreters a path given with `--python` may name: itself when it ends in `.exe`, else
/// `python.exe` in it (an installed or embedded Python, a conda environment) or in its
/// `Scripts` (a venv).
fn given_python(given: &WinPath) -> Vec<WinPath> {
    if !given.is_absolute() {
        Vec::new()
    } else if given.file_name().to_ascii_lowercase().ends_with(".exe") {
        vec![given.clone()]
    } else {
        vec![
            given.join("python.exe"),
            given.join("Scripts").join("python.exe"),
        ]
    }
}

/// What kind of Python `python` is, and its prefix (`sys.prefix`).
fn python_kind(fs: &WinFs, python: &WinPath) -> Option<(WindowsPythonKind, WinPath)> {
    let bin = python.parent()?;
    Some(
        if bin.file_name().eq_ignore_ascii_case("Scripts")
            && bin
                .parent()
                .is_some_and(|p| fs.is_file(&p.join("pyvenv.cfg")))
        {
            (WindowsPythonKind::Venv, bin.parent()?)
        } else if fs.is_dir(&bin.join("conda-meta")) {
            (WindowsPythonKind::Conda, bin)
        } else if pth_file(fs, &bin).is_some() {
            (WindowsPythonKind::Embedded, bin)
        } else {
            (WindowsPythonKind::Installed, bin)
        },
    )
}

/// The embeddable Python's `python3XY._pth` in `dir`.
fn pth_file(fs: &WinFs, dir: &WinPath) -> Option<String> {
    fs.list(dir).into_iter().find(|n| {
        let n = n.to_ascii_lowercase();
        n.starts_with("python3") && n.ends_with("._pth")
    })
}

/// `3.12` of `python312._pth`, `python312.dll` or `python312.zip` beside the interpreter.
fn version_of_files(fs: &WinFs, dir: &WinPath) -> Option<String> {
    fs.list(dir).into_iter().find_map(|n| {
        let lower = n.to_ascii_lowercase();
        let digits = lower
            .strip_prefix("python3")?
            .split('.')
            .next()?
            .to_string();
        (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
            .then(|| format!("3.{digits}"))
    })
}

/// The Windows Pythons found ([`candidates`]) as Python environments of the snapshot, read from
/// their files as the Linux ones are (dist-info, torch/version.py, METADATA, RECORD), so the
/// same rules judge them; their paths are Windows paths ([`PythonEnv::windows`]). Empty on any
/// other machine.
pub fn python_envs(host: &Host, pythons: &[String]) -> Vec<PythonEnv> {
    let Some(fs) = windows_fs(host) else {
        return Vec::new();
    };
    let path = path_of(host);
    let mut envs: Vec<PythonEnv> = Vec::new();
    for (python, via) in candidates(&fs, host, pythons, &path) {
        let Some(env) = python_env(&fs, host, &python, via) else {
            continue;
        };
        match envs.iter_mut().find(|e| e.prefix == env.prefix) {
            Some(e) if !e.found_via.iter().any(|v| v == via) => e.found_via.push(via.into()),
            Some(_) => {}
            None => envs.push(env),
        }
    }
    envs
}

fn python_env(fs: &WinFs, host: &Host, python: &WinPath, via: &str) -> Option<PythonEnv> {
    let layout = layout(fs, host, python)?;
    let mut env = PythonEnv {
        prefix: layout.prefix.to_string(),
        kind: match layout.kind {
            WindowsPythonKind::Venv => PythonEnvKind::Venv,
            WindowsPythonKind::Conda => PythonEnvKind::Conda,
            WindowsPythonKind::Embedded | WindowsPythonKind::Installed => PythonEnvKind::System,
        },
        found_via: vec![via.to_string()],
        interpreter: Some(python.to_string()),
        windows: true,
        python_version: layout.python_version,
        site_packages: layout.package_dirs.iter().map(|d| d.to_string()).collect(),
        ..Default::default()
    };
    let kind = layout.kind;
    crate::python::site::read_packages(host, &mut env);
    if let Some(t) = &mut env.torch {
        t.path = WinPath::new(&t.path).to_string();
    }
    if kind == WindowsPythonKind::Conda {
        env.conda_packages = crate::python::site::conda_packages(host, &env.prefix);
    }
    env.installer = Some(crate::python::installer::detect(host, &env));
    env.frameworks = crate::python::frameworks::read(host, &env);
    env.declared = crate::python::declared::read(host, &env);
    Some(env)
}

/// A Windows Python as `sys.path` sees it.
struct Layout {
    kind: WindowsPythonKind,
    /// `sys.prefix`.
    prefix: WinPath,
    /// A venv's base Python (pyvenv.cfg's `home`).
    base: Option<WinPath>,
    python_version: Option<String>,
    /// Its package directories in `sys.path` order, each existing.
    package_dirs: Vec<WinPath>,
}

fn layout(fs: &WinFs, host: &Host, python: &WinPath) -> Option<Layout> {
    let (kind, prefix) = python_kind(fs, python)?;
    let bin = python.parent()?;
    let cfg = read_text(fs, &prefix.join("pyvenv.cfg"), 1 << 16);
    // `home = C:\Python312`: the base interpreter's directory.
    let base = match kind {
        WindowsPythonKind::Venv => cfg
            .as_deref()
            .and_then(|c| crate::python::cfg_value(c, "home"))
            .map(|h| WinPath::new(&h)),
        _ => None,
    };
    let python_version = cfg
        .as_deref()
        .and_then(|c| {
            crate::python::cfg_value(c, "version")
                .or_else(|| crate::python::cfg_value(c, "version_info"))
        })
        .or_else(|| version_of_files(fs, base.as_ref().unwrap_or(&bin)));
    let user_site = user_site(host, python_version.as_deref());
    let package_dirs = package_dirs(
        fs,
        kind,
        &prefix,
        base.as_ref(),
        cfg.as_deref(),
        user_site.as_ref(),
    );
    Some(Layout {
        kind,
        prefix,
        base,
        python_version,
        package_dirs,
    })
}

/// `PYTHONUSERBASE`, else `%APPDATA%\Python`: site.py's user base on Windows.
fn user_base(host: &Host) -> Option<WinPath> {
    if let Some(b) = host.var("PYTHONUSERBASE").filter(|b| !b.is_empty()) {
        return Some(WinPath::new(b));
    }
    host.var("APPDATA")
        .filter(|a| !a.is_empty())
        .map(|a| WinPath::new(a).join("Python"))
}

/// The user site of a Python of `version` (`3.12.4`): `<user base>\Python312\site-packages`
/// (site.py's `_get_path` on Windows); none under PYTHONNOUSERSITE or without a user base (a
/// tree, whose user's variables are not known).
fn user_site(host: &Host, version: Option<&str>) -> Option<WinPath> {
    if host.var("PYTHONNOUSERSITE").is_some_and(|v| !v.is_empty()) {
        return None;
    }
    let mut parts = version?.split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    Some(
        user_base(host)?
            .join(&format!("Python{major}{minor}"))
            .join("site-packages"),
    )
}

/// The package directories of a Windows Python, in `sys.path` order: an embeddable Python's
/// are the directories its `._pth` file lists (relative to it; `import site` lines and zip
/// files are not directories; the `._pth` makes it isolated: no user site; with `import site`,
/// site.main() adds `Lib\site-packages` after them); a venv's its own
/// `Lib\site-packages`, then with `include-system-site-packages = true` the user site and the
/// base's; any other's the user site, then `Lib\site-packages`. Each site directory is followed
/// by the directories its `.pth` files add (`site.addsitedir`; for an embeddable Python only
/// when its `._pth` has `import site`, which runs the site module). Only existing directories.
/// (site.py makes the prefix itself a site directory on Windows too; its `.pth` files, which
/// installers do not write there, are not read.)
fn package_dirs(
    fs: &WinFs,
    kind: WindowsPythonKind,
    prefix: &WinPath,
    base: Option<&WinPath>,
    cfg: Option<&str>,
    user_site: Option<&WinPath>,
) -> Vec<WinPath> {
    let own = prefix.join("Lib").join("site-packages");
    let site_dirs: Vec<WinPath> = match kind {
        WindowsPythonKind::Embedded => return embedded_dirs(fs, prefix, &own),
        WindowsPythonKind::Venv => {
            let mut dirs = vec![own];
            if let (true, Some(base)) = (crate::python::includes_system_site(cfg), base) {
                dirs.extend(user_site.cloned());
                dirs.push(base.join("Lib").join("site-packages"));
            }
            dirs
        }
        WindowsPythonKind::Conda | WindowsPythonKind::Installed => {
            user_site.cloned().into_iter().chain([own]).collect()
        }
    };
    let mut out: Vec<WinPath> = Vec::new();
    let mut seen = HashSet::new();
    for d in site_dirs.into_iter().filter(|d| fs.is_dir(d)) {
        let added = pth_dirs(fs, &d);
        for dir in std::iter::once(d).chain(added) {
            push_new(&mut out, &mut seen, dir);
        }
    }
    out
}

/// `dir` at the end of `dirs` unless it is there already (as `sys.path` keeps one entry each).
/// Adds `dir` unless a directory of the same name (without case, as [`WinPath::same_as`]) is
/// in: a set of the names seen, so 60,000 `.pth` directories cost linear time.
fn push_new(dirs: &mut Vec<WinPath>, seen: &mut HashSet<String>, dir: WinPath) {
    if seen.insert(dir.as_str().to_ascii_lowercase()) {
        dirs.push(dir);
    }
}

/// An embeddable Python's package directories: what its `._pth` lists, read as getpath reads
/// it (a `#` starts a comment anywhere on a line; `.zip` entries and `.`, the prefix itself,
/// are not package directories; `import site` is no path); with `import site`, site.main()
/// then adds `Lib\site-packages` when the `._pth` did not, and the directories its `.pth`
/// files add, after everything the `._pth` listed (only site directories have their `.pth`
/// files read; the prefix's own, which installers do not write, are not). Existing ones only.
fn embedded_dirs(fs: &WinFs, prefix: &WinPath, own: &WinPath) -> Vec<WinPath> {
    let text = pth_file(fs, prefix)
        .and_then(|pth| read_text(fs, &prefix.join(&pth), 1 << 16))
        .unwrap_or_default();
    let mut import_site = false;
    let mut out: Vec<WinPath> = Vec::new();
    let mut seen = HashSet::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line == "import site" {
            import_site = true;
            continue;
        }
        if line.is_empty()
            || line.starts_with("import ")
            || line == "."
            || line.to_ascii_lowercase().ends_with(".zip")
        {
            continue;
        }
        let dir = if WinPath::new(line).is_absolute() {
            WinPath::new(line)
        } else {
            prefix.join(line)
        };
        if fs.is_dir(&dir) {
            push_new(&mut out, &mut seen, dir);
        }
    }
    if import_site && fs.is_dir(own) {
        push_new(&mut out, &mut seen, own.clone());
        for dir in pth_dirs(fs, own) {
            push_new(&mut out, &mut seen, dir);
        }
    }
    out
}

/// The most distinct `.pth` lines looked at in one site directory (real ones hold a few).
const MAX_PTH_ENTRIES: usize = 1 << 16;

/// The directories the `.pth` files of `site_dir` add, as `site.addsitedir` does: files in name
/// order, a line a directory (relative to `site_dir`, or absolute), comments and `import`
/// lines skipped, only existing directories.
fn pth_dirs(fs: &WinFs, site_dir: &WinPath) -> Vec<WinPath> {
    let mut names: Vec<String> = fs
        .list(site_dir)
        .into_iter()
        .filter(|n| n.to_ascii_lowercase().ends_with(".pth"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    let mut bytes = 0u64;
    // Each line is looked at once (a directory named twice is added once, as site.addsitedir
    // does), and at most MAX_PTH_ENTRIES of them: 64 MB of `.pth` lines naming one directory
    // took 260 s and 1.9 GB of a `--timeout 2` check, a case-insensitive lookup and a copy
    // of the path per line.
    let mut seen = HashSet::new();
    for name in names {
        // Thousands of huge `.pth` files end at the same byte cap as on Linux.
        if bytes > crate::python::site::MAX_PTH_BYTES || seen.len() >= MAX_PTH_ENTRIES {
            break;
        }
        let Some(text) = read_text(fs, &site_dir.join(&name), 1 << 20) else {
            continue;
        };
        bytes += text.len() as u64;
        for line in crate::python::site::pth_entries(&text) {
            if seen.len() >= MAX_PTH_ENTRIES {
                break;
            }
            if seen.contains(line) {
                continue;
            }
            seen.insert(line.to_string());
            let dir = if WinPath::new(line).is_absolute() {
                WinPath::new(line)
            } else {
                site_dir.join(line)
            };
            if fs.is_dir(&dir) {
                out.push(dir);
            }
        }
    }
    out
}

fn torch_env(
    fs: &WinFs,
    host: &Host,
    python: &WinPath,
    windows_dir: &WinPath,
    path: &[WinPath],
    known_dlls: &Option<BTreeSet<String>>,
) -> Option<WindowsTorchEnv> {
    let bin = python.parent()?;
    let layout = layout(fs, host, python)?;
    let (kind, prefix) = (layout.kind, layout.prefix.clone());
    let base = layout.base.clone().unwrap_or_else(|| prefix.clone());
    // torch as `import torch` finds it: in the first package directory that has it as a
    // regular package (a `torch` directory without `__init__.py`, such as the `torch\lib` an
    // uninstall could not delete while its DLLs were in use, is only a namespace portion, and
    // a regular package later on the path wins).
    let torch_dir = layout
        .package_dirs
        .iter()
        .map(|d| d.join("torch"))
        .find(|t| fs.is_file(&t.join("__init__.py")))?;
    let build = read_text(fs, &torch_dir.join("version.py"), 1 << 20)
        .and_then(|t| crate::python::site::parse_torch_version_py(&t, torch_dir.as_str()));
    let cuda = build.as_ref().and_then(|b| b.cuda.clone());
    let mut extensions = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for site in &layout.package_dirs {
        for package in fs.list(site) {
            let dir = site.join(&package);
            let lower = package.to_ascii_lowercase();
            // Extensions of torch that load through torch.ops.load_library (torchvision's,
            // torchaudio's): the .pyd files at the top of a torch* package, of the first
            // directory that has the package (the one `import` finds).
            if lower == "torch" || !lower.starts_with("torch") || !fs.is_dir(&dir) {
                continue;
            }
            if !seen.insert(lower) {
                continue;
            }
            for name in fs.list(&dir) {
                if name.to_ascii_lowercase().ends_with(".pyd") {
                    extensions.push((dir.clone(), dir.join(&name)));
                }
            }
        }
    }
    let env = LoaderEnv {
        app_dir: bin.clone(),
        windows_dir: windows_dir.clone(),
        current_dir: None,
        path: path.to_vec(),
        known_dlls: known_dlls.clone().unwrap_or_default(),
        machine: Machine::X64,
    };
    let input = TorchImportInput {
        python: PythonLayout {
            executable: python.clone(),
            exec_prefix: prefix.clone(),
            base_exec_prefix: base,
            userbase: user_base(host),
        },
        torch_dir: torch_dir.clone(),
        cuda_version: cuda.clone(),
        env: host.env().clone(),
        extensions,
    };
    let import = import_torch(fs, env, &input);
    Some(WindowsTorchEnv {
        python: python.clone(),
        kind,
        torch_dir,
        torch_version: build.map(|b| b.version),
        cuda,
        import,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn file(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn the_user_site_and_pth_directories_are_in_sys_path_order_and_torch_is_the_first_found() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("C/Windows/System32")).unwrap();
        file(r, "C/Python312/python.exe", "MZ");
        file(r, "C/Python312/python312.dll", "MZ");
        let global = "C/Python312/Lib/site-packages";
        let user = "C/Users/Me/AppData/Roaming/Python/Python312/site-packages";
        // `pip install --user torch` beside an older torch of the installation: the user site
        // comes first in sys.path, so its torch is the one imported.
        for (site, version) in [(global, "2.4.0+cpu"), (user, "2.15.0+cpu")] {
            file(
                r,
                &format!("{site}/torch/version.py"),
                &format!("__version__ = '{version}'\ncuda = None\n"),
            );
            file(r, &format!("{site}/torch/__init__.py"), "");
        }
        file(r, &format!("{global}/torchvision/_C.pyd"), "MZ");
        // pywin32's .pth adds directories relative to the site directory; an `import` line and
        // a directory that does not exist add nothing; an absolute one (an editable install).
        file(
            r,
            &format!("{global}/pywin32.pth"),
            "# .pth file for the PyWin32 extensions\nwin32\nwin32\\lib\nPythonwin\nimport pywin32_bootstrap\nC:\\src\\app\n",
        );
        std::fs::create_dir_all(r.join(format!("{global}/win32/lib"))).unwrap();
        std::fs::create_dir_all(r.join(format!("{global}/win32"))).unwrap();
        std::fs::create_dir_all(r.join("C/src/app")).unwrap();
        let env = |extra: &[(&str, &str)]| {
            let mut e = BTreeMap::from([(
                "APPDATA".to_string(),
                r"C:\Users\Me\AppData\Roaming".to_string(),
            )]);
            e.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            Host::rooted(r.to_path_buf(), e, Duration::from_secs(1))
        };
        let given = [r"C:\Python312\python.exe".to_string()];
        let host = env(&[]);
        let envs = python_envs(&host, &given);
        assert_eq!(
            envs[0].site_packages,
            [
                r"C:\Users\Me\AppData\Roaming\Python\Python312\site-packages",
                r"C:\Python312\Lib\site-packages",
                r"C:\Python312\Lib\site-packages\win32",
                r"C:\Python312\Lib\site-packages\win32\lib",
                r"C:\src\app",
            ]
        );
        let torch = envs[0].torch.as_ref().unwrap();
        assert_eq!(torch.version, "2.15.0+cpu");
        let facts = collect(&host, &given).unwrap();
        let t = &facts.torch_envs[0];
        assert_eq!(
            t.torch_dir.as_str(),
            r"C:\Users\Me\AppData\Roaming\Python\Python312\site-packages\torch"
        );
        assert_eq!(t.torch_version.as_deref(), Some("2.15.0+cpu"));
        // The emulated import takes torchvision's extension from the installation's site.
        assert!(
            t.import
                .loads
                .iter()
                .any(|l| l.requested == r"C:\Python312\Lib\site-packages\torchvision\_C.pyd"),
            "{:#?}",
            t.import
        );
        // What an uninstall left in the user site (DLLs in use are not deleted on Windows):
        // a torch directory without __init__.py, no package; the installation's is imported.
        let user_torch = r.join(user).join("torch");
        std::fs::remove_dir_all(&user_torch).unwrap();
        file(r, &format!("{user}/torch/lib/c10.dll"), "MZ");
        let facts = collect(&host, &given).unwrap();
        assert_eq!(
            facts.torch_envs[0].torch_dir.as_str(),
            r"C:\Python312\Lib\site-packages\torch"
        );
        assert_eq!(
            python_envs(&host, &given)[0]
                .torch
                .as_ref()
                .unwrap()
                .version,
            "2.4.0+cpu"
        );
        // PYTHONNOUSERSITE: the installation's own torch.
        let host = env(&[("PYTHONNOUSERSITE", "1")]);
        let envs = python_envs(&host, &given);
        assert_eq!(envs[0].site_packages[0], r"C:\Python312\Lib\site-packages");
        assert_eq!(envs[0].torch.as_ref().unwrap().version, "2.4.0+cpu");
        // PYTHONUSERBASE moves the user site.
        let host = env(&[("PYTHONUSERBASE", r"C:\pyuser")]);
        std::fs::create_dir_all(r.join("C/pyuser/Python312/site-packages")).unwrap();
        let envs = python_envs(&host, &given);
        assert_eq!(
            envs[0].site_packages[0],
            r"C:\pyuser\Python312\site-packages"
        );
    }

    /// 16 MB of `.pth` lines naming one directory in an embedded Python's site-packages: each
    /// line was looked up and copied (65 s and 500 MB here; 64 MB took 260 s and 1.9 GB of a
    /// `--timeout 2` check). Each line is now looked at once.
    #[test]
    fn a_directory_named_by_millions_of_pth_lines_is_looked_up_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("C/Windows/System32")).unwrap();
        let e = "C/py/python_embeded";
        file(r, &format!("{e}/python.exe"), "MZ");
        file(
            r,
            &format!("{e}/python312._pth"),
            "python312.zip\n.\nLib/site-packages\nimport site\n",
        );
        std::fs::create_dir_all(r.join(format!("{e}/Lib/site-packages/extra"))).unwrap();
        for i in 0..16 {
            file(
                r,
                &format!("{e}/Lib/site-packages/p{i:02}.pth"),
                &"extra\n".repeat(170_000),
            );
        }
        let host = Host::rooted(r.to_path_buf(), BTreeMap::new(), Duration::from_secs(1));
        let started = std::time::Instant::now();
        let envs = python_envs(&host, &[r"C:\py\python_embeded".to_string()]);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        let site = r"C:\py\python_embeded\Lib\site-packages";
        assert_eq!(
            envs[0].site_packages,
            [site.to_string(), format!(r"{site}\extra")]
        );
    }

    #[test]
    fn an_embedded_python_has_no_user_site_and_reads_pth_files_only_with_import_site() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("C/Windows/System32")).unwrap();
        let e = "C/ComfyUI_windows_portable/python_embeded";
        file(r, &format!("{e}/python.exe"), "MZ");
        file(r, &format!("{e}/Lib/site-packages/extra.pth"), "extra\n");
        std::fs::create_dir_all(r.join(format!("{e}/Lib/site-packages/extra"))).unwrap();
        std::fs::create_dir_all(
            r.join("C/Users/Me/AppData/Roaming/Python/Python312/site-packages"),
        )
        .unwrap();
        let host = Host::rooted(
            r.to_path_buf(),
            BTreeMap::from([(
                "APPDATA".to_string(),
                r"C:\Users\Me\AppData\Roaming".to_string(),
            )]),
            Duration::from_secs(1),
        );
        let given = [r"C:\ComfyUI_windows_portable\python_embeded".to_string()];
        let site = r"C:\ComfyUI_windows_portable\python_embeded\Lib\site-packages";
        file(
            r,
            &format!("{e}/python312._pth"),
            "python312.zip\n.\nLib/site-packages\n",
        );
        assert_eq!(python_envs(&host, &given)[0].site_packages, [site]);
        file(
            r,
            &format!("{e}/python312._pth"),
            "python312.zip\n.\nLib/site-packages\nimport site\n",
        );
        assert_eq!(
            python_envs(&host, &given)[0].site_packages,
            [site.to_string(), format!(r"{site}\extra")]
        );
        // ComfyUI's own directory listed, site-packages not: without `import site` it is not
        // on sys.path; with it, site.main() adds it (and its .pth directories) at the end.
        std::fs::create_dir_all(r.join("C/ComfyUI_windows_portable/ComfyUI")).unwrap();
        let comfy = r"C:\ComfyUI_windows_portable\python_embeded\..\ComfyUI";
        file(
            r,
            &format!("{e}/python312._pth"),
            "python312.zip\n.\n../ComfyUI\n",
        );
        assert_eq!(python_envs(&host, &given)[0].site_packages, [comfy]);
        file(
            r,
            &format!("{e}/python312._pth"),
            "python312.zip\n.\n../ComfyUI\nimport site\n",
        );
        assert_eq!(
            python_envs(&host, &given)[0].site_packages,
            [
                comfy.to_string(),
                site.to_string(),
                format!(r"{site}\extra")
            ]
        );
        // getpath drops what follows a `#` on any line.
        file(
            r,
            &format!("{e}/python312._pth"),
            "python312.zip\n.\n../ComfyUI  # the app\nimport site  # site.main()\n",
        );
        assert_eq!(
            python_envs(&host, &given)[0].site_packages,
            [
                comfy.to_string(),
                site.to_string(),
                format!(r"{site}\extra")
            ]
        );
        // The .pth directories of Lib\site-packages come after everything the ._pth lists,
        // and a listed directory that is no site directory has its .pth files unread.
        file(r, "C/ComfyUI_windows_portable/ComfyUI/app.pth", "extra2\n");
        std::fs::create_dir_all(r.join("C/ComfyUI_windows_portable/ComfyUI/extra2")).unwrap();
        file(
            r,
            &format!("{e}/python312._pth"),
            "python312.zip\nLib/site-packages\n../ComfyUI\nimport site\n",
        );
        assert_eq!(
            python_envs(&host, &given)[0].site_packages,
            [
                site.to_string(),
                comfy.to_string(),
                format!(r"{site}\extra")
            ]
        );
    }

    #[test]
    fn venvs_and_conda_environments_are_python_envs_with_windows_paths() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("C/Windows/System32")).unwrap();
        // A venv over C:\Python312 that sees the base's packages too.
        file(r, "C/Users/Me/sd/venv/Scripts/python.exe", "MZ");
        file(
            r,
            "C/Users/Me/sd/venv/pyvenv.cfg",
            "home = C:\\Python312\ninclude-system-site-packages = true\nversion = 3.12.4\n",
        );
        let site = "C/Users/Me/sd/venv/Lib/site-packages";
        file(
            r,
            &format!("{site}/torch/version.py"),
            "__version__ = '2.5.1+cu124'\ncuda = '12.4'\n",
        );
        file(
            r,
            &format!("{site}/torch-2.5.1+cu124.dist-info/METADATA"),
            "Name: torch\n",
        );
        file(r, "C/Python312/python.exe", "MZ");
        file(r, "C/Python312/python312.dll", "MZ");
        file(
            r,
            "C/Python312/Lib/site-packages/xformers-0.0.28.dist-info/METADATA",
            "",
        );
        // A conda environment, active.
        file(r, "C/Users/Me/miniconda3/envs/ml/python.exe", "MZ");
        file(r, "C/Users/Me/miniconda3/envs/ml/python311.dll", "MZ");
        std::fs::create_dir_all(r.join("C/Users/Me/miniconda3/envs/ml/conda-meta")).unwrap();
        let env = BTreeMap::from([
            (
                "CONDA_PREFIX".to_string(),
                r"C:\Users\Me\miniconda3\envs\ml".to_string(),
            ),
            (
                "PATH".to_string(),
                r"C:\Python312;C:\Windows\System32".to_string(),
            ),
        ]);
        let host = Host::rooted(r.to_path_buf(), env, Duration::from_secs(1));
        let given = [r"c:\users\me\sd\VENV".to_string()];
        let envs = python_envs(&host, &given);
        let prefixes: Vec<&str> = envs.iter().map(|e| e.prefix.as_str()).collect();
        assert_eq!(
            prefixes,
            [
                r"C:\users\me\sd\VENV",
                r"C:\Users\Me\miniconda3\envs\ml",
                r"C:\Python312"
            ]
        );
        let venv = &envs[0];
        assert!(venv.windows);
        assert_eq!(venv.kind, PythonEnvKind::Venv);
        assert_eq!(venv.found_via, ["--python"]);
        assert_eq!(venv.python_version.as_deref(), Some("3.12.4"));
        assert_eq!(
            venv.site_packages,
            [
                r"C:\users\me\sd\VENV\Lib\site-packages",
                r"C:\Python312\Lib\site-packages"
            ]
        );
        let torch = venv.torch.as_ref().unwrap();
        assert_eq!(torch.version, "2.5.1+cu124");
        assert_eq!(torch.cuda.as_deref(), Some("12.4"));
        assert_eq!(torch.path, r"C:\users\me\sd\VENV\Lib\site-packages\torch");
        assert_eq!(
            torch.file("version.py"),
            format!(r"{}\version.py", torch.path)
        );
        assert!(venv.package("xformers").is_some());
        let conda = &envs[1];
        assert_eq!(conda.kind, PythonEnvKind::Conda);
        assert_eq!(conda.found_via, ["CONDA_PREFIX"]);
        assert_eq!(conda.python_version.as_deref(), Some("3.11"));
        assert_eq!(
            conda.installer.as_ref().map(|i| i.kind),
            Some(cudoctor_snapshot::Installer::Conda)
        );
        assert_eq!(envs[2].found_via, ["python.exe on PATH"]);
        assert_eq!(envs[2].python_version.as_deref(), Some("3.12"));
        // A --python that names nothing of this tree is refused with its reason.
        assert!(explicit_problem(&host, r"C:\Users\Me\sd\venv").is_none());
        assert!(explicit_problem(&host, r"C:\nowhere\python.exe")
            .unwrap()
            .contains("no python.exe there"));
    }

    #[test]
    fn toolkits_of_the_installer_layout_and_of_cuda_path_variables() {
        let dir = tempfile::tempdir().unwrap();
        let cuda = dir
            .path()
            .join("C/Program Files/NVIDIA GPU Computing Toolkit/CUDA");
        std::fs::create_dir_all(cuda.join("v12.8/bin")).unwrap();
        std::fs::write(cuda.join("v12.8/bin/nvcc.exe"), b"MZ").unwrap();
        std::fs::write(
            cuda.join("v12.8/version.json"),
            r#"{"cuda": {"name": "CUDA SDK", "version": "12.8.1"}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(cuda.join("v11.8")).unwrap();
        std::fs::create_dir_all(dir.path().join("C/Windows/System32")).unwrap();
        let env = BTreeMap::from([
            (
                "CUDA_PATH".to_string(),
                r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.8".to_string(),
            ),
            ("CUDA_PATH_V12_6".to_string(), r"D:\cuda\v12.6".to_string()),
        ]);
        let host = Host::rooted(dir.path().to_path_buf(), env, Duration::from_secs(1));
        let w = collect(&host, &[]).expect("a Windows tree");
        let t = &w.toolkits;
        assert_eq!(t.len(), 3, "{t:?}");
        assert!(
            t[0].path.as_str().ends_with(r"CUDA\v11.8") && t[0].version.is_none() && !t[0].nvcc
        );
        assert_eq!(t[1].version.as_deref(), Some("12.8.1"));
        assert!(t[1].nvcc);
        assert_eq!(t[1].named_by, vec!["CUDA_PATH".to_string()]);
        assert_eq!(t[2].path.as_str(), r"D:\cuda\v12.6");
        assert!(t[2].missing);
        assert_eq!(t[2].named_by, vec!["CUDA_PATH_V12_6".to_string()]);
        // Not a Windows tree: nothing.
        let other = tempfile::tempdir().unwrap();
        let host = Host::rooted(
            other.path().to_path_buf(),
            BTreeMap::new(),
            Duration::from_secs(1),
        );
        assert!(collect(&host, &[]).is_none());
    }

    #[test]
    fn the_python_a_wheel_installed_cudoctor_into_is_its_scripts_parent() {
        let got = |exe: &str| -> Vec<String> {
            installed_into(&WinPath::new(exe))
                .iter()
                .map(|p| p.to_string())
                .collect()
        };
        assert_eq!(
            got(r"D:\AI\ComfyUI_windows_portable\python_embeded\Scripts\cudoctor.exe"),
            vec![
                r"D:\AI\ComfyUI_windows_portable\python_embeded\python.exe".to_string(),
                r"D:\AI\ComfyUI_windows_portable\python_embeded\Scripts\python.exe".to_string(),
            ]
        );
        assert_eq!(
            got(r"C:\Users\me\venv\scripts\cudoctor.exe")[1],
            r"C:\Users\me\venv\scripts\python.exe"
        );
        assert!(got(r"C:\tools\cudoctor.exe").is_empty());
    }
}
