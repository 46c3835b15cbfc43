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
    let (public, label) = match pkg.version.split_once('+') {
        Some((p, l)) => (p, Some(l)),
        None => (pkg.version.as_str(), None),
    };
    let release = ctx.kb.torch(t.torch.public_version());
    let expected = release.and_then(|r| match name {
        "torchvision" => r.torchvision.clone(),
        _ => r.torchaudio.clone(),
    });
    let torch_label = t.torch.local_label();
    // A companion names torch's release by major.minor: torchaudio 2.11.1 requires torch>=2.11,
    // torchvision 0.29.1 accepts torch>=2.14.0. A patch difference is no mismatch.
    let version_wrong =
        expected
            .as_deref()
            .is_some_and(|e| match (major_minor(e), major_minor(public)) {
                (Some(want), Some(have)) => want != have,
                _ => false,
            });
    // Wheels from PyPI carry no label; NGC and source builds carry git hashes
    // ("2.6.0a0+ecf3bae40a.nv25.01", "0.21.0a0+7c3b8f0") that say nothing about CUDA. A mismatch
    // is only real when both carry a variant label.
    let label_wrong = matches!(
        (label, torch_label),
        (Some(a), Some(b)) if is_variant_label(a) && is_variant_label(b) && a != b
    );
    if !version_wrong && !label_wrong {
        return None;
    }
    let mut f = Finding::new(&RULE, "")
        .evidence(format!("torch {} in {}", t.torch.version, t.env.prefix))
        .evidence(format!("{name} {} in {}", pkg.version, pkg.location));
    if let Some(e) = &expected {
        f = f.evidence(format!(
            "torch {} was released with {name} {e} (knowledge base)",
            t.torch.public_version()
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

/// The major.minor of a release ("0.26.0" -> (0, 26), "0.21.0a0" -> (0, 21)).
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}

/// A local label that names a build variant: `cu130`, `cpu`, `rocm6.4`.
fn is_variant_label(label: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if label == "cpu" {
        return true;
    }
    if let Some(n) = label.strip_prefix("cu") {
        return digits(n);
    }
    label
        .strip_prefix("rocm")
        .is_some_and(|v| v.split('.').count() >= 2 && v.split('.').all(digits))
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
        assert!(is_variant_label("rocm6.4") && is_variant_label("cu118"));
        assert!(
            !is_variant_label("7c3b8f0") && !is_variant_label("cu") && !is_variant_label("rocm")
        );
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
