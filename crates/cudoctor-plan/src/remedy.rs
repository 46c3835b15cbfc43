//! The repair of one environment: the torch build to move to (keeping the installed release
//! when one of its variants fits), with torchvision/torchaudio paired to it, as one command set
//! in the environment's own installer. `check`'s fixes and `plan` both come from here.

use serde::Serialize;

use cudoctor_kb::{Kb, TorchRelease, TorchVariant, TorchVersion};

use crate::commands::PYTORCH_INDEX;
use crate::companions::{companion_fit, CompanionFit};
use crate::fit::Fit;
use crate::fix::FixStep;
use crate::model::{PlanInput, TargetEnv};
use crate::{resolve_gpus, PlanError};

/// The build an environment should move to, and the commands that get it there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Remedy {
    /// The torch release ("2.11.0") and its variant ("cu126").
    pub torch: String,
    pub variant: String,
    /// The companions the commands install (only those the environment has).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torchvision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torchaudio: Option<String>,
    /// True when the installed torch stays and only its companions change.
    pub keeps_torch: bool,
    pub steps: Vec<FixStep>,
}

impl Remedy {
    /// It installs another torch build (not only companions, and not the "nothing fits" note).
    pub fn moves_torch(&self) -> bool {
        !self.keeps_torch && !self.variant.is_empty()
    }

    /// The CUDA major torch ends at when this remedy moves it (13 of "cu130"); None when it
    /// does not move torch or moves it to a CPU build.
    pub fn moves_to_major(&self) -> Option<u32> {
        self.moves_torch()
            .then(|| crate::frameworks::variant_major(&self.variant))
            .flatten()
    }
}

/// The remedy for `input.current` in `input.target` on this machine, or None when the installed
/// build already fits and its companions pair (nothing to repair) or no torch is installed.
pub fn remedy(kb: &Kb, input: &PlanInput) -> Result<Option<Remedy>, PlanError> {
    let (Some(cur), Some(target)) = (&input.current, &input.target) else {
        return Ok(None);
    };
    let Some(torch_text) = &cur.torch else {
        return Ok(None);
    };
    let Ok(installed) = torch_text.parse::<TorchVersion>() else {
        return Ok(None);
    };
    let gpus = resolve_gpus(kb, &input.gpus)?;
    let driver = input.driver.as_ref();
    let tag = crate::current::build_tag(&installed, cur.torch_cuda);
    let release = kb.torch(&installed.public());
    let machine_has_gpu = !gpus.is_empty() || driver.is_some();
    // A driver that cannot drive these GPUs judges no build: the driver has to change first
    // (plan says so), and the build is judged as `search` judges it, without that driver.
    let range = crate::platform::driver_range(&gpus);
    let driver = driver.filter(|d| range.rejects(kb, input.platform, d).is_none());
    let fits_now = !cur.fails_here
        && match (release, tag.as_deref()) {
            // Every release has a CPU build; it fits a machine without NVIDIA driver or GPU.
            (Some(_), Some("cpu")) => !machine_has_gpu,
            (Some(r), Some(t)) => r.variant(t).is_some_and(|v| {
                (t != "cpu" || !machine_has_gpu)
                    && Fit::new(kb, input.platform, r, v, driver, &gpus)
                        .rejection(driver)
                        .is_none()
            }),
            _ => false,
        };
    if fits_now && tag.as_deref() == Some("cpu") {
        // Companions of a CPU build on a CPU machine: FW002 judges them; no build changes.
        return Ok(None);
    }
    let choice: Option<(&TorchRelease, &TorchVariant)> = if fits_now {
        release
            .zip(tag.as_deref())
            .and_then(|(r, t)| Some((r, r.variant(t)?)))
    } else {
        // The installed release first (keep what works), then the newest that fits.
        let mut order: Vec<&TorchRelease> = release.into_iter().collect();
        order.extend(
            kb.torch_releases()
                .iter()
                .rev()
                .filter(|r| release.is_none_or(|x| !std::ptr::eq(*r, x))),
        );
        let mut found = crate::choose::search(kb, &order, input, driver, &gpus).chosen;
        let same_build = |f: &Fit| {
            Some(f.release.version.as_str()) == release.map(|r| r.version.as_str())
                && Some(f.variant.tag.as_str()) == tag.as_deref()
        };
        if cur.fails_here && found.as_ref().is_some_and(same_build) {
            // The tables call the installed build fitting but it was seen to fail: the next.
            order.retain(|r| release.is_none_or(|x| !std::ptr::eq(*r, x)));
            found = crate::choose::search(kb, &order, input, driver, &gpus).chosen;
        }
        found.map(|f| (f.release, f.variant))
    };
    let Some((r, v)) = choice else {
        if fits_now {
            return Ok(None);
        }
        return Ok(Some(Remedy {
            torch: String::new(),
            variant: String::new(),
            torchvision: None,
            torchaudio: None,
            keeps_torch: false,
            steps: vec![FixStep::Prose(
                "No torch build in the knowledge base runs on this driver and these GPUs for this Python: see `cudoctor plan` for the driver upgrade that allows one".into(),
            )],
        }));
    };
    let keeps_torch = fits_now;
    if keeps_torch
        && ["torchvision", "torchaudio"]
            .iter()
            .all(|n| !companion_of(kb, cur, n, &r.version, &v.tag).is_some_and(|f| f.is_wrong()))
    {
        return Ok(None);
    }
    // The chooser picked the installed build itself (on a machine whose driver cannot be
    // read, the installed release and variant come first).
    let installed_is_choice =
        tag.as_deref() == Some(v.tag.as_str()) && release.is_some_and(|x| std::ptr::eq(x, r));
    Ok(Some(build_remedy(
        kb,
        (r, v),
        cur,
        target,
        keeps_torch,
        installed_is_choice,
        torch_text,
    )))
}

