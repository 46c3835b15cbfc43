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
        f = f.fix(match major {
            Some(c) => format!("Only to build extensions: install CUDA Toolkit {c} (matching torch), then set CUDA_HOME and PATH"),
            None => "Only to build extensions: install a CUDA Toolkit, then set CUDA_HOME and PATH".to_string(),
        });
    } else {
        for t in with_nvcc {
            f = f
                .evidence(format!("toolkit {} at {} is installed but not selected", t.version.as_deref().unwrap_or("?"), t.root))
                .fix(format!("To use {}: export CUDA_HOME={} PATH={}/bin:$PATH LD_LIBRARY_PATH={}/lib64:$LD_LIBRARY_PATH", t.version.as_deref().unwrap_or(&t.root), t.root, t.root, t.root));
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
        assert!(run(&RULE, &h200()).is_empty());
    }
}
