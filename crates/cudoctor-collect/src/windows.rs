//! A Windows machine: the live one of a Windows build, or a Windows tree under `--root`
//! (`<root>/C/Windows` stands for `C:\Windows`, docs/windows.md). Its Visual C++ runtime in
//! System32, PATH, its Python environments with torch (embedded Pythons as ComfyUI portable
//! ships them, venvs, conda environments, installed Pythons), and for each, what `import torch`
//! loads: the DLL search emulated by cudoctor-pe. Nothing is run; files are only read.

use std::collections::BTreeSet;

use cudoctor_pe::loader::LoaderEnv;
use cudoctor_pe::torch::{import_torch, PythonLayout, TorchImportInput};
use cudoctor_pe::winfs::{WinFs, WinPath};
use cudoctor_pe::{Machine, PeFile};
use cudoctor_snapshot::windows::{
    RuntimeDll, WindowsFacts, WindowsPythonKind, WindowsToolkit, WindowsTorchEnv,
};
use cudoctor_types::read_at::FileSource;

use crate::host::{split_windows_path_list, Host};

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
    if host.root() == std::path::Path::new("/") {
        return None;
    }
    let fs = WinFs::rooted(host.root());
    fs.is_dir(&WinPath::new(r"C:\Windows")).then_some(fs)
}

/// The facts of a Windows machine; `None` for any other.
pub fn collect(host: &Host, pythons: &[String]) -> Option<WindowsFacts> {
    let fs = windows_fs(host)?;
    let windows_dir = WinPath::new(host.var("SYSTEMROOT").unwrap_or(r"C:\Windows"));
    let path: Vec<WinPath> = split_windows_path_list(host.var("PATH").unwrap_or(""))
        .iter()
        .map(|p| WinPath::new(p))
        .collect();
    let system32 = windows_dir.join("System32");
    let vc_runtime = RUNTIME_DLLS
        .iter()
        .filter_map(|name| fs.file_in(&system32, name))
        .map(|p| RuntimeDll {
            version: file_version(&fs, &p),
            path: p,
        })
        .collect();
    let mut torch_envs = Vec::new();
    for python in candidates(&fs, pythons, &path) {
        if let Some(env) = torch_env(&fs, host, &python, &windows_dir, &path) {
            torch_envs.push(env);
        }
    }
    Some(WindowsFacts {
        windows_dir: Some(windows_dir),
        path,
        vc_runtime,
        torch_envs,
        toolkits: toolkits(&fs, host),
    })
}

