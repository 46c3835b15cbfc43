use cudoctor_snapshot::Framework;

use crate::context::torch_index_url;
use crate::frameworks::FrameworkView;
use crate::views::pins::{is_torch_pin, unmet};
use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "FW022",
    name: "torch-pin-unmet",
    layer: Layer::Framework,
    severity: Severity::Error,
    summary: "vLLM or SGLang pins a torch release other than the installed one",
    docs: r#"## What it checks
The `Requires-Dist` pins on torch, torchvision and torchaudio in the installed metadata of vLLM
and SGLang (`torch==2.9.0`, `torch==2.14.1`) against the installed versions.

## Why it matters
vLLM's `_C` and SGLang's kernel library (`sgl-kernel` / `sglang-kernel`) are compiled against
one torch release: its C++ ABI and its CUDA. With another torch, importing them fails with an
undefined symbol (`_ZN3c10...`), or a later `pip install` of something else quietly replaces
torch and breaks the serving stack. It happens when torch is upgraded after the serving
framework, or the framework is installed with `--no-deps`.

## How to fix
Install the torch release the framework pins (with its paired companions), or upgrade the
framework to a release made for the installed torch. The report prints the command in the
environment's installer.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.frameworks()
        .into_iter()
        .filter(|v| matches!(v.build.framework, Framework::Vllm | Framework::Sglang))
        .filter_map(|v| judge(ctx, v))
        .collect()
}

fn judge(ctx: &Context, v: FrameworkView) -> Option<Finding> {
    let bad: Vec<_> = unmet(ctx, v)
        .into_iter()
        .filter(|(_, r)| is_torch_pin(&r.name))
        .collect();
    let (first, _) = bad.first()?;
    let name = v.build.framework.name();
    let mut f = Finding::new(
        &RULE,
        format!(
            "{name} {} pins {}, but {} {} is installed ({})",
            v.build.version,
            bad.iter()
                .map(|(_, r)| format!("{}{}", r.name, r.specifier_text()))
                .collect::<Vec<_>>()
                .join(", "),
            first.name,
            first.installed.as_deref().unwrap_or("?"),
            v.env.prefix
        ),
    )
    .about(Subject::Package {
        env: v.env.prefix.clone(),
        name: v.build.package.clone(),
    });
    for (c, _) in &bad {
        f = f.evidence(format!(
            "{}'s METADATA: Requires-Dist: {}; {} {} is installed",
            c.required_by,
            c.requirement,
            c.name,
            c.installed.as_deref().unwrap_or("?")
        ));
    }
    f = f.cause(format!(
        "{name}'s compiled kernels are built against the torch release it pins; another torch has another C++ ABI, so they fail to import (undefined symbol) or misbehave."
    ));
    // torch from the index of its installed variant (the dist-info's `+cuXXX`: a wheel from
    // PyPI has none), when the pinned release has that variant.
    let installed = v.env.package("torch").map(|p| p.version.as_str());
    let label = installed.and_then(|i| i.split_once('+')).map(|(_, l)| l);
    let target = ctx.target_env(v.env);
    let mut args: Vec<String> = bad
        .iter()
        .map(|(_, r)| format!("{}{}", r.name, r.specifier_text()))
        .collect();
    let pinned = bad
        .iter()
        .find(|(_, r)| r.name == "torch")
        .and_then(|(_, r)| {
            r.specifiers
                .iter()
                .find(|s| s.op == cudoctor_types::requirement::SpecOp::Eq)
                .map(|s| s.version.clone())
        });
    if let Some(l) = label {
        let known = pinned
            .as_deref()
            .and_then(|p| ctx.kb.torch(p))
            .is_some_and(|r| r.variant(l).is_some());
        match torch_index_url(Some(l)).filter(|_| known) {
            Some(index) => {
                args.push("--index-url".into());
                args.push(index);
            }
            None => {
                f = f.prose(format!(
                    "Whether the pinned torch has a {l} build is not in the knowledge base: `cudoctor plan --torch <release>` names the index"
                ));
            }
        }
    }
    Some(
        f.prose(format!("Install the torch release {name} pins:"))
            .command(&target, cudoctor_plan::install::install(&target, &args))
            .prose(format!(
                "or upgrade {name} to a release made for the installed torch."
            )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{CompanionPin, FrameworkBuild};

    fn sglang(torch: &str) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.python_envs = vec![torch_env("/v", torch, Some("13.0"), &[])];
        s.python_envs[0].frameworks = vec![FrameworkBuild {
            framework: Framework::Sglang,
            version: "0.5.23".into(),
            package: "sglang".into(),
            companions: vec![CompanionPin {
                required_by: "sglang 0.5.23".into(),
                requirement: "torch==2.14.1".into(),
                name: "torch".into(),
                installed: Some(torch.into()),
            }],
            ..Default::default()
        }];
        s
    }

    #[test]
    fn sglang_beside_a_newer_torch_is_an_error() {
        // torch from PyPI, as in the real sglang-beside-torch env.
        let f = run(&RULE, &sglang("2.15.0"));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].title,
            "SGLang 0.5.23 pins torch==2.14.1, but torch 2.15.0 is installed (/v)"
        );
        assert_eq!(
            f[0].fix[1].text(),
            "/v/bin/python -m pip install torch==2.14.1"
        );
        // A labelled build whose variant the knowledge base knows for the pinned release keeps
        // its index.
        let mut s = sglang("2.11.0+cu130");
        s.python_envs[0].frameworks[0].companions[0].requirement = "torch==2.10.0".into();
        let f = run(&RULE, &s);
        assert!(
            f[0].fix.iter().any(|x| x
                .text()
                .ends_with("torch==2.10.0 --index-url https://download.pytorch.org/whl/cu130")),
            "{:?}",
            f[0].fix
        );
    }

    #[test]
    fn the_pinned_release_is_silent_whatever_its_cuda_label() {
        assert!(run(&RULE, &sglang("2.14.1+cu130")).is_empty());
    }
}
