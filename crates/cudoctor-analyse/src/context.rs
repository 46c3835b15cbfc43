//! What every rule sees: the snapshot, the knowledge base, and a few derived views that several
//! rules need (parsed versions, compute capabilities filled in from GPU names).

use cudoctor_kb::{ComputeCapability, CudaVersion, DriverVersion, Kb};
use cudoctor_snapshot::{Gpu, PythonEnv, Snapshot, TorchBuild};

pub struct Context<'a> {
    pub snap: &'a Snapshot,
    pub kb: &'a Kb,
}

/// A GPU with its compute capability, read or inferred from its name.
#[derive(Debug, Clone)]
pub struct GpuView<'a> {
    pub gpu: &'a Gpu,
    pub cc: Option<ComputeCapability>,
    /// Where `cc` came from: the driver, or the knowledge base by name.
    pub cc_source: &'static str,
}

impl GpuView<'_> {
    /// "GPU 0 (NVIDIA H200, sm_90)".
    pub fn label(&self) -> String {
        match self.cc {
            Some(cc) => format!("GPU {} ({}, {})", self.gpu.index, self.gpu.name, cc.sm()),
            None => format!("GPU {} ({})", self.gpu.index, self.gpu.name),
        }
    }
}

/// A Python environment with torch installed.
#[derive(Debug, Clone, Copy)]
pub struct TorchEnv<'a> {
    pub env: &'a PythonEnv,
    pub torch: &'a TorchBuild,
}

impl TorchEnv<'_> {
    /// The CUDA runtime the wheel targets, `None` for CPU and ROCm builds.
    pub fn cuda(&self) -> Option<CudaVersion> {
        self.torch.cuda_version()
    }

    /// "torch 2.11.0+cu130 in /opt/venv".
    pub fn label(&self) -> String {
        format!("torch {} in {}", self.torch.version, self.env.prefix)
    }
}

impl<'a> Context<'a> {
    pub fn new(snap: &'a Snapshot, kb: &'a Kb) -> Self {
        Context { snap, kb }
    }

    pub fn var(&self, name: &str) -> Option<&'a str> {
        self.snap
            .env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    pub fn driver_version(&self) -> Option<DriverVersion> {
        self.snap.driver.version.as_ref()?.value.parse().ok()
    }

    /// The highest CUDA the driver runs, and where that fact came from: the driver itself, or the
    /// knowledge base by branch when the driver did not say.
    pub fn driver_max_cuda(&self) -> Option<(CudaVersion, String)> {
        if let Some(s) = &self.snap.driver.max_cuda {
            if let Ok(c) = s.value.parse() {
                return Some((c, s.source.clone()));
            }
        }
        let d = self.driver_version()?;
        self.kb
            .driver_max_cuda(&d)
            .map(|c| (c, format!("knowledge base: driver branch R{}", d.branch())))
    }

    /// Whether driver `d` runs CUDA `c`, and how, by this machine's platform: a Windows driver
    /// (572.16) against the toolkits' Windows minimums and Windows minor-version floors, any
    /// other against the Linux values.
    pub fn driver_support(&self, d: &DriverVersion, c: CudaVersion) -> cudoctor_kb::DriverSupport {
        self.kb.driver_support_on(self.platform(), d, c)
    }

    /// The minimum driver of CUDA `c`'s GA release on this machine's platform (Windows's where
    /// NVIDIA lists one, else Linux's).
    pub fn toolkit_min_driver(&self, c: CudaVersion) -> Option<DriverVersion> {
        if self.platform() == cudoctor_kb::Platform::Windows {
            return self.kb.toolkit_min_driver_windows(c);
        }
        self.kb.toolkit_min_driver(c)
    }

    /// "driver 580.159.04 (from nvml)".
    pub fn driver_evidence(&self) -> String {
        match &self.snap.driver.version {
            Some(v) => format!("driver {} (from {})", v.value, v.source),
            None => "no NVIDIA driver found".to_string(),
        }
    }

