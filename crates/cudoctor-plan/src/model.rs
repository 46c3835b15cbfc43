//! What a plan is asked (inputs) and what it answers (the serialisable Plan).

use serde::{Deserialize, Serialize};

use cudoctor_report::Finding;

use cudoctor_kb::{ComputeCapability, CudaVersion, DriverVersion, GpuBranches, Platform};

/// Which installer's command the user wants first (all commands are produced anyway), and the
/// installer a target environment uses: one type with the snapshot's.
pub use cudoctor_snapshot::Installer;

/// Reads `pip`, `uv` or `conda` (`mamba`).
pub fn parse_installer(s: &str) -> Result<Installer, crate::PlanError> {
    s.parse()
        .map_err(|_| crate::PlanError::UnknownInstaller(s.to_string()))
}

/// The environment a remedy is written for: commands name its interpreter and use its installer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetEnv {
    /// The environment's prefix ("/opt/venv").
    pub prefix: String,
    /// Its interpreter ("/opt/venv/bin/python").
    pub python: String,
    pub installer: Installer,
    /// torch in it is conda's `pytorch` package, not a pip wheel.
    #[serde(default)]
    pub conda_pytorch: bool,
    /// A Windows environment: its commands are PowerShell's (`& 'C:\...\python.exe' -m pip`),
    /// every path single-quoted ([`crate::quote_powershell_path`]).
    #[serde(default)]
    pub windows: bool,
    /// The project that owns the environment (uv, Poetry, Pixi): an install edits its declared
    /// requirements and re-syncs, or the next sync undoes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<cudoctor_snapshot::EnvProject>,
}

/// The versions installed in the environment being judged (from its dist-info / version.py),
/// as the package reports them: "2.11.0+cu130", "0.26.0+cu130", "2.11.0".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentEnv {
    pub torch: Option<String>,
    pub torchvision: Option<String>,
    pub torchaudio: Option<String>,
    /// torch/version.py `cuda` ("13.0"), None for a CPU build or when unread. Used when the
    /// version has no "+cuXXX" suffix (wheels from PyPI).
    pub torch_cuda: Option<CudaVersion>,
    /// The installed build was seen not to reach a GPU here (its scanned kernel images), whatever
    /// the tables say: the remedy moves away from it.
    #[serde(default)]
    pub fails_here: bool,
    /// The other framework builds of the environment bound to a CUDA major (JAX, CuPy, ...).
    #[serde(default)]
    pub others: Vec<crate::OtherBuild>,
    /// Its installed `nvidia-*` wheels named for a CUDA major.
    #[serde(default)]
    pub nvidia_wheels: Vec<crate::MajorWheel>,
    /// torch's own CUDA wheels as its metadata names them, at their installed versions
    /// ("nvidia-cudnn-cu13==9.19.0.56").
    #[serde(default)]
    pub torch_wheels: Vec<String>,
    /// The `Requires-Dist` lines of the installed companions (torchvision, torchaudio), by
    /// name, as their metadata writes them: judged with [`crate::companion_fit`].
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub requires: std::collections::BTreeMap<String, Vec<String>>,
}

impl CurrentEnv {
    /// The installed version of companion `name` (torchvision, torchaudio).
    pub fn companion(&self, name: &str) -> Option<&str> {
        match name {
            "torchvision" => self.torchvision.as_deref(),
            "torchaudio" => self.torchaudio.as_deref(),
            _ => None,
        }
    }

    /// The `Requires-Dist` lines of companion `name`'s metadata (empty when unread).
    pub fn requires_of(&self, name: &str) -> &[String] {
        self.requires.get(name).map_or(&[], Vec::as_slice)
    }

    /// The CUDA major of the installed torch build (13 of "2.11.0+cu130", else of its
    /// version.py CUDA); None for a CPU build or without torch.
    pub fn torch_major(&self) -> Option<u32> {
        self.torch.as_deref().and_then(|t| {
            t.split_once('+')
                .and_then(|(_, tag)| crate::frameworks::variant_major(tag))
                .or(self.torch_cuda.map(|c| c.major))
        })
    }

    /// True when it has `nvidia-*` wheels named for a CUDA major other than `major`.
    pub fn has_wheels_beside(&self, major: u32) -> bool {
        self.nvidia_wheels.iter().any(|w| w.major != major)
    }

