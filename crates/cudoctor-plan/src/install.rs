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
    /// Take these packages only as prebuilt wheels (`--only-binary`): a build for another
    /// release is chosen, never a source build.
    pub only_binary: Vec<String>,
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
            project: None,
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
            project: None,
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

    /// A package name or pin in a command, quoted. A word that starts with `-` is no
    /// distribution (a name starts with a letter or a digit) but an installer would read it as
    /// an option (`-index-url=…` from a planted `__index_url=….dist-info`): it is written as
    /// `./-…`, a path that names nothing installed, so pasting the command fails harmlessly.
    pub fn package(&self, word: &str) -> String {
        if word.starts_with('-') {
            self.quote(&format!("./{word}"))
        } else {
            self.quote(word)
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

    /// The command line of `op` for this environment: for an environment a project owns, a
    /// plain install edits the project's declared requirements and re-syncs
    /// ([`TargetEnv::project_install`]).
    pub fn install(&self, op: &Install) -> String {
        if let Some(cmd) = self.project_install(op) {
            return cmd;
        }
        if let Some(specs) = self.conda_specs(op) {
            return format!(
                "conda install -p {} {}",
                self.quote(&self.prefix),
                specs.join(" ")
            );
        }
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
        for p in &op.only_binary {
            words.push(format!("--only-binary {}", self.quote(p)));
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
        words.extend(op.pins.iter().map(|p| self.package(p)));
        if let Some(u) = &op.index_url {
            words.push(format!("--index-url {}", self.quote(u)));
        }
        words.join(" ")
    }

    /// A plain install (pins, maybe from one index) as the owning project's command: uv's `uv add`
    /// (with `--index`, which writes `[[tool.uv.index]]` and `[tool.uv.sources]`), Poetry's
    /// `poetry add` (with an explicit source), Pixi's `pixi add --pypi`. None for other
    /// operations or without a project.
    pub fn project_install(&self, op: &Install) -> Option<String> {
        let project = self.project.as_ref()?;
        let plain = !op.reinstall
            && !op.no_deps
            && op.from_source.is_empty()
            && !op.no_build_isolation
            && !op.upgrade;
        if !plain || op.pins.is_empty() {
            return None;
        }
        let pins: Vec<String> = op.pins.iter().map(|p| self.package(p)).collect();
        let pins = pins.join(" ");
        let index_name = op.index_url.as_deref().map(|u| {
            format!(
                "pytorch-{}",
                u.trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("index")
            )
        });
        let root = self.quote(&project.root);
        Some(match project.kind {
            cudoctor_snapshot::ProjectKind::Uv => match (&index_name, &op.index_url) {
                (Some(n), Some(u)) => {
                    format!("uv add --project {root} {pins} --index {}", self.quote(&format!("{n}={u}")))
                }
                _ => format!("uv add --project {root} {pins}"),
            },
            cudoctor_snapshot::ProjectKind::Poetry => match (&index_name, &op.index_url) {
                (Some(n), Some(u)) => format!(
                    "poetry --directory {root} source add --priority=explicit {} {} && poetry --directory {root} add --source {} {pins}",
                    self.quote(n),
                    self.quote(u),
                    self.quote(n)
                ),
                _ => format!("poetry --directory {root} add {pins}"),
            },
            cudoctor_snapshot::ProjectKind::Pixi => format!(
                "pixi add --manifest-path {} --pypi {pins}",
                self.quote(&project.manifest)
            ),
            // The file is edited by hand (project_note says what to write); the command applies
            // it. Never `--prune`: it would remove what was installed beside the file.
            cudoctor_snapshot::ProjectKind::Conda => format!(
                "conda env update -p {} -f {}",
                self.quote(&self.prefix),
                self.quote(&project.manifest)
            ),
        })
    }

    /// What a project-owned environment's fix changes, as a sentence (None without a project).
    pub fn project_note(&self, op: &Install) -> Option<FixStep> {
        let project = self.project.as_ref()?;
        self.project_install(op)?;
        if project.kind == cudoctor_snapshot::ProjectKind::Conda {
            let conda = self.conda_specs(op);
            let specs = conda.clone().unwrap_or_else(|| op.pins.clone());
            let list = specs
                .iter()
                .map(|s| format!("`{}`", s.trim_matches('\'')))
                .collect::<Vec<_>>()
                .join(", ");
            let place = match (&conda, &op.index_url) {
                (Some(_), _) => "in its `dependencies`".to_string(),
                (None, Some(u)) => format!("in the `pip:` list of its `dependencies`, with `--index-url {u}` as that list's first line"),
                (None, None) => "in the `pip:` list of its `dependencies`".to_string(),
            };
            return Some(FixStep::Prose(format!(
                "This environment is made from the conda environment file {}: first write {list} {place} (replacing the lines of those packages); the command below applies the file, so the next `conda env update` or `conda env create` keeps the fix",
                project.manifest
            )));
        }
        let lock = project
            .lock
            .as_deref()
            .map(|l| format!(" and {l}"))
            .unwrap_or_default();
        let index = match (project.kind, &op.index_url) {
            (cudoctor_snapshot::ProjectKind::Uv, Some(_)) => " (the PyTorch index is added as [[tool.uv.index]] with a [tool.uv.sources] entry for each of these packages; set explicit = true on that index so nothing else is taken from it)",
            (cudoctor_snapshot::ProjectKind::Pixi, Some(_)) => " (name the PyTorch index for these packages in the manifest's pypi-options)",
            _ => "",
        };
        Some(FixStep::Prose(format!(
            "This environment belongs to the {} project at {}: the command changes its declared requirements in {}{lock} and re-syncs the environment, so the next sync keeps the fix{index}",
            project.kind.name(),
            project.root,
            project.manifest,
        )))
    }

    /// Removes `packages` from this environment.
    pub fn uninstall(&self, packages: &[&str]) -> String {
        if self.conda_owns(packages) {
            let names: Vec<String> = packages
                .iter()
                .map(|p| self.package(conda_name(p)))
                .collect();
            return format!(
                "conda remove -p {} {}",
                self.quote(&self.prefix),
                names.join(" ")
            );
        }
        let names: Vec<String> = packages.iter().map(|p| self.package(p)).collect();
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
            format!("uv cache clean {}", self.package(package))
        } else {
            format!(
                "{} -m pip cache remove {}",
                self.python_word(),
                self.package(&package.replace('-', "_"))
            )
        }
    }
}

/// The packages conda installs as torch's family in a conda environment whose torch is conda's
/// `pytorch`: a pip command over them would fight conda (two records of one package, conda's
/// solver undoing pip's change).
const CONDA_TORCH_FAMILY: [&str; 3] = ["torch", "torchvision", "torchaudio"];

/// conda's name of a package (`pytorch` for torch).
fn conda_name(name: &str) -> &str {
    if name == "torch" {
        "pytorch"
    } else {
        name
    }
}

impl TargetEnv {
    /// Every one of `names` is conda's in this environment (torch's family where torch is
    /// conda's `pytorch`).
    fn conda_owns(&self, names: &[&str]) -> bool {
        self.installer == Installer::Conda
            && self.conda_pytorch
            && !names.is_empty()
            && names.iter().all(|n| CONDA_TORCH_FAMILY.contains(n))
    }

    /// A plain install of conda's own packages in conda's terms: `pytorch==2.7.1` for the
    /// installed torch, `torchvision==0.22.1`; a build of a CUDA variant (`+cu126`) as conda's
    /// build of that kind (`pytorch==2.7.1=cuda*`: the solver picks the CUDA the driver runs), a
    /// CPU one as `=cpu*`. None when a pin is not conda's or the operation is not a plain install.
    fn conda_specs(&self, op: &Install) -> Option<Vec<String>> {
        let plain = !op.reinstall && !op.no_deps && op.from_source.is_empty() && !op.upgrade;
        let reqs: Vec<(String, String)> = op
            .pins
            .iter()
            .map(|p| {
                let (n, v) = p.split_once("==")?;
                Some((n.to_string(), v.to_string()))
            })
            .collect::<Option<_>>()?;
        let names: Vec<&str> = reqs.iter().map(|(n, _)| n.as_str()).collect();
        if !plain || !self.conda_owns(&names) {
            return None;
        }
        Some(
            reqs.iter()
                .map(|(n, v)| {
                    let spec = match v.split_once('+') {
                        Some((public, "cpu")) => {
                            format!("{}=={public}=cpu*", conda_name(n))
                        }
                        Some((public, label)) if label.starts_with("cu") => {
                            format!("{}=={public}=cuda*", conda_name(n))
                        }
                        Some((public, _)) => format!("{}=={public}", conda_name(n)),
                        None => format!("{}=={v}", conda_name(n)),
                    };
                    self.quote(&spec)
                })
                .collect(),
        )
    }

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

/// [`cudoctor_report::Finding::command`] writes its step for the environment's shell.
impl cudoctor_report::CommandTarget for TargetEnv {
    fn step(&self, command: String) -> FixStep {
        TargetEnv::step(self, command)
    }
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
            project: None,
        }
    }

    #[test]
    fn a_package_name_that_starts_with_a_dash_is_never_read_as_an_option() {
        for installer in [Installer::Pip, Installer::Uv, Installer::Conda] {
            let t = target(installer);
            let hostile = "-index-url=https:evil.example";
            for cmd in [
                t.uninstall(&[hostile]),
                t.install(&crate::Install::pins(vec![format!("{hostile}==1.0")])),
                t.cache_remove(hostile),
            ] {
                let words = shell_words(&cmd);
                assert!(
                    !words
                        .iter()
                        .any(|w| w.starts_with("-index") || w.starts_with("-i")),
                    "{cmd}"
                );
                assert!(
                    words
                        .iter()
                        .any(|w| w.starts_with("./-index-url") || w.starts_with("_index_url")),
                    "{cmd}"
                );
            }
        }
    }

    /// The words a POSIX shell makes of a command line of plain and single-quoted words.
    fn shell_words(cmd: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut any = false;
        for c in cmd.chars() {
            match c {
                '\'' => {
                    quoted = !quoted;
                    any = true;
                }
                ' ' if !quoted => {
                    if any {
                        words.push(std::mem::take(&mut cur));
                    }
                    any = false;
                }
                c => {
                    cur.push(c);
                    any = true;
                }
            }
        }
        if any {
            words.push(cur);
        }
        words
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

    #[test]
    fn an_environment_a_project_owns_is_fixed_through_the_project() {
        use cudoctor_snapshot::{EnvProject, ProjectKind};
        let with = |kind, manifest: &str| TargetEnv {
            project: Some(EnvProject {
                kind,
                root: "/w/my proj".into(),
                manifest: format!("/w/my proj/{manifest}"),
                lock: None,
            }),
            ..TargetEnv::at("/w/my proj/.venv", Installer::Uv)
        };
        let op = Install::pinned("torch", "2.11.0+cu130");
        assert_eq!(
            with(ProjectKind::Uv, "pyproject.toml").install(&op),
            "uv add --project '/w/my proj' torch==2.11.0+cu130 --index pytorch-cu130=https://download.pytorch.org/whl/cu130"
        );
        assert_eq!(
            with(ProjectKind::Poetry, "pyproject.toml").install(&op),
            "poetry --directory '/w/my proj' source add --priority=explicit pytorch-cu130 https://download.pytorch.org/whl/cu130 && poetry --directory '/w/my proj' add --source pytorch-cu130 torch==2.11.0+cu130"
        );
        assert_eq!(
            with(ProjectKind::Pixi, "pixi.toml").install(&Install::pins(["torchvision==0.26.0"])),
            "pixi add --manifest-path '/w/my proj/pixi.toml' --pypi torchvision==0.26.0"
        );
        let note = with(ProjectKind::Uv, "pyproject.toml")
            .project_note(&op)
            .unwrap();
        assert!(note.contains("/w/my proj/pyproject.toml"), "{note}");
        // A reinstall of the exact files is no change of the declared requirements.
        let t = with(ProjectKind::Uv, "pyproject.toml");
        assert!(t
            .install(&Install::exact("torch", "2.11.0+cu130"))
            .starts_with("uv pip install --python"));
        assert_eq!(t.project_note(&Install::exact("torch", "2.11.0")), None);
    }
}
