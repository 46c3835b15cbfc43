use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK001",
    name: "nvcc-missing",
    layer: Layer::Toolkit,
    severity: Severity::Info,
    summary: "No nvcc on PATH and CUDA_HOME unset: fine for wheels, needed to build extensions",
    docs: r#"## What it checks
Whether a CUDA compiler is reachable: `nvcc` on PATH, or CUDA_HOME / CUDA_PATH set.

## Why it matters
PyTorch wheels bundle their CUDA runtime: running them needs no toolkit. Building a CUDA
extension (flash-attn, DeepSpeed ops, apex, vLLM from source, `torch.utils.cpp_extension`)
does, and fails with "CUDA_HOME environment variable is not set" or "nvcc not found".

## How to fix
Only if you build extensions: install the toolkit whose major matches torch's CUDA, then
`export CUDA_HOME=/usr/local/cuda-X.Y; export PATH=$CUDA_HOME/bin:$PATH`. When toolkits are
already on disk, the report prints the lines for each.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let tk = &ctx.snap.toolkit;
    if tk.nvcc_on_path.is_some() || ctx.var("CUDA_HOME").is_some() || ctx.var("CUDA_PATH").is_some()
    {
        return Vec::new();
    }
    // A Windows machine's toolkits are the Windows collector's: one with nvcc.exe is what an
    // extension build finds (TK002 judges its CUDA), not a missing toolkit.
    if ctx
        .snap
        .windows
        .as_ref()
        .is_some_and(|w| w.toolkits.iter().any(|t| t.nvcc && !t.missing))
    {
        return Vec::new();
    }
    let mut f = Finding::new(&RULE, "No nvcc on PATH and CUDA_HOME is not set")
        .evidence("`nvcc` not found in any PATH entry")
        .evidence("CUDA_HOME and CUDA_PATH unset")
        .cause("Running PyTorch wheels needs no CUDA Toolkit (they bundle the runtime). Building CUDA extensions does.");
    let with_nvcc: Vec<_> = tk.toolkits.iter().filter(|t| t.nvcc.is_some()).collect();
    if with_nvcc.is_empty() {
        let major = ctx
            .torch_envs()
            .iter()
            .find_map(|t| t.cuda())
            .map(|c| c.to_string());
        f = f.prose(match major {
            Some(c) => format!("Only to build extensions: install CUDA Toolkit {c} (matching torch), then set CUDA_HOME and PATH"),
            None => "Only to build extensions: install a CUDA Toolkit, then set CUDA_HOME and PATH".to_string(),
        });
    } else {
        // With no CUDA_HOME, CUDA_PATH or nvcc on PATH, torch.utils.cpp_extension falls back to
        // /usr/local/cuda: that toolkit is the one extension builds use.
        let fallback = tk
            .usr_local_cuda
            .as_ref()
            .and_then(|c| c.resolved.as_deref())
            .map(|r| r.trim_end_matches('/'));
        for t in with_nvcc {
            let version = t.version.as_deref().unwrap_or(&t.root);
            if fallback == Some(t.root.as_str()) {
                f = f.evidence(format!(
                    "/usr/local/cuda -> {}: torch.utils.cpp_extension falls back to it, so extension builds use toolkit {version}; tools that call `nvcc` by name do not find it",
                    t.root
                ));
            } else {
                f = f.evidence(format!(
                    "toolkit {version} at {} is installed but not selected",
                    t.root
                ));
            }
            // No LD_LIBRARY_PATH: the toolkit's libraries would shadow the ones torch's wheel
            // brings (LIB003); builds need only CUDA_HOME and nvcc on PATH.
            f = f.steps([crate::context::cuda_home_step(
                &t.root,
                Some(&format!("use CUDA {version}")),
            )]);
        }
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn missing_nvcc_is_information_and_names_installed_toolkits() {
        let mut s = h200();
        s.toolkit.nvcc_on_path = None;
        s.env.remove("CUDA_HOME");
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].fix[0].contains("export CUDA_HOME=/usr/local/cuda-13.0"));
        assert!(!f[0].fix[0].contains("LD_LIBRARY_PATH"), "{:?}", f[0].fix);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("installed but not selected")));
        assert!(run(&RULE, &h200()).is_empty());
    }

    #[test]
    fn a_usr_local_cuda_link_is_the_build_fallback() {
        let mut s = h200();
        s.toolkit.nvcc_on_path = None;
        s.env.remove("CUDA_HOME");
        s.toolkit.usr_local_cuda = Some(cudoctor_snapshot::SymlinkChain {
            resolved: Some("/usr/local/cuda-13.0".into()),
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].evidence.iter().any(|e| e.contains("falls back to it")),
            "{:?}",
            f[0].evidence
        );
        assert!(!f[0].evidence.iter().any(|e| e.contains("not selected")));
    }
}
