use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// GPU architectures carried by CUDA libraries (from their fat binaries).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelImages {
    /// What was scanned: `torch and CUDA extensions` (the default check) or `paths`.
    #[serde(default)]
    pub scope: String,
    #[serde(default)]
    pub libraries: Vec<LibraryImages>,
}

impl KernelImages {
    /// The scanned libtorch_cuda libraries of one torch install, in scan order.
    pub fn torch_cuda_libraries<'a>(
        &'a self,
        torch: &'a crate::TorchBuild,
    ) -> impl Iterator<Item = &'a LibraryImages> + 'a {
        self.libraries
            .iter()
            .filter(move |l| torch.owns(&l.path) && l.path.contains("libtorch_cuda"))
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LibraryImages {
    pub path: String,
    /// The Python distribution that owns it (`torch`, `flash-attn`...), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Machine-code architectures, e.g. `sm_90`, `sm_90a`.
    #[serde(default)]
    pub sass: Vec<String>,
    /// PTX architectures, e.g. `compute_90`.
    #[serde(default)]
    pub ptx: Vec<String>,
    /// PTX ISA version of each PTX architecture (`compute_90` -> `8.8`), where the header says.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ptx_isa: BTreeMap<String, String>,
    /// Architectures of LTO-IR images (`lto_90`): linked at build time, never run as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lto: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// An architecture-specific module (machine code only for `sm_90a`/`sm_100f`-like targets)
    /// that its package imports only conditionally, as its own Python source shows: a backend
    /// that is absent on other GPUs, not a broken install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_if: Option<ConditionalLoad>,
}

/// How a package's Python source imports one of its compiled modules only on some machines.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConditionalLoad {
    /// The module's dotted name: `vllm._flashmla_C`.
    pub module: String,
    pub how: LoadCondition,
    /// Where: `vllm/v1/attention/ops/flashmla.py:14` (relative to site-packages).
    pub at: String,
}

/// The shape of a conditional import in a package's Python source.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LoadCondition {
    /// Inside `try:` whose failure the package handles (`except ImportError`).
    #[default]
    TryImport,
    /// Inside `with contextlib.suppress(ImportError):`.
    SuppressedImport,
    /// Probed first: `importlib.util.find_spec("pkg.mod")`.
    FindSpec,
    /// Under an `if` (a capability or platform check).
    UnderCondition,
    /// Inside a function: imported when a feature that needs it is used.
    OnUse,
    /// At the top of a submodule that importing the package does not load (a backend's own
    /// module, reached only when that backend is chosen).
    BySubmodule,
    /// A plugin or a feature's library its package opens only when asked for (a file in a
    /// `plugins` directory, named `libplugin_*`: NIXL's GPUNetIO backend; NCCL's
    /// expert-parallel `libnccl_ep.so`).
    Plugin,
}

impl LoadCondition {
    pub fn describe(self) -> &'static str {
        match self {
            LoadCondition::TryImport => "imported inside try/except",
            LoadCondition::SuppressedImport => "imported under contextlib.suppress(ImportError)",
            LoadCondition::FindSpec => "probed with importlib.util.find_spec before use",
            LoadCondition::UnderCondition => {
                "imported under an if (a capability or platform check)"
            }
            LoadCondition::OnUse => "imported inside a function, when the feature is used",
            LoadCondition::BySubmodule => {
                "imported by a submodule that importing the package does not load"
            }
            LoadCondition::Plugin => {
                "a plugin or a feature's library, opened only when that feature is asked for"
            }
        }
    }
}

/// What the dynamic loader would resolve for the processes cudoctor emulates: for each Python
/// environment with torch, `import torch` followed by each CUDA extension.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LoaderFacts {
    #[serde(default)]
    pub processes: Vec<ProcessLinks>,
    /// Copies of CUDA libraries in /etc/ld.so.cache (the system-wide ones), by soname.
    #[serde(default)]
    pub cache_copies: Vec<CachedLibrary>,
    /// Problems met while emulating the loader.
    #[serde(default)]
    pub errors: Vec<String>,
    /// What the emulation could not model, said plainly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The libraries one framework build ships, loaded in a process of their own.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FrameworkLinks {
    pub framework: crate::Framework,
    pub version: String,
    /// Its distribution (`onnxruntime-gpu`).
    pub package: String,
    /// The environment's prefix.
    pub env_prefix: String,
    pub process: ProcessLinks,
}

