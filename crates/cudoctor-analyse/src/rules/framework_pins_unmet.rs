use crate::views::pins::{is_torch_pin, unmet};
use cudoctor_snapshot::Framework;

use crate::frameworks::FrameworkView;
use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "FW021",
    name: "framework-companion-mismatch",
    layer: Layer::Framework,
    severity: Severity::Error,
    summary: "A framework's companion is not the version its metadata pins (jax / jaxlib / jax-cuda-plugin / jax-cuda-pjrt, vLLM's and SGLang's kernel libraries)",
    docs: r#"## What it checks
The `Requires-Dist` pins in the installed metadata of JAX (`jax`, `jaxlib`, `jax-cudaNN-plugin`,
`jax-cudaNN-pjrt`), vLLM and SGLang on their companion distributions (jaxlib and the CUDA
plugins; xformers, flashinfer, sgl-kernel, triton) against the versions installed. A pin under an
extra counts when the environment shows that extra was installed (jax's `cuda12` extra when
`jax-cuda12-plugin` is there); pins whose marker cannot be decided are left out. torch pins are
FW022's.

## Why it matters
These are released in lock-step: the CUDA plugin is loaded by jaxlib through an ABI that changes
between releases, and the PJRT plugin must be the one the CUDA plugin was built with. A
`pip install --no-deps`, an upgrade of one of them or a second installer leaves a set that
imports but fails when the GPU backend starts ("Unable to initialize backend 'cuda'", a version
mismatch of the plugin) or falls back to the CPU.

## How to fix
Reinstall the set at one release: for JAX `jax[cudaNN]==<jax's version>` (its extra pins the
plugins and jaxlib), otherwise the companion at the version pinned. The report prints the command
in the environment's installer.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.other_frameworks()
        .into_iter()
        .filter_map(|v| judge(ctx, v))
        .collect()
}

