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
    // A pod: the container doctor tells Kubernetes' fixes from Docker's.
    "KUBERNETES_SERVICE_HOST",
    // A Slurm job: its device cgroup hides from NVML the GPUs whose nodes /dev still has.
    "SLURM_JOB_ID",
    "GLOO_SOCKET_IFNAME",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "NVCC_APPEND_FLAGS",
    "NVCC_PREPEND_FLAGS",
    // Windows: setuptools and torch take the shell's environment as MSVC's when it is set.
    "DISTUTILS_USE_SDK",
    // Which of its CUDA libraries bitsandbytes loads.
    "BNB_CUDA_VERSION",
    // Where install commands fetch from; credentials in them are redacted.
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
];

const PREFIXES: &[&str] = &[
    "CUDA", "NCCL_", "NVIDIA_", "NV_", "CUDNN", "TORCH_", "PYTORCH_",
];

use cudoctor_types::secret::redact_text;
pub use cudoctor_types::secret::{is_secret, redact_url_credentials, REDACTED};

/// Variables whose value is a list of paths: only the credentials of a URL are looked for
/// there (a directory named like an API key stays as it is, so the paths stay judged).
fn holds_paths(name: &str) -> bool {
    matches!(
        name,
        "PATH"
            | "LD_LIBRARY_PATH"
            | "LIBRARY_PATH"
            | "LD_PRELOAD"
            | "PYTHONPATH"
            | "PYTHONHOME"
            | "VIRTUAL_ENV"
            | "CONDA_PREFIX"
            | "HOME"
    ) || ["_HOME", "_PATH", "_ROOT", "_DIR"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// True for a variable worth recording in a snapshot.
pub fn relevant_variable(name: &str) -> bool {
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The variables of `env` a snapshot records: the relevant ones, secrets redacted (kept by
/// name, so a report can say they were set, never by value). A value is looked at as free
/// text is: the credentials of a URL, a token in its query (`?private_token=…`), a
/// `--token=…` or `Bearer …` inside a flags variable, a word shaped as a known API key.
pub fn recorded_env<'a>(env: impl IntoIterator<Item = (&'a String, &'a String)>) -> EnvVars {
    env.into_iter()
        .filter(|(k, _)| relevant_variable(k))
        .map(|(k, v)| {
            let v = if is_secret(k, v) {
                REDACTED.to_string()
            } else if holds_paths(k) {
                redact_url_credentials(v)
            } else {
                redact_text(v)
            };
            (k.clone(), v)
        })
        .collect()
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

    /// Secrets where no variable name says so: a token in an index URL's query, an option or
    /// a bearer header inside a CUDA or torch variable, a key-shaped word in NCCL's. These were
    /// written as they were into JSON reports and saved snapshots.
    #[test]
    fn secrets_inside_values_are_redacted() {
        let env: BTreeMap<String, String> = [
            (
                "PIP_INDEX_URL",
                "https://idx.corp/simple/?private_token=SEKRIT1",
            ),
            (
                "UV_EXTRA_INDEX_URL",
                "https://idx.corp/simple?token=SEKRIT2&x=1",
            ),
            ("CUDA_LAUNCH_FLAGS", "--token=SEKRIT3 --verbose"),
            ("TORCH_HUB_HEADERS", "Authorization: Bearer SEKRIT4"),
            ("NCCL_DEBUG_SUBSYS", "hf_SEKRIT5aaaaaaaaaaaaaaaaaaaa"),
            ("TORCH_CUDA_ARCH_LIST", "8.0;9.0+PTX"),
            ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
            ("PATH", "/opt/sk-learn-environment-2024/bin:/usr/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let rec = recorded_env(&env);
        let all = format!("{rec:?}");
        assert!(!all.contains("SEKRIT"), "{all}");
        assert_eq!(rec["TORCH_CUDA_ARCH_LIST"], "8.0;9.0+PTX");
        assert_eq!(rec["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True");
        assert_eq!(rec["PATH"], "/opt/sk-learn-environment-2024/bin:/usr/bin");
        assert!(rec["PIP_INDEX_URL"].starts_with("https://idx.corp/simple/?private_token="));
    }

    #[test]
    fn secrets_are_redacted_not_dropped() {
        let env: BTreeMap<String, String> = [
            ("NVIDIA_API_KEY", "nvapi-abcdef0123456789"),
            ("NV_FOO_TOKEN", "s3cr3t-token"),
            ("TORCH_HUB_TOKEN", "hub-secret"),
            ("CUDA_PASSWORD", "pw"),
            ("NVIDIA_VISIBLE_DEVICES", "all"),
            ("NVIDIA_DRIVER_CAPABILITIES", "nv_token_lookalike"),
            ("NVIDIA_SOMETHING", "hf_abcdefgh"),
            ("HTTPS_PROXY", "http://alice:hunter2@proxy.corp:3128"),
            (
                "PIP_INDEX_URL",
                "https://u:p%40ss@pypi.corp/simple https://plain.example/simple",
            ),
            ("HF_TOKEN", "hf_xyz"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let rec = recorded_env(&env);
        assert_eq!(rec["NVIDIA_API_KEY"], REDACTED);
        assert_eq!(rec["NV_FOO_TOKEN"], REDACTED);
        assert_eq!(rec["TORCH_HUB_TOKEN"], REDACTED);
        assert_eq!(rec["CUDA_PASSWORD"], REDACTED);
        assert_eq!(rec["NVIDIA_SOMETHING"], REDACTED);
        assert_eq!(rec["NVIDIA_VISIBLE_DEVICES"], "all");
        assert_eq!(rec["HTTPS_PROXY"], "http://<redacted>@proxy.corp:3128");
        assert_eq!(
            rec["PIP_INDEX_URL"],
            "https://<redacted>@pypi.corp/simple https://plain.example/simple"
        );
        assert!(!rec.contains_key("HF_TOKEN"));
        let all = format!("{rec:?}");
        for secret in ["nvapi-", "s3cr3t", "hub-secret", "hunter2", "p%40ss", "hf_"] {
            assert!(!all.contains(secret), "{secret} leaked: {all}");
        }
    }
}
