//! Where an extension build of an environment finds `Python.h`, read from files: torch's
//! `cpp_extension` (`sysconfig.get_path("include", scheme="posix_prefix")`) and setuptools'
//! `build_ext` (`sysconfig.get_python_inc()`) both compile against
//! `<sys.base_prefix>/include/pythonX.Y<abiflags>`. No interpreter is run: the base prefix is
//! the environment's own, or a venv's `pyvenv.cfg` `home` (the base interpreter's directory),
//! confirmed by the base's standard library (`lib/pythonX.Y/os.py`, getpath's landmark).

use cudoctor_snapshot::{PythonEnv, PythonEnvKind, PythonHeaders, PythonOrigin};

use crate::host::Host;

/// The headers of `env` (its prefix, kind and Python version already read); `None` when the
/// version is unknown or the base interpreter's prefix cannot be confirmed from its files.
pub fn read(
    host: &Host,
    env: &PythonEnv,
    cfg: Option<&str>,
    lib_versions: &[String],
) -> Option<PythonHeaders> {
    let xy = short_version(env.python_version.as_deref(), lib_versions)?;
    // A free-threaded build's library and include directories end in `t` (`python3.13t`).
    let lib_name = if lib_versions.iter().any(|v| *v == format!("{xy}t")) {
        format!("{xy}t")
    } else {
        xy.clone()
    };
    let (base_prefix, base_from) = base_prefix(host, env, cfg, &lib_name)?;
    // abiflags: `m` (pymalloc) was part of the name up to 3.7, `t` marks free-threading.
    let minor: u32 = xy.split('.').nth(1)?.parse().ok()?;
    let version = if xy.starts_with("3.") && minor < 8 {
        format!("{xy}m")
    } else {
        lib_name
    };
    let include_dir = format!("{}/include/python{version}", trim(&base_prefix));
    let python_h = host.is_file(&format!("{include_dir}/Python.h"));
    let (origin, origin_evidence) = origin(host, &base_prefix, &xy);
    Some(PythonHeaders {
        version,
        base_prefix,
        base_from,
        include_dir,
        python_h,
        origin,
        origin_evidence,
    })
}

/// `3.11` of `3.11.7`, or of the newest `lib/python3.11` when no version was recorded.
fn short_version(recorded: Option<&str>, lib_versions: &[String]) -> Option<String> {
    let v = recorded.or(lib_versions.first().map(String::as_str))?;
    let mut parts = v.trim_end_matches('t').split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    (digits(major) && digits(minor)).then(|| format!("{major}.{minor}"))
}

fn trim(p: &str) -> &str {
    match p.trim_end_matches('/') {
        "" => "",
        t => t,
    }
}

/// `sys.base_prefix` and how it was found; `None` when its standard library is not there.
fn base_prefix(
    host: &Host,
    env: &PythonEnv,
    cfg: Option<&str>,
    lib_name: &str,
) -> Option<(String, String)> {
    let is_base = |p: &str| host.is_file(&format!("{}/lib/python{lib_name}/os.py", trim(p)));
    if env.kind != PythonEnvKind::Venv {
        let prefix = env.prefix.clone();
        return is_base(&prefix).then(|| (prefix, "the environment's own prefix".to_string()));
    }
    let home = super::cfg_value(cfg?, "home")?;
    let home = home.trim_end_matches('/');
    let parent = |p: &str| {
        p.rsplit_once('/')
            .map(|(d, _)| if d.is_empty() { "/" } else { d }.to_string())
    };
    let said = format!("pyvenv.cfg: home = {home}");
    if let Some(base) = parent(home).filter(|b| is_base(b)) {
        return Some((base, said));
    }
    // `home` a directory of links (`/usr/local/bin/python3 -> /opt/python/bin/python3.12`):
    // getpath follows the base interpreter to its real place.
    let xy = lib_name.trim_end_matches('t');
    [
        format!("python{lib_name}"),
        format!("python{xy}"),
        "python3".into(),
    ]
    .iter()
    .find_map(|name| {
        let (real, _) = host.resolve(&format!("{home}/{name}"))?;
        let base = parent(&parent(&real)?)?;
        is_base(&base).then(|| (base, format!("{said}, {home}/{name} -> {real}")))
    })
}

