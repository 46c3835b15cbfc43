//! Which tool installs packages into an environment, read from its files: a uv-made venv says
//! so in pyvenv.cfg (`uv = 0.9.5`) and has no pip; a conda env has `conda-meta/`; a
//! distribution's `INSTALLER` file names the tool that installed it. Fixes are written for it.

use cudoctor_snapshot::{EnvInstaller, EnvProject, Installer, ProjectKind, PythonEnv};

use crate::host::Host;

/// The installer of `env`, whose site-packages are already known.
pub fn detect(host: &Host, env: &PythonEnv) -> EnvInstaller {
    let has_pip = env.site_packages.iter().any(|sp| {
        host.is_dir(&format!("{sp}/pip"))
            || super::memo::list_dir(host, sp)
                .iter()
                .any(|e| e.starts_with("pip-") && e.ends_with(".dist-info"))
    });
    if host.is_dir(&format!("{}/conda-meta", env.prefix)) {
        return EnvInstaller {
            kind: Installer::Conda,
            evidence: format!("{}/conda-meta exists (a conda environment)", env.prefix),
            has_pip,
        };
    }
    let cfg = host.read_text(&format!("{}/pyvenv.cfg", env.prefix)).ok();
    if let Some(uv) = cfg.as_deref().and_then(|c| super::cfg_value(c, "uv")) {
        return EnvInstaller {
            kind: if has_pip {
                Installer::Pip
            } else {
                Installer::Uv
            },
            evidence: format!(
                "{}/pyvenv.cfg: uv = {uv}{}",
                env.prefix,
                if has_pip {
                    ", but pip is installed in it"
                } else {
                    " (made by uv, no pip inside)"
                }
            ),
            has_pip,
        };
    }
    // torch's INSTALLER file: the tool that put the packages that matter here.
    let torch_installer = env.site_packages.iter().find_map(|sp| {
        super::memo::list_dir(host, sp)
            .iter()
            .filter(|e| e.starts_with("torch-") && e.ends_with(".dist-info"))
            .find_map(|d| host.read_text(&format!("{sp}/{d}/INSTALLER")).ok())
            .map(|t| (sp.clone(), t.trim().to_string()))
    });
    match torch_installer {
        Some((sp, tool)) if tool == "uv" && !has_pip => EnvInstaller {
            kind: Installer::Uv,
            evidence: format!(
                "{sp}/torch-*.dist-info/INSTALLER: uv, and no pip in the environment"
            ),
            has_pip,
        },
        _ => EnvInstaller {
            kind: Installer::Pip,
            evidence: if has_pip {
                "pip is installed in the environment".to_string()
            } else {
                "no uv or conda marker (pip assumed; it is not installed in the environment)"
                    .to_string()
            },
            has_pip,
        },
    }
}

