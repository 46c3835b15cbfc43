//! The snapshot's facts as the build chooser takes them: an environment as the target of
//! printed commands, what is installed in it, the platform of a host, and `plan`'s whole
//! question ([`PlanInput::from_snapshot`]) from a detected machine and what the user asked.

use cudoctor_kb::{CudaVersion, DriverVersion, Kb, Platform};
use cudoctor_snapshot::{Framework, PythonEnv, Snapshot, TorchBuild};

use crate::{BuildInput, InstalledToolkit, Installer, PlanInput};

/// An environment as the target of printed commands: its interpreter and its own installer
/// (uv in a uv-made venv without pip), so every fix is written by `cudoctor_plan`'s one writer.
pub fn target_env(env: &PythonEnv) -> crate::TargetEnv {
    crate::TargetEnv {
        prefix: env.prefix.clone(),
        python: env_python(env),
        installer: env.installer.as_ref().map(|i| i.kind).unwrap_or_default(),
        conda_pytorch: env.conda_packages.iter().any(|p| p.name == "pytorch"),
        windows: env.windows,
        project: env.project.clone(),
    }
}

/// The platform builds are chosen for on a host: check, explain and plan all ask this.
pub fn host_platform(host: &cudoctor_snapshot::HostFacts) -> cudoctor_kb::Platform {
    cudoctor_kb::Platform::of_host(&host.os, &host.arch, host.is_jetson())
}

/// The environment a user named with `--python` (the one found that way, when exactly one
/// was), as the target of printed commands; `None` when none or several were named.
pub fn named_target_env(snap: &Snapshot) -> Option<crate::TargetEnv> {
    let mut named = snap.python_envs.iter().filter(|e| e.named_by_option());
    match (named.next(), named.next()) {
        (Some(env), None) => Some(target_env(env)),
        _ => None,
    }
}

/// The version of `torch` as its installer recorded it (its dist-info beside it), else
/// torch/version.py's.
pub fn recorded_torch_version<'a>(env: &'a PythonEnv, torch: &'a TorchBuild) -> &'a str {
    env.packages
        .iter()
        .find(|p| p.name == "torch" && torch.path == format!("{}/torch", p.location))
        .map_or(&torch.version, |p| &p.version)
}

/// What the build chooser is told is installed in `env`. The torch version is the one its
/// installer recorded (dist-info), not torch/version.py's: PyPI's wheels carry no local label
/// (`2.7.1`, while version.py says `2.7.1+cu126`), and a pin of the installed torch must name what
/// the env's index serves, or the fix asks for a wheel from another index.
pub fn current_env(env: &PythonEnv, torch: &TorchBuild, fails_here: bool) -> crate::CurrentEnv {
    crate::CurrentEnv {
        torch: Some(recorded_torch_version(env, torch).to_string()),
        torchvision: env.package("torchvision").map(|p| p.version.clone()),
        torchaudio: env.package("torchaudio").map(|p| p.version.clone()),
        torch_cuda: torch.cuda.as_deref().and_then(|c| c.parse().ok()),
        fails_here,
        torch_wheels: torch_wheels(env),
        requires: ["torchvision", "torchaudio"]
            .into_iter()
            .filter(|n| env.package(n).is_some())
            .map(|n| (n.to_string(), declared_requires(env, n)))
            .filter(|(_, r)| !r.is_empty())
            .collect(),
        ..frameworks_env(env)
    }
}

/// The `Requires-Dist` lines the installed distribution `name` of `env` declares (its
/// dist-info, read by collect), as written; empty when unread.
pub fn declared_requires(env: &PythonEnv, name: &str) -> Vec<String> {
    env.declared
        .iter()
        .find(|d| d.package == name)
        .map(|d| d.requires.clone())
        .unwrap_or_default()
}

/// The environment's frameworks beside torch and its `nvidia-*` wheels of a CUDA major, as the
/// chooser takes them (`check`'s FW020 and `plan` judge the same).
pub fn frameworks_env(env: &PythonEnv) -> crate::CurrentEnv {
    let others = env
        .frameworks
        .iter()
        .filter(|b| b.framework != Framework::Torch)
        .filter_map(|b| other_build(env, b))
        .collect();
    let nvidia_wheels = env
        .packages
        .iter()
        .filter(|p| p.name.starts_with("nvidia-"))
        .filter_map(|p| {
            Some(crate::MajorWheel {
                major: crate::wheel_major(&p.name)?,
                name: p.name.clone(),
                version: p.version.clone(),
            })
        })
        .collect();
    crate::CurrentEnv {
        others,
        nvidia_wheels,
        ..Default::default()
    }
}

