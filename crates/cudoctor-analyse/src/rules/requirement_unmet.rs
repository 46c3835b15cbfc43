use cudoctor_snapshot::{DeclaredRequirements, PythonEnv};
use cudoctor_types::Requirement;

use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "FW024",
    name: "requirement-unmet",
    layer: Layer::Framework,
    severity: Severity::Error,
    summary:
        "An installed CUDA package requires a version of another that is not the one installed",
    docs: r#"## What it checks
Every `Requires-Dist` of the installed CUDA-relevant distributions (torch and its companions,
the `nvidia-*` and `cuda-*` wheels, xformers, flash-attn, bitsandbytes, ...) that names another
CUDA-relevant distribution, read from their dist-info `METADATA` without importing anything,
evaluated as `uv pip check` does: the marker with this environment's values, an `extra ==`
marker only where an installed distribution asked for that extra (torch's
`cuda-toolkit[cublas,...]`). A requirement whose distribution is installed at a version its
specifiers exclude is reported. Pins judged by their own rules are left to them: torchvision's
and torchaudio's on torch (FW002), JAX's, vLLM's and SGLang's (FW021, FW022). A package conda
installed is left to conda's solver; a requirement whose distribution is not installed, or whose
marker names a value cudoctor does not know, is not judged.

## Why it matters
torch pins the exact CUDA library wheels it was built and tested with (`nvidia-cudnn-cu12==
9.5.1.17`, `cuda-toolkit[...]==13.2.2`) and the triton its compiler emits code for; an
extension built against one torch pins it (`xformers 0.0.31: torch==2.7.1`). A later
`pip install` of something else, a `--no-deps` install or two installers leave another version,
and what fails is far from the cause: an undefined symbol, a cuDNN error at the first
convolution, a triton kernel that does not compile. A newer CUDA library of the same major
usually works, so an unmet pin on a CUDA library wheel by a newer release is a warning; a pin on
torch or triton, or an older library, is an error.

## How to fix
Install what the requirement asks for, in the environment's installer (the report prints it).
For an extension pinning another torch: a matching pair, the extension's build for the
installed torch (a prebuilt wheel, never a source build) or the torch it pins.
"#,
    check,
};

/// Its findings are about one package built for another torch or CUDA: rank 0 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::Package,
    rank: 0,
};

/// Pins other rules judge: the torch companions' pins on torch (FW002), the frameworks whose
/// companion sets FW021/FW022 read.
fn judged_elsewhere(by: &str, name: &str) -> bool {
    (matches!(by, "torchvision" | "torchaudio") && name == "torch")
        || matches!(by, "jax" | "jaxlib" | "vllm" | "sglang")
        || by.starts_with("jax-cuda")
}

/// One requirement of `by` that the installed version does not meet.
struct Unmet<'a> {
    by: &'a DeclaredRequirements,
    req: Requirement,
    installed: &'a str,
}

/// The extras each distribution was asked for by the requirements of the others that bind
/// here (`torch` asks `cuda-toolkit[cublas,cudart,...]`).
fn requested_extras(ctx: &Context, env: &PythonEnv) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for d in &env.declared {
        for line in &d.requires {
            let Ok(r) = line.parse::<Requirement>() else {
                continue;
            };
            if r.extras.is_empty() || ctx.requirement_binds(env, &r, &[]) != Some(true) {
                continue;
            }
            for e in &r.extras {
                let key = (r.name.clone(), cudoctor_types::normalise_name(e));
                if !out.contains(&key) {
                    out.push(key);
                }
            }
        }
    }
    out
}

/// The requirements of `env`'s declarations that bind here and that the installed
/// distributions do not meet.
fn unmet<'a>(ctx: &Context, env: &'a PythonEnv) -> Vec<Unmet<'a>> {
    let extras = requested_extras(ctx, env);
    let mut out = Vec::new();
    for d in &env.declared {
        // conda's solver, not this metadata, decided what a conda package came with.
        if conda_managed(env, &d.package) {
            continue;
        }
        let mine: Vec<String> = extras
            .iter()
            .filter(|(n, _)| *n == d.package)
            .map(|(_, e)| e.clone())
            .collect();
        for line in &d.requires {
            let Ok(r) = line.parse::<Requirement>() else {
                continue;
            };
            if judged_elsewhere(&d.package, &r.name) || r.specifiers.is_empty() {
                continue;
            }
            let Some(p) = env.package(&r.name) else {
                continue;
            };
            if ctx.requirement_binds(env, &r, &mine) != Some(true) {
                continue;
            }
            if r.admits(&p.version) == Some(false) {
                out.push(Unmet {
                    by: d,
                    req: r,
                    installed: &p.version,
                });
            }
        }
    }
    out
}

/// Whether conda installed `package` in `env` (conda calls torch `pytorch`).
fn conda_managed(env: &PythonEnv, package: &str) -> bool {
    env.conda_packages.iter().any(|c| {
        c.name == package
            || (package == "torch" && matches!(c.name.as_str(), "pytorch" | "pytorch-gpu"))
    })
}

