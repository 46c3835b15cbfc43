//! Facts from the runtime probes (`cudoctor check --deep`): a script run in each target Python
//! interpreter as a child process, which imports torch and measures what really runs.
//!
//! [`ProbeResult`] is the probe script's own JSON, typed: every field is optional so a probe of
//! an older torch (or one that stopped half-way) still loads. [`ProbeRun`] wraps it with how the
//! child process ended, so a crash on `import torch` or a hang is a fact, not a lost report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Every runtime probe that ran, one per Python environment.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeepFacts {
    #[serde(default)]
    pub runs: Vec<ProbeRun>,
    /// The frameworks other than torch, each probed in its own process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frameworks: Vec<FrameworkProbe>,
    /// Seconds from the first probe's start to the last one's end: every probe process (torch,
    /// its compile test, each framework) runs at once, so this is about the slowest one, not the
    /// sum of `elapsed_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
}

/// One framework other than torch (JAX, CuPy, ONNX Runtime, TensorFlow) probed in its own
/// child process: imported, asked for its devices, one tiny computation checked.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FrameworkProbe {
    pub framework: crate::Framework,
    /// The distribution whose build was probed (`jax-cuda13-plugin`, `cupy-cuda12x`).
    pub package: String,
    pub interpreter: String,
    pub env_prefix: String,
    pub ending: ProbeEnding,
    /// The probe stage running when it stopped (`import jax`, `jax computation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_stage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    /// The end of the child's stderr when it did not report (a fault handler's stack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<FrameworkProbeResult>,
}

/// How a probe's child process ended: a framework's probe, the rendezvous check.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ProbeEnding {
    /// It reported (whatever the report says).
    Reported,
    /// Killed by a signal (11: SIGSEGV, 6: SIGABRT) or exited non-zero without a report.
    Crashed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    /// Outlived its time and was killed.
    TimedOut { after_s: f64 },
    /// The interpreter could not be started.
    NotStarted { error: String },
    /// The interpreter belongs to the inspected root (`--root`): never run.
    NotRunUnderRoot,
    /// It exited without a report that could be read.
    #[default]
    BadOutput,
}

impl ProbeEnding {
    /// How it ended, in a few words (`timed out after 12 s`), for evidence lines.
    pub fn describe(&self) -> String {
        match self {
            ProbeEnding::Reported => "reported".into(),
            ProbeEnding::Crashed {
                signal: Some(s), ..
            } => format!("killed by signal {s} ({})", signal_name(*s)),
            ProbeEnding::Crashed {
                exit_code: Some(c), ..
            } => format!("exited with status {c} without a report"),
            ProbeEnding::Crashed { .. } => "died without a report".into(),
            ProbeEnding::TimedOut { after_s } => format!("timed out after {after_s:.0} s"),
            ProbeEnding::NotStarted { error } => format!("not started: {error}"),
            ProbeEnding::NotRunUnderRoot => "not run (an interpreter of the inspected root)".into(),
            ProbeEnding::BadOutput => "no report printed".into(),
        }
    }
}

/// What stopped a framework's probe, by the class of the exception it raised.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FrameworkError {
    /// `ModuleNotFoundError`: a module the framework imports is not installed.
    ModuleNotFound,
    /// Any other exception (an ImportError of a library, the framework's own RuntimeError).
    Raised,
}

impl FrameworkError {
    /// The kind of an error as the probe words it (`ModuleNotFoundError: No module named …`):
    /// for snapshots saved before the probe named the kind itself.
    pub fn of_text(error: &str) -> FrameworkError {
        if error.starts_with("ModuleNotFoundError") {
            FrameworkError::ModuleNotFound
        } else {
            FrameworkError::Raised
        }
    }
}

/// The framework probe's report, as the script writes it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct FrameworkProbeResult {
    /// The framework's own version string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Where it computes: `cuda`/`gpu` (JAX's and Paddle's names), `cpu`, `none` (CuPy without
    /// a device), or `unknown` (a GPU build whose devices cannot be asked without a model:
    /// llama-cpp-python).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// GPU names as the framework reports them.
    pub devices: Vec<String>,
    /// The CUDA runtime it reports (CuPy's runtimeGetVersion, TensorFlow's build info).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The framework's own words for why it has no GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_error: Option<String>,
    /// The tiny computation on its default device: right or not, and its time (second call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computation_ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computation_ms: Option<f64>,
    /// Why no computation was run, and what stood for it (DALI's device count, TensorRT's
    /// builder, llama-cpp-python's offload support without a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computation_skipped: Option<String>,
    /// Its warnings and log records (warning and above), first lines.
    pub messages: Vec<String>,
    /// ONNX Runtime: the providers the build offers, and those a session asking for CUDA got.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub providers_available: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub providers_used: Vec<String>,
    /// An exception that stopped the probe (the import, or the framework's own error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The kind of that exception.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<FrameworkError>,
    /// That exception, when it is one installed distribution's code asking another's module
    /// for a name the installed release does not have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_gap: Option<ApiGap>,
}