/// A framework build of `env` as the chooser moves it between CUDA majors; None without a
/// CUDA binding.
pub fn other_build(
    env: &PythonEnv,
    b: &cudoctor_snapshot::FrameworkBuild,
) -> Option<crate::OtherBuild> {
    let major = b.cuda.as_ref()?.major;
    let cuda_extras = match b.framework {
        Framework::Jax => {
            let mut majors: Vec<u32> = b
                .companions
                .iter()
                .filter(|c| c.required_by.starts_with("jax "))
                .filter_map(|c| c.requirement.parse::<cudoctor_types::Requirement>().ok())
                .flat_map(|r| r.marker_extras())
                .filter_map(|e| e.strip_prefix("cuda")?.parse().ok())
                .collect();
            majors.sort_unstable();
            majors.dedup();
            majors
        }
        _ => Vec::new(),
    };
    let major_distributions = match b.framework {
        Framework::Jax => vec![
            format!("jax-cuda{major}-plugin"),
            format!("jax-cuda{major}-pjrt"),
        ],
        Framework::Cupy => vec![b.package.clone()],
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|n| env.package(n).is_some())
    .collect();
    Some(crate::OtherBuild {
        framework: b.framework,
        version: b.version.clone(),
        package: b.package.clone(),
        cuda_major: major,
        cuda_extras,
        major_distributions,
    })
}

/// torch's CUDA wheels as its metadata names them, pinned at their installed versions.
fn torch_wheels(env: &PythonEnv) -> Vec<String> {
    let Some(t) = env
        .frameworks
        .iter()
        .find(|b| b.framework == Framework::Torch)
    else {
        return Vec::new();
    };
    let mut pins: Vec<String> = t
        .needs
        .iter()
        .filter_map(|n| n.parse::<cudoctor_types::Requirement>().ok())
        .filter_map(|r| env.package(&r.name))
        .map(|p| format!("{}=={}", p.name, p.version))
        .collect();
    pins.sort();
    pins.dedup();
    pins
}

/// The interpreter fix commands name for an environment.
pub fn env_python(env: &PythonEnv) -> String {
    if env.windows {
        // A Windows environment's interpreter is the python.exe it was found by.
        return env
            .interpreter
            .clone()
            .unwrap_or_else(|| format!("{}\\python.exe", env.prefix.trim_end_matches('\\')));
    }
    format!("{}/bin/python", env.prefix.trim_end_matches('/'))
}

/// What the user asked `plan` beside the machine detected (its options, read): another
/// driver, other GPUs, another platform make the plan a what-if for another machine.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    /// `--driver`.
    pub driver: Option<DriverVersion>,
    /// `--gpu`, each as given.
    pub gpus: Vec<String>,
    /// The Python version asked for (`--python-version`).
    pub python_version: Option<String>,
    /// `--torch`.
    pub torch: Option<String>,
    /// `--cuda`.
    pub cuda: Option<CudaVersion>,
    /// `--installer`.
    pub installer: Option<Installer>,
    /// `--platform`.
    pub platform: Option<Platform>,
}

impl Asked {
    /// The plan is a what-if for another machine: other GPUs, another driver or another
    /// platform than the detected machine's. This machine's environment then gets no remedy,
    /// and its GPU access is not the plan's question.
    pub fn what_if(&self, snap: Option<&Snapshot>) -> bool {
        !self.gpus.is_empty() || self.driver.is_some() || self.other_platform(snap)
    }

    /// The platform asked for is another than the detected machine's (`plan --platform
    /// windows` on Linux). Without detection there is no machine to differ from.
    pub fn other_platform(&self, snap: Option<&Snapshot>) -> bool {
        match (self.platform, snap) {
            (Some(given), Some(snap)) => given != host_platform(&snap.host),
            _ => false,
        }
    }
}

impl PlanInput {
    /// The question for the torch build `torch` of `env` on the machine `snap`: this driver,
    /// these GPUs (each kind once), the env's Python, what is installed, and the env's own
    /// interpreter and installer for the commands. check's repairs ask it.
    pub fn for_env(
        kb: &Kb,
        snap: &Snapshot,
        env: &PythonEnv,
        torch: &TorchBuild,
        fails_here: bool,
    ) -> PlanInput {
        PlanInput {
            driver: machine_driver(snap),
            gpus: machine_gpus(kb, snap),
            python: env.python_version.clone(),
            current: Some(current_env(env, torch, fails_here)),
            target: Some(target_env(env)),
            platform: host_platform(&snap.host),
            ..Default::default()
        }
    }

