//! Python environments, read from their files alone: no interpreter is started on this path.

pub mod declared;
pub mod dispatch;
pub mod frameworks;
pub mod headers;
pub mod installer;
mod memo;
pub mod numpy_abi;
pub mod record;
pub mod site;

use cudoctor_snapshot::{PythonEnv, PythonEnvKind};

use crate::host::Host;

/// Finds and reads every Python environment worth inspecting, the most specific first:
/// `--python`, the active venv, the active conda env, then `python3`/`python` on PATH.
pub fn collect(host: &Host, explicit: &[String]) -> Vec<PythonEnv> {
    read(host, &find(host, explicit), &|_, _| {})
}

/// An environment to read: its prefix, its interpreter, and every way it was found.
#[derive(Debug, Clone)]
pub struct FoundEnv {
    prefix: String,
    interpreter: Option<String>,
    via: Vec<String>,
}

/// Every environment worth inspecting, once, with every way it was found, the most specific
/// first (as [`collect`] reads them). Only paths are looked at: nothing is read yet.
pub fn find(host: &Host, explicit: &[String]) -> Vec<FoundEnv> {
    // The live Windows machine's Pythons are Windows ones (crate::windows::python_envs).
    if host.is_live_windows() {
        return Vec::new();
    }
    let mut found: Vec<(String, Option<String>, Vec<String>)> = Vec::new();
    let mut add = |prefix: Option<(String, Option<String>)>, via: &str| {
        let Some((prefix, interpreter)) = prefix else {
            return;
        };
        if let Some((_, _, vias)) = found.iter_mut().find(|(p, ..)| *p == prefix) {
            if !vias.iter().any(|v| v == via) {
                vias.push(via.to_string());
            }
            return;
        }
        found.push((prefix, interpreter, vec![via.to_string()]));
    };
    // A Windows path names a Windows Python, read by crate::windows.
    for p in explicit.iter().filter(|p| !crate::host::is_drive_path(p)) {
        add(
            prefix_of(host, p),
            cudoctor_snapshot::FOUND_VIA_PYTHON_OPTION,
        );
    }
    if let Some(v) = host.var("VIRTUAL_ENV") {
        add(prefix_of(host, v), "VIRTUAL_ENV");
    }
    if let Some(c) = host.var("CONDA_PREFIX") {
        add(prefix_of(host, c), "CONDA_PREFIX");
    }
    for name in ["python3", "python"] {
        for hit in host.which_all(name) {
            add(prefix_of(host, &hit), &format!("{name} on PATH"));
        }
    }
    found
        .into_iter()
        .map(|(prefix, interpreter, via)| FoundEnv {
            prefix,
            interpreter,
            via,
        })
        .collect()
}

/// Reads the `found` environments, each on a worker of its own where the process's budget has
/// one (an env's packages, frameworks and installer are its own files). `packages_read(i, env)`
/// is called as soon as environment `i`'s site directories and packages are read, before its
/// frameworks, declared requirements, installer and NumPy pins: what the wheel check, the
/// listing and the loader emulation need, so they can start while the rest is read.
pub fn read(
    host: &Host,
    found: &[FoundEnv],
    packages_read: &(dyn Fn(usize, &PythonEnv) + Sync),
) -> Vec<PythonEnv> {
    let indexed: Vec<(usize, &FoundEnv)> = found.iter().enumerate().collect();
    cudoctor_types::ThreadBudget::process()
        .map(&indexed, found.len(), |&(i, f)| {
            read_env(host, f, &|env| packages_read(i, env))
        })
        .into_iter()
        // A reader's panic is the caller's, as it was before the threads.
        .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
        .collect()
}

/// Why a path given with `--python` is neither a Python interpreter nor an environment's
/// prefix; `None` when it is one. (Checking another env in its place would answer a question
/// the user did not ask.)
pub fn explicit_problem(host: &Host, path: &str) -> Option<String> {
    if crate::host::is_drive_path(path) || host.is_live_windows() {
        return crate::windows::explicit_problem(host, path);
    }
    let Some((prefix, interpreter)) = prefix_of(host, path) else {
        return Some(format!("--python {path}: no such file or directory"));
    };
    let normalised = crate::host::normalise(path);
    if host.is_dir(&normalised) {
        let looks_like_env = interpreter.is_some()
            || host.is_file(&format!("{prefix}/pyvenv.cfg"))
            || host.is_dir(&format!("{prefix}/conda-meta"))
            || !lib_python_versions(host, &prefix).is_empty();
        return (!looks_like_env).then(|| {
            format!("--python {path}: not a Python environment (no bin/python, pyvenv.cfg, conda-meta or lib/python3.*)")
        });
    }
    let name = normalised.rsplit('/').next().unwrap_or("");
    let is_python = ["python", "pypy"].iter().any(|p| name.starts_with(p));
    if !is_python {
        return Some(format!("--python {path}: not a Python interpreter (expected a python* file or an environment directory)"));
    }
    interpreter_file_problem(host, &normalised).map(|why| format!("--python {path}: {why}"))
}