/// A name one distribution's code asked of another distribution's module that the installed
/// release does not have (`AttributeError: module 'numpy' has no attribute 'row_stack'`,
/// `ImportError: cannot import name 'X' from 'M'`): read by the probe from the exception and its
/// traceback, the owners from the environment's own metadata (`packages_distributions`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ApiGap {
    /// The name asked for: `row_stack`.
    pub missing: String,
    /// The module asked: `numpy`.
    pub module: String,
    /// The distributions that install the module's top-level package (normally one).
    pub module_distributions: Vec<String>,
    /// `file:line` of the innermost frame outside the module's own package: the code that asked.
    pub raised_in: String,
    /// The distributions that install that file's top-level package.
    pub raised_in_distributions: Vec<String>,
}

impl FrameworkProbeResult {
    /// It computes on a GPU: a GPU platform with a device (or ONNX Runtime's CUDA provider in
    /// use).
    pub fn uses_gpu(&self) -> bool {
        matches!(self.platform.as_deref(), Some("cuda" | "gpu"))
            && (!self.devices.is_empty()
                || self
                    .providers_used
                    .iter()
                    .any(|p| p == "CUDAExecutionProvider"))
    }
}

impl DeepFacts {
    /// The run for the environment with this prefix.
    pub fn run_for(&self, env_prefix: &str) -> Option<&ProbeRun> {
        self.runs
            .iter()
            .find(|r| r.env_prefix.as_deref() == Some(env_prefix))
    }

    /// Results of runs that produced any, with their run.
    pub fn results(&self) -> impl Iterator<Item = (&ProbeRun, &ProbeResult)> {
        self.runs
            .iter()
            .filter_map(|r| r.result.as_ref().map(|res| (r, res)))
    }
}

/// One execution of the probe script in one interpreter.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProbeRun {
    /// The interpreter run (`/opt/venv/bin/python`).
    pub interpreter: String,
    /// The environment it belongs to, as in `python_envs[].prefix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_prefix: Option<String>,
    pub status: ProbeStatus,
    /// A sentence on how it ended. For [`ProbeStatus::ImportFailed`] this is the exception text
    /// itself (`ImportError: libcudnn.so.9: cannot open shared object file`), kept whole so the
    /// explain engine can match it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The probe stage running when it stopped (`import torch`, `sdpa`, `all-reduce`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_stage: Option<ProbeStage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it (11 for SIGSEGV, 6 for SIGABRT...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    /// Seconds of the compile test's own process, run beside this one (`result.compile` is its
    /// answer); absent when the test was skipped or ran inside this process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_elapsed_s: Option<f64>,
    /// The end of the child's stderr, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// What the probe reported; partial when it stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ProbeResult>,
}

impl ProbeRun {
    /// The interpreter to name in fix commands: the environment's `bin/python`, else the one run.
    pub fn python_command(&self) -> String {
        self.env_prefix
            .as_deref()
            .map(|e| format!("{e}/bin/python"))
            .unwrap_or_else(|| self.interpreter.clone())
    }
}

/// A stage of the torch probe, as its script names it (`import torch`, `all-reduce`); a name
/// this cudoctor does not know is kept as it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ProbeStage {
    Python,
    ImportTorch,
    Settings,
    Cuda,
    Devices,
    Sdpa,
    Extensions,
    AllReduce,
    Compile,
    Other(String),
}

