//! The frameworks beside torch in one environment (JAX, CuPy, ...): which of their builds shares
//! the CUDA major torch ends at, and the one command set that leaves the environment on that
//! major. `check` (FW020) and `plan` both answer from here, so they give the same commands.

use serde::{Deserialize, Serialize};

use cudoctor_kb::Kb;
use cudoctor_snapshot::Framework;

use crate::fix::FixStep;
use crate::install::Install;
use crate::model::{CurrentEnv, TargetEnv};
use crate::remedy::Remedy;

/// A framework build beside torch, as far as moving it to another CUDA major needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherBuild {
    pub framework: Framework,
    pub version: String,
    /// The distribution its CUDA binding was read from ("jax-cuda12-plugin", "cupy-cuda12x").
    pub package: String,
    pub cuda_major: u32,
    /// The majors of the `cudaNN` extras its metadata offers (jax's `cuda12`, `cuda13`).
    #[serde(default)]
    pub cuda_extras: Vec<u32>,
    /// Its installed distributions named for its major, which go when it moves
    /// (jax-cuda12-plugin, jax-cuda12-pjrt; cupy-cuda12x).
    #[serde(default)]
    pub major_distributions: Vec<String>,
}

impl OtherBuild {
    /// "JAX 0.10.2".
    pub fn label(&self) -> String {
        format!("{} {}", self.framework.name(), self.version)
    }
}

/// An installed `nvidia-*` wheel named for a CUDA major ("nvidia-cudnn-cu12").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MajorWheel {
    pub name: String,
    pub version: String,
    pub major: u32,
}

/// The major of a wheel named for one (`-cu12`, `-cu13`).
pub fn wheel_major(name: &str) -> Option<u32> {
    let (_, digits) = name.rsplit_once("-cu")?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The CUDA major the environment keeps: the one torch ends at (its remedy's variant when the
/// remedy moves it, else its own build's). Without a CUDA torch (a CPU torch, or none), the
/// major of the other frameworks' builds that this driver runs (`driver_major`: the highest
/// CUDA major it runs, None when unknown), that most of them share, else the newest; the
/// driver's own major when it runs none of them. None without any CUDA build.
pub fn kept_major(
    cur: &CurrentEnv,
    remedy: Option<&Remedy>,
    driver_major: Option<u32>,
) -> Option<u32> {
    if let Some(r) = remedy.filter(|r| r.moves_torch()) {
        return r.moves_to_major();
    }
    let torch = cur.torch_major();
    if torch.is_some() {
        return torch;
    }
    let mut majors: Vec<u32> = cur.others.iter().map(|b| b.cuda_major).collect();
    majors.sort_unstable();
    majors.dedup();
    // A driver that runs none of them: the major it runs, which the builds move to.
    if let Some(d) = driver_major.filter(|d| !majors.is_empty() && majors.iter().all(|m| m > d)) {
        return Some(d);
    }
    majors.into_iter().max_by_key(|m| {
        (
            driver_major.is_none_or(|d| *m <= d),
            cur.others.iter().filter(|b| b.cuda_major == *m).count(),
            *m,
        )
    })
}

/// 13 of "cu130", 12 of "cu126"; None for "cpu".
pub(crate) fn variant_major(tag: &str) -> Option<u32> {
    let d = tag.strip_prefix("cu")?;
    if d.len() < 3 || !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    d[..d.len() - 1].parse().ok()
}

/// The same framework built for CUDA `major`, as what to install and what to remove first,
/// when its distribution names say which one that is: JAX's `jax[cudaNN]` extra (offered only
/// where this jax's metadata has it and the knowledge base knows the plugin of that release is
/// served for this Python), CuPy's `cupy-cudaNNx`. `Err` says, in words, why no such build is
/// named.
pub fn build_for_major(
    kb: &Kb,
    b: &OtherBuild,
    python: Option<&str>,
    major: u32,
) -> Result<(Vec<String>, Vec<String>), String> {
    match b.framework {
        Framework::Jax => {
            let extra = format!("cuda{major}");
            if !b.cuda_extras.contains(&major) {
                return Err(format!(
                    "jax {}'s metadata has no {extra} extra: install JAX for CUDA {major} in an environment of its own (uv venv / python -m venv)",
                    b.version
                ));
            }
            let python = python.map(|p| {
                p.trim_end_matches('t')
                    .split('.')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(".")
            });
            let plugin = format!("jax-cuda{major}-plugin");
            match python
                .as_deref()
                .and_then(|py| kb.jax_cuda_plugin_exists(major, &b.version, py))
            {
                Some(true) => {}
                Some(false) => {
                    return Err(format!(
                        "no {plugin} {} is served for Python {}, so JAX {} has no CUDA {major} build to install here: first install JAX for CUDA {major} in an environment of its own, at a release that has it",
                        b.version,
                        python.unwrap_or_default(),
                        b.version
                    ))
                }
                None => {
                    return Err(format!(
                        "whether {plugin} {} exists for Python {} is not in the knowledge base: first check with `uv pip install --dry-run 'jax[{extra}]=={}'` before moving JAX to CUDA {major}, or give it an environment of its own",
                        b.version,
                        python.as_deref().unwrap_or("(unknown)"),
                        b.version
                    ))
                }
            }
            Ok((
                vec![format!("jax[{extra}]=={}", b.version)],
                b.major_distributions.clone(),
            ))
        }
        // With its `ctk` extra: CuPy's own metadata ("install this package together with all
        // needed CUDA components from PyPI by passing the [ctk] tag", cupy-cuda13x 14.2.0), so
        // libraries torch's wheels do not bring (cuRAND beside torch 2.15) come too. A release
        // without the extra installs the same with a warning.
        Framework::Cupy => Ok((
            vec![format!("cupy-cuda{major}x[ctk]")],
            b.major_distributions.clone(),
        )),
        _ => Err(format!(
            "{} has no build told apart by its distribution name: install it in an environment of its own (uv venv / python -m venv)",
            b.framework.name()
        )),
    }
}

/// One framework beside torch, against the major the environment keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrameworkFit {
    /// "JAX 0.10.2".
    pub build: String,
    pub cuda_major: u32,
    /// What it moves to ("jax[cuda13]==0.10.2"); empty when it already shares the major or
    /// has no build of it.
    pub install: Vec<String>,
    /// Why it cannot stay in this environment on the kept major, when no build is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub separate: Option<String>,
}

impl FrameworkFit {
    pub fn shares(&self, keep: u32) -> bool {
        self.cuda_major == keep
    }
}

/// The environment on one CUDA major: each framework's place on it, and the commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OneMajor {
    pub keep: u32,
    /// Whether the environment has torch (the major is torch's), or only other frameworks.
    pub torch: bool,
    pub frameworks: Vec<FrameworkFit>,
    /// Empty when every build already shares `keep` and no wheel of another major is there.
    pub steps: Vec<FixStep>,
}

