//! The small set of machine facts the cross-check needs. The CLI maps its Snapshot onto this;
//! every field is optional because any probe may have failed.

use serde::{Deserialize, Serialize};

/// Where the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    Linux,
    Wsl,
    Windows,
    /// A Linux container (Docker, Kubernetes, Apptainer...).
    Container,
    #[default]
    Unknown,
}

/// One GPU as the machine reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct GpuFact {
    pub name: String,
    /// "major.minor", e.g. "9.0" (nvidia-smi's compute_cap).
    #[serde(default)]
    pub compute_capability: Option<String>,
    #[serde(default)]
    pub memory_mib: Option<u64>,
}

/// One CUDA toolkit found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ToolkitFact {
    /// "12.8"
    #[serde(default)]
    pub version: Option<String>,
    /// The toolkit root, e.g. /usr/local/cuda-12.8
    pub root: String,
}

/// Facts about the machine the explanation is checked against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MachineFacts {
    #[serde(default)]
    pub platform: Platform,
    /// e.g. "580.159.04"
    #[serde(default)]
    pub driver_version: Option<String>,
    /// The highest CUDA the driver supports, e.g. "13.0" (nvidia-smi "CUDA Version").
    #[serde(default)]
    pub driver_max_cuda: Option<String>,
    #[serde(default)]
    pub gpus: Vec<GpuFact>,
    /// e.g. "2.11.0+cu130"
    #[serde(default)]
    pub torch_version: Option<String>,
    /// torch.version.cuda, e.g. "13.0"; `None` for a CPU-only build or when unknown.
    #[serde(default)]
    pub torch_cuda: Option<String>,
    /// torch.cuda.get_arch_list() or read from libtorch_cuda.so, e.g. ["sm_75", "sm_80", ...]
    #[serde(default)]
    pub torch_arch_list: Option<Vec<String>>,
    /// The active nvcc's version, e.g. "13.0"
    #[serde(default)]
    pub nvcc_version: Option<String>,
    /// The value of CUDA_HOME (or CUDA_PATH) if set.
    #[serde(default)]
    pub cuda_home: Option<String>,
    #[serde(default)]
    pub toolkits: Vec<ToolkitFact>,
    /// CUDA_VISIBLE_DEVICES as set where the facts were taken: `None` when unset, `Some("")`
    /// when set to the empty value (which hides every GPU).
    #[serde(default)]
    pub cuda_visible_devices: Option<String>,
    /// The environment of that torch, for install commands in its own installer; `None` writes
    /// them for a plain `pip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_target: Option<cudoctor_plan::TargetEnv>,
}
