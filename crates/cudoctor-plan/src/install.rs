//! The one writer of package commands (install, reinstall, rebuild, uninstall, cache removal)
//! for an environment, in that environment's own installer: `uv pip ... --python <interpreter>`
//! in a uv-made venv (it has no pip), the environment's `python -m pip` otherwise (a conda
//! environment's pip included). Every rule's fix and the build chooser's remedy come from here,
//! so a command never names an installer the environment does not have.

use crate::commands::PYTORCH_INDEX;
use crate::fix::{quote, quote_powershell, quote_powershell_path, FixStep};
use crate::model::{Installer, TargetEnv};

/// One install operation, before it is written for an installer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Install {
    /// Requirements as the installer reads them ("torch==2.11.0+cu130", "nvidia-cudnn-cu13").
    pub pins: Vec<String>,
    /// Install again what is already registered (its files are gone or damaged).
    pub reinstall: bool,
    /// Leave every other distribution as it is.
    pub no_deps: bool,
    /// Build these packages from source against what is installed (no wheel, no cached build,
    /// no isolated build environment, so the build sees this torch).
    pub from_source: Vec<String>,
    /// Build in this environment, against its torch, rather than in an isolated one (implied by
    /// `from_source`; alone for a requirement that is a source, e.g. a git URL).
    pub no_build_isolation: bool,
    /// Move to the newest release the index has (`--upgrade`).
    pub upgrade: bool,
    pub index_url: Option<String>,
}

impl Install {
    pub fn pins<I: IntoIterator<Item = S>, S: Into<String>>(pins: I) -> Install {
        Install {
            pins: pins.into_iter().map(Into::into).collect(),
            ..Install::default()
        }
    }

    /// `package==version`, from the PyTorch index a local label (`+cu130`) can only have come
    /// from, else from the environment's default index.
    pub fn pinned(package: &str, version: &str) -> Install {
        Install::pins([format!("{package}=={version}")])
            .index(torch_index_url(version.split_once('+').map(|(_, l)| l)))
    }

    /// The same release again, alone: `--force-reinstall --no-deps package==version`.
    pub fn exact(package: &str, version: &str) -> Install {
        Install {
            reinstall: true,
            no_deps: true,
            ..Install::pinned(package, version)
        }
    }

    /// The installed torch asked for again, so the installer keeps it while it adds or
    /// restores what torch requires: `version` as its installer recorded it (dist-info), from
    /// the PyTorch index only where a local label says it came from there.
    pub fn keep_torch(version: &str) -> Install {
        Install::pinned("torch", version)
    }

    /// A source build of `package` against the environment's torch, nothing else moved.
    pub fn rebuild(package: &str) -> Install {
        Install {
            pins: vec![package.to_string()],
            reinstall: true,
            no_deps: true,
            from_source: vec![package.to_string()],
            ..Install::default()
        }
    }

    pub fn index(mut self, url: Option<String>) -> Install {
        self.index_url = url;
        self
    }
}