    /// The names of its `nvidia-*` wheels named for CUDA `major`.
    pub fn wheels_of_major(&self, major: u32) -> Vec<&str> {
        self.nvidia_wheels
            .iter()
            .filter(|w| w.major == major)
            .map(|w| w.name.as_str())
            .collect()
    }
}

/// One CUDA toolkit installed on the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledToolkit {
    pub version: CudaVersion,
    /// Its root directory (what CUDA_HOME should name), e.g. "/usr/local/cuda-13.0".
    pub path: String,
}

/// The machine's resources for compiling CUDA extensions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildInput {
    /// Total memory in GiB.
    pub memory_gib: Option<f64>,
    /// Logical CPU cores.
    pub cores: Option<u32>,
    pub toolkits: Vec<InstalledToolkit>,
}

/// Everything a plan depends on. Leave a field empty when it is not known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanInput {
    /// The NVIDIA driver; None when no driver is installed (or none was detected).
    pub driver: Option<DriverVersion>,
    /// GPUs as names ("NVIDIA GeForce RTX 3090", "RTX 3090") or capabilities ("sm_86", "8.6"),
    /// one entry per GPU. Empty: a machine without NVIDIA GPUs.
    pub gpus: Vec<String>,
    /// The Python the packages are for ("3.11", "3.12.3", "3.14t").
    pub python: Option<String>,
    /// Wanted torch release or series ("2.5", "2.5.1").
    pub torch: Option<String>,
    /// Wanted CUDA variant ("12.4").
    pub cuda: Option<CudaVersion>,
    pub installer: Installer,
    /// The user named the installer (`--installer`): its command is the headline, not the
    /// environment's own.
    #[serde(default)]
    pub installer_given: bool,
    /// The environment to compare against, if any.
    pub current: Option<CurrentEnv>,
    /// Inputs for the extension-build advice; None skips that section.
    pub build: Option<BuildInput>,
    /// The environment to write the remedy for (with `current`); None: no remedy.
    #[serde(default)]
    pub target: Option<TargetEnv>,
    /// The platform the packages are for (default Linux x86_64).
    #[serde(default)]
    pub platform: Platform,
    /// What keeps this machine's GPU out of reach (check's root finding, with its fix): the
    /// machine cannot judge a build until it is fixed, so the plan is for the torch installed
    /// in `current` (or says why there is none), never a CPU build over a CUDA one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<Finding>,
}

/// A GPU as the plan understood it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedGpu {
    /// As given.
    pub given: String,
    pub cc: ComputeCapability,
    /// The architecture name ("Ampere"), when the product is in the table.
    pub architecture: Option<String>,
    /// The driver branches that drive it (gpus.toml).
    #[serde(skip)]
    pub branches: GpuBranches,
}

/// Install commands for the chosen build. A missing command comes with a note saying why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Commands {
    pub pip: Option<String>,
    pub uv: Option<String>,
    pub conda: Option<String>,
    /// The same build from PyPI without an extra index, where PyPI's default build is this one.
    pub pip_pypi: Option<String>,
    /// The build for the environment under judgement (`--python`, or the one detected), in
    /// its own installer and naming its interpreter: `uv pip install --python <env>/bin/python`
    /// for a uv-made venv, `<env>/bin/python -m pip` otherwise, `conda install -p <env>` where
    /// conda has the build, PowerShell with the env's own python.exe on Windows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<crate::FixStep>,
    pub notes: Vec<String>,
}

impl Commands {
    /// The command to headline: the environment's own (written by the installer asked for,
    /// when one was), else the generic command of the installer asked for, else pip's.
    pub fn headline(&self, asked: Option<Installer>) -> Option<&str> {
        match asked {
            Some(i) => self.env.as_deref().or(self.preferred(i)),
            None => self.env.as_deref().or(self.pip.as_deref()),
        }
    }

    /// The command for the installer the user prefers, when there is one.
    pub fn preferred(&self, installer: Installer) -> Option<&str> {
        match installer {
            Installer::Pip => self.pip.as_deref(),
            Installer::Uv => self.uv.as_deref(),
            Installer::Conda => self.conda.as_deref(),
        }
    }
}

/// A build not to install, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Avoid {
    /// "torch 2.11.0 cu130", "plain `pip install torch` (2.11.0, cu130)".
    pub what: String,
    pub why: String,
}

