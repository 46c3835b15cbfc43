use crate::context::cuda_of;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "FW003",
    name: "conda-cudatoolkit-mismatch",
    layer: Layer::Framework,
    severity: Severity::Warning,
    summary: "conda's cudatoolkit / pytorch-cuda differs from the CUDA runtime torch uses",
    docs: r#"## What it checks
In a conda environment: the `cudatoolkit`, `pytorch-cuda` or `cuda-version` package against the
CUDA version torch was built for.

## Why it matters
A pip-installed torch wheel brings its own CUDA runtime; a conda `cudatoolkit` of another
version in the same env puts a second libcudart/cuDNN on the library path. Extensions built in
the env may link the conda copy while torch uses its own, and a conda torch paired with the
wrong `pytorch-cuda` loads a runtime it was not built for.

## How to fix
Keep one source of CUDA per env: remove the stray package (`conda remove cudatoolkit`) or
install the matching one.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.torch_envs()
        .into_iter()
        .flat_map(|t| {
            let Some(cuda) = t.cuda() else {
                return Vec::new();
            };
            t.env
                .conda_packages
                .iter()
                .filter(|p| matches!(p.name.as_str(), "cudatoolkit" | "pytorch-cuda" | "cuda-version"))
                .filter_map(|p| {
                    let v = cuda_of(&p.version)?;
                    if v.major == cuda.major && v.minor == cuda.minor {
                        return None;
                    }
                    Some(
                        Finding::new(&RULE, format!("conda {} {} differs from torch's CUDA {cuda}", p.name, p.version))
                            .severity(if v.major != cuda.major { Severity::Warning } else { Severity::Info })
                            .evidence(format!("conda-meta: {} {} ({})", p.name, p.version, p.channel.as_deref().unwrap_or("channel unknown")))
                            .evidence(format!("{} built for CUDA {cuda}", t.label()))
                            .cause("Two CUDA runtimes in one environment: extensions built here may link conda's copy while torch uses its own.")
                            .fix(format!("conda remove -p {} {}   # if torch came from pip", t.env.prefix, p.name))
                            .fix(format!("or: conda install -p {} {}={cuda}", t.env.prefix, p.name)),
                    )
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::CondaPackage;

    #[test]
    fn an_old_cudatoolkit_beside_a_new_wheel_is_reported() {
        let mut s = h200();
        s.python_envs[0].conda_packages.push(CondaPackage {
            name: "cudatoolkit".into(),
            version: "11.8.0".into(),
            build: Some("h6a678d5_0".into()),
            channel: Some("pkgs/main".into()),
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(run(&RULE, &h200()).is_empty());
    }
}