    /// `plan`'s question: what the user asked, the rest from the detected machine (`None`:
    /// nothing detected). Its first finding (`first`) is check's to give.
    pub fn from_snapshot(kb: &Kb, snap: Option<&Snapshot>, asked: &Asked) -> PlanInput {
        // For another platform this machine's environment is neither judged nor fixed: its
        // interpreter path and commands are this machine's (a Linux venv's under a Windows
        // plan), and so are its driver (a Linux driver's number is no Windows driver's: they
        // are numbered apart), its Python version and its toolkits. Only what --driver and
        // --python say is taken then; the GPUs, memory and cores stay (the same hardware
        // under another system).
        let other_platform = asked.other_platform(snap);
        let this_machine = snap.filter(|_| !other_platform);
        let driver = asked
            .driver
            .clone()
            .or_else(|| this_machine.and_then(machine_driver));
        // The environment named with --python, else the first found (the active one).
        let env = snap.and_then(|s| {
            s.python_envs
                .iter()
                .find(|e| e.named_by_option())
                .or(s.primary_env())
        });
        let python = asked.python_version.clone().or_else(|| {
            env.filter(|_| !other_platform)
                .and_then(|e| e.python_version.clone())
        });
        // Without torch, the environment's other frameworks are still judged (their one CUDA
        // major).
        let current = env
            .filter(|_| !other_platform)
            .and_then(|e| match &e.torch {
                Some(t) => Some(current_env(e, t, false)),
                None => Some(frameworks_env(e)).filter(|c| !c.others.is_empty()),
            });
        // What-if planning asks about another machine: no remedy for this env.
        let target = env.filter(|_| !asked.what_if(snap)).map(target_env);
        PlanInput {
            driver,
            gpus: plan_gpus(kb, snap, asked),
            python,
            torch: asked.torch.clone(),
            cuda: asked.cuda,
            installer: asked.installer.unwrap_or_default(),
            installer_given: asked.installer.is_some(),
            current,
            build: snap.map(|s| build_input(s, this_machine)),
            target,
            platform: asked
                .platform
                .unwrap_or_else(|| snap.map(|s| host_platform(&s.host)).unwrap_or_default()),
            first: None,
        }
    }
}

/// The GPUs asked for, else the machine's, each kind once: the plan depends on the set of GPU
/// kinds; eight identical GPUs need one line, not eight.
fn plan_gpus(kb: &Kb, snap: Option<&Snapshot>, asked: &Asked) -> Vec<String> {
    if asked.gpus.is_empty() {
        return snap.map(|s| machine_gpus(kb, s)).unwrap_or_default();
    }
    let mut gpus = asked.gpus.clone();
    let mut seen: Vec<String> = Vec::new();
    gpus.retain(|g| {
        let new = !seen.contains(g);
        seen.push(g.clone());
        new
    });
    gpus
}

/// The GPUs the driver lists as the chooser takes them (`plan --gpu`), each kind once.
pub fn machine_gpus(kb: &Kb, snap: &Snapshot) -> Vec<String> {
    let mut gpus: Vec<String> = Vec::new();
    for g in &snap.driver.gpus {
        let key = crate::gpu_key(kb, &g.name, g.compute_capability.as_deref());
        if !gpus.contains(&key) {
            gpus.push(key);
        }
    }
    gpus
}

/// The driver's version, where it reads as one.
fn machine_driver(snap: &Snapshot) -> Option<DriverVersion> {
    snap.driver.version.as_ref()?.value.parse().ok()
}