/// Upgrading the driver as an alternative that gives a better stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriverUpgrade {
    /// The least driver that runs the better build natively ("580.65.06"), when known.
    pub min_driver: Option<DriverVersion>,
    /// The least driver that runs it at all (minor-version compatibility floor).
    pub min_driver_compat: Option<DriverVersion>,
    /// The driver branch to install ("R580").
    pub branch: Option<String>,
    pub torch: String,
    pub variant: String,
    pub why: String,
    /// True when the present driver does not drive these GPUs at all (a branch past the last
    /// one for an old architecture, or older than the first for a new one): the change is
    /// needed, not optional.
    #[serde(default)]
    pub required: bool,
}

/// Advice for compiling CUDA extensions against the chosen torch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BuildPlan {
    /// "8.6;8.9" for the present GPUs; None without GPUs.
    pub torch_cuda_arch_list: Option<String>,
    pub max_jobs: Option<u32>,
    /// The toolkit to point CUDA_HOME at; None when no installed toolkit matches.
    pub cuda_home: Option<String>,
    /// The toolkit version to install when none matches.
    pub install_toolkit: Option<CudaVersion>,
    pub notes: Vec<String>,
}

/// How the current environment compares with the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CurrentVerdict {
    /// True when nothing needs to change.
    pub ok: bool,
    /// What was found, good or bad (the problems after what is right).
    pub findings: Vec<CurrentLine>,
    /// What to change (empty when ok).
    pub changes: Vec<String>,
}

/// One line of the verdict on the current environment; written in the JSON as its sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CurrentLine {
    /// What the plan found that needs no change (a build that fits, a note).
    Fact(String),
    /// What the plan found wrong: the verdict's changes address it.
    Problem(String),
    /// check's finding that the GPU is not reachable: whether the installed build runs on it
    /// waits for that finding's fix.
    GpuUnreachable(cudoctor_report::FindingRef),
}

impl CurrentLine {
    pub fn is_problem(&self) -> bool {
        !matches!(self, CurrentLine::Fact(_))
    }
}

impl std::fmt::Display for CurrentLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CurrentLine::Fact(s) | CurrentLine::Problem(s) => f.write_str(s),
            CurrentLine::GpuUnreachable(first) => write!(
                f,
                "whether its build runs on the GPU is not judged until the GPU is reachable ({}: {})",
                first.code, first.title
            ),
        }
    }
}

impl Serialize for CurrentLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The answer: the build to install and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Plan {
    /// "cu124", "cpu", or None when nothing fits.
    pub variant: Option<String>,
    pub torch: Option<String>,
    pub torchvision: Option<String>,
    pub torchaudio: Option<String>,
    pub commands: Commands,
    pub reasons: Vec<String>,
    pub avoid: Vec<Avoid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_upgrade: Option<DriverUpgrade>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildPlan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<CurrentVerdict>,
    /// What repairs the current environment, as one command set: `check`'s fix for the same
    /// machine and environment is this, word for word.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<crate::remedy::Remedy>,
    /// The frameworks beside torch in the current environment on the CUDA major torch ends
    /// at: `check`'s FW020 fix is its steps, word for word.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frameworks: Option<crate::OneMajor>,
    pub gpus: Vec<ResolvedGpu>,
    /// Things the user should know that are not reasons for the choice (unknown facts ...).
    pub warnings: Vec<String>,
    /// The platform the plan is for.
    pub platform: Platform,
    /// What keeps this machine's GPU out of reach (check's root finding, with its fix): until
    /// it is fixed, whether a CUDA build runs here cannot be judged.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_first"
    )]
    pub first: Option<Finding>,
    /// The build above is the one installed in the environment, kept: with the GPU out of
    /// reach (`first`) no other can be judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keeps_installed: bool,
}

/// The plan's JSON names check's first finding by its code, its title and its fix, word for word.
fn serialize_first<S: serde::Serializer>(first: &Option<Finding>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct First<'a> {
        code: &'a str,
        title: &'a str,
        fix: &'a [crate::FixStep],
    }
    first
        .as_ref()
        .map(|f| First {
            code: &f.code,
            title: &f.title,
            fix: &f.fix,
        })
        .serialize(s)
}