/// The CUDA Toolkits the installer's layout and variables show: every `v*` directory under
/// `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA`, and each directory CUDA_PATH or a
/// CUDA_PATH_V<x>_<y> names (the installer sets both), in that order.
fn toolkits(fs: &WinFs, host: &Host) -> Vec<WindowsToolkit> {
    let program_files = WinPath::new(host.var("PROGRAMFILES").unwrap_or(r"C:\Program Files"));
    let base = program_files
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
        .filter(|(k, _)| k.as_str() == "CUDA_PATH" || k.starts_with("CUDA_PATH_V"))
        .map(|(k, v)| (k.clone(), WinPath::new(v)))
        .filter(|(_, v)| v.is_absolute())
        .collect();
    for (_, v) in &vars {
        if !dirs.iter().any(|d| d.same_as(v)) {
            dirs.push(v.clone());
        }
    }
    dirs.into_iter()
        .map(|dir| {
            let version = fs
                .host_path(&dir.join("version.json"))
                .and_then(|p| cudoctor_types::regular_file::read(&p, 1 << 20).ok())
                .and_then(|b| crate::toolkit::version_from_json(&String::from_utf8_lossy(&b)));
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

fn file_version(fs: &WinFs, path: &WinPath) -> Option<String> {
    let src = FileSource::open(&fs.host_path(path)?).ok()?;
    let v = PeFile::parse(src).ok()?.file_version().ok()??;
    Some(v.to_string())
}

/// Every python.exe worth looking at, in order: those given with `--python`, those on PATH,
/// embedded Pythons of portable layouts (`<dir>\python_embeded`, one level under `C:\` and
/// under each user's home, Desktop, Downloads and Documents), installed Pythons (`C:\Python3*`,
/// `%LOCALAPPDATA%\Programs\Python\Python3*`).
fn candidates(fs: &WinFs, given: &[String], path: &[WinPath]) -> Vec<WinPath> {
    let mut out: Vec<WinPath> = Vec::new();
    let mut push = |p: WinPath| {
        if fs.is_file(&p) && !out.iter().any(|o| o.same_as(&p)) {
            out.push(p);
        }
    };
    for g in given {
        let g = WinPath::new(g);
        if !g.is_absolute() {
            continue;
        }
        if g.file_name().to_ascii_lowercase().ends_with(".exe") {
            push(g);
        } else {
            push(g.join("python.exe"));
            push(g.join("Scripts").join("python.exe"));
        }
    }
    for dir in path {
        push(dir.join("python.exe"));
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
            push(programs.join(&py).join("python.exe"));
        }
    }
    for r in roots {
        for name in fs.list(&r) {
            push(r.join(&name).join("python_embeded").join("python.exe"));
        }
    }
    for name in fs.list(&c) {
        if name.to_ascii_lowercase().starts_with("python3") {
            push(c.join(&name).join("python.exe"));
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
) -> Option<WindowsTorchEnv> {
    let bin = python.parent()?;
    let (kind, prefix) = if bin.file_name().eq_ignore_ascii_case("Scripts")
        && bin
            .parent()
            .is_some_and(|p| fs.is_file(&p.join("pyvenv.cfg")))
    {
        (WindowsPythonKind::Venv, bin.parent()?)
    } else if fs.is_dir(&bin.join("conda-meta")) {
        (WindowsPythonKind::Conda, bin.clone())
    } else if fs.list(&bin).iter().any(|n| {
        let n = n.to_ascii_lowercase();
        n.starts_with("python3") && n.ends_with("._pth")
    }) {
        (WindowsPythonKind::Embedded, bin.clone())
    } else {
        (WindowsPythonKind::Installed, bin.clone())
    };
    let base = if kind == WindowsPythonKind::Venv {
        venv_home(fs, &prefix).unwrap_or_else(|| prefix.clone())
    } else {
        prefix.clone()
    };
    let site = prefix.join("Lib").join("site-packages");
    let torch_dir = site.join("torch");
    if !fs.is_dir(&torch_dir) {
        return None;
    }
    let build = fs
        .host_path(&torch_dir.join("version.py"))
        .and_then(|p| cudoctor_types::regular_file::read(&p, 1 << 20).ok())
        .and_then(|b| {
            crate::python::site::parse_torch_version_py(
                &String::from_utf8_lossy(&b),
                torch_dir.as_str(),
            )
        });
    let cuda = build.as_ref().and_then(|b| b.cuda.clone());
    let mut extensions = Vec::new();
    for package in fs.list(&site) {
        let dir = site.join(&package);
        if package.eq_ignore_ascii_case("torch") || !fs.is_dir(&dir) {
            continue;
        }
        // Extensions of torch that load through torch.ops.load_library (torchvision's,
        // torchaudio's): the .pyd files at the top of a torch* package.
        if !package.to_ascii_lowercase().starts_with("torch") {
            continue;
        }
        for name in fs.list(&dir) {
            if name.to_ascii_lowercase().ends_with(".pyd") {
                extensions.push((dir.clone(), dir.join(&name)));
            }
        }
    }
    let env = LoaderEnv {
        app_dir: bin.clone(),
        windows_dir: windows_dir.clone(),
        current_dir: None,
        path: path.to_vec(),
        known_dlls: BTreeSet::new(),
        machine: Machine::X64,
    };
    let input = TorchImportInput {
        python: PythonLayout {
            executable: python.clone(),
            exec_prefix: prefix.clone(),
            base_exec_prefix: base,
            userbase: host.var("APPDATA").map(|a| WinPath::new(a).join("Python")),
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

/// `home = C:\Python312` of a venv's pyvenv.cfg: the base interpreter's directory.
fn venv_home(fs: &WinFs, prefix: &WinPath) -> Option<WinPath> {
    let host = fs.host_path(&prefix.join("pyvenv.cfg"))?;
    let text = cudoctor_types::regular_file::read(&host, 1 << 16).ok()?;
    String::from_utf8_lossy(&text).lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "home").then(|| WinPath::new(v.trim()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

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
}