/// The project that owns `env`, read from the files beside it: a uv project (`pyproject.toml`
/// and `uv.lock` beside its `.venv`), a Poetry project (`poetry.lock`), a Pixi workspace (the
/// environment under `.pixi/envs/`, its `pixi.toml` or a `pyproject.toml` with `[tool.pixi]`).
pub fn project(host: &Host, env: &PythonEnv) -> Option<EnvProject> {
    let prefix = env.prefix.trim_end_matches('/');
    let at = |root: &str, kind: ProjectKind, manifest: &str, lock: &str| {
        let manifest = format!("{root}/{manifest}");
        let lock = format!("{root}/{lock}");
        host.is_file(&manifest).then(|| EnvProject {
            kind,
            root: root.to_string(),
            manifest,
            lock: host.is_file(&lock).then_some(lock),
        })
    };
    // A conda environment made from the environment file beside it (`conda env create -f
    // environment.yml -p ./env`); never a conda installation's base (its condabin/).
    if host.is_dir(&format!("{prefix}/conda-meta")) {
        if host.is_dir(&format!("{prefix}/condabin")) || prefix.contains("/.pixi/envs/") {
            return None;
        }
        let (root, _) = prefix.rsplit_once('/')?;
        return ["environment.yml", "environment.yaml"]
            .into_iter()
            .find_map(|f| at(root, ProjectKind::Conda, f, "conda-lock.yml"));
    }
    if let Some((root, _)) = prefix.split_once("/.pixi/envs/") {
        return at(root, ProjectKind::Pixi, "pixi.toml", "pixi.lock").or_else(|| {
            let p = at(root, ProjectKind::Pixi, "pyproject.toml", "pixi.lock")?;
            host.read_text(&p.manifest)
                .ok()
                .filter(|t| t.contains("[tool.pixi"))
                .map(|_| p)
        });
    }
    let root = prefix.strip_suffix("/.venv")?;
    let uv = at(root, ProjectKind::Uv, "pyproject.toml", "uv.lock").filter(|p| p.lock.is_some());
    uv.or_else(|| {
        at(root, ProjectKind::Poetry, "pyproject.toml", "poetry.lock").filter(|p| p.lock.is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn env_at(root: &std::path::Path, files: &[(&str, &str)]) -> (Host, PythonEnv) {
        for (p, text) in files {
            let real = root.join(p.trim_start_matches('/'));
            std::fs::create_dir_all(real.parent().unwrap()).unwrap();
            std::fs::write(real, text).unwrap();
        }
        let host = Host::rooted(root.to_path_buf(), BTreeMap::new(), Duration::from_secs(1));
        let env = PythonEnv {
            prefix: "/e".into(),
            site_packages: vec!["/e/lib/python3.12/site-packages".into()],
            ..Default::default()
        };
        (host, env)
    }

    const SP: &str = "/e/lib/python3.12/site-packages";

    #[test]
    fn a_conda_env_beside_its_environment_file_is_a_conda_project() {
        let d = tempfile::tempdir().unwrap();
        let (host, env) = env_at(
            d.path(),
            &[
                (
                    "/w/environment.yml",
                    "name: ml\ndependencies:\n  - pytorch==2.5.1\n",
                ),
                ("/w/env/conda-meta/history", ""),
            ],
        );
        let env = PythonEnv {
            prefix: "/w/env".into(),
            ..env
        };
        let p = project(&host, &env).unwrap();
        assert_eq!(p.kind, ProjectKind::Conda);
        assert_eq!(p.manifest, "/w/environment.yml");
        assert_eq!(p.lock, None);
        // A conda installation's base beside a file of that name is not made from it.
        let (host, env) = env_at(
            d.path(),
            &[
                ("/home/u/environment.yml", ""),
                ("/home/u/mc/conda-meta/history", ""),
                ("/home/u/mc/condabin/conda", ""),
            ],
        );
        let env = PythonEnv {
            prefix: "/home/u/mc".into(),
            ..env
        };
        assert_eq!(project(&host, &env), None);
    }

    #[test]
    fn a_uv_made_venv_without_pip_is_uv() {
        let d = tempfile::tempdir().unwrap();
        let torch_installer = format!("{SP}/torch-2.11.0.dist-info/INSTALLER");
        let (host, env) = env_at(
            d.path(),
            &[
                (
                    "/e/pyvenv.cfg",
                    "home = /usr/bin\nuv = 0.9.5\nversion_info = 3.12.3\n",
                ),
                (&torch_installer, "uv\n"),
            ],
        );
        let got = detect(&host, &env);
        assert_eq!(got.kind, Installer::Uv);
        assert!(!got.has_pip);
        assert!(got.evidence.contains("uv = 0.9.5"), "{}", got.evidence);
    }

    #[test]
    fn pip_venvs_conda_envs_and_uv_venvs_with_pip() {
        let d = tempfile::tempdir().unwrap();
        let pip = format!("{SP}/pip-25.0.dist-info/METADATA");
        let (host, env) = env_at(
            d.path(),
            &[("/e/pyvenv.cfg", "home = /usr/bin\n"), (&pip, "")],
        );
        assert_eq!(detect(&host, &env).kind, Installer::Pip);
        let d = tempfile::tempdir().unwrap();
        let (host, env) = env_at(d.path(), &[("/e/pyvenv.cfg", "uv = 0.9.5\n"), (&pip, "")]);
        assert_eq!(detect(&host, &env).kind, Installer::Pip);
        let d = tempfile::tempdir().unwrap();
        let (host, env) = env_at(d.path(), &[("/e/conda-meta/history", "")]);
        assert_eq!(detect(&host, &env).kind, Installer::Conda);
    }

    #[test]
    fn the_project_beside_an_environment_owns_it() {
        let dir = tempfile::tempdir().unwrap();
        let (host, mut env) = env_at(
            dir.path(),
            &[
                ("/p/pyproject.toml", "[project]\nname = \"p\"\n"),
                ("/p/uv.lock", "version = 1\n"),
                ("/q/pyproject.toml", "[tool.poetry]\n"),
                ("/q/poetry.lock", ""),
                ("/w/pixi.toml", "[workspace]\n"),
                ("/w/pixi.lock", ""),
                ("/n/pyproject.toml", "[project]\n"),
            ],
        );
        env.prefix = "/p/.venv".into();
        let p = project(&host, &env).unwrap();
        assert_eq!(p.kind, ProjectKind::Uv);
        assert_eq!(p.manifest, "/p/pyproject.toml");
        assert_eq!(p.lock.as_deref(), Some("/p/uv.lock"));
        env.prefix = "/q/.venv".into();
        assert_eq!(project(&host, &env).unwrap().kind, ProjectKind::Poetry);
        env.prefix = "/w/.pixi/envs/default".into();
        let p = project(&host, &env).unwrap();
        assert_eq!((p.kind, p.root.as_str()), (ProjectKind::Pixi, "/w"));
        // A pyproject.toml without a lock declares no environment; a venv elsewhere has none.
        env.prefix = "/n/.venv".into();
        assert_eq!(project(&host, &env), None);
        env.prefix = "/e".into();
        assert_eq!(project(&host, &env), None);
    }
}