    pub fn gpus(&self) -> Vec<GpuView<'a>> {
        self.snap
            .driver
            .gpus
            .iter()
            .map(|gpu| {
                let found = self
                    .kb
                    .reported_gpu_cc(gpu.compute_capability.as_deref(), &gpu.name);
                let cc_source = match found {
                    Some((_, cudoctor_kb::CcSource::ByName)) => "knowledge base, by GPU name",
                    _ if gpu.what_if => "--gpu (what-if)",
                    _ => "driver",
                };
                GpuView {
                    gpu,
                    cc: found.map(|(cc, _)| cc),
                    cc_source,
                }
            })
            .collect()
    }

    /// Every environment that has torch, the primary one first.
    pub fn torch_envs(&self) -> Vec<TorchEnv<'a>> {
        self.snap
            .python_envs
            .iter()
            .filter_map(|env| env.torch.as_ref().map(|torch| TorchEnv { env, torch }))
            .collect()
    }

    /// True when anything suggests this machine is meant to have a GPU.
    pub fn expects_gpu(&self) -> bool {
        !self.snap.driver.gpus.is_empty()
            || self
                .snap
                .platform
                .device_nodes
                .iter()
                .any(|n| n.starts_with("/dev/nvidia"))
            || self.torch_envs().iter().any(|t| t.cuda().is_some())
            // A CUDA build of another framework (a JAX plugin, cupy-cudaNNx, onnxruntime-gpu).
            || self
                .snap
                .python_envs
                .iter()
                .flat_map(|e| &e.frameworks)
                .any(|b| b.cuda.is_some())
            || !self.snap.toolkit.toolkits.is_empty()
    }
}

/// The major.minor of a dotted version string ("13.0.88" -> 13.0).
pub fn cuda_of(version: &str) -> Option<CudaVersion> {
    version.parse().ok()
}

/// The toolkit an extension build would use, found the way `torch.utils.cpp_extension` does:
/// CUDA_HOME, then CUDA_PATH, then the `nvcc` on PATH, then /usr/local/cuda.
#[derive(Debug, Clone)]
pub struct BuildToolkit {
    /// The directory as the setting names it.
    pub home: String,
    /// Which setting chose it.
    pub chosen_by: String,
    /// Its version, when the toolkit was found on disk.
    pub version: Option<String>,
    /// False when the directory holds no toolkit cudoctor could find.
    pub exists: bool,
    /// The real directory of the toolkit found there (a Linux toolkit's facts), when found.
    pub root: Option<String>,
}

impl BuildToolkit {
    /// The CUDA release of the toolkit a build would use, when it was found on disk.
    pub fn cuda(&self) -> Option<CudaVersion> {
        self.version.as_deref().and_then(cuda_of)
    }
}

impl<'s> Context<'s> {
    /// The toolkit an extension build would use with its facts, where it is a Linux toolkit
    /// found on disk (the facts the build-readiness rules read: its link directory, headers,
    /// host compiler range).
    pub fn build_toolkit_facts(&self) -> Option<(BuildToolkit, &'s cudoctor_snapshot::Toolkit)> {
        let build = self.build_toolkit()?;
        let tk = build
            .root
            .as_deref()
            .and_then(|r| self.snap.toolkit.by_root(r))?;
        Some((build, tk))
    }

    pub fn build_toolkit(&self) -> Option<BuildToolkit> {
        if let Some(w) = &self.snap.windows {
            return self.windows_build_toolkit(w);
        }
        let tk = &self.snap.toolkit;
        let lookup = |home: &str| {
            let real = if home == "/usr/local/cuda" {
                tk.usr_local_cuda
                    .as_ref()
                    .and_then(|c| c.resolved.clone())
                    .unwrap_or_else(|| home.to_string())
            } else {
                home.trim_end_matches('/').to_string()
            };
            tk.toolkits.iter().find(|t| {
                t.root == real
                    || t.found_via
                        .iter()
                        .any(|v| v == "CUDA_HOME" || v == "CUDA_PATH")
                        && self.var("CUDA_HOME").or(self.var("CUDA_PATH")) == Some(home)
            })
        };
        let (home, chosen_by) = if let Some(h) = self.var("CUDA_HOME") {
            (h.to_string(), "CUDA_HOME".to_string())
        } else if let Some(h) = self.var("CUDA_PATH") {
            (h.to_string(), "CUDA_PATH".to_string())
        } else if let Some(n) = &tk.nvcc_on_path {
            let home = n
                .path
                .strip_suffix("/bin/nvcc")
                .unwrap_or(&n.path)
                .to_string();
            (home, "nvcc on PATH".to_string())
        } else if tk
            .usr_local_cuda
            .as_ref()
            .is_some_and(|c| c.resolved.is_some())
        {
            ("/usr/local/cuda".to_string(), "/usr/local/cuda".to_string())
        } else {
            return None;
        };
        let found = lookup(&home).or_else(|| {
            // nvcc on PATH inside the toolkit the setting names, after links.
            tk.nvcc_on_path
                .as_ref()
                .filter(|n| n.path.starts_with(home.trim_end_matches('/')))
                .and_then(|n| n.toolkit_root.as_deref())
                .and_then(|r| tk.by_root(r))
        });
        Some(BuildToolkit {
            home,
            chosen_by,
            version: found.and_then(|t| t.version.clone()),
            exists: found.is_some(),
            root: found.map(|t| t.root.clone()),
        })
    }
}