/// The machine's memory, cores and toolkits for the extension-build advice. This machine's
/// toolkits are no other platform's (a Linux /usr/local/cuda under a Windows plan): none is
/// installed there as far as the plan knows (`this_machine` is None then).
fn build_input(snap: &Snapshot, this_machine: Option<&Snapshot>) -> BuildInput {
    BuildInput {
        memory_gib: snap.host.memory_total_mib.map(|m| m as f64 / 1024.0),
        cores: snap.host.cpu_count,
        toolkits: this_machine
            .into_iter()
            .flat_map(|s| s.toolkit.toolkits.iter())
            .filter(|t| t.nvcc.is_some())
            .filter_map(|t| {
                Some(InstalledToolkit {
                    version: t.version.as_deref()?.parse().ok()?,
                    path: t.root.clone(),
                })
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_snapshot::Package;

    fn env_with(dist_version: &str, location: &str) -> (PythonEnv, TorchBuild) {
        let sp = "/venv/lib/python3.11/site-packages";
        let torch = TorchBuild {
            version: "2.7.1+cu126".into(),
            cuda: Some("12.6".into()),
            path: format!("{sp}/torch"),
            ..Default::default()
        };
        let env = PythonEnv {
            prefix: "/venv".into(),
            packages: vec![
                Package {
                    name: "torch".into(),
                    version: dist_version.into(),
                    location: location.into(),
                },
                Package {
                    name: "torchvision".into(),
                    version: "0.23.0".into(),
                    location: sp.into(),
                },
            ],
            torch: Some(torch.clone()),
            ..Default::default()
        };
        (env, torch)
    }

    #[test]
    fn the_chooser_is_told_the_torch_version_its_installer_recorded() {
        // PyPI's torch 2.7.1: dist-info 2.7.1, version.py 2.7.1+cu126.
        let (env, torch) = env_with("2.7.1", "/venv/lib/python3.11/site-packages");
        let cur = current_env(&env, &torch, false);
        assert_eq!(cur.torch.as_deref(), Some("2.7.1"));
        assert_eq!(cur.torch_cuda, Some("12.6".parse().unwrap()));
        assert_eq!(cur.torchvision.as_deref(), Some("0.23.0"));
        let keep = crate::Install::keep_torch(recorded_torch_version(&env, &torch));
        assert_eq!(keep.pins, ["torch==2.7.1"]);
        assert_eq!(keep.index_url, None, "PyPI's torch is kept from PyPI");
    }

    #[test]
    fn a_torch_record_of_another_site_directory_is_not_this_torchs() {
        let (env, torch) = env_with("2.9.0", "/home/u/.local/lib/python3.11/site-packages");
        assert_eq!(recorded_torch_version(&env, &torch), "2.7.1+cu126");
        let keep = crate::Install::keep_torch(recorded_torch_version(&env, &torch));
        assert_eq!(
            keep.index_url.as_deref(),
            Some("https://download.pytorch.org/whl/cu126")
        );
    }

    /// A Linux machine with two H100s on driver 580 and the venv of `env_with`.
    fn machine() -> Snapshot {
        let (env, _) = env_with("2.7.1", "/venv/lib/python3.11/site-packages");
        let h100 = cudoctor_snapshot::Gpu {
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: Some("9.0".into()),
            ..Default::default()
        };
        let mut snap = Snapshot::default();
        snap.host.os = "linux".into();
        snap.host.arch = "x86_64".into();
        snap.driver.version = Some(cudoctor_snapshot::Sourced::new("580.95.05".into(), "test"));
        snap.driver.gpus = vec![h100.clone(), h100];
        snap.python_envs = vec![env];
        snap
    }

    #[test]
    fn the_plan_asks_of_the_detected_machine_what_the_user_did_not_say() {
        let kb = Kb::embedded();
        let snap = machine();
        let input = PlanInput::from_snapshot(kb, Some(&snap), &Asked::default());
        assert_eq!(
            input.gpus.len(),
            1,
            "two H100s are one kind: {:?}",
            input.gpus
        );
        assert_eq!(input.driver, "580.95.05".parse().ok());
        assert_eq!(
            input.target.as_ref().map(|t| t.prefix.as_str()),
            Some("/venv")
        );
        assert_eq!(
            input.current.as_ref().and_then(|c| c.torch.as_deref()),
            Some("2.7.1")
        );
        // check's repair asks the same of this machine for its torch.
        let env = &snap.python_envs[0];
        let for_env = PlanInput::for_env(kb, &snap, env, env.torch.as_ref().unwrap(), false);
        assert_eq!(
            (&for_env.gpus, &for_env.driver),
            (&input.gpus, &input.driver)
        );
        // Another driver is a what-if: no remedy for this environment.
        let asked = Asked {
            driver: "535.104.05".parse().ok(),
            ..Asked::default()
        };
        let what_if = PlanInput::from_snapshot(kb, Some(&snap), &asked);
        assert_eq!(what_if.driver, asked.driver);
        assert!(what_if.target.is_none());
        assert!(what_if.current.is_some(), "the environment is still judged");
        // Another platform: this machine's environment is neither judged nor fixed.
        let asked = Asked {
            platform: Some(Platform::Windows),
            ..Asked::default()
        };
        let other = PlanInput::from_snapshot(kb, Some(&snap), &asked);
        assert!(other.current.is_none() && other.target.is_none() && other.driver.is_none());
        assert_eq!(
            other.gpus, input.gpus,
            "the same hardware under another system"
        );
    }
}
