//! A Windows machine's facts: the Visual C++ runtime in System32, PATH, and for each Python
//! environment with torch, what `import torch` loads there (the DLL search emulated by
//! cudoctor-pe, whose typed results these are).

use serde::{Deserialize, Serialize};

pub use cudoctor_pe::loader::{Found, Load, LoadFailure, Module, SearchMode};
pub use cudoctor_pe::torch::{RuntimeCheck, TorchImport};
pub use cudoctor_pe::winfs::WinPath;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowsFacts {
    /// `%SystemRoot%` (`C:\Windows`).
    pub windows_dir: Option<WinPath>,
    /// PATH's directories, in order.
    #[serde(default)]
    pub path: Vec<WinPath>,
    /// The Visual C++ runtime's DLLs found in System32, with their file versions.
    #[serde(default)]
    pub vc_runtime: Vec<RuntimeDll>,
    #[serde(default)]
    pub torch_envs: Vec<WindowsTorchEnv>,
    /// CUDA Toolkits: under `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v*` and those
    /// CUDA_PATH / CUDA_PATH_V<x>_<y> / CUDA_HOME name.
    #[serde(default)]
    pub toolkits: Vec<WindowsToolkit>,
    /// The KnownDLLs (lower-case file names) of the live machine's registry, which the DLL
    /// search takes from System32 first; absent where the registry is not read (a tree's hives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_dlls: Option<Vec<String>>,
}

/// One CUDA Toolkit of a Windows machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowsToolkit {
    pub path: WinPath,
    /// From its version.json, when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `bin\nvcc.exe` is there.
    pub nvcc: bool,
    /// The variables that name it (`CUDA_PATH`, `CUDA_PATH_V12_8`, `CUDA_HOME`).
    #[serde(default)]
    pub named_by: Vec<String>,
    /// A variable names it but the directory does not exist.
    #[serde(default)]
    pub missing: bool,
}

/// One DLL of the Visual C++ runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeDll {
    pub path: WinPath,
    /// Its version resource's file version (`14.51.36247.0`), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// How a Python was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowsPythonKind {
    /// An embeddable Python (a `python3XY._pth` beside python.exe, as ComfyUI portable ships).
    Embedded,
    /// A venv (`pyvenv.cfg` above `Scripts\python.exe`).
    Venv,
    /// A conda environment (`conda-meta`).
    Conda,
    /// An installed Python.
    Installed,
}

/// A Python environment that has torch, and what importing it loads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WindowsTorchEnv {
    pub python: WinPath,
    pub kind: WindowsPythonKind,
    pub torch_dir: WinPath,
    /// torch/version.py's `__version__` and `cuda`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    pub import: TorchImport,
}

impl PartialEq for WindowsTorchEnv {
    fn eq(&self, other: &Self) -> bool {
        self.python == other.python && self.torch_dir == other.torch_dir
    }
}
