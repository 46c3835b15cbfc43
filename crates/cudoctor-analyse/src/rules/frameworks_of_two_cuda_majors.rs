use std::collections::BTreeMap;

use cudoctor_snapshot::PythonEnv;

use crate::frameworks::FrameworkView;
use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "FW020",
    name: "frameworks-of-two-cuda-majors",
    layer: Layer::Framework,
    severity: Severity::Error,
    summary: "One environment holds framework builds for two CUDA majors (torch for CUDA 13 beside jax[cuda12] or cupy-cuda12x)",
    docs: r#"## What it checks
The CUDA each framework build of an environment is bound to (torch's `torch/version.py`, JAX's
CUDA plugin `jax-cudaNN-plugin`, CuPy's `cupy-cudaNNx`, ONNX Runtime's and TensorFlow's build
info, a vLLM build's `+cuXXX`), read from the installed files: builds of more than one CUDA
major in one environment.

## Why it matters
Each major has its own runtime (libcudart.so.12, libcudart.so.13) and its own `nvidia-*` wheels.
The CUDA 12 wheels install into the same `nvidia/<library>/lib` folders that torch's loader
searches first, so a CUDA-13 torch preloads CUDA 12's libraries (LIB006), and the two majors'
cuDNN/NCCL wheels write the same files (FW011): whichever was installed last wins. A framework
whose major has no libraries in the environment finds none (CuPy links its runtime in but opens
cuBLAS, cuFFT and NVRTC by soname: "libcublas.so.12: cannot open shared object file") unless a
system toolkit of that major happens to be there. It is an error when the other major's wheels
are installed or its libraries are nowhere to be found; a warning when that framework runs on a
system toolkit of its own major.

## How to fix
One CUDA major per environment: the major torch ends at (its own, or the one its fix moves it
to when this driver cannot run its build); without a CUDA torch, the major of the builds that
this driver runs and most of them share, else the newest. Install the other framework's build for that major
(`jax[cuda13]`, `cupy-cuda13x`), or give it an environment of its own; then remove the other
major's `nvidia-*` wheels and reinstall the kept major's CUDA wheels over the files they
overwrote. The report prints the commands in the environment's installer; `cudoctor plan`
prints the same commands for the same environment. The moved builds' own findings (a driver
too old for their CUDA, libraries of their major found nowhere) follow from this one. When all
builds share one major and torch's own fix moves torch off it (a driver without CUDA 13, a GPU
CUDA 13 dropped), torch's fix moves the frameworks with it instead.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &ctx.snap.python_envs {
        let views: Vec<FrameworkView> = ctx
            .frameworks()
            .into_iter()
            .filter(|v| std::ptr::eq(v.env, env) && v.build.cuda.is_some())
            .collect();
        let mut by_major: BTreeMap<u32, Vec<FrameworkView>> = BTreeMap::new();
        for v in &views {
            let major = v.build.cuda.as_ref().map(|c| c.major).unwrap_or_default();
            by_major.entry(major).or_default().push(*v);
        }
        if by_major.len() < 2 {
            continue;
        }
        out.push(judge(ctx, env, &by_major));
    }
    out
}

/// Where CUDA libraries of `major` are for a framework that loads them by soname: the
/// environment's wheels of that major, or a toolkit of that major on the machine.
fn libraries_of_major(
    ctx: &Context,
    env: &PythonEnv,
    cur: &cudoctor_plan::CurrentEnv,
    major: u32,
) -> Option<String> {
    let wheels = cur.wheels_of_major(major);
    if !wheels.is_empty() {
        return Some(format!("wheels {}", wheels.join(", ")));
    }
    if major >= 13 {
        if let Some(p) = env
            .package("nvidia-cuda-runtime")
            .filter(|p| p.version.split('.').next() == Some(&major.to_string()))
        {
            return Some(format!("{} {}", p.name, p.version));
        }
    }
    ctx.snap.toolkit.toolkits.iter().find_map(|t| {
        let v = t.version.as_deref()?;
        (v.split('.').next() == Some(&major.to_string()))
            .then(|| format!("CUDA toolkit {v} at {}", t.root))
    })
}

