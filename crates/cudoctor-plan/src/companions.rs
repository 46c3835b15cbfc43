//! How torchvision and torchaudio stand with a torch release: the one judgement behind check's
//! FW002, plan's "This environment" and every remedy, so the three never tell different stories
//! about a companion, and no remedy removes or replaces one that works with the torch it ends at.

use cudoctor_kb::{Kb, TorchVersion};
use cudoctor_types::Requirement;
use serde::{Deserialize, Serialize};

/// A companion's standing with one torch build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum CompanionFit {
    /// The release series the knowledge base pairs with this torch, on the same variant.
    Paired,
    /// The knowledge base pairs no release of it with this torch, and its own metadata's
    /// `Requires-Dist` on torch (`requirement`) accepts this torch: it stays as it is.
    Accepted { requirement: String },
    /// Another release than the one paired with this torch (`pair`, when the knowledge base
    /// knows it), or one whose own metadata refuses this torch (`refused_by`).
    OtherRelease {
        pair: Option<String>,
        refused_by: Option<String>,
    },
    /// Its local label names another build variant than torch's (`+cu126` beside `+cu130`).
    OtherVariant { label: String, torch_label: String },
    /// Neither the knowledge base nor its metadata says: it is left as it is.
    Unknown,
}

impl CompanionFit {
    /// It has to change for this torch.
    pub fn is_wrong(&self) -> bool {
        matches!(
            self,
            CompanionFit::OtherRelease { .. } | CompanionFit::OtherVariant { .. }
        )
    }

    /// One line for a person: how `name installed` stands with `torch` (a version as installed
    /// or as planned).
    pub fn describe(&self, name: &str, installed: &str, torch: &str) -> String {
        match self {
            CompanionFit::Paired => format!("{name} {installed} pairs with torch {torch}"),
            CompanionFit::Accepted { requirement } => format!(
                "{name} {installed} works with torch {torch}: no {name} release is paired with it in the knowledge base, and its own metadata requires {requirement}, which torch {torch} meets"
            ),
            CompanionFit::OtherRelease {
                refused_by: Some(req),
                ..
            } => format!(
                "{name} {installed} does not work with torch {torch}: its own metadata requires {req}"
            ),
            CompanionFit::OtherRelease { pair: Some(p), .. } => format!(
                "{name} {installed} does not pair with torch {torch} (the pair is {name} {p}): importing it fails or misbehaves"
            ),
            CompanionFit::OtherRelease { pair: None, .. } => {
                format!("{name} {installed} does not pair with torch {torch}")
            }
            CompanionFit::OtherVariant { label, torch_label } => format!(
                "{name} {installed} is built for {label} but torch for {torch_label}: its CUDA ops fail to load"
            ),
            CompanionFit::Unknown => format!(
                "which {name} pairs with torch {torch} is not in the knowledge base and its metadata names no torch: it is left as it is"
            ),
        }
    }
}

/// The requirements on torch among a distribution's `Requires-Dist` lines whose marker holds
/// without extras (those naming an extra apply only when it was asked for).
fn torch_requirements(requires: &[String]) -> Vec<Requirement> {
    requires
        .iter()
        .filter_map(|l| l.parse::<Requirement>().ok())
        .filter(|r| r.name == "torch")
        .filter(|r| r.marker_extras().is_empty())
        .collect()
}

/// The release series of a version (`(2, 11)` of "2.11.1+cu130").
fn series(v: &str) -> Option<(u32, u32)> {
    let v: TorchVersion = v.parse().ok()?;
    Some((*v.parts.first()?, *v.parts.get(1)?))
}

