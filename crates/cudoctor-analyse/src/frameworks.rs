//! Views over the framework builds of the snapshot (torch, JAX, CuPy, TensorFlow, ONNX Runtime,
//! vLLM, SGLang) that the framework rules share: the CUDA a build binds, the pins of its
//! metadata that apply to this environment, and the build of the same framework for another
//! CUDA major, as install commands in the environment's installer.

use cudoctor_kb::CudaVersion;
use cudoctor_snapshot::{CompanionPin, Framework, FrameworkBuild, PythonEnv};
use cudoctor_types::Requirement;

use crate::{Context, Finding};

/// One framework build with its environment.
#[derive(Debug, Clone, Copy)]
pub struct FrameworkView<'a> {
    pub env: &'a PythonEnv,
    pub build: &'a FrameworkBuild,
}

impl FrameworkView<'_> {
    /// "JAX 0.10.2 (jax-cuda12-plugin) in /opt/venv".
    pub fn label(&self) -> String {
        let b = self.build;
        let name = b.framework.name();
        if b.package.eq_ignore_ascii_case(name) {
            format!("{name} {} in {}", b.version, self.env.prefix)
        } else {
            format!(
                "{name} {} ({}) in {}",
                b.version, b.package, self.env.prefix
            )
        }
    }

    /// The least CUDA the build needs: its major.minor, or major.0 where only the major is fixed.
    pub fn cuda_least(&self) -> Option<CudaVersion> {
        let c = self.build.cuda.as_ref()?;
        Some(CudaVersion::new(c.major, c.minor.unwrap_or(0)))
    }

    /// "CUDA 12.x (distribution name cupy-cuda12x)".
    pub fn cuda_evidence(&self) -> Option<String> {
        let c = self.build.cuda.as_ref()?;
        Some(format!(
            "{} built for CUDA {} ({})",
            self.label(),
            c.label(),
            c.source
        ))
    }
}

/// The CUDA majors the framework builds of `env` are bound to, each once, in order.
pub fn cuda_majors(env: &PythonEnv) -> Vec<u32> {
    let mut majors: Vec<u32> = env
        .frameworks
        .iter()
        .filter_map(|b| b.cuda.as_ref().map(|c| c.major))
        .collect();
    majors.sort_unstable();
    majors.dedup();
    majors
}

