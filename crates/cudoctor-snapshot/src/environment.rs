use std::collections::BTreeMap;

/// Environment variables that bear on CUDA, by name (sorted, so reports are stable).
pub type EnvVars = BTreeMap<String, String>;

const EXACT: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "LIBRARY_PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "TORCH_CUDA_ARCH_LIST",
    "MAX_JOBS",
    "HOME",
    "WSL_DISTRO_NAME",
    "WSL_INTEROP",
    "GLOO_SOCKET_IFNAME",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "NVCC_APPEND_FLAGS",
    "NVCC_PREPEND_FLAGS",
];

const PREFIXES: &[&str] = &[
    "CUDA", "NCCL_", "NVIDIA_", "NV_", "CUDNN", "TORCH_", "PYTORCH_",
];

/// True for a variable worth recording in a snapshot.
pub fn relevant_variable(name: &str) -> bool {
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_cuda_variables_and_drops_others() {
        assert!(relevant_variable("CUDA_HOME"));
        assert!(relevant_variable("CUDA_VISIBLE_DEVICES"));
        assert!(relevant_variable("NCCL_P2P_DISABLE"));
        assert!(relevant_variable("LD_LIBRARY_PATH"));
        assert!(!relevant_variable("AWS_SECRET_ACCESS_KEY"));
        assert!(!relevant_variable("GITHUB_TOKEN"));
    }
}