impl ProbeStage {
    const NAMED: [(ProbeStage, &'static str); 9] = [
        (ProbeStage::Python, "python"),
        (ProbeStage::ImportTorch, "import torch"),
        (ProbeStage::Settings, "settings"),
        (ProbeStage::Cuda, "cuda"),
        (ProbeStage::Devices, "devices"),
        (ProbeStage::Sdpa, "sdpa"),
        (ProbeStage::Extensions, "extensions"),
        (ProbeStage::AllReduce, "all-reduce"),
        (ProbeStage::Compile, "compile"),
    ];

    /// The stage's name in the probe script.
    pub fn name(&self) -> &str {
        match self {
            ProbeStage::Other(name) => name,
            known => Self::NAMED
                .iter()
                .find(|(s, _)| s == known)
                .map_or("", |(_, n)| n),
        }
    }
}

impl From<String> for ProbeStage {
    fn from(name: String) -> ProbeStage {
        Self::NAMED
            .iter()
            .find(|(_, n)| *n == name)
            .map_or(ProbeStage::Other(name), |(s, _)| s.clone())
    }
}

impl From<ProbeStage> for String {
    fn from(stage: ProbeStage) -> String {
        stage.name().to_string()
    }
}

impl std::fmt::Display for ProbeStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a probe run ended.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProbeStatus {
    /// The probe finished and reported.
    Ok,
    /// The interpreter has no torch (`ModuleNotFoundError: No module named 'torch'`).
    NoTorch,
    /// `import torch` raised (ImportError, OSError): the text is in `detail`.
    ImportFailed,
    /// The child died: a signal, or an exit without a final report.
    Crashed,
    /// The child outlived its time and was killed; `last_stage` says where it hung.
    TimedOut,
    /// The interpreter could not be started.
    NotStarted,
    /// The interpreter belongs to the inspected root (`--root`): never run.
    NotRunUnderRoot,
    /// The child exited but printed no report that could be read.
    #[default]
    BadOutput,
}

impl ProbeStatus {
    pub fn name(self) -> &'static str {
        match self {
            ProbeStatus::Ok => "ok",
            ProbeStatus::NoTorch => "no torch",
            ProbeStatus::ImportFailed => "import failed",
            ProbeStatus::Crashed => "crashed",
            ProbeStatus::TimedOut => "timed out",
            ProbeStatus::NotStarted => "not started",
            ProbeStatus::NotRunUnderRoot => "not run (interpreter of the inspected root)",
            ProbeStatus::BadOutput => "unreadable output",
        }
    }
}

/// The probe script's report (its JSON, typed).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProbeResult {
    /// Version of the probe's output format.
    #[serde(default)]
    pub probe_version: u32,
    /// True when the probe reached its end; false for the last partial report of a run that
    /// stopped early.
    #[serde(default)]
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<TorchInfo>,
    /// Why `import torch` failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_import_error: Option<RaisedError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<CudaRuntime>,
    /// Per visible device: init, a small matmul, bf16.
    #[serde(default)]
    pub devices: Vec<DeviceProbe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<MathSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdpa: Option<SdpaProbe>,
    /// flash_attn, xformers: import and one call, when installed.
    #[serde(default)]
    pub extensions: Vec<ExtensionProbe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<CompileProbe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_reduce: Option<AllReduceProbe>,
    /// Each stage with its duration, or why it was skipped.
    #[serde(default)]
    pub stages: Vec<StageTime>,
    /// Unexpected exceptions of stages, `stage: text`.
    #[serde(default)]
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PythonInfo {
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// torch as it describes itself once imported.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TorchInfo {
    pub version: String,
    /// `torch.version.cuda`; absent for CPU and ROCm builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hip: Option<String>,
    /// `torch.backends.cudnn.version()`, e.g. 91900.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn: Option<u64>,
    /// `torch.cuda.nccl.version()` joined with dots, e.g. `2.28.9`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl: Option<String>,
    /// `torch.cuda.get_arch_list()`.
    #[serde(default)]
    pub arch_list: Vec<String>,
    /// `torch.__file__`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Seconds `import torch` took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_s: Option<f64>,
}

/// An exception as the probe caught it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RaisedError {
    /// The exception class, e.g. `ImportError`, `OSError`, `ModuleNotFoundError`.
    pub kind: String,
    pub message: String,
    /// The last lines of the traceback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}

impl RaisedError {
    /// `ImportError: message`, the way Python prints it.
    pub fn text(&self) -> String {
        format!("{}: {}", self.kind, self.message)
    }
}