/// Why an interpreter path is not a regular executable file (or a link to one): a FIFO, a
/// device or a socket named python3 is no interpreter. Links are followed inside the root.
fn interpreter_file_problem(host: &Host, path: &str) -> Option<String> {
    let real = host
        .resolve(path)
        .map_or_else(|| path.to_string(), |(r, _)| r);
    let meta = match std::fs::metadata(host.fs_path(&real)) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot read it: {e}")),
    };
    if !meta.is_file() {
        return Some(
            "not a regular file (a FIFO, device, socket or directory is no interpreter)".into(),
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if meta.permissions().mode() & 0o111 == 0 {
            return Some("not an executable file".into());
        }
    }
    None
}

/// The environment prefix for an interpreter path or a prefix directory, with the interpreter.
/// A venv's `bin/python` is a link to the base interpreter, so the venv is recognised before
/// links are followed.
fn prefix_of(host: &Host, path: &str) -> Option<(String, Option<String>)> {
    let path = crate::host::normalise(path);
    if host.is_dir(&path) {
        let interp = ["bin/python3", "bin/python", "python.exe"]
            .iter()
            .map(|b| format!("{}/{b}", path.trim_end_matches('/')))
            .find(|p| host.exists(p));
        return Some((path, interp));
    }
    if !host.exists(&path) {
        return None;
    }
    let parent = |p: &str| p.rsplit_once('/').map(|(d, _)| d.to_string());
    let bin = parent(&path)?;
    if bin.ends_with("/shims") {
        // pyenv: the shim is a script that runs the selected version's interpreter.
        let root = parent(&bin)?;
        let name = path.rsplit('/').next().unwrap_or("python");
        let version = host
            .var("PYENV_VERSION")
            .map(str::to_string)
            .or_else(|| host.read_text(&format!("{root}/version")).ok())
            .and_then(|v| v.split_whitespace().next().map(str::to_string))?;
        let prefix = format!("{root}/versions/{version}");
        let interp = format!("{prefix}/bin/{name}");
        return host.exists(&interp).then_some((prefix, Some(interp)));
    }
    let candidate = parent(&bin)
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/".into());
    if host.is_file(&format!("{candidate}/pyvenv.cfg"))
        || host.is_dir(&format!("{candidate}/conda-meta"))
    {
        return Some((candidate, Some(path)));
    }
    let (real, _) = host.resolve(&path)?;
    let real_bin = parent(&real)?;
    let prefix = parent(&real_bin)
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/".into());
    Some((prefix, Some(path)))
}

/// One environment, read from its files. The site directories are listed and each
/// dist-info text read once for all the readers ([`memo`]); once its packages are known, its
/// frameworks and declared requirements are read beside its installer and NumPy pins (each
/// reads only the packages, site directories and dist-info files).
fn read_env(host: &Host, found: &FoundEnv, packages_read: &dyn Fn(&PythonEnv)) -> PythonEnv {
    let memo = std::sync::Arc::new(memo::Memo::default());
    memo::scoped(&memo, || read_env_with(host, found, &memo, packages_read))
}