/// The environment of `cur` (frameworks beside torch, its `nvidia-*` wheels) moved onto CUDA
/// `keep`: every other build to its build for `keep` (or an environment of its own), the other
/// majors' wheels removed, and the kept major's wheels put back over the files they shared.
/// `torch_moves` is torch's own remedy when that moves torch to `keep`: its commands are that
/// remedy's, not repeated here, and run after these.
pub fn one_major(
    kb: &Kb,
    cur: &CurrentEnv,
    python: Option<&str>,
    target: &TargetEnv,
    keep: u32,
    torch_moves: Option<&Remedy>,
) -> OneMajor {
    let mut frameworks = Vec::new();
    let mut install: Vec<String> = Vec::new();
    let mut remove: Vec<String> = Vec::new();
    let mut separate: Vec<String> = Vec::new();
    for b in &cur.others {
        let mut fit = FrameworkFit {
            build: b.label(),
            cuda_major: b.cuda_major,
            install: Vec::new(),
            separate: None,
        };
        if b.cuda_major != keep {
            match build_for_major(kb, b, python, keep) {
                Ok((i, r)) => {
                    fit.install = i.clone();
                    install.extend(i);
                    remove.extend(r);
                }
                Err(why) => {
                    separate.push(why.clone());
                    fit.separate = Some(why);
                }
            }
        }
        frameworks.push(fit);
    }
    let foreign: Vec<&MajorWheel> = cur
        .nvidia_wheels
        .iter()
        .filter(|w| w.major != keep)
        .collect();
    let torch_moves = torch_moves.filter(|r| r.moves_torch());
    let mut steps = Vec::new();
    if install.is_empty() && separate.is_empty() && foreign.is_empty() {
        return OneMajor {
            keep,
            torch: cur.torch.is_some(),
            frameworks,
            steps,
        };
    }
    // When torch moves, this runs first: its own fix then installs over a consistent set.
    steps.push(FixStep::Prose(match torch_moves {
        None => format!("Keep CUDA {keep} in this environment:"),
        Some(r) => format!(
            "Keep CUDA {keep} in this environment, before torch's own fix (torch {} {}) moves torch to it:",
            r.torch, r.variant
        ),
    }));
    steps.extend(separate.into_iter().map(FixStep::Prose));
    remove.extend(foreign.iter().map(|w| w.name.clone()));
    let mut seen = Vec::new();
    remove.retain(|r| {
        let new = !seen.contains(r);
        seen.push(r.clone());
        new
    });
    if !remove.is_empty() {
        steps.push(
            target.step(target.uninstall(&remove.iter().map(String::as_str).collect::<Vec<_>>())),
        );
    }
    if !install.is_empty() {
        steps.push(target.step(target.install(&Install::pins(install))));
    }
    // The wheels of both majors share folders (cuDNN, NCCL, NVSHMEM carry the major in their
    // name, not in their files' paths): removing one major's takes files the other's
    // registered, so the kept major's are put back as installed. torch's own pins when torch
    // stays; every installed wheel of the kept major when torch moves to it.
    // torch stays on its major only when no remedy moves it and that major is the kept one (a
    // what-if plan for other GPUs moves torch without a remedy of this environment).
    let torch_stays = torch_moves.is_none() && cur.torch_major().is_none_or(|m| m == keep);
    if !foreign.is_empty() {
        let pins: Vec<String> = if torch_stays {
            cur.torch_wheels.clone()
        } else {
            cur.nvidia_wheels
                .iter()
                .filter(|w| w.major == keep)
                .map(|w| format!("{}=={}", w.name, w.version))
                .collect()
        };
        if !pins.is_empty() {
            steps.push(FixStep::Prose(format!(
                "then put back {} CUDA wheels over the files the others overwrote:",
                if torch_stays {
                    "torch's own"
                } else {
                    "the kept"
                }
            )));
            steps.push(target.step(target.install(&Install {
                reinstall: true,
                no_deps: true,
                ..Install::pins(pins)
            })));
        }
    }
    OneMajor {
        keep,
        torch: cur.torch.is_some(),
        frameworks,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Installer;

    fn jax12(version: &str) -> OtherBuild {
        OtherBuild {
            framework: Framework::Jax,
            version: version.into(),
            package: "jax-cuda12-plugin".into(),
            cuda_major: 12,
            cuda_extras: vec![12, 13],
            major_distributions: vec!["jax-cuda12-plugin".into(), "jax-cuda12-pjrt".into()],
        }
    }

    fn env() -> (CurrentEnv, TargetEnv) {
        let cur = CurrentEnv {
            torch: Some("2.11.0+cu130".into()),
            torch_cuda: Some("13.0".parse().unwrap()),
            others: vec![jax12("0.10.2")],
            nvidia_wheels: vec![
                MajorWheel {
                    name: "nvidia-cudnn-cu12".into(),
                    version: "9.28.0.42".into(),
                    major: 12,
                },
                MajorWheel {
                    name: "nvidia-cudnn-cu13".into(),
                    version: "9.19.0.56".into(),
                    major: 13,
                },
            ],
            torch_wheels: vec!["nvidia-cudnn-cu13==9.19.0.56".into()],
            ..Default::default()
        };
        (cur, TargetEnv::at("/opt/venv", Installer::Pip))
    }

    #[test]
    fn majors_of_wheels_and_variants() {
        assert_eq!(wheel_major("nvidia-cudnn-cu12"), Some(12));
        assert_eq!(wheel_major("nvidia-cuda-runtime"), None);
        assert_eq!(wheel_major("nvidia-nccl-cu"), None);
        assert_eq!(variant_major("cu130"), Some(13));
        assert_eq!(variant_major("cu126"), Some(12));
        assert_eq!(variant_major("cpu"), None);
        let (cur, _) = env();
        assert_eq!(kept_major(&cur, None, None), Some(13));
    }

    #[test]
    fn without_torch_the_kept_major_is_one_the_driver_runs() {
        let cupy = |major: u32| OtherBuild {
            framework: Framework::Cupy,
            version: "14.2.0".into(),
            package: format!("cupy-cuda{major}x"),
            cuda_major: major,
            ..Default::default()
        };
        let cur = |others: Vec<OtherBuild>| CurrentEnv {
            others,
            ..Default::default()
        };
        // The newest of a tie, the one most builds share, the one the driver runs.
        let two = cur(vec![jax12("0.10.2"), cupy(13)]);
        assert_eq!(kept_major(&two, None, None), Some(13));
        assert_eq!(kept_major(&two, None, Some(13)), Some(13));
        assert_eq!(kept_major(&two, None, Some(12)), Some(12));
        let three = cur(vec![jax12("0.10.2"), cupy(12), cupy(13)]);
        assert_eq!(kept_major(&three, None, None), Some(12));
        // A driver that runs none of them: the major it runs.
        assert_eq!(kept_major(&cur(vec![cupy(13)]), None, Some(12)), Some(12));
        assert_eq!(kept_major(&cur(vec![]), None, Some(12)), None);
        // A CPU torch binds no major: the frameworks decide.
        let cpu = CurrentEnv {
            torch: Some("2.15.0+cpu".into()),
            ..cur(vec![cupy(12)])
        };
        assert_eq!(kept_major(&cpu, None, Some(13)), Some(12));
    }

    #[test]
    fn jax_moves_to_torchs_major_and_torchs_wheels_come_back() {
        let (cur, target) = env();
        let m = one_major(Kb::embedded(), &cur, Some("3.12.3"), &target, 13, None);
        let text: Vec<&str> = m.steps.iter().map(|s| s.text()).collect();
        assert_eq!(
            text,
            [
                "Keep CUDA 13 in this environment:",
                "/opt/venv/bin/python -m pip uninstall -y jax-cuda12-plugin jax-cuda12-pjrt nvidia-cudnn-cu12",
                "/opt/venv/bin/python -m pip install 'jax[cuda13]==0.10.2'",
                "then put back torch's own CUDA wheels over the files the others overwrote:",
                "/opt/venv/bin/python -m pip install --force-reinstall --no-deps nvidia-cudnn-cu13==9.19.0.56",
            ]
        );
        assert_eq!(m.frameworks[0].install, ["jax[cuda13]==0.10.2"]);
    }

    #[test]
    fn a_jax_without_a_plugin_of_that_major_gets_an_environment_of_its_own() {
        let (mut cur, target) = env();
        cur.others = vec![jax12("0.7.1")];
        let m = one_major(Kb::embedded(), &cur, Some("3.12"), &target, 13, None);
        assert!(m.frameworks[0].install.is_empty());
        assert!(m.frameworks[0]
            .separate
            .as_deref()
            .is_some_and(|w| w.contains("no jax-cuda13-plugin 0.7.1 is served for Python 3.12")));
    }

    #[test]
    fn one_major_needs_no_steps() {
        let (mut cur, target) = env();
        cur.others[0].cuda_major = 13;
        cur.nvidia_wheels.retain(|w| w.major == 13);
        let m = one_major(Kb::embedded(), &cur, Some("3.12"), &target, 13, None);
        assert!(m.steps.is_empty());
        assert!(m.frameworks[0].shares(13));
    }

    #[test]
    fn when_torch_moves_the_kept_majors_wheels_are_put_back() {
        let (cur, target) = env();
        let r = Remedy {
            torch: "2.11.0".into(),
            variant: "cu126".into(),
            torchvision: None,
            torchaudio: None,
            keeps_torch: false,
            steps: vec![],
        };
        assert_eq!(kept_major(&cur, Some(&r), None), Some(12));
        let m = one_major(Kb::embedded(), &cur, Some("3.12"), &target, 12, Some(&r));
        let text: Vec<&str> = m.steps.iter().map(|s| s.text()).collect();
        assert_eq!(
            text,
            [
                "Keep CUDA 12 in this environment, before torch's own fix (torch 2.11.0 cu126) moves torch to it:",
                "/opt/venv/bin/python -m pip uninstall -y nvidia-cudnn-cu13",
                "then put back the kept CUDA wheels over the files the others overwrote:",
                "/opt/venv/bin/python -m pip install --force-reinstall --no-deps nvidia-cudnn-cu12==9.28.0.42",
            ]
        );
    }
}