/// `torch.cuda` at run time.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CudaRuntime {
    /// `torch.cuda.is_available()`.
    pub available: bool,
    /// `torch.cuda.device_count()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_count: Option<u32>,
    /// Why CUDA is unavailable, in torch's own words (its warnings, or the error of a forced
    /// initialisation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Warnings torch raised while answering.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// CUDA_VISIBLE_DEVICES as the probe saw it (absent when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visible_devices: Option<String>,
}

/// One visible device: initialised, a small matmul run and checked.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceProbe {
    /// torch's device index (after CUDA_VISIBLE_DEVICES).
    pub index: u32,
    #[serde(default)]
    pub name: String,
    /// `major.minor`, e.g. `9.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_mib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_mib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bf16_supported: Option<bool>,
    /// Median time of a 1024x1024 fp32 matmul.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matmul_ms: Option<f64>,
    /// Whether the matmul gave the known answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matmul_ok: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Math-precision and backend switches as the process starts with them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MathSettings {
    /// `torch.backends.cuda.matmul.allow_tf32`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matmul_allow_tf32: Option<bool>,
    /// `torch.backends.cudnn.allow_tf32`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_allow_tf32: Option<bool>,
    /// `torch.get_float32_matmul_precision()`: `highest`, `high`, `medium`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub float32_matmul_precision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_available: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flash_sdp_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_efficient_sdp_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_sdp_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub math_sdp_enabled: Option<bool>,
}

/// The attention backends of `scaled_dot_product_attention`, as torch names them in
/// `torch.nn.attention.SDPBackend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SdpaBackend {
    FlashAttention,
    EfficientAttention,
    CudnnAttention,
    Math,
    /// A name this version of cudoctor does not know.
    #[serde(other)]
    Unknown,
}

impl SdpaBackend {
    pub const FUSED: [SdpaBackend; 3] = [
        SdpaBackend::FlashAttention,
        SdpaBackend::EfficientAttention,
        SdpaBackend::CudnnAttention,
    ];

    /// Short name for reports: `flash`, `mem-efficient`, `cuDNN`, `math`.
    pub fn short(self) -> &'static str {
        match self {
            SdpaBackend::FlashAttention => "flash",
            SdpaBackend::EfficientAttention => "mem-efficient",
            SdpaBackend::CudnnAttention => "cuDNN",
            SdpaBackend::Math => "math",
            SdpaBackend::Unknown => "unknown",
        }
    }

    /// torch's switch for this backend, e.g. `torch.backends.cuda.enable_flash_sdp`.
    pub fn torch_switch(self) -> Option<&'static str> {
        match self {
            SdpaBackend::FlashAttention => Some("torch.backends.cuda.enable_flash_sdp"),
            SdpaBackend::EfficientAttention => Some("torch.backends.cuda.enable_mem_efficient_sdp"),
            SdpaBackend::CudnnAttention => Some("torch.backends.cuda.enable_cudnn_sdp"),
            SdpaBackend::Math => Some("torch.backends.cuda.enable_math_sdp"),
            SdpaBackend::Unknown => None,
        }
    }

    pub fn is_fused(self) -> bool {
        Self::FUSED.contains(&self)
    }
}