fn judge(ctx: &Context, env: &PythonEnv, by_major: &BTreeMap<u32, Vec<FrameworkView>>) -> Finding {
    let (cur, remedy, keep) = ctx.env_cuda_major(env);
    let keep = keep.unwrap_or_default();
    let (one_major, moved) = ctx.env_on_major(env, &cur, keep, remedy.as_ref());
    let majors: Vec<String> = by_major.keys().map(|m| format!("CUDA {m}")).collect();
    let names = |vs: &[FrameworkView]| {
        vs.iter()
            .map(|v| format!("{} {}", v.build.framework.name(), v.build.version))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let others: Vec<(u32, &Vec<FrameworkView>)> = by_major
        .iter()
        .filter(|(m, _)| **m != keep)
        .map(|(m, vs)| (*m, vs))
        .collect();
    let title = format!(
        "{} ({}) beside {} (CUDA {keep}) in {}",
        others
            .iter()
            .map(|(_, vs)| names(vs))
            .collect::<Vec<_>>()
            .join(", "),
        others
            .iter()
            .map(|(m, _)| format!("CUDA {m}"))
            .collect::<Vec<_>>()
            .join(", "),
        by_major
            .get(&keep)
            .map(|vs| names(vs))
            .unwrap_or_else(|| "torch's fix".into()),
        env.prefix
    );
    let mut f = Finding::new(&RULE, title).about(Subject::MixedCudaMajors {
        env: env.prefix.clone(),
    });
    for vs in by_major.values() {
        for v in vs {
            if let Some(e) = v.cuda_evidence() {
                f = f.evidence(e);
            }
        }
    }
    let mut error = false;
    let mut foreign_wheels: Vec<String> = Vec::new();
    let mut cause = format!(
        "This environment mixes {}: each major has its own CUDA runtime and nvidia-* wheels.",
        majors.join(" and ")
    );
    for (m, vs) in &others {
        let wheels = cur.wheels_of_major(*m);
        if !wheels.is_empty() {
            error = true;
            f = f.evidence(format!("CUDA {m} wheels installed: {}", wheels.join(", ")));
            cause.push_str(&format!(
                " The CUDA {m} wheels install into the nvidia/<library>/lib folders torch's loader searches first and share files with the CUDA {keep} wheels, so one major's libraries end up in the other's process."
            ));
            foreign_wheels.extend(wheels.iter().map(|w| w.to_string()));
        }
        if !wheels.is_empty() {
            continue;
        }
        match libraries_of_major(ctx, env, &cur, *m) {
            Some(r) => f = f.evidence(format!("CUDA {m} libraries: {r}")),
            None => {
                error = true;
                f = f.evidence(format!(
                    "no CUDA {m} libraries: no nvidia-* wheel of CUDA {m} in the environment, no CUDA {m} toolkit on the machine"
                ));
                cause.push_str(&format!(
                    " {} opens CUDA {m}'s cuBLAS, cuFFT, cuSPARSE and NVRTC by soname, and none of CUDA {m} is here: those modules fail to import (\"libcublas.so.{m}: cannot open shared object file\").",
                    names(vs)
                ));
            }
        }
    }
    // The wheels of both majors that share folders (cuDNN, NCCL, NVSHMEM carry the major in
    // their name): what FW011 finds overwritten follows from this.
    let mut involved = foreign_wheels.clone();
    if !foreign_wheels.is_empty() {
        involved.extend(cur.wheels_of_major(keep).iter().map(|w| w.to_string()));
    }
    for w in &involved {
        f = f.about(Subject::Package {
            env: env.prefix.clone(),
            name: w.clone(),
        });
    }
    if !error {
        f = f.severity(Severity::Warning);
        cause.push_str(" It works as long as that runtime is found first; one major per environment is the setup that stays working.");
    }
    f = f.cause(cause);
    for name in moved {
        f = f.about(Subject::MovesFramework {
            env: env.prefix.clone(),
            name,
        });
    }

    // The remedy is the chooser's (plan answers the same): every other build moved to the
    // kept major, the other majors' wheels gone and the kept major's put back.
    f.steps(one_major.steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{CudaBinding, Framework, FrameworkBuild, Package};

    fn build(fw: Framework, package: &str, major: u32, minor: Option<u32>) -> FrameworkBuild {
        FrameworkBuild {
            framework: fw,
            version: "1.0".into(),
            package: package.into(),
            location: "/opt/venv/lib/python3.12/site-packages".into(),
            cuda: Some(CudaBinding {
                major,
                minor,
                read: String::new(),
                source: format!("distribution name {package}"),
            }),
            ..Default::default()
        }
    }

    fn add(s: &mut cudoctor_snapshot::Snapshot, name: &str, version: &str) {
        let env = &mut s.python_envs[0];
        env.packages.push(Package {
            name: name.into(),
            version: version.into(),
            location: env.site_packages[0].clone(),
        });
    }

    #[test]
    fn cupy_for_cuda12_beside_a_cuda13_torch_without_a_cuda12_runtime_is_an_error() {
        let mut s = h200();
        let mut torch = build(Framework::Torch, "torch", 13, Some(0));
        torch.version = "2.11.0+cu130".into();
        torch.needs = vec!["nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"".into()];
        let mut cupy = build(Framework::Cupy, "cupy-cuda12x", 12, None);
        cupy.version = "14.2.0".into();
        s.python_envs[0].frameworks = vec![torch, cupy];
        add(&mut s, "cupy-cuda12x", "14.2.0");
        add(&mut s, "nvidia-cudnn-cu13", "9.19.0.56");
        // The h200 machine has a CUDA 13 toolkit only.
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].title
                .starts_with("CuPy 14.2.0 (CUDA 12) beside torch 2.11.0+cu130 (CUDA 13)"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.starts_with("no CUDA 12 libraries")),
            "{:?}",
            f[0].evidence
        );
        let fix: Vec<&str> = f[0].fix.iter().map(|x| x.text()).collect();
        assert!(
            fix.contains(&"/opt/venv/bin/python -m pip uninstall -y cupy-cuda12x"),
            "{fix:?}"
        );
        assert!(
            fix.contains(&"/opt/venv/bin/python -m pip install 'cupy-cuda13x[ctk]'"),
            "{fix:?}"
        );
        // With a CUDA 12 toolkit on the machine and no -cu12 wheels it still runs: a warning.
        s.toolkit.toolkits.push(cudoctor_snapshot::Toolkit {
            root: "/usr/local/cuda-12.8".into(),
            version: Some("12.8.93".into()),
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Warning, "{f:?}");
    }

    /// A CUDA-13 torch beside JAX `version` for CUDA 12 whose metadata has the cuda13 extra.
    fn jax_cuda12_beside_torch(version: &str) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        let mut torch = build(Framework::Torch, "torch", 13, Some(0));
        torch.needs = vec!["nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"".into()];
        let mut jax = build(Framework::Jax, "jax-cuda12-plugin", 12, Some(9));
        jax.version = version.into();
        jax.companions = vec![cudoctor_snapshot::CompanionPin {
            required_by: format!("jax {version}"),
            requirement: format!(
                r#"jax-cuda13-plugin[with-cuda]<={version},>={version}; extra == "cuda13""#
            ),
            name: "jax-cuda13-plugin".into(),
            installed: None,
        }];
        s.python_envs[0].frameworks = vec![torch, jax];
        s.python_envs[0].installer = Some(cudoctor_snapshot::EnvInstaller {
            kind: cudoctor_snapshot::Installer::Uv,
            evidence: "pyvenv.cfg: uv = 0.9.5".into(),
            has_pip: false,
        });
        for (n, v) in [
            ("jax", version),
            ("jax-cuda12-plugin", version),
            ("jax-cuda12-pjrt", version),
            ("nvidia-cuda-runtime-cu12", "12.9.79"),
            ("nvidia-cudnn-cu12", "9.28.0.42"),
            ("nvidia-cudnn-cu13", "9.19.0.56"),
        ] {
            add(&mut s, n, v);
        }
        s
    }

    #[test]
    fn a_jax_release_without_a_plugin_of_torchs_major_is_not_named() {
        // jax 0.7.1 has no jax-cuda13-plugin (the first is 0.7.2), whatever its extra says;
        // 0.99.0 is a release the knowledge base does not know.
        for (version, said) in [
            (
                "0.7.1",
                "no jax-cuda13-plugin 0.7.1 is served for Python 3.12",
            ),
            ("0.99.0", "not in the knowledge base"),
        ] {
            let f = run(&RULE, &jax_cuda12_beside_torch(version));
            assert_eq!(f.len(), 1);
            let fix: Vec<&str> = f[0].fix.iter().map(|x| x.text()).collect();
            assert!(
                !fix.iter()
                    .any(|x| x.contains(&format!("jax[cuda13]=={version}"))
                        && !x.contains("--dry-run")),
                "{fix:#?}"
            );
            assert!(fix.iter().any(|x| x.contains(said)), "{fix:#?}");
        }
    }

    #[test]
    fn cuda12_wheels_beside_torch_are_removed_and_torchs_wheels_put_back() {
        let s = jax_cuda12_beside_torch("0.10.2");
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        let fix: Vec<&str> = f[0].fix.iter().map(|x| x.text()).collect();
        assert_eq!(
            fix[1],
            "uv pip uninstall --python /opt/venv/bin/python jax-cuda12-plugin jax-cuda12-pjrt nvidia-cuda-runtime-cu12 nvidia-cudnn-cu12"
        );
        assert_eq!(
            fix[2],
            "uv pip install --python /opt/venv/bin/python 'jax[cuda13]==0.10.2'"
        );
        assert_eq!(
            fix[4],
            "uv pip install --python /opt/venv/bin/python --reinstall --no-deps nvidia-cudnn-cu13==9.19.0.56"
        );
        assert!(f[0].about.contains(&Subject::MixedCudaMajors {
            env: "/opt/venv".into()
        }));
    }

    #[test]
    fn one_major_is_silent() {
        let mut s = h200();
        s.python_envs[0].frameworks = vec![
            build(Framework::Torch, "torch", 13, Some(0)),
            build(Framework::Jax, "jax-cuda13-plugin", 13, Some(0)),
            FrameworkBuild {
                framework: Framework::Sglang,
                ..Default::default()
            },
        ];
        assert!(run(&RULE, &s).is_empty());
    }
}