/// Whether an unmet requirement is a CUDA library wheel of the same major at a newer release
/// than asked (which the libraries' compatibility within a major usually covers).
fn newer_library(u: &Unmet) -> bool {
    if !(u.req.name.starts_with("nvidia-") || u.req.name.starts_with("cuda-")) {
        return false;
    }
    let Ok(have) = u
        .installed
        .parse::<cudoctor_types::requirement::PyVersion>()
    else {
        return false;
    };
    u.req.specifiers.iter().all(|s| {
        let Ok(want) = s
            .version
            .trim_end_matches(".*")
            .parse::<cudoctor_types::requirement::PyVersion>()
        else {
            return false;
        };
        have.release.first() == want.release.first() && have > want
    })
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &ctx.snap.python_envs {
        let all = unmet(ctx, env);
        let mut byes: Vec<&str> = all.iter().map(|u| u.by.package.as_str()).collect();
        byes.dedup();
        for by in byes {
            let mine: Vec<&Unmet> = all.iter().filter(|u| u.by.package == by).collect();
            out.push(judge(ctx, env, &mine));
        }
    }
    out
}

fn judge(ctx: &Context, env: &PythonEnv, unmet: &[&Unmet]) -> Finding {
    let d = unmet[0].by;
    let listed: Vec<String> = unmet
        .iter()
        .map(|u| {
            format!(
                "{}{} ({} installed)",
                u.req.name,
                u.req.specifier_text(),
                u.installed
            )
        })
        .collect();
    let mut f = Finding::new(
        &RULE,
        format!(
            "{} {} requires {} ({})",
            d.package,
            d.version,
            listed.join(", "),
            env.prefix
        ),
    )
    .about(Subject::Package {
        env: env.prefix.clone(),
        name: d.package.clone(),
    });
    if unmet.iter().all(|u| newer_library(u)) {
        f = f.severity(Severity::Warning);
    }
    for u in unmet {
        f = f.evidence(format!(
            "{} {}'s METADATA: Requires-Dist: {}; {} {} is installed",
            d.package, d.version, u.req.text, u.req.name, u.installed
        ));
    }
    let target = ctx.target_env(env);
    // A pin on torch by an extension: the matching pair.
    if let Some(u) = unmet.iter().find(|u| u.req.name == "torch") {
        let built_for = ctx
            .built_for_torch(env, &d.package)
            .map(|b| b.version)
            .unwrap_or_else(|| {
                u.req
                    .specifiers
                    .first()
                    .map(|s| s.version.clone())
                    .unwrap_or_default()
            });
        f = f.cause(format!(
            "{} {} is built against torch {built_for}: its compiled code calls torch's C++ functions by names another torch release renames or removes, so importing it fails (undefined symbol) or it misbehaves.",
            d.package, d.version
        ));
        let exact = u.req.specifiers.len() == 1
            && u.req.specifiers[0].op == cudoctor_types::requirement::SpecOp::Eq;
        if exact {
            return ctx.matching_torch_pair(f, env, &d.package, &built_for, u.installed);
        }
    } else {
        f = f.cause(format!(
            "{} {} was built and tested against these releases; with another one installed (a later install of something else, a --no-deps install, two installers), what fails is far from the cause: a library's missing entry point, an error at the first kernel, a compiler that does not match.",
            d.package, d.version
        ));
    }
    let pins: Vec<String> = unmet
        .iter()
        .map(|u| {
            let extras = if u.req.extras.is_empty() {
                String::new()
            } else {
                format!("[{}]", u.req.extras.join(","))
            };
            format!("{}{extras}{}", u.req.name, u.req.specifier_text())
        })
        .collect();
    f.prose(format!("Install what {} requires:", d.package))
        .command(&target, target.install(&cudoctor_plan::Install::pins(pins)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn env_with(pkgs: &[(&str, &str)], declared: Vec<DeclaredRequirements>) -> PythonEnv {
        PythonEnv {
            declared,
            ..packages_env("3.12", "3.12.3", pkgs)
        }
    }

    fn decl(package: &str, version: &str, requires: &[&str]) -> DeclaredRequirements {
        DeclaredRequirements {
            package: package.into(),
            version: version.into(),
            requires: requires.iter().map(|s| s.to_string()).collect(),
            built_for_torch: None,
        }
    }

    /// torch 2.15.0's real Requires-Dist lines (the stock-current env).
    fn torch_2_15() -> DeclaredRequirements {
        decl(
            "torch",
            "2.15.0",
            &[
                r#"cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.2.2; platform_system == "Linux""#,
                r#"nvidia-cudnn-cu13==9.26.0.51; platform_system == "Linux""#,
                r#"nvidia-nccl-cu13==2.30.7; platform_system == "Linux""#,
                r#"triton~=3.9.0; platform_system == "Linux" and python_version < "3.16""#,
            ],
        )
    }

    fn cuda_toolkit() -> DeclaredRequirements {
        decl(
            "cuda-toolkit",
            "13.2.2",
            &[
                "nvidia-cublas==13.4.1.3.*; (sys_platform == 'linux' and platform_machine == 'x86_64' or sys_platform == 'win32' and platform_machine == 'AMD64') and extra == 'cublas'",
                "nvidia-cuda-nvcc==13.2.86.*; (sys_platform == 'linux' and platform_machine == 'x86_64') and extra == 'nvcc'",
            ],
        )
    }

    fn snap(env: PythonEnv) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.host.arch = "x86_64".into();
        s.python_envs = vec![env];
        s
    }

    #[test]
    fn a_healthy_set_is_silent() {
        let env = env_with(
            &[
                ("torch", "2.15.0"),
                ("cuda-toolkit", "13.2.2"),
                ("nvidia-cublas", "13.4.1.3"),
                // nvcc: an extra no one asked for; its pin does not bind.
                ("nvidia-cuda-nvcc", "13.0.88"),
                ("nvidia-cudnn-cu13", "9.26.0.51"),
                ("nvidia-nccl-cu13", "2.30.7"),
                ("triton", "3.9.0"),
            ],
            vec![torch_2_15(), cuda_toolkit()],
        );
        assert!(run(&RULE, &snap(env)).is_empty());
    }

    #[test]
    fn an_older_cudnn_and_another_triton_are_errors_with_the_pins_as_fix() {
        let env = env_with(
            &[
                ("torch", "2.15.0"),
                ("nvidia-cudnn-cu13", "9.13.0.50"),
                ("nvidia-nccl-cu13", "2.30.7"),
                ("triton", "3.8.0"),
            ],
            vec![torch_2_15()],
        );
        let f = run(&RULE, &snap(env));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(
            f[0].title,
            "torch 2.15.0 requires nvidia-cudnn-cu13==9.26.0.51 (9.13.0.50 installed), triton~=3.9.0 (3.8.0 installed) (/v)"
        );
        assert_eq!(
            f[0].fix[1].text(),
            "/v/bin/python -m pip install nvidia-cudnn-cu13==9.26.0.51 'triton~=3.9.0'"
        );
    }

    #[test]
    fn a_newer_library_of_the_same_major_is_a_warning_and_extras_asked_for_bind() {
        let env = env_with(
            &[
                ("torch", "2.15.0"),
                ("cuda-toolkit", "13.2.2"),
                ("nvidia-cublas", "13.5.0.1"),
                ("nvidia-cudnn-cu13", "9.26.0.51"),
            ],
            vec![torch_2_15(), cuda_toolkit()],
        );
        let f = run(&RULE, &snap(env));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].title
                .starts_with("cuda-toolkit 13.2.2 requires nvidia-cublas==13.4.1.3.*"),
            "{}",
            f[0].title
        );
    }

    #[test]
    fn an_extension_pinning_another_torch_gets_the_matching_pair() {
        let env = env_with(
            &[("torch", "2.8.0"), ("xformers", "0.0.31")],
            vec![decl("xformers", "0.0.31", &["torch==2.7.1"])],
        );
        let f = run(&RULE, &snap(env));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].title,
            "xformers 0.0.31 requires torch==2.7.1 (2.8.0 installed) (/v)"
        );
        let fix: Vec<String> = f[0].fix.iter().map(|s| s.text().to_string()).collect();
        assert_eq!(
            fix[1],
            "/v/bin/python -m pip install --only-binary xformers xformers torch==2.8.0"
        );
        assert_eq!(fix[3], "/v/bin/python -m pip install torch==2.7.1");
    }

    #[test]
    fn a_pin_is_met_by_the_same_release_with_a_local_label() {
        // xformers 0.0.31 pins torch==2.7.1; torch 2.7.1+cu126 from the PyTorch index meets it.
        let env = env_with(
            &[("torch", "2.7.1+cu126"), ("xformers", "0.0.31")],
            vec![decl("xformers", "0.0.31", &["torch==2.7.1"])],
        );
        assert!(run(&RULE, &snap(env)).is_empty());
    }

    #[test]
    fn conda_packages_follow_condas_solver() {
        let mut env = env_with(
            &[("torch", "2.15.0"), ("triton", "3.8.0")],
            vec![torch_2_15()],
        );
        env.conda_packages = vec![cudoctor_snapshot::CondaPackage {
            name: "pytorch".into(),
            version: "2.15.0".into(),
            ..Default::default()
        }];
        assert!(run(&RULE, &snap(env)).is_empty());
    }

    #[test]
    fn pins_other_rules_judge_and_unknown_markers_are_left() {
        let env = env_with(
            &[
                ("torch", "2.8.0"),
                ("torchvision", "0.22.1"),
                ("triton", "3.0.0"),
            ],
            vec![
                decl("torchvision", "0.22.1", &["torch==2.7.1"]),
                decl(
                    "torch",
                    "2.8.0",
                    &[r#"triton==3.4.0; some_unknown_var == "x""#],
                ),
            ],
        );
        assert!(run(&RULE, &snap(env)).is_empty());
    }
}
