use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK015",
    name: "nvcc-torch-minor-differs",
    layer: Layer::Toolkit,
    severity: Severity::Info,
    summary: "nvcc is another CUDA minor release than torch's: torch warns, the build goes on",
    docs: r#"## What it checks
The toolkit `torch.utils.cpp_extension` would pick (CUDA_HOME, CUDA_PATH, nvcc on PATH,
/usr/local/cuda) against the CUDA version torch was built with, when the majors agree and the
minors differ (different majors are TK002).

## Why it matters
torch's own rule (`_check_cuda_version` in `torch/utils/cpp_extension.py`, run by
`BuildExtension` for `setup.py` / pip builds of `.cu` sources) compares `release X.Y` of
`nvcc --version` with `torch.version.cuda`: a different major raises "The detected CUDA version
(X.Y) mismatches the version that was used to compile PyTorch (A.B)"; a different minor only
warns "The detected CUDA version (X.Y) has a minor version mismatch with the version that was
used to compile PyTorch (A.B). Most likely this shouldn't be a problem." and the build goes on.
JIT builds (`load()`, `load_inline()`) do not compare at all. Noted so the warning in a build log
is explained; an older nvcc that cannot target a GPU is TK006.

## How to fix
Nothing is required. To silence it, point CUDA_HOME at a toolkit of torch's exact release.
"#,
    check,
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
            if cuda.major != nvcc.major || cuda.minor == nvcc.minor {
                return None;
            }
            Some(
                Finding::new(
                    &RULE,
                    format!("Extension builds would use CUDA {nvcc}; {} was built with CUDA {cuda}: torch warns, the build goes on", t.label()),
                )
                .evidence(format!(
                    "{} = {} -> toolkit {}",
                    build.chosen_by,
                    build.home,
                    build.version.as_deref().unwrap_or("?")
                ))
                .evidence(format!("{} built for CUDA {cuda} (torch/version.py)", t.label()))
                .evidence(format!("predicted in setup.py / pip builds: \"The detected CUDA version ({nvcc}) has a minor version mismatch with the version that was used to compile PyTorch ({cuda}). Most likely this shouldn't be a problem.\""))
                .cause("torch's _check_cuda_version refuses only another major; for another minor of the same major it warns and builds.")
                .prose(format!("Nothing is required; to silence the warning, point CUDA_HOME at a CUDA {cuda} toolkit")),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn another_minor_is_a_note_with_torchs_words() {
        let mut s = h200();
        s.python_envs[0] = torch_env("/v", "2.15.0+cu132", Some("13.2"), &[]);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].evidence.iter().any(|e| e.contains(
            "The detected CUDA version (13.0) has a minor version mismatch with the version that was used to compile PyTorch (13.2)"
        )));
    }

    #[test]
    fn same_release_or_another_major_says_nothing() {
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = h200();
        s.python_envs[0] = torch_env("/v", "2.5.1+cu121", Some("12.1"), &[]);
        assert!(run(&RULE, &s).is_empty());
    }
}
