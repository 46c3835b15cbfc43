use serde::{Deserialize, Serialize};

/// The `found_via` of an environment the user named with `--python`.
pub const FOUND_VIA_PYTHON_OPTION: &str = "--python";

/// One Python environment, read from its files without running Python.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PythonEnv {
    /// The environment's prefix (`sys.prefix`).
    pub prefix: String,
    pub kind: PythonEnvKind,
    /// Why it was inspected: `--python` ([`FOUND_VIA_PYTHON_OPTION`]), `VIRTUAL_ENV`,
    /// `CONDA_PREFIX`, `python3 on PATH`.
    #[serde(default)]
    pub found_via: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    /// `3.12` or `3.12.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_version: Option<String>,
    #[serde(default)]
    pub site_packages: Vec<String>,
    /// Packages that matter for CUDA (torch and friends, every `nvidia-*`), by normalised name.
    #[serde(default)]
    pub packages: Vec<Package>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<TorchBuild>,
    /// Every framework build installed here (torch among them), read from files.
    #[serde(default)]
    pub frameworks: Vec<crate::FrameworkBuild>,
    /// What the CUDA-relevant distributions of `packages` declare (`Requires-Dist`, build
    /// records), each read from its dist-info; absent in snapshots of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared: Vec<crate::DeclaredRequirements>,
    /// conda's record of CUDA packages (`cudatoolkit`, `pytorch-cuda`, `cuda-toolkit`, `pytorch`).
    #[serde(default)]
    pub conda_packages: Vec<CondaPackage>,
    /// Problems met while reading this environment.
    #[serde(default)]
    pub errors: Vec<String>,
    /// torch's and the nvidia-* wheels' files against their RECORDs; absent when not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wheel_check: Option<crate::WheelCheck>,
    /// How packages get installed into this environment, read from its files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer: Option<EnvInstaller>,
    /// Distributions whose metadata requires NumPy 1.x (`numpy<2`), read where NumPy 2 is
    /// installed: built against NumPy 1, their extension modules fail to import under NumPy 2.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub numpy_1_pins: Vec<NumpyOnePin>,
    /// The project that owns the environment (a uv, Poetry or Pixi project beside it), whose
    /// declared requirements a fix edits; absent for an environment nobody declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<EnvProject>,
    /// A Windows environment (docs/windows.md): its paths are drive paths (`C:\...`), its
    /// interpreter `python.exe`, its packages in `Lib\site-packages`; fixes for it are
    /// PowerShell commands.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub windows: bool,
    /// The C headers an extension build compiles against (`Python.h` of the base interpreter),
    /// read from files; absent for Windows environments, an unknown Python version, and in
    /// snapshots of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<PythonHeaders>,
}

/// Where an extension build of an environment looks for `Python.h`: sysconfig's include path
/// (`sysconfig.get_path("include", "posix_prefix")`, what torch's `cpp_extension` and
/// setuptools' `build_ext` pass as `-I`), `<base prefix>/include/pythonX.Y[t]`, read from files.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PythonHeaders {
    /// `X.Y` with the ABI's letter (`3.13t` free-threaded, `3.7m`), as in the include path.
    pub version: String,
    /// The base interpreter's prefix (`sys.base_prefix`).
    pub base_prefix: String,
    /// How the base prefix was found (`pyvenv.cfg: home = /usr/bin`, `the environment itself`).
    pub base_from: String,
    /// `<base prefix>/include/pythonX.Y[t]`.
    pub include_dir: String,
    /// Whether `include_dir/Python.h` is a file.
    pub python_h: bool,
    /// Who installed the base interpreter (what a fix reinstalls or adds to).
    pub origin: PythonOrigin,
    /// The file that says so (`/var/lib/dpkg/info/python3.11-minimal.list`), when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_evidence: Option<String>,
}

/// Who installed a Python interpreter, read from its files.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PythonOrigin {
    /// A Debian or Ubuntu package (`pythonX.Y-minimal` in dpkg's database): the headers are
    /// the separate `pythonX.Y-dev` package.
    Dpkg,
    /// An RPM distribution's `/usr` Python (Fedora, RHEL): the headers are `python3-devel`.
    Rpm,
    /// A conda environment's `python` package (it ships the headers).
    Conda,
    /// A Python installed by uv (`uv python install`, python-build-standalone: it ships them).
    Uv,
    /// A pyenv build (`pyenv install`: built from source, headers installed).
    Pyenv,
    /// Any other (a python.org or source build under /usr/local, a Docker image's Python).
    #[default]
    Other,
}

/// A project that declares an environment's requirements and makes the environment from its
/// lock: a fix installed beside it is undone by the next sync, so the fix edits the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvProject {
    pub kind: ProjectKind,
    /// The project directory (where its manifest is).
    pub root: String,
    /// The file that declares the requirements (`pyproject.toml`, `pixi.toml`), machine path.
    pub manifest: String,
    /// Its lock file (`uv.lock`, `poetry.lock`, `pixi.lock`), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
}

