use crate::context::TorchEnv;
use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "FW002",
    name: "companion-mismatch",
    layer: Layer::Framework,
    severity: Severity::Error,
    summary: "torchvision or torchaudio is not the release paired with torch, or is built for another CUDA",
    docs: r#"## What it checks
torchvision and torchaudio against the versions released with the installed torch (knowledge
base), and their `+cuXXX` local label against torch's.

## Why it matters
Each torchvision/torchaudio release is built against one torch release: with another torch,
`import torchvision` fails with "operator torchvision::nms does not exist" or an undefined
symbol; with another CUDA variant, its CUDA ops fail with "Detected that PyTorch and torchvision
were compiled with different CUDA major versions".

## How to fix
Install the paired versions from the same index as torch (the report prints the command).
"#,
    check,
};

/// Its findings are about one environment's torch build, whose chooser's command set repairs them: rank 3 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::TorchBuild,
    rank: 3,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.torch_envs()
        .into_iter()
        .flat_map(|t| {
            ["torchvision", "torchaudio"]
                .into_iter()
                .filter_map(move |name| judge(ctx, t, name))
        })
        .collect()
}

fn judge(ctx: &Context, t: TorchEnv, name: &str) -> Option<Finding> {
    let pkg = t.env.package(name)?;
    let public = pkg
        .version
        .split_once('+')
        .map_or(pkg.version.as_str(), |(p, _)| p);
    let requires = crate::context::declared_requires(t.env, name);
    // The one judgement of a companion, the same plan and every remedy make: the knowledge
    // base's pair where it has one, else the companion's own metadata (torchaudio 2.11.1's
    // `torch>=2.11` accepts torch 2.15); a variant label of another build than torch's.
    let fit = cudoctor_plan::companion_fit(
        ctx.kb,
        name,
        &pkg.version,
        &requires,
        t.torch.public_version(),
        t.torch.local_label(),
    );
    if !fit.is_wrong() {
        return None;
    }
    let version_wrong = matches!(fit, cudoctor_plan::CompanionFit::OtherRelease { .. });
    let expected = match &fit {
        cudoctor_plan::CompanionFit::OtherRelease { pair, .. } => pair.clone(),
        _ => None,
    };
    let mut f = Finding::new(&RULE, "")
        .evidence(format!("torch {} in {}", t.torch.version, t.env.prefix))
        .evidence(format!("{name} {} in {}", pkg.version, pkg.location));
    if let Some(e) = &expected {
        f = f.evidence(format!(
            "torch {} was released with {name} {e} (knowledge base)",
            t.torch.public_version()
        ));
    }
    if let cudoctor_plan::CompanionFit::OtherRelease {
        refused_by: Some(req),
        ..
    } = &fit
    {
        f = f.evidence(format!(
            "{name} {}'s metadata: Requires-Dist: {req}",
            pkg.version
        ));
    }
    f.title = if version_wrong {
        format!(
            "{name} {} does not belong to torch {}",
            pkg.version, t.torch.version
        )
    } else {
        format!(
            "{name} {} is built for another CUDA than torch {}",
            pkg.version, t.torch.version
        )
    };
    f = f.cause(if version_wrong {
        let symptom = if name == "torchvision" {
            "\"operator torchvision::nms does not exist\", undefined symbols"
        } else {
            "undefined symbols in its compiled extension, or it refuses the torch version"
        };
        format!("{name} is compiled against one torch release; with another, importing it fails ({symptom}) or its ops misbehave.")
    } else {
        format!("{name} and torch carry different CUDA variants: its CUDA ops fail (\"compiled with different CUDA major versions\").")
    });
    f = f
        .about(Subject::TorchBuild {
            env: t.env.prefix.clone(),
        })
        .about(Subject::Package {
            env: t.env.prefix.clone(),
            name: name.to_string(),
        });
    match ctx.torch_remedy(t) {
        Some(r) => f = ctx.with_torch_repair(f, t, r),
        None => {
            let want = expected.unwrap_or_else(|| public.to_string());
            f = f.prose(format!(
                "Install {name} {want} from the index torch {} came from",
                t.torch.version
            ));
        }
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn the_released_pair_is_fine() {
        assert!(run(&RULE, &h200()).is_empty());
    }

    #[test]
    fn a_vision_from_another_release_is_reported() {
        let mut s = h200();
        s.python_envs[0] = torch_env(
            "/v",
            "2.11.0+cu130",
            Some("13.0"),
            &[("torchvision", "0.25.0+cu130")],
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].fix[0].contains("torchvision==0.26.0"),
            "{:?}",
            f[0].fix
        );
        assert!(f[0].fix[0].contains("whl/cu130"));
    }

    #[test]
    fn another_cuda_label_is_reported() {
        let mut s = h200();
        s.python_envs[0] = torch_env(
            "/v",
            "2.11.0+cu130",
            Some("13.0"),
            &[("torchaudio", "2.11.0+cu126")],
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("another CUDA"));
    }

    #[test]
    fn build_hash_labels_are_not_cuda_variants() {
        let mut s = h200();
        s.python_envs[0] = torch_env(
            "/v",
            "2.6.0a0+ecf3bae40a.nv25.01",
            Some("12.8"),
            &[("torchvision", "0.21.0a0+7c3b8f0")],
        );
        assert!(run(&RULE, &s).is_empty(), "{:?}", run(&RULE, &s));
    }

    #[test]
    fn a_patch_release_of_the_paired_companion_is_fine() {
        let mut s = h200();
        s.python_envs[0] = torch_env(
            "/v",
            "2.11.0+cu130",
            Some("13.0"),
            &[("torchaudio", "2.11.1"), ("torchvision", "0.26.1+cu130")],
        );
        assert!(run(&RULE, &s).is_empty(), "{:?}", run(&RULE, &s));
    }

    #[test]
    fn torchaudio_from_another_release_does_not_blame_torchvision() {
        let mut s = h200();
        s.python_envs[0] = torch_env(
            "/v",
            "2.11.0+cu130",
            Some("13.0"),
            &[("torchaudio", "2.10.0+cu130")],
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(!f[0].cause.contains("torchvision"), "{}", f[0].cause);
    }
}