/// The PyTorch wheel index of a torch local version label (`cu130`, `cpu`, `rocm6.2`), the
/// index a `+label` build can only have come from. `None` for builds without a label (from the
/// default index) and for labels of other origins.
pub fn torch_index_url(label: Option<&str>) -> Option<String> {
    let label = label?;
    let digits_after = |p: &str| {
        label
            .strip_prefix(p)
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    (label == "cpu" || digits_after("cu") || digits_after("rocm"))
        .then(|| format!("{PYTORCH_INDEX}/{label}"))
}

impl TargetEnv {
    /// The environment of whatever `python` is first on the user's PATH, through its own pip
    /// (`python -m pip ...`): the target of a fix when the environment is not known (`explain`
    /// without `--python`), so the command still names no installer but the interpreter's.
    pub fn generic() -> TargetEnv {
        TargetEnv {
            prefix: String::new(),
            python: "python".into(),
            installer: Installer::Pip,
            conda_pytorch: false,
            windows: false,
        }
    }

    /// A target for the environment at `prefix` with the installer its files name.
    pub fn at(prefix: &str, installer: Installer) -> TargetEnv {
        TargetEnv {
            prefix: prefix.to_string(),
            python: format!("{}/bin/python", prefix.trim_end_matches('/')),
            installer,
            conda_pytorch: false,
            windows: false,
        }
    }

    fn uses_uv(&self) -> bool {
        self.installer == Installer::Uv
    }

    /// A word of a command for this environment's shell (POSIX, or PowerShell on Windows).
    pub fn quote(&self, word: &str) -> String {
        if self.windows {
            quote_powershell(word)
        } else {
            quote(word)
        }
    }

    /// A command line written by this module for this environment, as the fix step of its
    /// shell.
    pub fn step(&self, command: String) -> FixStep {
        if self.windows {
            FixStep::PowerShell(command)
        } else {
            FixStep::Shell(command)
        }
    }

    /// The interpreter as the first word of a command (PowerShell runs a quoted path with `&`).
    fn python_word(&self) -> String {
        if self.windows {
            format!("& {}", quote_powershell_path(&self.python))
        } else {
            quote(&self.python)
        }
    }

    /// The start of every install/uninstall: `uv pip VERB --python PY` or `PY -m pip VERB`.
    fn head(&self, verb: &str) -> String {
        if self.uses_uv() {
            let python = if self.windows {
                quote_powershell_path(&self.python)
            } else {
                quote(&self.python)
            };
            format!("uv pip {verb} --python {python}")
        } else {
            format!("{} -m pip {verb}", self.python_word())
        }
    }

    /// The command line of `op` for this environment.
    pub fn install(&self, op: &Install) -> String {
        let mut words = vec![self.head("install")];
        if op.reinstall {
            words.push(
                if self.uses_uv() {
                    "--reinstall"
                } else {
                    "--force-reinstall"
                }
                .into(),
            );
        }
        if op.upgrade {
            words.push("--upgrade".into());
        }
        if op.no_deps {
            words.push("--no-deps".into());
        }
        if op.no_build_isolation || !op.from_source.is_empty() {
            words.push("--no-build-isolation".into());
        }
        if !op.from_source.is_empty() {
            for p in &op.from_source {
                words.push(format!("--no-binary {}", self.quote(p)));
            }
            words.push(
                if self.uses_uv() {
                    "--no-cache"
                } else {
                    "--no-cache-dir"
                }
                .into(),
            );
        }
        words.extend(op.pins.iter().map(|p| self.quote(p)));
        if let Some(u) = &op.index_url {
            words.push(format!("--index-url {}", self.quote(u)));
        }
        words.join(" ")
    }

    /// Removes `packages` from this environment.
    pub fn uninstall(&self, packages: &[&str]) -> String {
        let names: Vec<String> = packages.iter().map(|p| self.quote(p)).collect();
        if self.uses_uv() {
            format!("{} {}", self.head("uninstall"), names.join(" "))
        } else {
            format!("{} -y {}", self.head("uninstall"), names.join(" "))
        }
    }

    /// Drops the installer's cached wheels of `package` (a damaged cached wheel would be
    /// installed again).
    pub fn cache_remove(&self, package: &str) -> String {
        if self.uses_uv() {
            format!("uv cache clean {}", self.quote(package))
        } else {
            format!(
                "{} -m pip cache remove {}",
                self.python_word(),
                self.quote(&package.replace('-', "_"))
            )
        }
    }
}

impl TargetEnv {
    /// Installs a torch build (`torch==2.11.0+cu130` and its companions' pins, from the
    /// variant's index `index`) into this environment: conda's own command where the
    /// environment is conda's and `conda` (PyTorch's conda command for the build, when its
    /// channel has one) is given, else the environment's installer. Returns the step and, for a
    /// conda environment served by its pip, why.
    pub fn install_build(
        &self,
        pins: Vec<String>,
        index: Option<String>,
        conda: Option<&str>,
    ) -> (FixStep, Option<String>) {
        if self.installer == Installer::Conda {
            if let Some(c) = conda.and_then(|c| c.strip_prefix("conda install ")) {
                let cmd = format!("conda install -p {} {c}", self.quote(&self.prefix));
                return (self.step(cmd), None);
            }
            let step = self.step(self.install(&crate::Install::pins(pins).index(index)));
            return (
                step,
                Some("PyTorch publishes no conda package of this build (its channel stopped after 2.5, pytorch/pytorch#138506): the conda environment's own pip installs the wheels".into()),
            );
        }
        (
            self.step(self.install(&crate::Install::pins(pins).index(index))),
            None,
        )
    }
}

/// `uv pip install --python P ARGS` or `P -m pip install ARGS`; `args` are words (pins,
/// options), each quoted.
pub fn install(target: &TargetEnv, args: &[String]) -> String {
    format!("{} {}", target.head("install"), words(target, args))
}

/// `uv pip uninstall --python P NAMES` or `P -m pip uninstall -y NAMES`.
pub fn uninstall(target: &TargetEnv, names: &[String]) -> String {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    target.uninstall(&names)
}

fn words(target: &TargetEnv, args: &[String]) -> String {
    args.iter()
        .map(|a| target.quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(installer: Installer) -> TargetEnv {
        TargetEnv {
            prefix: "/opt/my env".into(),
            python: "/opt/my env/bin/python".into(),
            installer,
            conda_pytorch: false,
            windows: false,
        }
    }

    #[test]
    fn commands_use_the_envs_installer_and_quote_every_word() {
        let pins = vec!["jax[cuda13]==0.10.2".to_string()];
        assert_eq!(
            install(&target(Installer::Uv), &pins),
            "uv pip install --python '/opt/my env/bin/python' 'jax[cuda13]==0.10.2'"
        );
        assert_eq!(
            install(&target(Installer::Pip), &pins),
            "'/opt/my env/bin/python' -m pip install 'jax[cuda13]==0.10.2'"
        );
        let names = vec!["cupy-cuda12x".to_string()];
        assert_eq!(
            uninstall(&target(Installer::Conda), &names),
            "'/opt/my env/bin/python' -m pip uninstall -y cupy-cuda12x"
        );
        assert_eq!(
            uninstall(&target(Installer::Uv), &names),
            "uv pip uninstall --python '/opt/my env/bin/python' cupy-cuda12x"
        );
    }

    fn pip() -> TargetEnv {
        TargetEnv::at("/opt/my venv", Installer::Pip)
    }
    fn uv() -> TargetEnv {
        TargetEnv::at("/opt/my venv", Installer::Uv)
    }

    #[test]
    fn an_exact_reinstall_in_each_installer() {
        let op = Install::exact("torch", "2.11.0+cu130");
        assert_eq!(
            pip().install(&op),
            "'/opt/my venv/bin/python' -m pip install --force-reinstall --no-deps torch==2.11.0+cu130 --index-url https://download.pytorch.org/whl/cu130"
        );
        assert_eq!(
            uv().install(&op),
            "uv pip install --python '/opt/my venv/bin/python' --reinstall --no-deps torch==2.11.0+cu130 --index-url https://download.pytorch.org/whl/cu130"
        );
        // No label: the default index, none named.
        assert_eq!(
            uv().install(&Install::exact("nvidia-cudnn-cu13", "9.19.0.56")),
            "uv pip install --python '/opt/my venv/bin/python' --reinstall --no-deps nvidia-cudnn-cu13==9.19.0.56"
        );
        // Conda environments use the pip inside them.
        let conda = TargetEnv::at("/c", Installer::Conda);
        assert!(conda
            .install(&Install::pins(["x"]))
            .starts_with("/c/bin/python -m pip install x"));
    }

    #[test]
    fn a_source_rebuild_in_each_installer() {
        assert_eq!(
            pip().install(&Install::rebuild("flash-attn")),
            "'/opt/my venv/bin/python' -m pip install --force-reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache-dir flash-attn"
        );
        assert_eq!(
            uv().install(&Install::rebuild("flash-attn")),
            "uv pip install --python '/opt/my venv/bin/python' --reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache flash-attn"
        );
    }

    #[test]
    fn an_upgrade_for_an_unknown_environment_uses_the_interpreters_pip() {
        let op = Install {
            upgrade: true,
            ..Install::pins(["jax[cuda12]"])
        };
        assert_eq!(
            TargetEnv::generic().install(&op),
            "python -m pip install --upgrade 'jax[cuda12]'"
        );
        let op = Install {
            no_build_isolation: true,
            ..Install::pins(["git+https://github.com/thu-ml/SageAttention"])
        };
        assert_eq!(
            uv().install(&op),
            "uv pip install --python '/opt/my venv/bin/python' --no-build-isolation git+https://github.com/thu-ml/SageAttention"
        );
    }

    #[test]
    fn uninstall_and_cache_removal() {
        assert_eq!(
            pip().uninstall(&["torchaudio"]),
            "'/opt/my venv/bin/python' -m pip uninstall -y torchaudio"
        );
        assert_eq!(
            uv().uninstall(&["torchaudio"]),
            "uv pip uninstall --python '/opt/my venv/bin/python' torchaudio"
        );
        assert_eq!(
            pip().cache_remove("nvidia-cudnn-cu13"),
            "'/opt/my venv/bin/python' -m pip cache remove nvidia_cudnn_cu13"
        );
        assert_eq!(
            uv().cache_remove("nvidia-cudnn-cu13"),
            "uv cache clean nvidia-cudnn-cu13"
        );
    }

    #[test]
    fn values_from_the_machine_are_quoted() {
        let op = Install::exact("x;rm", "1 2");
        assert!(pip().install(&op).contains("'x;rm==1 2'"));
        assert_eq!(
            torch_index_url(Some("cu126")).as_deref(),
            Some("https://download.pytorch.org/whl/cu126")
        );
        assert_eq!(torch_index_url(Some("local")), None);
        assert_eq!(torch_index_url(None), None);
    }
}