impl Context<'_> {
    /// On Windows, the toolkit `torch.utils.cpp_extension` picks (its `_find_cuda_home`):
    /// CUDA_HOME, then CUDA_PATH, then the first nvcc on PATH (the collected toolkits include
    /// the directory above each PATH `bin` with nvcc.exe), else the first `v*.*` under `C:\Program Files\NVIDIA GPU
    /// Computing Toolkit\CUDA` (glob order, by name); judged on the Windows toolkits collected.
    fn windows_build_toolkit(
        &self,
        w: &cudoctor_snapshot::windows::WindowsFacts,
    ) -> Option<BuildToolkit> {
        use cudoctor_snapshot::windows::WinPath;
        let (home, chosen_by) = if let Some(h) = self.var("CUDA_HOME") {
            (h.to_string(), "CUDA_HOME".to_string())
        } else if let Some(h) = self.var("CUDA_PATH") {
            (h.to_string(), "CUDA_PATH".to_string())
        } else if let Some(t) = w.path.iter().find_map(|p| {
            // `shutil.which("nvcc")`: the first PATH directory with nvcc.exe, a toolkit's bin.
            w.toolkits
                .iter()
                .find(|t| t.nvcc && !t.missing && p.same_as(&t.path.join("bin")))
        }) {
            (t.path.to_string(), "nvcc on PATH".to_string())
        } else {
            let default = WinPath::new(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA");
            let mut installed: Vec<&WinPath> = w
                .toolkits
                .iter()
                .filter(|t| !t.missing && t.path.parent().is_some_and(|p| p.same_as(&default)))
                .map(|t| &t.path)
                .filter(|p| p.file_name().contains('.'))
                .collect();
            installed.sort();
            let first = installed.first()?;
            (
                first.to_string(),
                "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v*.*".to_string(),
            )
        };
        let found = w
            .toolkits
            .iter()
            .find(|t| !t.missing && t.path.same_as(&WinPath::new(&home)));
        Some(BuildToolkit {
            version: found.and_then(|t| t.version.clone()),
            exists: found.is_some_and(|t| t.nvcc || t.version.is_some()),
            home,
            chosen_by,
            root: None,
        })
    }
}

/// The fix step that selects the toolkit at `root` for the session's builds, in the shell of
/// the machine the toolkit is on: for a Windows toolkit (a drive path) PowerShell's
/// `$env:CUDA_HOME = '<root>'; $env:Path = '<root>\bin' + ';' + $env:Path`, else POSIX's
/// `export CUDA_HOME=<root> PATH=<root>/bin:$PATH`. `note`, when given, follows as a `# `
/// comment (both shells read `#` as one). The one place a CUDA_HOME step is written, so no rule
/// prints `export` for a Windows toolkit.
pub fn cuda_home_step(root: &str, note: Option<&str>) -> cudoctor_plan::FixStep {
    let note = note
        .map(|n| format!("   # {}", cudoctor_plan::comment(n)))
        .unwrap_or_default();
    let win = cudoctor_snapshot::windows::WinPath::new(root);
    if !win.is_absolute() {
        return cudoctor_plan::FixStep::Shell(format!("{}{note}", export_cuda_home(root)));
    }
    cudoctor_plan::FixStep::PowerShell(format!(
        "{}; $env:Path = {} + ';' + $env:Path{note}",
        cudoctor_plan::powershell_set_env("CUDA_HOME", win.as_str()),
        cudoctor_plan::quote_powershell_path(win.join("bin").as_str())
    ))
}

impl Context<'_> {
    /// The installed toolkits that have nvcc, as (root, version): a Windows machine's as its
    /// collector reads them (the Linux toolkit layer reads none there), else the Linux layer's.
    pub fn toolkits_with_nvcc(&self) -> Vec<(String, Option<String>)> {
        match &self.snap.windows {
            Some(w) => w
                .toolkits
                .iter()
                .filter(|t| t.nvcc && !t.missing)
                .map(|t| (t.path.to_string(), t.version.clone()))
                .collect(),
            None => self
                .snap
                .toolkit
                .toolkits
                .iter()
                .filter(|t| t.nvcc.is_some())
                .map(|t| (t.root.clone(), t.version.clone()))
                .collect(),
        }
    }
}