fn judge(ctx: &Context, v: FrameworkView) -> Option<Finding> {
    let bad: Vec<_> = unmet(ctx, v)
        .into_iter()
        .filter(|(_, r)| !is_torch_pin(&r.name))
        .collect();
    if bad.is_empty() {
        return None;
    }
    let names: Vec<String> = {
        let mut n: Vec<String> = bad.iter().map(|(c, _)| c.name.clone()).collect();
        n.dedup();
        n
    };
    let mut f = Finding::new(
        &RULE,
        format!(
            "{} does not match {} {} ({})",
            names.join(", "),
            v.build.framework.name(),
            v.build.version,
            v.env.prefix
        ),
    )
    .about(Subject::Package {
        env: v.env.prefix.clone(),
        name: v.build.package.clone(),
    });
    for (c, r) in &bad {
        f = f.evidence(format!(
            "{} requires {} (its METADATA: Requires-Dist: {}); {} {} is installed",
            c.required_by,
            format_args!("{}{}", r.name, r.specifier_text()),
            c.requirement,
            c.name,
            c.installed.as_deref().unwrap_or("?")
        ));
        f = f.about(Subject::Package {
            env: v.env.prefix.clone(),
            name: c.name.clone(),
        });
    }
    f = f.cause(match v.build.framework {
        Framework::Jax => "jax, jaxlib and the CUDA and PJRT plugins are released together and loaded through one ABI; a plugin from another release fails when the CUDA backend starts, or JAX falls back to the CPU.".to_string(),
        fw => format!("{} is built and tested against these exact companion releases; with another, its kernels fail to load or misbehave.", fw.name()),
    });
    let target = ctx.target_env(v.env);
    let args: Vec<String> = match (v.build.framework, v.build.cuda.as_ref()) {
        (Framework::Jax, Some(c)) => vec![format!("jax[cuda{}]=={}", c.major, v.build.version)],
        _ => bad
            .iter()
            .map(|(_, r)| {
                let extras = if r.extras.is_empty() {
                    String::new()
                } else {
                    format!("[{}]", r.extras.join(","))
                };
                format!("{}{extras}{}", r.name, r.specifier_text())
            })
            .collect(),
    };
    Some(f.command(&target, cudoctor_plan::install::install(&target, &args)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{CompanionPin, CudaBinding, FrameworkBuild, PythonEnv};
    use cudoctor_types::Requirement;

    fn pin(by: &str, req: &str, installed: Option<&str>) -> CompanionPin {
        let r: Requirement = req.parse().unwrap();
        CompanionPin {
            required_by: by.into(),
            requirement: req.into(),
            name: r.name,
            installed: installed.map(str::to_string),
        }
    }

    /// The jax-plugin-wrong-release env as the collector reads it (tests/fixtures/real/frameworks).
    fn jax_env(plugin: &str) -> PythonEnv {
        let pkgs = [
            ("jax", "0.10.2"),
            ("jaxlib", "0.10.2"),
            ("jax-cuda12-plugin", plugin),
            ("jax-cuda12-pjrt", "0.10.2"),
        ];
        PythonEnv {
            frameworks: vec![FrameworkBuild {
                framework: Framework::Jax,
                version: "0.10.2".into(),
                package: "jax-cuda12-plugin".into(),
                cuda: Some(CudaBinding {
                    major: 12,
                    minor: Some(9),
                    ..Default::default()
                }),
                companions: vec![
                    pin("jax 0.10.2", "jaxlib<=0.10.2,>=0.10.1", Some("0.10.2")),
                    pin(
                        "jax 0.10.2",
                        r#"jaxlib==0.10.1; extra == "minimum-jaxlib""#,
                        Some("0.10.2"),
                    ),
                    pin(
                        "jax 0.10.2",
                        r#"jaxlib<=0.10.2,>=0.10.2; extra == "cuda12""#,
                        Some("0.10.2"),
                    ),
                    pin(
                        "jax 0.10.2",
                        r#"jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda12""#,
                        Some(plugin),
                    ),
                    pin(
                        "jax 0.10.2",
                        r#"jax-cuda13-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda13""#,
                        None,
                    ),
                    pin(
                        &format!("jax-cuda12-plugin {plugin}"),
                        &format!("jax-cuda12-pjrt=={plugin}"),
                        Some("0.10.2"),
                    ),
                ],
                ..Default::default()
            }],
            ..packages_env("3.11", "3.11.7", &pkgs)
        }
    }

    #[test]
    fn a_plugin_of_another_jax_release_is_an_error_with_the_whole_set_as_fix() {
        let mut s = h200();
        s.python_envs = vec![jax_env("0.10.1")];
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title
                .starts_with("jax-cuda12-plugin, jax-cuda12-pjrt does not match JAX 0.10.2"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].evidence.iter().any(|e| e.starts_with("jax-cuda12-plugin 0.10.1 requires jax-cuda12-pjrt==0.10.1")),
            "{:?}",
            f[0].evidence
        );
        // The minimum-jaxlib extra was not installed: its pin is not judged.
        assert!(
            !f[0].evidence.iter().any(|e| e.contains("jaxlib==0.10.1")),
            "{:?}",
            f[0].evidence
        );
        assert_eq!(
            f[0].fix[0].text(),
            "/v/bin/python -m pip install 'jax[cuda12]==0.10.2'"
        );
    }

    #[test]
    fn a_matching_set_is_silent() {
        let mut s = h200();
        s.python_envs = vec![jax_env("0.10.2")];
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn serving_frameworks_kernel_pins_are_judged_but_not_their_torch_pin() {
        let mut s = h200();
        let sp = "/v/lib/python3.12/site-packages".to_string();
        s.python_envs = vec![PythonEnv {
            prefix: "/v".into(),
            site_packages: vec![sp.clone()],
            frameworks: vec![FrameworkBuild {
                framework: Framework::Sglang,
                version: "0.5.23".into(),
                package: "sglang".into(),
                companions: vec![
                    pin("sglang 0.5.23", "torch==2.14.1", Some("2.15.0")),
                    pin(
                        "sglang 0.5.23",
                        "flashinfer_python[cu13]==0.7.2",
                        Some("0.6.0"),
                    ),
                    pin("sglang 0.5.23", "sglang-kernel==0.4.10", None),
                ],
                ..Default::default()
            }],
            ..Default::default()
        }];
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(!f[0].evidence.iter().any(|e| e.contains("torch==")));
        assert_eq!(
            f[0].fix[0].text(),
            "/v/bin/python -m pip install 'flashinfer-python[cu13]==0.7.2'"
        );
    }
}