/// One emulated process.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessLinks {
    /// The Python environment's prefix.
    pub env_prefix: String,
    /// Every object of the process in load order.
    #[serde(default)]
    pub objects: Vec<LibraryLinks>,
    /// Libraries LD_LIBRARY_PATH supplies in place of what would load without it.
    #[serde(default)]
    pub shadowed: Vec<ShadowedLibrary>,
    /// Directories the process loads generated code from at run time (Triton's kernel
    /// cache): a location, not predicted files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_dirs: Vec<RuntimeDir>,
}

/// A directory whose files a stage maps (compiled Triton kernels under torch.compile).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RuntimeDir {
    pub stage: LoadStage,
    pub path: String,
    /// What is loaded from it, and the setting that chose the directory.
    pub what: String,
}

/// A library's version and where it was read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileVersion {
    pub version: String,
    pub from: VersionSource,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum VersionSource {
    /// The real file name behind the soname (`libcudnn_graph.so.9.14.0`), as system packages
    /// and toolkits install them.
    #[default]
    FileName,
    /// The installed wheel whose RECORD lists the file (`nvidia-cudnn-cu13 9.19.0.56`).
    Wheel { name: String },
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LibraryLinks {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soname: Option<String>,
    /// The same file with links resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_path: Option<String>,
    /// The object whose DT_NEEDED brought this one in; absent for objects loaded directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_by: Option<String>,
    /// When in the life of the process this object is mapped.
    #[serde(default, skip_serializing_if = "LoadStage::is_import")]
    pub stage: LoadStage,
    /// For an object loaded by a dlopen() (not a DT_NEEDED): who opened it, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_by: Option<OpenedBy>,
    /// The library's own version, where the file says it (see [`FileVersion`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<FileVersion>,
    #[serde(default)]
    pub needed: Vec<LinkedLibrary>,
    /// Undefined symbols nothing in the process provides (only when `symbols_checked`).
    #[serde(default)]
    pub unresolved_symbols: Vec<String>,
    #[serde(default)]
    pub symbols_checked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the loader's reading of the object left out or could not read, each said once
    /// ("judged partially: 1000 DT_NEEDED entries; judged on the first 256").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl LibraryLinks {
    /// Whether a needed library that is missing is an optional one (torchaudio's libsox): the
    /// symbols it would provide are then unresolved too, and only that feature is unavailable.
    pub fn lacks_optional_library(&self) -> bool {
        self.needed
            .iter()
            .any(|n| n.via == cudoctor_types::Via::Missing && n.optional)
    }

    /// Whether loading it fails: a needed library that is no optional one is missing, or
    /// symbols are unresolved that no missing optional library accounts for.
    pub fn fails_to_load(&self) -> bool {
        self.fails_to_load_unless(&|_| false)
    }

    /// [`LibraryLinks::fails_to_load`], where the undefined symbols `provided_later` accepts
    /// are provided at run time (the driver's entry points, which libcuda brings when CUDA
    /// starts) and fail nothing.
    /// A library opened by name that another framework's import loads first
    /// ([`LinkedLibrary::after_import`]) fails nothing by itself: the program's import order
    /// decides, and check's FW023 says so as an info.
    pub fn fails_to_load_unless(&self, provided_later: &dyn Fn(&str) -> bool) -> bool {
        self.needed.iter().any(|n| {
            n.via == cudoctor_types::Via::Missing && !n.optional && n.after_import.is_none()
        }) || (self.unresolved_symbols.iter().any(|s| !provided_later(s))
            && !self.lacks_optional_library())
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LinkedLibrary {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_path: Option<String>,
    /// Which step of ld.so's search found it, or that none did.
    pub via: cudoctor_types::Via,
    /// An optional system library of the package (torchaudio's libsox): when missing, that
    /// feature is unavailable and nothing else breaks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Not a DT_NEEDED entry: the object's own code dlopen()s this name when its GPU use starts
    /// (CTranslate2's libcublas.so.12), searched from the object as the loader would.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_name: bool,
    /// Opened by name and found nowhere in this process alone, while another framework's
    /// import in the same environment loads a library of that soname: a process that runs that
    /// import first has it, and the dlopen() finds the loaded one (`via` stays missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_import: Option<AfterImport>,
}

/// The import that loads a library another object opens by name (torch's, which maps
/// `libcublas.so.12` that CTranslate2 opens), and the file it loads.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AfterImport {
    pub framework: crate::Framework,
    /// The file that import loads (machine path), as ld.so names it.
    pub path: String,
    /// Its real path (symlinks resolved), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_path: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ShadowedLibrary {
    pub object: String,
    pub name: String,
    pub from_ld_library_path: String,
    /// What would load without LD_LIBRARY_PATH; absent when nothing would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otherwise: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CachedLibrary {
    pub name: String,
    pub path: String,
}

/// When a library enters the process.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum LoadStage {
    /// `import torch` and the imports of its companions (torchvision, torchaudio) and of
    /// extensions that link torch.
    #[default]
    Import,
    /// `torch.cuda.init()` and the first CUDA tensor (NVML from the driver).
    CudaInit,
    /// The first convolution: cuDNN's graph, engine and heuristic libraries, the driver's PTX
    /// JIT compiler.
    FirstConvolution,
    /// The first `torch.compile`d function run (Triton and its kernel cache).
    Compile,
    /// Only when some other feature is first used (torchaudio's sox backend, cuDNN's legacy
    /// ops/cnn/adv APIs, ...): a missing one breaks that feature, not the import.
    OnDemand,
}

impl LoadStage {
    pub fn is_import(&self) -> bool {
        *self == LoadStage::Import
    }

    /// The stages in the order a workload reaches them.
    pub const ALL: [LoadStage; 5] = [
        LoadStage::Import,
        LoadStage::CudaInit,
        LoadStage::FirstConvolution,
        LoadStage::Compile,
        LoadStage::OnDemand,
    ];

    /// How the stage is named to users (and in `libs --format json`).
    pub fn as_str(self) -> &'static str {
        match self {
            LoadStage::Import => "import",
            LoadStage::CudaInit => "cuda_init",
            LoadStage::FirstConvolution => "first_convolution",
            LoadStage::Compile => "compile",
            LoadStage::OnDemand => "on_demand",
        }
    }

    /// What brings the stage about, in words.
    pub fn describe(self) -> &'static str {
        match self {
            LoadStage::Import => "import torch and its companions",
            LoadStage::CudaInit => "torch.cuda.init() and the first CUDA tensor",
            LoadStage::FirstConvolution => "the first convolution (cuDNN)",
            LoadStage::Compile => "the first torch.compile'd call",
            LoadStage::OnDemand => "when another feature is first used",
        }
    }
}

