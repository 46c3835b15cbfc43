use cudoctor_kb::CudaVersion;
use cudoctor_snapshot::CondaPackage;

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
Keep one source of CUDA per env: remove a stray `cudatoolkit` (`conda remove --force
cudatoolkit`) or `pytorch-cuda`; align `cuda-version` with torch's CUDA instead of removing it
(conda would remove every package that depends on it). `cudatoolkit` ends at 11.x; for CUDA 12+
conda's packages are `cuda-*`, pinned by `cuda-version=X.Y`. An env with a conda `pytorch` is
not reported: these packages are then torch's own.
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
            // A conda `pytorch` is built against the env's CUDA packages: `cuda-version` and
            // `pytorch-cuda` are then torch's own runtime pins, not a second runtime.
            if t.env.conda_packages.iter().any(|p| p.name == "pytorch") {
                return Vec::new();
            }
            t.env
                .conda_packages
                .iter()
                .filter_map(|p| {
                    if !matches!(p.name.as_str(), "cudatoolkit" | "pytorch-cuda" | "cuda-version") {
                        return None;
                    }
                    let v = cuda_of(&p.version)?;
                    if v.major == cuda.major && v.minor == cuda.minor {
                        return None;
                    }
                    let f = Finding::new(&RULE, format!("conda {} {} differs from torch's CUDA {cuda}", p.name, p.version))
                        .severity(if v.major != cuda.major { Severity::Warning } else { Severity::Info })
                        .evidence(format!("conda-meta: {} {} ({})", p.name, p.version, p.channel.as_deref().unwrap_or("channel unknown")))
                        .evidence(format!("{} built for CUDA {cuda}, and no conda `pytorch` in the env (torch came from pip)", t.label()));
                    Some(with_fixes(f, p, &t.env.prefix, cuda))
                })
                .collect()
        })
        .collect()
}

/// Cause and fixes by package. `cudatoolkit` ends at 11.x on conda (CUDA 12+ is split into
/// `cuda-*` packages pinned by `cuda-version`); `pytorch-cuda` is the pytorch channel's
/// selector for a conda `pytorch`, which this env does not have; `cuda-version` is a constraint
/// that the env's `cuda-*` packages depend on, so removing it removes them.
fn with_fixes(f: Finding, p: &CondaPackage, prefix: &str, cuda: CudaVersion) -> Finding {
    let q = cudoctor_plan::quote(prefix);
    let list = format!("conda list -p {q} cuda   # the conda CUDA packages in this env");
    match p.name.as_str() {
        "cudatoolkit" => {
            let f = f
                .cause("Two CUDA runtimes in one environment: extensions built here may link conda's cudatoolkit while torch uses the runtime its wheel brings.")
                .shell(format!("conda remove -p {q} --force cudatoolkit   # torch's wheel brings its own runtime"));
            if cuda.major <= 11 {
                f.prose("or keep it at torch's CUDA:").shell(format!("conda install -p {} cudatoolkit={cuda}", q))
            } else {
                f.prose("or, if the env needs conda's CUDA libraries (cudatoolkit ends at 11.x; CUDA 12+ comes as cuda-* packages):").shell(format!("conda install -p {} cuda-version={cuda}", q))
            }
        }
        "pytorch-cuda" => f
            .cause("pytorch-cuda selects the CUDA of a conda `pytorch`; beside a pip torch it only pulls a second CUDA runtime into the environment.")
            .shell(format!("conda remove -p {} pytorch-cuda", q))
            .shell(list),
        _ => {
            let f = f
                .cause(format!("cuda-version pins every conda cuda-* package in this env to CUDA {}; they form a second CUDA beside the runtime torch's wheel brings (CUDA {cuda}), and extensions built here may link them. Removing cuda-version would remove the packages that depend on it, so align it instead or remove those packages by name.", p.version));
            let f = f.shell(list);
            if cuda.major >= 12 {
                f.shell(format!("conda install -p {q} cuda-version={cuda}   # moves conda's cuda-* packages to torch's CUDA"))
            } else {
                f
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn conda(name: &str, version: &str) -> CondaPackage {
        CondaPackage {
            name: name.into(),
            version: version.into(),
            build: None,
            channel: Some("conda-forge".into()),
        }
    }

    #[test]
    fn a_conda_pytorch_owns_its_cuda_pins() {
        let mut s = h200();
        let env = &mut s.python_envs[0];
        env.conda_packages.push(conda("pytorch", "2.5.1"));
        env.conda_packages.push(conda("cuda-version", "12.4"));
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn fixes_name_packages_that_exist_and_never_force_remove_cuda_version() {
        let mut s = h200();
        let env = &mut s.python_envs[0];
        env.conda_packages.push(conda("cuda-version", "12.4"));
        env.conda_packages.push(conda("cudatoolkit", "11.8.0"));
        env.conda_packages.push(conda("pytorch-cuda", "12.4"));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 3, "{f:?}");
        for x in f.iter().flat_map(|f| &f.fix) {
            assert!(
                !x.contains("cudatoolkit=1") || x.contains("cudatoolkit=11"),
                "{x}"
            );
            assert!(!x.contains("pytorch-cuda=13"), "{x}");
            assert!(
                !x.contains("remove -p /opt/venv --force cuda-version"),
                "{x}"
            );
            assert!(!(x.contains("remove") && x.contains("cuda-version")), "{x}");
        }
        let toolkit = f
            .iter()
            .find(|f| f.title.contains("cudatoolkit"))
            .map(|f| &f.fix);
        assert!(
            toolkit.is_some_and(|fx| fx.iter().any(|x| x.contains("--force cudatoolkit"))
                && fx.iter().any(|x| x.contains("cuda-version=13.0"))),
            "{toolkit:?}"
        );
    }

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
