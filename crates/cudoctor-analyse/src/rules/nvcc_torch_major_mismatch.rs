use crate::context::cuda_of;
use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "TK002",
    name: "nvcc-torch-major-mismatch",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "The toolkit an extension build would use has another CUDA major than torch",
    docs: r#"## What it checks
The toolkit that `torch.utils.cpp_extension` would pick (CUDA_HOME, CUDA_PATH, nvcc on PATH,
/usr/local/cuda, in that order) against the CUDA version torch was built with.

## Why it matters
torch refuses to build an extension with a toolkit of another major (`_check_cuda_version`, run
by `BuildExtension` for `setup.py` / pip builds): "RuntimeError: The detected CUDA version (11.8)
mismatches the version that was used to compile PyTorch (12.1). Please make sure to use the same
CUDA versions." A different minor only warns (TK015). JIT builds (`load()`, `load_inline()`) do
not compare: they compile with the other major's headers and runtime.

## How to fix
Point CUDA_HOME at an installed toolkit of torch's major (the report lists them), or install one,
or install the torch build for the toolkit's CUDA.
"#,
    check,
};

/// Its findings are about one toolkit variable, whose root's export repairs them: rank 1 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::ToolkitSetting,
    rank: 1,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(build) = ctx.build_toolkit() else {
        return Vec::new();
    };
    let Some(nvcc) = build.cuda() else {
        return Vec::new();
    };
    ctx.torch_envs()
        .into_iter()
        .filter_map(|t| {
            let cuda = t.cuda()?;
            if cuda.major == nvcc.major {
                return None;
            }
            let mut f = Finding::new(
                &RULE,
                format!("Extension builds would use CUDA {nvcc}, but {} was built with CUDA {cuda}", t.label()),
            )
            .evidence(format!("{} = {} -> toolkit {}", build.chosen_by, build.home, build.version.as_deref().unwrap_or("?")))
            .evidence(format!("{} built for CUDA {cuda} (torch/version.py)", t.label()))
            .cause(format!("torch.utils.cpp_extension refuses a toolkit whose major differs from torch's: building flash-attn, apex, DeepSpeed ops and the like fails with \"The detected CUDA version ({nvcc}) mismatches the version that was used to compile PyTorch ({cuda})\". Running existing wheels is not affected."));
            if matches!(build.chosen_by.as_str(), "CUDA_HOME" | "CUDA_PATH") {
                f = f.about(Subject::ToolkitSetting { var: build.chosen_by.clone() });
            }
            let of_major = |v: Option<&str>| v.and_then(cuda_of).is_some_and(|v| v.major == cuda.major);
            // The installed toolkits of torch's major (a Windows machine's as its collector
            // reads them).
            let same_major: Vec<String> = ctx
                .toolkits_with_nvcc()
                .into_iter()
                .filter(|(_, version)| of_major(version.as_deref()))
                .map(|(root, _)| root)
                .collect();
            if same_major.is_empty() {
                f = f.prose(format!("Install CUDA Toolkit {cuda} (or any {}.x) and point CUDA_HOME at it", cuda.major));
            }
            for root in same_major {
                f = f.steps([crate::context::cuda_home_step(&root, None)]);
            }
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::Toolkit;

    #[test]
    fn different_major_is_reported_with_the_matching_toolkit() {
        let mut s = h200();
        s.python_envs[0] = torch_env("/v", "2.5.1+cu121", Some("12.1"), &[]);
        s.toolkit.toolkits.push(Toolkit {
            root: "/usr/local/cuda-12.1".into(),
            version: Some("12.1.105".into()),
            nvcc: Some("/usr/local/cuda-12.1/bin/nvcc".into()),
            link_dir: None,
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].fix[0].contains("/usr/local/cuda-12.1"));
    }

    #[test]
    fn same_major_is_fine() {
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = h200();
        s.python_envs[0] = torch_env("/v", "2.12.0+cu132", Some("13.2"), &[]);
        assert!(run(&RULE, &s).is_empty());
    }
}