fn read_env_with(
    host: &Host,
    found: &FoundEnv,
    memo: &std::sync::Arc<memo::Memo>,
    packages_read: &dyn Fn(&PythonEnv),
) -> PythonEnv {
    let prefix = found.prefix.as_str();
    let cfg = host.read_text(&format!("{prefix}/pyvenv.cfg")).ok();
    let kind = if cfg.is_some() {
        PythonEnvKind::Venv
    } else if host.is_dir(&format!("{prefix}/conda-meta")) {
        PythonEnvKind::Conda
    } else {
        PythonEnvKind::System
    };
    let mut env = PythonEnv {
        prefix: prefix.to_string(),
        kind,
        found_via: found.via.clone(),
        interpreter: found.interpreter.clone(),
        ..Default::default()
    };
    let cfg_version = cfg
        .as_deref()
        .and_then(|c| cfg_value(c, "version").or_else(|| cfg_value(c, "version_info")));
    let lib_versions = lib_python_versions(host, prefix);
    env.python_version = cfg_version.or_else(|| lib_versions.first().cloned());
    // Each part's span (CUDOCTOR_TIMINGS), for finding the serial part of a check.
    let t = crate::timings::global();
    env.headers = t.time("env-headers", || {
        headers::read(host, &env, cfg.as_deref(), &lib_versions)
    });
    env.site_packages = t.time("env-sites", || {
        site::site_packages_dirs(host, prefix, kind, &lib_versions, cfg.as_deref())
    });
    t.time("env-packages", || site::read_packages(host, &mut env));
    if kind == PythonEnvKind::Conda {
        env.conda_packages = site::conda_packages(host, prefix);
    }
    packages_read(&env);
    let read = &env;
    // An environment without a CUDA-relevant package (a system Python) has nothing to read
    // beside: no thread for it.
    let inline = cudoctor_types::ThreadBudget::new(0);
    let budget = if env.packages.is_empty() {
        &inline
    } else {
        cudoctor_types::ThreadBudget::process()
    };
    let (installer, project, frameworks, declared, numpy_1_pins) = std::thread::scope(|s| {
        let frameworks = budget.spawn_or_run(s, || {
            memo::scoped(memo, || {
                t.time("env-frameworks", || frameworks::read(host, read))
            })
        });
        let declared = budget.spawn_or_run(s, || {
            memo::scoped(memo, || {
                t.time("env-declared", || declared::read(host, read))
            })
        });
        let installer = t.time("env-installer", || installer::detect(host, read));
        let project = installer::project(host, read);
        let numpy_1_pins = t.time("env-numpy", || numpy_abi::numpy_1_pins(host, read));
        (
            installer,
            project,
            joined(frameworks.join()),
            joined(declared.join()),
            numpy_1_pins,
        )
    });
    env.installer = Some(installer);
    env.project = project;
    env.frameworks = frameworks;
    env.declared = declared;
    env.numpy_1_pins = numpy_1_pins;
    env
}

/// A reader's result; its panic is the caller's, as it was before the threads.
fn joined<T>(r: std::thread::Result<T>) -> T {
    r.unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Whether a venv sees the system's site packages (and the user site): pyvenv.cfg's
/// `include-system-site-packages`, which site.py's `venv()` takes as true when the key is
/// absent (its default is "true"); no pyvenv.cfg text, no venv, nothing included.
pub fn includes_system_site(cfg: Option<&str>) -> bool {
    cfg.is_some_and(|c| {
        cfg_value(c, "include-system-site-packages").is_none_or(|v| v.eq_ignore_ascii_case("true"))
    })
}

/// A `key = value` line of pyvenv.cfg.
pub fn cfg_value(cfg: &str, key: &str) -> Option<String> {
    cfg.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// `3.12` for each `lib/python3.12` directory, newest first.
fn lib_python_versions(host: &Host, prefix: &str) -> Vec<String> {
    let mut versions: Vec<String> = ["lib", "lib64"]
        .iter()
        .flat_map(|lib| host.list_dir(&format!("{prefix}/{lib}")))
        .filter_map(|name| name.strip_prefix("python").map(str::to_string))
        .filter(|v| {
            v.starts_with('3')
                && v.contains('.')
                && v.trim_end_matches('t')
                    .replace('.', "")
                    .chars()
                    .all(|c| c.is_ascii_digit())
        })
        .collect();
    versions.sort_by_key(|v| {
        let mut it = v
            .trim_end_matches('t')
            .split('.')
            .map(|p| p.parse::<u32>().unwrap_or(0));
        std::cmp::Reverse((it.next().unwrap_or(0), it.next().unwrap_or(0)))
    });
    versions.dedup();
    versions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_venv_sees_the_system_site_unless_its_cfg_says_false() {
        // site.py's venv(): system_site = "true" until pyvenv.cfg says otherwise.
        assert!(includes_system_site(Some("home = /usr/bin\n")));
        assert!(includes_system_site(Some(
            "include-system-site-packages = True\n"
        )));
        assert!(!includes_system_site(Some(
            "home = /usr/bin\ninclude-system-site-packages = false\n"
        )));
        assert!(!includes_system_site(None));
    }
}
