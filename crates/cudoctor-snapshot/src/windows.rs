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
    /// MSVC, the C++ compiler of every extension build on Windows: `cl.exe` on PATH and the
    /// Visual Studio installations the installer records; absent in older snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msvc: Option<MsvcFacts>,
}

/// Where an extension build finds MSVC's `cl.exe`. torch's `cpp_extension` and setuptools'
/// `build_ext` do not need it on PATH: they run the `vcvarsall.bat` of the newest installation
/// that vswhere reports with the C++ tools (`Microsoft.VisualStudio.Component.VC.Tools.x86.x64`),
/// unless the environment is already set up (`VSCMD_ARG_TGT_ARCH`, `DISTUTILS_USE_SDK`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsvcFacts {
    /// The first PATH directory's `cl.exe` (a Native Tools prompt, vcvars64.bat run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cl_on_path: Option<WinPath>,
    /// `%ProgramFiles(x86)%\Microsoft Visual Studio\Installer\vswhere.exe`, when there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vswhere: Option<WinPath>,
    /// The installations, from the installer's state files
    /// (`%ProgramData%\Microsoft\VisualStudio\Packages\_Instances\<id>\state.json`).
    #[serde(default)]
    pub installations: Vec<VisualStudio>,
}

/// One Visual Studio (or Build Tools) installation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisualStudio {
    /// The installer's state file it was read from.
    pub state_file: WinPath,
    /// `installationPath`.
    pub path: WinPath,
    /// `product.id` (`Microsoft.VisualStudio.Product.BuildTools`, `...Community`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    /// `catalogInfo.productLineVersion` (`2022`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    /// `installationVersion` (`17.14.36310.24`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `VC\Tools\MSVC\<version>\bin\Hostx64\x64\cl.exe` of each MSVC toolset installed.
    #[serde(default)]
    pub cl_x64: Vec<WinPath>,
    /// `VC\Auxiliary\Build\vcvarsall.bat`, what setuptools and torch run to set up a build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcvarsall: Option<WinPath>,
}

impl VisualStudio {
    /// Whether an extension build can use it: the C++ tools for x64 and the script that
    /// sets them up.
    pub fn has_cpp(&self) -> bool {
        !self.cl_x64.is_empty() && self.vcvarsall.is_some()
    }
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