/// How a GPU can run one scanned library, by NVIDIA's binary-compatibility rules (including the
/// `a`/`f` variants and PTX too new for the driver): see cudoctor-fatbin's `compat`.
pub fn library_verdict(
    lib: &cudoctor_snapshot::LibraryImages,
    cc: ComputeCapability,
    driver_cuda: Option<CudaVersion>,
) -> cudoctor_fatbin::compat::Verdict {
    use cudoctor_fatbin::compat;
    let images = compat::ImageSet::from_names(&lib.sass, &lib.ptx, &lib.ptx_isa);
    compat::verdict(&images, cc, driver_cuda)
}

impl Context<'_> {
    /// Every object of every emulated process, with the process's environment prefix.
    pub fn loaded_objects(&self) -> Vec<(&str, &cudoctor_snapshot::LibraryLinks)> {
        self.snap
            .loader
            .iter()
            .flat_map(|l| &l.processes)
            .flat_map(|p| p.objects.iter().map(move |o| (p.env_prefix.as_str(), o)))
            .collect()
    }

    /// The Python distribution that owns a scanned library, when known.
    pub fn owner_of(&self, path: &str) -> Option<&str> {
        self.snap
            .kernel_images
            .as_ref()?
            .libraries
            .iter()
            .find(|l| l.path == path)
            .and_then(|l| l.package.as_deref())
    }
}

/// The one pip package that ships a CUDA library of `family` for the CUDA major `cuda_major` of
/// the torch that needs it (NVIDIA's wheel names: `-cu11`/`-cu12` suffixes; CUDA 13 toolkit
/// libraries without one, cuDNN and NCCL with `-cu13`). `None` for libraries not shipped as wheels.
pub fn pip_package_for_cuda(family: cudoctor_ldso::CudaFamily, cuda_major: u32) -> Option<String> {
    use cudoctor_ldso::CudaFamily as F;
    let base = match family {
        F::Cudart => "nvidia-cuda-runtime",
        F::Cudnn => "nvidia-cudnn",
        F::Nccl => "nvidia-nccl",
        F::Cublas | F::CublasLt => "nvidia-cublas",
        F::Cufft => "nvidia-cufft",
        F::Curand => "nvidia-curand",
        F::Cusparse => "nvidia-cusparse",
        F::Cusolver => "nvidia-cusolver",
        F::Nvrtc => "nvidia-cuda-nvrtc",
        F::NvJitLink => "nvidia-nvjitlink",
        _ => return None,
    };
    Some(match (family, cuda_major) {
        (F::Cudnn | F::Nccl, m) => format!("{base}-cu{m}"),
        (_, 13..) => base.to_string(),
        (_, m) => format!("{base}-cu{m}"),
    })
}

/// The PyTorch wheel index of a torch local version label: see [`cudoctor_plan::torch_index_url`].
pub use cudoctor_plan::torch_index_url;

impl<'a> Context<'a> {
    /// The environment whose prefix is `prefix`.
    pub fn env_at(&self, prefix: &str) -> Option<&'a PythonEnv> {
        self.snap.python_envs.iter().find(|e| e.prefix == prefix)
    }

    /// The environment whose site-packages holds `path`.
    pub fn env_of_path(&self, path: &str) -> Option<&'a PythonEnv> {
        self.snap.python_envs.iter().find(|e| {
            e.site_packages.iter().any(|sp| {
                path.strip_prefix(sp.trim_end_matches('/'))
                    .is_some_and(|r| r.starts_with('/'))
            })
        })
    }

    /// The installed distribution (pip name) that owns a library: the kernel-image scan's owner
    /// when it names an installed package, else the installed package whose name the library's
    /// top-level module starts with (`flash_attn_2_cuda...so` -> `flash-attn`). `None` when no
    /// installed distribution matches, so that no command names a package that is not there.
    pub fn installed_package_of(&self, path: &str) -> Option<&'a str> {
        let env = self.env_of_path(path)?;
        if let Some(owner) = self.owner_of(path) {
            if let Some(p) = env.package(owner) {
                return Some(p.name.as_str());
            }
        }
        let rest = env.site_packages.iter().find_map(|sp| {
            path.strip_prefix(sp.trim_end_matches('/'))
                .and_then(|r| r.strip_prefix('/'))
        })?;
        let top = rest.split(['/', '.']).next().unwrap_or(rest);
        let module = top.replace('_', "-").to_ascii_lowercase();
        env.packages
            .iter()
            .filter(|p| p.name != "torch" && module.starts_with(&p.name))
            .max_by_key(|p| p.name.len())
            .map(|p| p.name.as_str())
    }
}

// The snapshot's environments as the build chooser takes them live with the chooser.
pub use cudoctor_plan::snapshot::{
    current_env, declared_requires, env_python, frameworks_env, host_platform, named_target_env,
    other_build, recorded_torch_version, target_env,
};