/// Who installed the Python at `base`, with the file that says so.
fn origin(host: &Host, base: &str, xy: &str) -> (PythonOrigin, Option<String>) {
    let base = trim(base);
    if host.is_dir(&format!("{base}/conda-meta")) {
        return (PythonOrigin::Conda, Some(format!("{base}/conda-meta")));
    }
    let under = |var: &str, default: &str| {
        let dir = host
            .var(var)
            .map(|d| d.trim_end_matches('/').to_string())
            .unwrap_or_default();
        (!dir.is_empty() && base.starts_with(&format!("{dir}/"))) || base.contains(default)
    };
    // uv's managed Pythons: `~/.local/share/uv/python/cpython-3.12.8-linux-x86_64-gnu`.
    if under("UV_PYTHON_INSTALL_DIR", "/uv/python/") {
        return (PythonOrigin::Uv, None);
    }
    if under("PYENV_ROOT", "/.pyenv/versions/") {
        return (PythonOrigin::Pyenv, None);
    }
    if base == "/usr" {
        let dpkg = format!("/var/lib/dpkg/info/python{xy}-minimal.list");
        if host.is_file(&dpkg) {
            return (PythonOrigin::Dpkg, Some(dpkg));
        }
        if let Some(rpm) = ["/var/lib/rpm", "/usr/lib/sysimage/rpm"]
            .into_iter()
            .find(|d| host.is_dir(d))
        {
            return (PythonOrigin::Rpm, Some(rpm.to_string()));
        }
    }
    (PythonOrigin::Other, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn root_with(files: &[&str]) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        for f in files {
            let p = d.path().join(f.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "").unwrap();
        }
        let host = Host::rooted(
            d.path().to_path_buf(),
            BTreeMap::new(),
            Duration::from_secs(1),
        );
        (d, host)
    }

    fn env(prefix: &str, kind: PythonEnvKind, version: &str) -> PythonEnv {
        PythonEnv {
            prefix: prefix.into(),
            kind,
            python_version: Some(version.into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_venv_of_debians_python_without_the_dev_package_has_no_python_h() {
        let (_d, host) = root_with(&[
            "/usr/lib/python3.11/os.py",
            "/var/lib/dpkg/info/python3.11-minimal.list",
            "/e/lib/python3.11/site-packages/x",
        ]);
        let e = env("/e", PythonEnvKind::Venv, "3.11.2");
        let h = read(&host, &e, Some("home = /usr/bin\n"), &["3.11".into()]).unwrap();
        assert_eq!(h.base_prefix, "/usr");
        assert_eq!(h.base_from, "pyvenv.cfg: home = /usr/bin");
        assert_eq!(h.include_dir, "/usr/include/python3.11");
        assert!(!h.python_h);
        assert_eq!(h.origin, PythonOrigin::Dpkg);
        assert_eq!(
            h.origin_evidence.as_deref(),
            Some("/var/lib/dpkg/info/python3.11-minimal.list")
        );
    }

    #[test]
    fn headers_present_in_a_conda_env_and_a_free_threaded_uv_python() {
        let (_d, host) = root_with(&[
            "/c/lib/python3.12/os.py",
            "/c/include/python3.12/Python.h",
            "/c/conda-meta/history",
        ]);
        let h = read(
            &host,
            &env("/c", PythonEnvKind::Conda, "3.12"),
            None,
            &["3.12".into()],
        )
        .unwrap();
        assert!(h.python_h);
        assert_eq!(h.origin, PythonOrigin::Conda);

        let uv = "/root/.local/share/uv/python/cpython-3.13.1+freethreaded-linux-x86_64-gnu";
        let (_d, host) = root_with(&[
            &format!("{uv}/lib/python3.13t/os.py"),
            &format!("{uv}/include/python3.13t/Python.h"),
        ]);
        let cfg = format!("home = {uv}/bin\nversion_info = 3.13.1\n");
        let h = read(
            &host,
            &env("/v", PythonEnvKind::Venv, "3.13.1"),
            Some(&cfg),
            &["3.13t".into()],
        )
        .unwrap();
        assert_eq!(h.include_dir, format!("{uv}/include/python3.13t"));
        assert!(h.python_h);
        assert_eq!(h.origin, PythonOrigin::Uv);
    }

    #[test]
    fn a_home_of_links_is_followed_and_an_unconfirmed_base_is_unknown() {
        let (d, host) = root_with(&["/opt/py/lib/python3.12/os.py", "/opt/py/bin/python3.12"]);
        std::fs::create_dir_all(d.path().join("usr/local/bin")).unwrap();
        std::os::unix::fs::symlink(
            "/opt/py/bin/python3.12",
            d.path().join("usr/local/bin/python3"),
        )
        .unwrap();
        let e = env("/v", PythonEnvKind::Venv, "3.12.4");
        let h = read(&host, &e, Some("home = /usr/local/bin"), &["3.12".into()]).unwrap();
        assert_eq!(h.base_prefix, "/opt/py");
        assert!(h
            .base_from
            .contains("/usr/local/bin/python3 -> /opt/py/bin/python3.12"));
        assert_eq!(h.origin, PythonOrigin::Other);
        // No standard library where home says: nothing claimed.
        assert!(read(&host, &e, Some("home = /nowhere/bin"), &["3.12".into()]).is_none());
        // No version at all: nothing claimed.
        let mut e = e;
        e.python_version = None;
        assert!(read(&host, &e, Some("home = /usr/local/bin"), &[]).is_none());
    }

    #[test]
    fn python_3_7_names_its_include_directory_with_m() {
        let (_d, host) = root_with(&[
            "/root/.pyenv/versions/3.7.16/lib/python3.7/os.py",
            "/root/.pyenv/versions/3.7.16/include/python3.7m/Python.h",
        ]);
        let e = env("/root/.pyenv/versions/3.7.16", PythonEnvKind::System, "3.7");
        let h = read(&host, &e, None, &["3.7".into()]).unwrap();
        assert_eq!(h.version, "3.7m");
        assert!(h.python_h);
        assert_eq!(h.origin, PythonOrigin::Pyenv);
    }
}
