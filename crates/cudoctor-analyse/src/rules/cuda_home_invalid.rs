use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "TK006",
    name: "cuda-home-invalid",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "CUDA_HOME (or CUDA_PATH) names a directory with no CUDA Toolkit",
    docs: r#"## What it checks
Whether the directory CUDA_HOME or CUDA_PATH names holds a toolkit (`bin/nvcc` or a version file).

## Why it matters
Extension builds trust CUDA_HOME blindly and fail with "No such file or directory:
'/usr/local/cuda/bin/nvcc'" or pick up headers of nothing.

## How to fix
Point it at an installed toolkit (the report lists them) or unset it.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let tk = &ctx.snap.toolkit;
    ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|var| {
            let home = ctx.var(var)?;
            if tk.toolkits.iter().any(|t| t.found_via.iter().any(|v| v == var)) {
                return None;
            }
            let mut f = Finding::new(&RULE, format!("{var}={home} holds no CUDA Toolkit"))
                .about(Subject::ToolkitSetting { var: var.to_string() })
                .evidence(format!("{var}={home}"))
                .evidence(format!("no {home}/bin/nvcc and no version file there"))
                .cause(format!("Builds that read {var} will look for nvcc, headers and libraries that are not there."));
            let installed: Vec<_> = tk.toolkits.iter().filter(|t| t.nvcc.is_some()).collect();
            if installed.is_empty() {
                f = f.shell(format!("unset {var}   # or install a CUDA Toolkit and point {var} at it"));
            }
            for t in installed {
                f = f.shell(format!("export {var}={}   # CUDA {}", cudoctor_plan::quote(&t.root), cudoctor_plan::comment(t.version.as_deref().unwrap_or("?"))));
            }
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_dangling_cuda_home_is_reported() {
        let mut s = h200();
        s.env
            .insert("CUDA_HOME".into(), "/usr/local/cuda-11.8".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix[0].contains("/usr/local/cuda-13.0"));
        let mut ok = h200();
        ok.toolkit.toolkits[0].found_via.push("CUDA_HOME".into());
        assert!(run(&RULE, &ok).is_empty());
    }
}