impl Context<'_> {
    /// The environment a `--deep` probe ran in as a command target: its prefix's, else the
    /// interpreter that was run with pip.
    pub fn probe_target(&self, run: &cudoctor_snapshot::ProbeRun) -> cudoctor_plan::TargetEnv {
        match &run.env_prefix {
            Some(prefix) => self.target(prefix),
            None => cudoctor_plan::TargetEnv {
                python: run.interpreter.clone(),
                ..Default::default()
            },
        }
    }

    /// The environment at `prefix` as a command target (pip assumed for one not in the snapshot).
    pub fn target(&self, prefix: &str) -> cudoctor_plan::TargetEnv {
        self.env_at(prefix)
            .map(target_env)
            .unwrap_or_else(|| cudoctor_plan::TargetEnv::at(prefix, Default::default()))
    }
}

impl<'a> Context<'a> {
    /// The GPUs as the chooser takes them (`plan --gpu`), each kind once.
    pub fn plan_gpus(&self) -> Vec<String> {
        cudoctor_plan::snapshot::machine_gpus(self.kb, self.snap)
    }

    /// The platform the chooser plans for: this host's.
    pub fn platform(&self) -> cudoctor_kb::Platform {
        host_platform(&self.snap.host)
    }

    /// The driver CUDA `cuda` needs on these GPUs, by their driver branches (the chooser's).
    pub fn driver_for_cuda(&self, cuda: CudaVersion) -> Option<cudoctor_plan::DriverFor> {
        cudoctor_plan::driver_for_cuda(self.kb, self.platform(), &self.plan_gpus(), cuda)
            .ok()
            .flatten()
    }

    /// The question the build chooser (cudoctor-plan) is asked for the torch of `t`
    /// ([`cudoctor_plan::PlanInput::for_env`]).
    pub fn plan_input(&self, t: TorchEnv, fails_here: bool) -> cudoctor_plan::PlanInput {
        cudoctor_plan::PlanInput::for_env(self.kb, self.snap, t.env, t.torch, fails_here)
    }

    /// The chooser's repair of the torch build of `t` (None when nothing needs to change or
    /// the GPUs cannot be read): `plan` answers the same for the same machine.
    pub fn torch_remedy(&self, t: TorchEnv) -> Option<cudoctor_plan::Remedy> {
        cudoctor_plan::remedy(self.kb, &self.plan_input(t, false))
            .ok()
            .flatten()
    }

    /// The same, for a torch whose build was seen to fail here (its scanned kernel images).
    pub fn torch_remedy_away(&self, t: TorchEnv) -> Option<cudoctor_plan::Remedy> {
        cudoctor_plan::remedy(self.kb, &self.plan_input(t, true))
            .ok()
            .flatten()
    }
}

impl<'a> Context<'a> {
    /// The CUDA binary found outside the site directories' packages at `path` (torch's
    /// extension cache, an editable source tree, PYTHONPATH, the project), when it is one.
    pub fn found_binary(&self, path: &str) -> Option<&'a cudoctor_snapshot::FoundBinary> {
        self.snap.binaries.as_ref()?.binary(path)
    }

    /// A JIT build of torch's extension cache that no inspected environment loads: its build
    /// folder names another Python or torch build (torch looks only in its own folder).
    pub fn is_stale_jit_build(&self, path: &str) -> bool {
        self.found_binary(path).is_some_and(|b| {
            b.env_prefix.is_none()
                && matches!(
                    b.origin,
                    cudoctor_snapshot::BinaryOrigin::TorchExtensionCache {
                        from_env_var: false,
                        ..
                    }
                )
        })
    }
}

impl Context<'_> {
    /// The installed package a library file belongs to, as a subject (torch's own files too).
    pub fn package_subject(&self, path: &str) -> Option<crate::Subject> {
        let env = self.env_of_path(path)?;
        let name = match &env.torch {
            Some(t) if t.owns(path) => "torch",
            _ => self.installed_package_of(path)?,
        };
        Some(crate::Subject::Package {
            env: env.prefix.clone(),
            name: name.to_string(),
        })
    }
}

/// The POSIX shell line that selects the toolkit at `root` for this shell: CUDA_HOME and PATH
/// only (LD_LIBRARY_PATH would shadow the libraries torch's wheels bring). Written only through
/// [`cuda_home_step`], which picks the shell.
fn export_cuda_home(root: &str) -> String {
    let root = root.trim_end_matches('/');
    format!(
        "export CUDA_HOME={} PATH={}:$PATH",
        cudoctor_plan::quote(root),
        cudoctor_plan::quote(&format!("{root}/bin"))
    )
}