/// A local label that names a build variant: `cu130`, `cpu`, `rocm6.4` (not a git hash).
pub(crate) fn is_variant_label(label: &str) -> bool {
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

/// How companion `name` (`torchvision` or `torchaudio`) at version `installed`, whose metadata
/// declares `requires` (its `Requires-Dist` lines), stands with torch `torch` (a release, with
/// or without a local label) of build variant `torch_tag` ("cu130", "cpu"; None when unknown).
///
/// The knowledge base's pairing decides where it has one (a companion is compiled against one
/// torch release; a patch release of the pair is the pair); where it records none, the
/// companion's own metadata does: `torch>=2.11` accepts 2.15. A variant label of another build
/// than torch's is wrong either way.
pub fn companion_fit(
    kb: &Kb,
    name: &str,
    installed: &str,
    requires: &[String],
    torch: &str,
    torch_tag: Option<&str>,
) -> CompanionFit {
    let public = torch.split_once('+').map_or(torch, |(p, _)| p);
    let release = kb.torch(public);
    let pair = release.and_then(|r| match name {
        "torchvision" => r.torchvision.clone(),
        _ => r.torchaudio.clone(),
    });
    if let Some(p) = &pair {
        if let (Some(want), Some(have)) = (series(p), series(installed)) {
            if want != have {
                return CompanionFit::OtherRelease {
                    pair: pair.clone(),
                    refused_by: None,
                };
            }
        }
    }
    // A release right for torch, built for another variant.
    let label = installed.split_once('+').map(|(_, l)| l);
    if let (Some(a), Some(b)) = (label, torch_tag) {
        if is_variant_label(a) && is_variant_label(b) && a != b {
            return CompanionFit::OtherVariant {
                label: a.to_string(),
                torch_label: b.to_string(),
            };
        }
    }
    if pair.is_some() {
        return CompanionFit::Paired;
    }
    let reqs = torch_requirements(requires);
    if let Some(refused) = reqs.iter().find(|r| r.admits(public) == Some(false)) {
        return CompanionFit::OtherRelease {
            pair: None,
            refused_by: Some(refused.text.clone()),
        };
    }
    match reqs.iter().find(|r| r.admits(public) == Some(true)) {
        Some(r) => CompanionFit::Accepted {
            requirement: r.text.clone(),
        },
        None => CompanionFit::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(name: &str, installed: &str, requires: &[&str], torch: &str) -> CompanionFit {
        let requires: Vec<String> = requires.iter().map(|s| s.to_string()).collect();
        let tag = torch.split_once('+').map(|(_, l)| l);
        companion_fit(Kb::embedded(), name, installed, &requires, torch, tag)
    }

    #[test]
    fn a_generic_torchaudio_whose_metadata_accepts_torch_stays() {
        // torchaudio 2.11.1 (py3-none, `Requires-Dist: torch>=2.11`) beside torch 2.15.
        let f = fit("torchaudio", "2.11.1", &["torch>=2.11"], "2.15.0+cu130");
        assert_eq!(
            f,
            CompanionFit::Accepted {
                requirement: "torch>=2.11".into()
            }
        );
        assert!(!f.is_wrong());
        // Its metadata refusing the torch is a mismatch, named by that requirement.
        let f = fit("torchaudio", "2.10.0", &["torch==2.10.0"], "2.15.0+cu130");
        assert!(f.is_wrong(), "{f:?}");
        assert!(f
            .describe("torchaudio", "2.10.0", "2.15.0")
            .contains("torch==2.10.0"));
        // An extra's requirement is not the package's own.
        let f = fit(
            "torchaudio",
            "2.11.1",
            &["torch==2.10.0; extra == \"x\""],
            "2.15.0",
        );
        assert_eq!(f, CompanionFit::Unknown);
    }

    #[test]
    fn the_knowledge_base_pairing_decides_where_it_has_one() {
        assert_eq!(
            fit(
                "torchvision",
                "0.26.1+cu130",
                &["torch==2.11.0"],
                "2.11.0+cu130"
            ),
            CompanionFit::Paired
        );
        // A compiled companion of another release is wrong even where its metadata is loose.
        assert!(fit("torchvision", "0.25.0", &["torch>=2.10"], "2.11.0+cu130").is_wrong());
        assert!(matches!(
            fit("torchaudio", "2.11.0+cu126", &[], "2.11.0+cu130"),
            CompanionFit::OtherVariant { .. }
        ));
        // Build-hash labels say nothing of CUDA.
        assert_eq!(
            fit("torchvision", "0.26.0a0+7c3b8f0", &[], "2.11.0+cu130"),
            CompanionFit::Paired
        );
    }
}