/// How the installed companion `name` stands with torch `release` in variant `tag` (the one
/// judgement check and plan make); None when it is not installed.
fn companion_of(
    kb: &Kb,
    cur: &crate::model::CurrentEnv,
    name: &str,
    release: &str,
    tag: &str,
) -> Option<CompanionFit> {
    let installed = cur.companion(name)?;
    Some(companion_fit(
        kb,
        name,
        installed,
        cur.requires_of(name),
        release,
        Some(tag),
    ))
}

fn build_remedy(
    kb: &Kb,
    (r, v): (&TorchRelease, &TorchVariant),
    cur: &crate::model::CurrentEnv,
    target: &TargetEnv,
    keeps_torch: bool,
    installed_is_choice: bool,
    torch_text: &str,
) -> Remedy {
    let tag = v.tag.as_str();
    // The installed torch is the chosen build and the default index's build of this variant
    // (no local label, the release's default variant there): its companions come from the same
    // index, unlabelled, so the installed torch satisfies the pin and is not downloaded again.
    let from_default_index = (keeps_torch || installed_is_choice)
        && !torch_text.contains('+')
        && r.pypi_default.as_deref() == Some(tag);
    // Otherwise a pin with the variant's local label names exactly one wheel, so pip and uv
    // replace an installed build of the same release but another variant instead of keeping it.
    let pin = |name: &str, version: &str| {
        if from_default_index {
            format!("{name}=={version}")
        } else {
            format!("{name}=={version}+{tag}")
        }
    };
    let mut pins = vec![if keeps_torch {
        format!("torch=={torch_text}")
    } else {
        pin("torch", &r.version)
    }];
    let mut steps = Vec::new();
    let mut torchvision = None;
    let mut torchaudio = None;
    let mut remove = Vec::new();
    let mut notes = Vec::new();
    for name in ["torchvision", "torchaudio"] {
        let Some(fit) = companion_of(kb, cur, name, &r.version, tag) else {
            continue;
        };
        let installed = cur.companion(name).unwrap_or_default();
        let pair = match name {
            "torchvision" => r.torchvision.as_ref(),
            _ => r.torchaudio.as_ref(),
        };
        match pair {
            // The pair moves with torch (a variant of its own), or replaces a wrong one; one
            // that pairs with the torch that stays is left as it is (never downgraded).
            Some(p) if !keeps_torch || fit.is_wrong() => {
                pins.push(pin(name, p));
                match name {
                    "torchvision" => torchvision = Some(p.clone()),
                    _ => torchaudio = Some(p.clone()),
                }
            }
            Some(_) => {}
            // No release is paired with this torch: one that works with it stays (its own
            // metadata accepts it); one that does not is removed, with the reason.
            None if fit.is_wrong() => {
                remove.push(name);
                let absent = match name {
                    "torchaudio" => r.torchaudio_absent.as_deref(),
                    _ => None,
                };
                notes.push(FixStep::Prose(format!(
                    "{}; {}. Remove it:",
                    fit.describe(name, installed, &r.version),
                    absent.map_or_else(
                        || format!(
                            "no {name} paired with torch {} is in the knowledge base",
                            r.version
                        ),
                        |why| format!("no {name} is made for torch {}: {why}", r.version)
                    )
                )));
            }
            None => notes.push(FixStep::Prose(format!(
                "It stays: {}",
                fit.describe(name, installed, &r.version)
            ))),
        }
    }
    let index = (!from_default_index).then(|| format!("{PYTORCH_INDEX}/{tag}"));
    let op = crate::Install::pins(pins).index(index);
    let install = target.install(&op);
    let project_note = target.project_note(&op);
    if target.conda_pytorch && target.installer == crate::Installer::Conda && !keeps_torch {
        steps.push(FixStep::Prose(
            "torch here is conda's `pytorch`, so conda installs the build (pip over it would leave two records of one package): conda-forge builds PyTorch's releases as its own packages; where the environment's channels have no such build, conda says so and changes nothing".into(),
        ));
    }
    steps.insert(0, target.step(install));
    if let Some(n) = project_note {
        // A conda environment file is edited by hand before its command applies it.
        let edit_first = target
            .project
            .as_ref()
            .is_some_and(|p| p.kind == cudoctor_snapshot::ProjectKind::Conda);
        steps.insert(usize::from(!edit_first), n);
    }
    steps.extend(notes);
    if !remove.is_empty() {
        steps.push(target.step(target.uninstall(&remove)));
    }
    Remedy {
        torch: r.version.clone(),
        variant: tag.to_string(),
        torchvision,
        torchaudio,
        keeps_torch,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CurrentEnv, Installer};

    fn input(
        driver: &str,
        gpus: &[&str],
        torch: &str,
        vision: Option<&str>,
        installer: Installer,
    ) -> PlanInput {
        PlanInput {
            driver: Some(driver.parse().unwrap()),
            gpus: gpus.iter().map(|g| g.to_string()).collect(),
            python: Some("3.12".into()),
            current: Some(CurrentEnv {
                torch: Some(torch.into()),
                torchvision: vision.map(str::to_string),
                torchaudio: None,
                torch_cuda: None,
                ..Default::default()
            }),
            target: Some(TargetEnv {
                prefix: "/opt/my venv".into(),
                python: "/opt/my venv/bin/python".into(),
                installer,
                conda_pytorch: false,
                windows: false,
                project: None,
            }),
            ..PlanInput::default()
        }
    }

    #[test]
    fn a_fitting_env_needs_nothing() {
        let kb = Kb::embedded();
        let i = input(
            "580.95.05",
            &["9.0"],
            "2.11.0+cu130",
            Some("0.26.0+cu130"),
            Installer::Pip,
        );
        assert_eq!(remedy(kb, &i).unwrap(), None);
    }

    #[test]
    fn a_wrong_companion_keeps_torch_and_pairs_the_companion() {
        let kb = Kb::embedded();
        let i = input(
            "580.95.05",
            &["9.0"],
            "2.11.0+cu130",
            Some("0.25.0+cu130"),
            Installer::Uv,
        );
        let r = remedy(kb, &i).unwrap().unwrap();
        assert!(r.keeps_torch);
        assert_eq!(
            r.steps,
            vec![FixStep::Shell("uv pip install --python '/opt/my venv/bin/python' torch==2.11.0+cu130 torchvision==0.26.0+cu130 --index-url https://download.pytorch.org/whl/cu130".into())]
        );
    }

    #[test]
    fn a_default_index_torch_keeps_its_index_for_the_companion() {
        // torch 2.7.1 from the default index is its cu126 build: the companion comes unlabelled
        // from the same index, and the installed torch satisfies its pin (no new download).
        let kb = Kb::embedded();
        let mut i = input(
            "580.95.05",
            &["9.0"],
            "2.7.1",
            Some("0.23.0"),
            Installer::Uv,
        );
        i.current.as_mut().unwrap().torch_cuda = Some("12.6".parse().unwrap());
        let r = remedy(kb, &i).unwrap().unwrap();
        assert!(r.keeps_torch);
        let want = vec![FixStep::Shell(
            "uv pip install --python '/opt/my venv/bin/python' torch==2.7.1 torchvision==0.22.1"
                .into(),
        )];
        assert_eq!(r.steps, want);
        // No driver to judge by: the installed build is still the choice, from the same index.
        i.driver = None;
        i.gpus.clear();
        assert_eq!(remedy(kb, &i).unwrap().unwrap().steps, want);
    }

    #[test]
    fn an_old_gpu_keeps_the_release_in_a_variant_that_reaches_it_with_its_companion() {
        let kb = Kb::embedded();
        let i = input(
            "580.95.05",
            &["6.1"],
            "2.11.0+cu130",
            Some("0.26.0+cu130"),
            Installer::Pip,
        );
        let r = remedy(kb, &i).unwrap().unwrap();
        assert_eq!((r.torch.as_str(), r.variant.as_str()), ("2.11.0", "cu126"));
        assert!(!r.keeps_torch);
        assert!(
            r.steps[0].contains("torchvision==0.26.0+cu126"),
            "{:?}",
            r.steps
        );
        assert!(
            r.steps[0].starts_with("'/opt/my venv/bin/python' -m pip install torch==2.11.0+cu126")
        );
    }

    #[test]
    fn a_companion_is_removed_only_when_it_does_not_work_with_the_torch_that_stays() {
        let kb = Kb::embedded();
        let mut i = input(
            "580.95.05",
            &["9.0"],
            "2.15.0",
            Some("0.28.0"),
            Installer::Uv,
        );
        let cur = i.current.as_mut().unwrap();
        cur.torch_cuda = Some("13.2".parse().unwrap());
        cur.torchaudio = Some("2.11.1".into());
        cur.requires
            .insert("torchaudio".into(), vec!["torch>=2.11".into()]);
        let r = remedy(kb, &i).unwrap().unwrap();
        assert!(r.keeps_torch);
        assert!(
            r.steps.iter().all(|s| !s.contains("uninstall")),
            "{:?}",
            r.steps
        );
        assert!(r.steps[0].contains("torchvision==0.29.2"), "{:?}", r.steps);
        assert!(!r.steps[0].contains("torchaudio"), "{:?}", r.steps);
        // torchaudio whose metadata refuses torch 2.15 (and no release paired with it): removed,
        // with its own requirement as the reason.
        let cur = i.current.as_mut().unwrap();
        cur.torchaudio = Some("2.10.0".into());
        cur.requires
            .insert("torchaudio".into(), vec!["torch==2.10.0".into()]);
        let r = remedy(kb, &i).unwrap().unwrap();
        let last = r.steps.last().unwrap();
        assert_eq!(
            last.text(),
            "uv pip uninstall --python '/opt/my venv/bin/python' torchaudio"
        );
        assert!(
            r.steps.iter().any(|s| s.contains("torch==2.10.0")),
            "{:?}",
            r.steps
        );
    }

    /// torch 2.5.1 (CUDA 12.4) as conda's `pytorch` in the conda env at `prefix`, beside a
    /// torchvision of another release, on one H100.
    fn conda_pytorch_input(prefix: &str) -> PlanInput {
        let mut i = input(
            "580.95.05",
            &["9.0"],
            "2.5.1",
            Some("0.19.0"),
            Installer::Conda,
        );
        i.current.as_mut().unwrap().torch_cuda = Some("12.4".parse().unwrap());
        let t = i.target.as_mut().unwrap();
        t.conda_pytorch = true;
        t.prefix = prefix.into();
        t.python = format!("{prefix}/bin/python");
        i
    }

    #[test]
    fn a_conda_pytorch_is_repaired_in_condas_terms() {
        // torch is conda's `pytorch` (conda-meta): the companion comes from conda, the torch
        // that stays is pinned so conda keeps it, and no pip command touches conda's packages.
        let kb = Kb::embedded();
        let mut i = conda_pytorch_input("/opt/conda/envs/ml");
        let r = remedy(kb, &i).unwrap().unwrap();
        assert!(r.keeps_torch);
        assert_eq!(
            r.steps[0].text(),
            "conda install -p /opt/conda/envs/ml pytorch==2.5.1 torchvision==0.20.1"
        );
        assert!(r.steps.iter().all(|s| !s.contains("pip")), "{:?}", r.steps);
        // A build that moves: conda's build of that kind, and why conda installs it.
        i.gpus = vec!["6.1".into()];
        i.current.as_mut().unwrap().torch = Some("2.11.0".into());
        i.current.as_mut().unwrap().torch_cuda = Some("13.0".parse().unwrap());
        i.current.as_mut().unwrap().torchvision = Some("0.26.0".into());
        let r = remedy(kb, &i).unwrap().unwrap();
        assert!(!r.keeps_torch);
        assert!(
            r.steps[0].starts_with("conda install -p /opt/conda/envs/ml 'pytorch==2.11.0=cuda*'"),
            "{:?}",
            r.steps
        );
        assert!(r.steps.iter().any(|s| s.contains("conda-forge builds")));
        // The uninstall of a conda companion is conda's too.
        assert_eq!(
            i.target.as_ref().unwrap().uninstall(&["torchaudio"]),
            "conda remove -p /opt/conda/envs/ml torchaudio"
        );
        // torch from pip in a conda env: the env's own pip, as before.
        let t = i.target.as_mut().unwrap();
        t.conda_pytorch = false;
        let r = remedy(kb, &i).unwrap().unwrap();
        assert!(
            r.steps[0].starts_with("/opt/conda/envs/ml/bin/python -m pip install"),
            "{:?}",
            r.steps
        );
    }

    #[test]
    fn an_environment_file_is_edited_and_applied() {
        let kb = Kb::embedded();
        let mut i = conda_pytorch_input("/w/env");
        let t = i.target.as_mut().unwrap();
        t.project = Some(cudoctor_snapshot::EnvProject {
            kind: cudoctor_snapshot::ProjectKind::Conda,
            root: "/w".into(),
            manifest: "/w/environment.yml".into(),
            lock: None,
        });
        let r = remedy(kb, &i).unwrap().unwrap();
        assert_eq!(
            r.steps[1].text(),
            "conda env update -p /w/env -f /w/environment.yml"
        );
        let note = r.steps[0].text();
        assert!(
            note.contains("/w/environment.yml")
                && note.contains("`pytorch==2.5.1`, `torchvision==0.20.1` in its `dependencies`"),
            "{note}"
        );
        // Wheels from pip in a conda env file: its `pip:` list, with the index.
        let t = i.target.as_mut().unwrap();
        t.conda_pytorch = false;
        i.current.as_mut().unwrap().torch = Some("2.11.0+cu130".into());
        i.current.as_mut().unwrap().torchvision = Some("0.25.0+cu130".into());
        let r = remedy(kb, &i).unwrap().unwrap();
        let note = r.steps[0].text();
        assert!(
            note.contains("`pip:` list")
                && note.contains("--index-url https://download.pytorch.org/whl/cu130"),
            "{note}"
        );
        assert!(r.steps.iter().all(|s| !s.contains("--prune")));
    }
}
