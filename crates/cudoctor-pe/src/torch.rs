//! What `import torch` loads on Windows, step by step as torch's `__init__.py` does it
//! (`_load_dll_libraries`, read in torch 2.15.0; the same steps since torch 1.8 added
//! `os.add_dll_directory`), then the extension module `torch._C` and the extensions of other
//! packages (torchvision's `_C_stable.pyd`, loaded by `torch.ops.load_library`):
//!
//! 1. the DLL directories: `torch\lib`, `<exec_prefix>\Library\bin`, the base environment's
//!    `Library\bin` in a venv, `<userbase>\Library\bin`, `<exec_prefix>\bin` — those that
//!    exist; NvToolsExt's `bin\x64` unless one holds `nvToolsExt64_1.dll`; for a CUDA build,
//!    `%CUDA_PATH_V<major>_<minor>%\bin` (default `%ProgramFiles%\NVIDIA GPU Computing
//!    Toolkit\CUDA\v<version>\bin`) unless one holds a `cudart64*.dll`; each added with
//!    `os.add_dll_directory`;
//! 2. `ctypes.CDLL` of `vcruntime140.dll`, `msvcp140.dll`, `vcruntime140_1.dll`: if one fails,
//!    torch prints "Microsoft Visual C++ Redistributable is not installed" and goes on;
//! 3. every `torch\lib\*.dll`, in directory order, with `LoadLibraryExW(path, NULL, 0x1100)`
//!    (LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR); a failure other
//!    than 126 raises `OSError` ("Error loading ... or one of its dependencies"); on 126, PATH
//!    becomes the DLL directories then the old PATH and the DLL is loaded again with
//!    `LoadLibraryW`, the standard search, PATH included: a failure there raises;
//! 4. `torch\_C.*.pyd`, as Python loads extension modules (the flags of step 3).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::loader::{Found, LoadFailure, LoaderEnv, Process, SearchMode, ERROR_MOD_NOT_FOUND};
use crate::winfs::{WinFs, WinPath};

/// The Python that imports torch.
#[derive(Debug, Clone)]
pub struct PythonLayout {
    /// python.exe; its directory is the application directory.
    pub executable: WinPath,
    /// `sys.exec_prefix` (the venv, or the Python's own directory).
    pub exec_prefix: WinPath,
    /// `sys.base_exec_prefix` (the same unless a venv).
    pub base_exec_prefix: WinPath,
    /// `sysconfig.get_config_var("userbase")` (`%APPDATA%\Python`), when known.
    pub userbase: Option<WinPath>,
}

/// What to import.
#[derive(Debug, Clone)]
pub struct TorchImportInput {
    pub python: PythonLayout,
    /// The `torch` package directory.
    pub torch_dir: WinPath,
    /// `torch.version.cuda` (`"12.8"`), `None` for a CPU build.
    pub cuda_version: Option<String>,
    /// The process's variables (names upper-case): PATH, ProgramFiles, CUDA_PATH_V*,
    /// NVTOOLSEXT_PATH.
    pub env: BTreeMap<String, String>,
    /// Other packages' extension modules, each with the package directory it adds with
    /// `os.add_dll_directory` first (torchvision does).
    pub extensions: Vec<(WinPath, WinPath)>,
}

/// The Visual C++ runtime check of step 2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeCheck {
    pub dll: String,
    /// The file it loaded, `None` when it failed.
    pub loaded: Option<WinPath>,
}

/// What `import torch` did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TorchImport {
    /// Step 1's directories, as added.
    pub dll_dirs: Vec<WinPath>,
    /// Step 2, up to its first failure.
    pub runtime_checks: Vec<RuntimeCheck>,
    /// torch printed its "Visual C++ Redistributable is not installed" message.
    pub runtime_message: bool,
    /// PATH after torch's patch, when a DLL needed the fallback of step 3.
    pub patched_path: Option<Vec<WinPath>>,
    /// The DLL whose load raised, and why: `import torch` fails there.
    pub raised: Option<(WinPath, LoadFailure)>,
    /// Every load made, in order, and the modules they mapped.
    pub loads: Vec<crate::loader::Load>,
    pub modules: Vec<crate::loader::Module>,
}

impl TorchImport {
    /// `import torch` succeeded (the extensions may still have failed).
    pub fn imported(&self) -> bool {
        self.raised.is_none()
    }
}

/// Runs the steps over a process of `env`.
pub fn import_torch(fs: &WinFs, mut env: LoaderEnv, input: &TorchImportInput) -> TorchImport {
    let py = &input.python;
    let dll_paths = dll_directories(fs, input);
    env.app_dir = py
        .executable
        .parent()
        .unwrap_or_else(|| py.exec_prefix.clone());
    let original_path = env.path.clone();
    let mut process = Process::new(fs, env);
    // The interpreter's DLL (python3XY.dll beside python.exe) is loaded before any import.
    let app_dir = process.env.app_dir.clone();
    for name in fs.list(&app_dir) {
        let n = name.to_ascii_lowercase();
        if n.starts_with("python3") && n.ends_with(".dll") && n != "python3.dll" {
            process.assume_loaded(app_dir.join(&name), Found::AppDir);
        }
    }
    for d in &dll_paths {
        process.add_dll_directory(d.clone());
    }
    let (runtime_checks, runtime_message) = check_runtime(&mut process);
    let (patched_path, mut raised) =
        load_torch_lib(fs, &mut process, input, &dll_paths, &original_path);
    if raised.is_none() {
        raised = load_torch_c(fs, &mut process, input);
    }
    if raised.is_none() {
        for (package_dir, module) in &input.extensions {
            process.add_dll_directory(package_dir.clone());
            process.load_library(module.as_str(), TORCH_FLAGS);
        }
    }
    TorchImport {
        dll_dirs: dll_paths,
        runtime_checks,
        runtime_message,
        patched_path,
        raised,
        loads: process.loads,
        modules: process.modules,
    }
}