/// Who dlopen()s a library: the code path that decides which copy wins.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct OpenedBy {
    pub opener: Opener,
    /// The package or library whose code opens it (`torch`, `torchaudio`, `libcudnn.so.9`).
    pub by: String,
    /// Optional: the feature works without it (torchaudio's sox backend needs a system libsox).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Opened only when the work needs it (the driver's PTX JIT compiler, when a kernel has
    /// no machine code for the GPU): a stage may run without it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conditional: bool,
    /// torch's preload only: the nvidia wheel folder of `sys.path` it found the library in
    /// (`cufft` of `nvidia/cufft/lib`, `cu13` of `nvidia/cu13/lib`), which says which wheel
    /// layout, and so which CUDA major, the file came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvidia_folder: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Opener {
    /// The Python interpreter itself.
    Interpreter,
    /// `torch/__init__.py` loading `libtorch_global_deps.so` with RTLD_GLOBAL.
    TorchGlobalDeps,
    /// `torch/__init__.py` preloading an nvidia wheel's library by full path from sys.path.
    TorchPreload,
    /// An `import` of an extension module (`torch._C`, `torchvision._C`).
    #[default]
    PythonImport,
    /// A package's own loader opening its library by full path (`torch.ops.load_library`).
    PackageLoader,
    /// A library opening another by soname at run time (cuDNN's engines, nvrtc's builtins).
    LibraryDlopen,
}