/// scaled_dot_product_attention measured per backend and under the default dispatch.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SdpaProbe {
    /// torch device index the measurements ran on.
    #[serde(default)]
    pub device: u32,
    /// `bfloat16` (or `float16` where bf16 is unsupported).
    #[serde(default)]
    pub dtype: String,
    #[serde(default)]
    pub batch: u32,
    #[serde(default)]
    pub heads: u32,
    #[serde(default)]
    pub head_dim: u32,
    #[serde(default)]
    pub causal: bool,
    /// True when the probe was told to switch off the fused backends before measuring the default
    /// dispatch (a test of the rules, never a user setting).
    #[serde(default)]
    pub forced_fallback: bool,
    /// Each backend forced in turn with `sdpa_kernel`.
    #[serde(default)]
    pub backends: Vec<SdpaBackendProbe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<SdpaDefault>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SdpaProbe {
    pub fn backend(&self, b: SdpaBackend) -> Option<&SdpaBackendProbe> {
        self.backends.iter().find(|p| p.backend == b)
    }

    /// Fused backends that ran on this GPU and dtype.
    pub fn working_fused(&self) -> Vec<&SdpaBackendProbe> {
        self.backends
            .iter()
            .filter(|b| b.backend.is_fused() && b.available)
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SdpaBackendProbe {
    pub backend: SdpaBackend,
    /// Whether a call with only this backend allowed ran.
    pub available: bool,
    /// Why not: torch's warnings and error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub runs: Vec<SdpaRun>,
}

/// One measurement at one sequence length.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SdpaRun {
    pub seq_len: u32,
    /// Median milliseconds per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// Memory the call added at its peak (torch.cuda.max_memory_allocated after a reset, less
    /// what was allocated before), MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_mib: Option<f64>,
    /// Why it was not measured (e.g. it would need more than 40% of free memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the default dispatch did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SdpaDefault {
    /// The backend the profiler showed running; absent when it could not tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picked: Option<SdpaBackend>,
    #[serde(default)]
    pub runs: Vec<SdpaRun>,
    /// GPU kernel names the profiler recorded for one default call.
    #[serde(default)]
    pub kernels: Vec<String>,
    /// aten operator names recorded for the same call.
    #[serde(default)]
    pub ops: Vec<String>,
    /// torch's warnings during the default call (reasons fused kernels were not used).
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl SdpaDefault {
    pub fn run_at(&self, seq_len: u32) -> Option<&SdpaRun> {
        self.runs.iter().find(|r| r.seq_len == seq_len)
    }
}

impl SdpaBackendProbe {
    pub fn run_at(&self, seq_len: u32) -> Option<&SdpaRun> {
        self.runs.iter().find(|r| r.seq_len == seq_len)
    }
}

/// An attention extension (flash_attn, xformers): import and one call.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ExtensionProbe {
    /// The import name: `flash_attn`, `xformers`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub imported: bool,
    /// Whether one attention call ran (absent when not tried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_ok: Option<bool>,
    /// The import's or the call's error, in Python's words (evidence; rules read `failure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What kind of failure the error is, read from its words when the probe's output is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ExtensionFailure>,
}

/// Why an extension could not be imported or run.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExtensionFailure {
    /// The dynamic loader found an undefined symbol: the compiled extension was built against
    /// another torch (its C++ ABI does not match this one).
    UndefinedSymbol,
    /// Any other error.
    Error,
}

impl ExtensionFailure {
    /// The kind of an import or call error, from its words (the loader's "undefined symbol").
    pub fn of_error(text: &str) -> ExtensionFailure {
        if text.contains("undefined symbol") {
            ExtensionFailure::UndefinedSymbol
        } else {
            ExtensionFailure::Error
        }
    }
}

/// torch.compile: did inductor generate and run a Triton kernel?
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CompileProbe {
    /// True when a kernel was generated, ran, and gave the eager answer.
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triton_version: Option<String>,
    /// `torch._inductor.metrics.generated_kernel_count` after the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernels_generated: Option<u32>,
    /// Distinct `triton_*` kernels the profiler saw run during a compiled call: the proof that
    /// inductor's code, not eager torch, ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triton_kernels_ran: Option<u32>,
    /// Their names (a few).
    #[serde(default)]
    pub triton_kernels: Vec<String>,
    /// Whether the compiled function matched eager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// Seconds of the first (compiling) call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_s: Option<f64>,
    /// Why it fell back or failed: the exception text, or what the counters showed (evidence;
    /// rules read `fallback_causes` and `disabled_by`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    /// What the fallback comes from: said by the probe (triton's import), or read from the
    /// compiler's words when the probe's output is read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_causes: Vec<CompileFallbackCause>,
    /// The variables that switch compilation off (TORCH_COMPILE_DISABLE, TORCHDYNAMO_DISABLE,
    /// TORCHDYNAMO_SUPPRESS_ERRORS) that were set when no Triton kernel ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_by: Vec<String>,
    #[serde(default)]
    pub graph_breaks: Vec<String>,
    /// Why the test did not run (no GPU, no time left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// What the test leaves out to stay small (backward graphs, autotuning, CUDA graphs...): a
    /// Triton kernel that runs here does not prove these work.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_tested: Vec<String>,
}

/// What a torch.compile fallback comes from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum CompileFallbackCause {
    /// No `triton` module in the environment.
    TritonMissing,
    /// `triton` is there but cannot be imported or used.
    TritonBroken,
    /// Triton found no C compiler for its launcher (gcc, cc1).
    NoCCompiler,
    /// ptxas (Triton's or a toolkit's) failed or is missing.
    Ptxas,
}