/// `LoadLibraryExW`'s flags in steps 3 and 4: LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
/// LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR.
const TORCH_FLAGS: SearchMode = SearchMode::Flags { dll_load_dir: true };

/// Step 1: the DLL directories torch adds, in order, those that exist.
fn dll_directories(fs: &WinFs, input: &TorchImportInput) -> Vec<WinPath> {
    let program_files = input
        .env
        .get("PROGRAMFILES")
        .map_or_else(|| WinPath::new(r"C:\Program Files"), |p| WinPath::new(p));
    let py = &input.python;
    let mut candidates = vec![
        input.torch_dir.join("lib"),
        py.exec_prefix.join("Library").join("bin"),
    ];
    if !py.exec_prefix.same_as(&py.base_exec_prefix) {
        candidates.push(py.base_exec_prefix.join("Library").join("bin"));
    }
    if let Some(ub) = &py.userbase {
        candidates.push(ub.join("Library").join("bin"));
    }
    candidates.push(py.exec_prefix.join("bin"));
    let mut dll_paths: Vec<WinPath> = candidates.into_iter().filter(|p| fs.is_dir(p)).collect();
    let holds = |dirs: &[WinPath], pred: &dyn Fn(&str) -> bool| {
        dirs.iter()
            .any(|d| fs.list(d).iter().any(|n| pred(&n.to_ascii_lowercase())))
    };
    let mut extra = Vec::new();
    if !holds(&dll_paths, &|n| n == "nvtoolsext64_1.dll") {
        let base = input.env.get("NVTOOLSEXT_PATH").map_or_else(
            || program_files.join("NVIDIA Corporation").join("NvToolsExt"),
            |p| WinPath::new(p),
        );
        extra.push(base.join("bin").join("x64"));
    }
    if let Some(cuda) = &input.cuda_version {
        if !holds(&dll_paths, &|n| {
            n.starts_with("cudart64") && n.ends_with(".dll")
        }) {
            let var = format!("CUDA_PATH_V{}", cuda.replace('.', "_"));
            let base = input.env.get(&var).map_or_else(
                || {
                    program_files
                        .join("NVIDIA GPU Computing Toolkit")
                        .join("CUDA")
                        .join(&format!("v{cuda}"))
                },
                |p| WinPath::new(p),
            );
            extra.push(base.join("bin"));
        }
    }
    dll_paths.extend(extra.into_iter().filter(|p| fs.is_dir(p)));
    dll_paths
}

/// Step 2: the Visual C++ runtime's DLLs through `ctypes.CDLL`, up to the first that fails
/// (then torch prints its message): the checks, and whether the message was printed.
fn check_runtime(process: &mut Process) -> (Vec<RuntimeCheck>, bool) {
    let ctypes = SearchMode::Flags {
        dll_load_dir: false,
    };
    let mut runtime_checks = Vec::new();
    for dll in ["vcruntime140.dll", "msvcp140.dll", "vcruntime140_1.dll"] {
        let i = process.load_library(dll, ctypes);
        let loaded = process.loads[i].module.clone();
        let failed = loaded.is_none();
        runtime_checks.push(RuntimeCheck {
            dll: dll.to_string(),
            loaded,
        });
        if failed {
            return (runtime_checks, true);
        }
    }
    (runtime_checks, false)
}

/// Step 3: every `torch\lib\*.dll`, again through PATH patched with the DLL directories on
/// error 126: PATH as patched (when it was), and the DLL whose load raised.
fn load_torch_lib(
    fs: &WinFs,
    process: &mut Process,
    input: &TorchImportInput,
    dll_paths: &[WinPath],
    original_path: &[WinPath],
) -> (Option<Vec<WinPath>>, Option<(WinPath, LoadFailure)>) {
    let th_dll_path = input.torch_dir.join("lib");
    let mut patched_path = None;
    for name in fs.list(&th_dll_path) {
        if !name.to_ascii_lowercase().ends_with(".dll") {
            continue;
        }
        let dll = th_dll_path.join(&name);
        let i = process.load_library(dll.as_str(), TORCH_FLAGS);
        match process.loads[i].win32_error() {
            None => continue,
            Some(e) if e != ERROR_MOD_NOT_FOUND => {
                let raised = process.loads[i].failures.first().map(|f| (dll, f.clone()));
                return (patched_path, raised);
            }
            Some(_) => {}
        }
        if patched_path.is_none() {
            let mut path = dll_paths.to_vec();
            path.extend(original_path.iter().cloned());
            process.env.path = path.clone();
            patched_path = Some(path);
        }
        let j = process.load_library(dll.as_str(), SearchMode::Standard);
        if let Some(f) = process.loads[j].failures.first() {
            return (patched_path, Some((dll, f.clone())));
        }
    }
    (patched_path, None)
}

/// Step 4: `torch\_C.*.pyd`; the failure of its load, if any.
fn load_torch_c(
    fs: &WinFs,
    process: &mut Process,
    input: &TorchImportInput,
) -> Option<(WinPath, LoadFailure)> {
    let c_ext = fs.list(&input.torch_dir).into_iter().find(|n| {
        let n = n.to_ascii_lowercase();
        n.starts_with("_c.") && n.ends_with(".pyd")
    })?;
    let pyd = input.torch_dir.join(&c_ext);
    let i = process.load_library(pyd.as_str(), TORCH_FLAGS);
    let failure = process.loads[i].failures.first()?.clone();
    Some((pyd, failure))
}
