use serde::{Deserialize, Serialize};

/// Where the tool runs: container, WSL, device nodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PlatformFacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerFacts>,
    /// True under WSL2 (from the kernel release or /proc/version).
    #[serde(default)]
    pub wsl: bool,
    /// `/dev/nvidia*` nodes present.
    #[serde(default)]
    pub device_nodes: Vec<String>,
    /// Every `libcuda.so*` found where the loader looks (ld.so.cache, WSL and container paths).
    #[serde(default)]
    pub libcuda_paths: Vec<String>,
    /// `cuda-compat` forward-compatibility libraries found (e.g. `/usr/local/cuda-13.0/compat`).
    #[serde(default)]
    pub cuda_compat_paths: Vec<String>,
    /// SELinux/AppArmor modes, this process's confinement, denials naming NVIDIA files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<crate::SecurityFacts>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ContainerFacts {
    /// `docker`, `podman`, `kubernetes`, `containerd`, `lxc`, `singularity`/`apptainer`, or `unknown`.
    pub runtime: String,
    /// The files or markers that showed it, e.g. `/.dockerenv`.
    pub evidence: Vec<String>,
}