impl<'a> Context<'a> {
    /// Every framework build of every environment, in snapshot order.
    pub fn frameworks(&self) -> Vec<FrameworkView<'a>> {
        self.snap
            .python_envs
            .iter()
            .flat_map(|env| {
                env.frameworks
                    .iter()
                    .map(move |build| FrameworkView { env, build })
            })
            .collect()
    }

    /// The framework builds other than torch's (whose own rules judge torch).
    pub fn other_frameworks(&self) -> Vec<FrameworkView<'a>> {
        let mut all = self.frameworks();
        all.retain(|v| v.build.framework != Framework::Torch);
        all
    }

    /// The environment `env` as the chooser takes it, torch's repair (when it needs one) and the
    /// CUDA major the environment keeps (`cudoctor_plan::kept_major`, the one `plan` keeps):
    /// FW020 moves the other builds to it, and a build of another major is FW020's.
    pub fn env_cuda_major(
        &self,
        env: &PythonEnv,
    ) -> (
        cudoctor_plan::CurrentEnv,
        Option<cudoctor_plan::Remedy>,
        Option<u32>,
    ) {
        let torch = self
            .torch_envs()
            .into_iter()
            .find(|t| std::ptr::eq(t.env, env));
        let (cur, remedy) = match torch {
            Some(t) => (
                crate::context::current_env(env, t.torch, false),
                self.torch_remedy(t),
            ),
            None => (crate::context::frameworks_env(env), None),
        };
        let driver_major = self.driver_max_cuda().map(|(c, _)| c.major);
        let keep = cudoctor_plan::kept_major(&cur, remedy.as_ref(), driver_major);
        (cur, remedy, keep)
    }

    /// The environment `env` moved onto the CUDA major `keep` (`cudoctor_plan::one_major`, as
    /// `plan` writes it), with the distributions of the builds it moves off another major.
    pub fn env_on_major(
        &self,
        env: &PythonEnv,
        cur: &cudoctor_plan::CurrentEnv,
        keep: u32,
        torch_moves: Option<&cudoctor_plan::Remedy>,
    ) -> (cudoctor_plan::OneMajor, Vec<String>) {
        let one = cudoctor_plan::one_major(
            self.kb,
            cur,
            env.python_version.as_deref(),
            &self.target_env(env),
            keep,
            torch_moves,
        );
        let moved = cur
            .others
            .iter()
            .filter(|b| b.cuda_major != keep)
            .flat_map(|b| {
                let mut names = b.major_distributions.clone();
                if !names.contains(&b.package) {
                    names.push(b.package.clone());
                }
                names
            })
            .collect();
        (one, moved)
    }

    /// `f`, a finding whose remedy is torch's repair `r` (the chooser's command set), with that
    /// repair as its fix. When the repair moves torch off the one CUDA major the environment's
    /// other frameworks share, the fix first moves them to torch's new major, as `plan` does:
    /// following torch's fix alone would leave two majors in one environment. Those builds'
    /// own findings (a driver too old for their CUDA, kernels their CUDA lacks) then follow
    /// from `f`. With two majors already there, FW020 carries that step instead.
    pub fn with_torch_repair(
        &self,
        mut f: Finding,
        t: crate::context::TorchEnv,
        r: cudoctor_plan::Remedy,
    ) -> Finding {
        if let Some(keep) = r.moves_to_major().filter(|_| cuda_majors(t.env).len() < 2) {
            let cur = crate::context::current_env(t.env, t.torch, false);
            let (one, moved) = self.env_on_major(t.env, &cur, keep, Some(&r));
            // Beside other frameworks, or over wheels of the major torch leaves (they share
            // folders with the new major's and torch would preload them), as `plan`.
            if (!cur.others.is_empty() || cur.has_wheels_beside(keep)) && !one.steps.is_empty() {
                f = f.steps(one.steps);
                for name in moved {
                    f = f.about(crate::Subject::MovesFramework {
                        env: t.env.prefix.clone(),
                        name,
                    });
                }
            }
        }
        // bitsandbytes loads the library of torch's CUDA: moving torch moves it too.
        if r.moves_torch() && self.bitsandbytes_follows(t.env, &r.variant) {
            f = f.about(crate::Subject::MovesFramework {
                env: t.env.prefix.clone(),
                name: "bitsandbytes".into(),
            });
        }
        f.steps(r.steps)
    }

    /// The environment a fix is written for: its interpreter and installer.
    pub fn target_env(&self, env: &PythonEnv) -> cudoctor_plan::TargetEnv {
        crate::context::target_env(env)
    }

    /// The value of a PEP 508 marker variable for environment `env` (`extra` excluded: see
    /// [`Context::applicable_pins`]). Unknown ones stay unknown.
    pub(crate) fn marker_var(&self, env: &PythonEnv, name: &str) -> Option<String> {
        if env.windows {
            // A Windows environment's Python (x64: the only Windows build cudoctor reads).
            match name {
                "sys_platform" => return Some("win32".into()),
                "platform_system" => return Some("Windows".into()),
                "os_name" => return Some("nt".into()),
                "platform_machine" => return Some("AMD64".into()),
                _ => {}
            }
        }
        let linux = self.snap.host.os == "linux" || self.snap.host.os.is_empty();
        match name {
            "sys_platform" if linux => Some("linux".into()),
            "platform_system" if linux => Some("Linux".into()),
            "os_name" if linux => Some("posix".into()),
            "platform_machine" if !self.snap.host.arch.is_empty() => {
                Some(self.snap.host.arch.clone())
            }
            "python_version" => {
                let v = env.python_version.as_deref()?.trim_end_matches('t');
                let mut it = v.split('.');
                Some(format!("{}.{}", it.next()?, it.next()?))
            }
            "python_full_version" => env
                .python_version
                .as_deref()
                .filter(|v| v.matches('.').count() >= 2)
                .map(str::to_string),
            "implementation_name" => Some("cpython".into()),
            "platform_python_implementation" => Some("CPython".into()),
            _ => None,
        }
    }

    /// The pins of `v`'s metadata that bind this environment, each with its parsed requirement:
    /// pins without a marker, and pins under an extra the environment shows was installed (an
    /// extra whose own distribution, one no unconditional pin brings, is installed: jax's
    /// `cuda12` extra when `jax-cuda12-plugin` is there). Pins whose marker cannot be decided
    /// are left out.
    pub fn applicable_pins(&self, v: FrameworkView<'a>) -> Vec<(&'a CompanionPin, Requirement)> {
        let parsed: Vec<(&CompanionPin, Requirement)> = v
            .build
            .companions
            .iter()
            .filter_map(|c| Some((c, c.requirement.parse::<Requirement>().ok()?)))
            .collect();
        let unconditional = |by: &str, name: &str| {
            parsed
                .iter()
                .any(|(c, r)| c.required_by == by && r.name == name && r.marker.is_none())
        };
        let mut chosen: Vec<(String, String)> = Vec::new();
        for (c, r) in &parsed {
            if c.installed.is_none() || unconditional(&c.required_by, &r.name) {
                continue;
            }
            for e in r.marker_extras() {
                if !chosen.contains(&(c.required_by.clone(), e.clone())) {
                    chosen.push((c.required_by.clone(), e));
                }
            }
        }
        parsed
            .into_iter()
            .filter(|(c, r)| {
                let extras = r.marker_extras();
                if extras.is_empty() {
                    return r.marker_holds(&|n| self.marker_var(v.env, n)) == Some(true);
                }
                extras.iter().any(|e| {
                    chosen.contains(&(c.required_by.clone(), e.clone()))
                        && r.marker_holds(&|n| {
                            if n == "extra" {
                                Some(e.clone())
                            } else {
                                self.marker_var(v.env, n)
                            }
                        }) == Some(true)
                })
            })
            .collect()
    }
}