impl CompileFallbackCause {
    /// The causes an error of the compile stack names, from its words: Python's "No module
    /// named 'triton'", Triton's "Failed to find C compiler" / gcc / cc1, and ptxas.
    pub fn of_error(text: &str) -> Vec<CompileFallbackCause> {
        let lower = text.to_ascii_lowercase();
        let mut causes = Vec::new();
        if lower.contains("no module named 'triton'") {
            causes.push(CompileFallbackCause::TritonMissing);
        }
        if ["c compiler", "gcc", "cc1"]
            .iter()
            .any(|w| lower.contains(w))
        {
            causes.push(CompileFallbackCause::NoCCompiler);
        }
        if lower.contains("ptxas") {
            causes.push(CompileFallbackCause::Ptxas);
        }
        causes
    }
}

/// The environment variables that switch torch.compile off or hide its errors.
pub const COMPILE_SWITCHES: [&str; 3] = [
    "TORCH_COMPILE_DISABLE",
    "TORCHDYNAMO_DISABLE",
    "TORCHDYNAMO_SUPPRESS_ERRORS",
];

/// An NCCL all-reduce across every visible GPU, one process per GPU.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AllReduceProbe {
    /// Number of processes (GPUs).
    pub world: u32,
    /// The NCCL version the workers' torch reported, e.g. `2.28.9`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    #[serde(default)]
    pub results: Vec<AllReduceRun>,
    /// The first error, in NCCL's or the probe's words (evidence; rules read [`Self::failure`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<AllReduceFailure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// NCCL_* variables the workers ran with.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// How an all-reduce failed. The probe says `hang` and `wrong_sum` itself; an error raised by
/// NCCL is told apart by its text when the probe's output is read ([`Self::of_nccl_error`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AllReduceFailure {
    /// The workers did not finish in the time limit and were stopped.
    Hang,
    /// It finished with a wrong sum.
    WrongSum,
    /// NCCL could not get shared memory ("unhandled system error", "Bus error", /dev/shm).
    SharedMemory,
    /// Any other error.
    Error,
}

impl AllReduceFailure {
    /// The kind of an error NCCL (or torch around it) raised, from its words: shared-memory
    /// exhaustion shows as "unhandled system error", a "Bus error" or a failing shm segment.
    pub fn of_nccl_error(text: &str) -> AllReduceFailure {
        let lower = text.to_ascii_lowercase();
        if ["system error", "shm", "bus error"]
            .iter()
            .any(|w| lower.contains(w))
        {
            AllReduceFailure::SharedMemory
        } else {
            AllReduceFailure::Error
        }
    }
}

impl AllReduceProbe {
    /// The measurement at the largest message size.
    pub fn largest(&self) -> Option<&AllReduceRun> {
        self.results
            .iter()
            .filter(|r| r.busbw_gbps.is_some())
            .max_by_key(|r| r.size_mib)
    }
}

/// One message size. Bandwidths in GB/s (10^9 bytes), as nccl-tests reports them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AllReduceRun {
    pub size_mib: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// Bytes / time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algbw_gbps: Option<f64>,
    /// algbw * 2(n-1)/n: comparable with the link's bandwidth whatever the GPU count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busbw_gbps: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StageTime {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The name of a signal that ends a crashed process, for reports ("SIGSEGV").
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_match_torch() {
        let b: SdpaBackend = serde_json::from_str("\"CUDNN_ATTENTION\"").unwrap();
        assert_eq!(b, SdpaBackend::CudnnAttention);
        let b: SdpaBackend = serde_json::from_str("\"OVERRIDEABLE\"").unwrap();
        assert_eq!(b, SdpaBackend::Unknown);
        assert_eq!(
            serde_json::to_string(&SdpaBackend::EfficientAttention).unwrap(),
            "\"EFFICIENT_ATTENTION\""
        );
    }

    #[test]
    fn a_minimal_probe_result_loads() {
        let r: ProbeResult = serde_json::from_str(r#"{"probe_version":1}"#).unwrap();
        assert!(r.torch.is_none());
        assert!(!r.complete);
    }

    #[test]
    fn largest_all_reduce_is_by_size() {
        let p = AllReduceProbe {
            world: 2,
            results: vec![
                AllReduceRun {
                    size_mib: 1024,
                    busbw_gbps: Some(327.1),
                    ..Default::default()
                },
                AllReduceRun {
                    size_mib: 64,
                    busbw_gbps: Some(265.2),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(p.largest().map(|r| r.size_mib), Some(1024));
    }
}
