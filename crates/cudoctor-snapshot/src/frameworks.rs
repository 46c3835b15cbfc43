use serde::{Deserialize, Serialize};

/// The frameworks whose CUDA builds are read from their installed files.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    #[default]
    Torch,
    Jax,
    Cupy,
    Tensorflow,
    OnnxRuntime,
    Vllm,
    Sglang,
    Paddle,
    #[serde(rename = "tensorrt")]
    TensorRt,
    #[serde(rename = "ctranslate2")]
    CTranslate2,
    Rapids,
    LlamaCpp,
    NumbaCuda,
    Dali,
    TransformerEngine,
}

impl Framework {
    pub fn name(self) -> &'static str {
        match self {
            Framework::Torch => "torch",
            Framework::Jax => "JAX",
            Framework::Cupy => "CuPy",
            Framework::Tensorflow => "TensorFlow",
            Framework::OnnxRuntime => "ONNX Runtime",
            Framework::Vllm => "vLLM",
            Framework::Sglang => "SGLang",
            Framework::Paddle => "PaddlePaddle",
            Framework::TensorRt => "TensorRT",
            Framework::CTranslate2 => "CTranslate2",
            Framework::Rapids => "RAPIDS",
            Framework::LlamaCpp => "llama-cpp-python",
            Framework::NumbaCuda => "numba-cuda",
            Framework::Dali => "DALI",
            Framework::TransformerEngine => "Transformer Engine",
        }
    }
}

/// One framework build installed in an environment, read from its files (dist-info `METADATA`
/// and `RECORD`, version and build-info modules), never by importing it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameworkBuild {
    pub framework: Framework,
    /// The framework's release (`jax` 0.10.2, `cupy-cuda12x` 14.2.0), as installed.
    pub version: String,
    /// The distribution that carries the CUDA build: `torch`, `jax-cuda12-plugin`,
    /// `cupy-cuda12x`, `onnxruntime-gpu`, `tensorflow`, `vllm`.
    pub package: String,
    /// The site-packages directory it is installed in.
    pub location: String,
    /// The CUDA the build is bound to; absent for CPU builds and frameworks that use torch's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<CudaBinding>,
    /// The cuDNN its build info names (ONNX Runtime, TensorFlow), as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn: Option<String>,
    /// `Requires-Dist` lines of its distributions naming CUDA wheels (`nvidia-*`, `cuda-*`),
    /// as written (markers and extras included).
    #[serde(default)]
    pub needs: Vec<String>,
    /// Shared objects its CUDA distributions install (their `RECORD`s), machine paths.
    #[serde(default)]
    pub ships: Vec<String>,
    /// Pins its distributions' metadata puts on companion distributions.
    #[serde(default)]
    pub companions: Vec<CompanionPin>,
    /// Problems met while reading it.
    #[serde(default)]
    pub errors: Vec<String>,
    /// CUDA libraries its shipped objects need that the loader finds nowhere on its search
    /// path (driver libraries are the driver layer's); absent where the loader was not emulated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<UnresolvedNeed>,
}

/// A library a framework's shipped object needs and the loader does not find.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnresolvedNeed {
    /// The shipped object (machine path).
    pub needed_by: String,
    pub soname: String,
    /// Files of that name in the environment's nvidia wheels, which the framework may load by
    /// path itself (cuda-pathfinder, onnxruntime.preload_dlls); empty: nowhere here.
    #[serde(default)]
    pub in_env: Vec<String>,
    /// How the object asks for it: a DT_NEEDED entry, or a dlopen() by bare soname from its own
    /// code, which only the loader's search from that object finds (a wheel's copy is not found
    /// unless something loaded it first).
    #[serde(default, skip_serializing_if = "NeedKind::is_linked")]
    pub kind: NeedKind,
    /// Another framework's import in the environment loads a library of that soname (torch's
    /// `import torch` maps libcublas.so.12): a program that imports it first has the library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_import: Option<crate::AfterImport>,
}

/// How a shipped object asks for a library.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NeedKind {
    /// A DT_NEEDED entry of the object.
    #[default]
    Linked,
    /// `dlopen("libcublas.so.12")` from the object's own code (CTranslate2): found only on the
    /// object's RPATH/RUNPATH, LD_LIBRARY_PATH, the loader's cache and default directories, or
    /// as a library of that soname already in the process.
    OpenedByName,
}

impl NeedKind {
    pub fn is_linked(&self) -> bool {
        *self == NeedKind::Linked
    }
}

/// The CUDA a framework build targets, and the file that says so.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaBinding {
    pub major: u32,
    /// Absent where only the major is fixed (`cupy-cuda12x`: "12.x").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor: Option<u32>,
    /// The value as read: `13.0`, `12.x`, `cuda12`.
    pub read: String,
    /// Where it was read: `torch/version.py`, `distribution name jax-cuda12-plugin`.
    pub source: String,
}

impl CudaBinding {
    /// "13.0", or "12.x" when the minor is not fixed.
    pub fn label(&self) -> String {
        match self.minor {
            Some(m) => format!("{}.{m}", self.major),
            None => format!("{}.x", self.major),
        }
    }
}

/// One `Requires-Dist` pin of a framework's distribution on a companion distribution.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompanionPin {
    /// The distribution whose metadata states it ("jax 0.10.2").
    pub required_by: String,
    /// The requirement as written: `jaxlib<=0.10.2,>=0.10.2; extra == "cuda12"`.
    pub requirement: String,
    /// The companion's normalised name.
    pub name: String,
    /// The installed version of the companion, absent when it is not installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
}

/// What one installed CUDA-relevant distribution declares about the others, read from its
/// files: the `Requires-Dist` lines of its METADATA that name CUDA-relevant distributions, and
/// the torch release its compiled code was built against where the package records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredRequirements {
    /// The distribution's normalised name.
    pub package: String,
    pub version: String,
    /// `Requires-Dist` values as written (markers and extras included), only those naming
    /// CUDA-relevant distributions (torch and its companions, `nvidia-*`, `cuda-*`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// The torch release its build record names (xformers' `cpp_lib.json`, a `+pt2.5.1` label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_for_torch: Option<RecordedTorch>,
}

/// A torch release a package's own files say it was built against.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedTorch {
    /// As recorded: `2.7.1+cu126`, `2.5` (a `+pt25` label names only the minor).
    pub version: String,
    /// Where: `xformers/cpp_lib.json`, `version label 2.1.2+pt25cu124`.
    pub source: String,
}