/// The tool of a project that owns an environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectKind {
    /// `pyproject.toml` + `uv.lock`, the environment its `.venv`.
    Uv,
    /// `pyproject.toml` + `poetry.lock`.
    Poetry,
    /// `pixi.toml` (or `pyproject.toml` with `[tool.pixi]`), the environment under `.pixi/envs/`.
    Pixi,
    /// A conda environment file (`environment.yml`) the conda environment beside it is made
    /// from (`conda env create -f environment.yml -p ./env`).
    Conda,
}

impl ProjectKind {
    pub fn name(self) -> &'static str {
        match self {
            ProjectKind::Uv => "uv",
            ProjectKind::Poetry => "Poetry",
            ProjectKind::Pixi => "Pixi",
            ProjectKind::Conda => "conda",
        }
    }
}

/// The tool that installs packages into an environment; fixes are written in its commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Installer {
    /// `python -m pip` inside the environment.
    #[default]
    Pip,
    /// `uv pip install --python <interpreter>` (a uv-made venv has no pip).
    Uv,
    /// `conda install -p <prefix>` for conda's own packages (pip inside the env for the rest).
    Conda,
}

impl Installer {
    pub fn name(self) -> &'static str {
        match self {
            Installer::Pip => "pip",
            Installer::Uv => "uv",
            Installer::Conda => "conda",
        }
    }
}

impl std::str::FromStr for Installer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pip" => Ok(Installer::Pip),
            "uv" => Ok(Installer::Uv),
            "conda" | "mamba" => Ok(Installer::Conda),
            _ => Err(format!("unknown installer {s:?}: use pip, uv or conda")),
        }
    }
}

/// The installer of an environment and the file that says so.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvInstaller {
    pub kind: Installer,
    /// "pyvenv.cfg: uv = 0.9.5", "conda-meta/ in the prefix", "pip in site-packages".
    pub evidence: String,
    /// Whether pip is installed in the environment (a uv-made venv has none).
    #[serde(default)]
    pub has_pip: bool,
}

impl PythonEnv {
    /// The user named it with `--python`.
    pub fn named_by_option(&self) -> bool {
        self.found_via.iter().any(|v| v == FOUND_VIA_PYTHON_OPTION)
    }

    pub fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }

    /// True for a file of NVIDIA's CUDA wheels here (`<site-packages>/nvidia/...`: cuBLAS,
    /// cuDNN, NCCL, the runtime, as torch's CUDA builds install them).
    pub fn in_nvidia_wheels(&self, path: &str) -> bool {
        self.site_packages.iter().any(|sp| {
            path.strip_prefix(sp.trim_end_matches('/'))
                .and_then(|rest| rest.strip_prefix("/nvidia/"))
                .is_some()
        })
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PythonEnvKind {
    Venv,
    Conda,
    #[default]
    System,
}

/// A distribution that requires NumPy 1.x: its `Requires-Dist` on numpy, as written.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NumpyOnePin {
    pub package: String,
    pub version: String,
    pub requirement: String,
}

/// An installed distribution.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Package {
    /// Normalised (PEP 503): lower case, runs of `-_.` as `-`.
    pub name: String,
    pub version: String,
    /// The site-packages directory it lives in.
    pub location: String,
}

/// What `torch/version.py` says about the installed torch.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct TorchBuild {
    /// `__version__`, e.g. `2.11.0+cu130`.
    pub version: String,
    /// `cuda`: the CUDA runtime the build targets, `None` for CPU or ROCm builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_version: Option<String>,
    /// The torch package directory.
    pub path: String,
}

impl TorchBuild {
    /// The CUDA runtime the build targets (`cuda` parsed), None for CPU and ROCm builds.
    pub fn cuda_version(&self) -> Option<cudoctor_types::version::CudaVersion> {
        self.cuda.as_deref()?.parse().ok()
    }

    /// The local version label, e.g. `cu130` from `2.11.0+cu130`.
    pub fn local_label(&self) -> Option<&str> {
        self.version.split_once('+').map(|(_, l)| l)
    }

    /// True for a file inside the torch package directory (not `torchvision/`, which merely
    /// shares the prefix).
    pub fn owns(&self, path: &str) -> bool {
        path.strip_prefix(self.path.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
    }

    /// A file of the torch package directory (`version.py`), with the directory's own
    /// separator (`\` in a Windows environment).
    pub fn file(&self, name: &str) -> String {
        let windows = self.path.as_bytes().get(1) == Some(&b':') && self.path.contains('\\');
        format!("{}{}{name}", self.path, if windows { '\\' } else { '/' })
    }

    /// The public version, e.g. `2.11.0`.
    pub fn public_version(&self) -> &str {
        self.version.split('+').next().unwrap_or(&self.version)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CondaPackage {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_nvidia_wheels_are_told_by_site_packages() {
        let env = PythonEnv {
            site_packages: vec!["/v/lib/python3.12/site-packages".into()],
            ..Default::default()
        };
        assert!(
            env.in_nvidia_wheels("/v/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9")
        );
        assert!(!env.in_nvidia_wheels("/v/lib/python3.12/site-packages/torch/lib/libtorch.so"));
        // Another env's wheels, or a system directory named nvidia, are not this env's.
        assert!(!env
            .in_nvidia_wheels("/w/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.13"));
        assert!(!env.in_nvidia_wheels("/usr/lib/nvidia/libcuda.so.1"));
    }
}
