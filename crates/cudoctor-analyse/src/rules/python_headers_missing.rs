use cudoctor_snapshot::{PythonHeaders, PythonOrigin};

use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK018",
    name: "python-headers-missing",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary:
        "An extension build would find no Python.h: the environment's base Python has no C headers",
    docs: r#"## What it checks
Where a CUDA torch and a toolkit to build with are installed: whether the environment's
interpreter has its C headers, where an extension build looks for them. torch's
`cpp_extension` (`load`, `load_inline`, `BuildExtension`) and setuptools' `build_ext` (a
`pip install` of an sdist such as flash-attn or apex) compile against sysconfig's include
path, `<sys.base_prefix>/include/pythonX.Y` (`python3.13t` free-threaded): for a venv, the
Python it was made from (pyvenv.cfg's `home`). Read from files; no interpreter is run.

## Why it matters
Debian and Ubuntu ship the interpreter (`python3.11`) without its headers: those are the
separate `python3.11-dev` package, absent from slim images and fresh installs. torch's
headers include `Python.h`, so every extension source stops at once with
"fatal error: Python.h: No such file or directory", after the minutes a pip install spends
resolving and downloading. conda's, uv's and pyenv's Pythons ship their headers.

Running installed wheels is not affected: a warning about builds, as TK013.

## How to fix
Install the headers of that Python the way it was installed: `apt-get install python3.X-dev`
(the interpreter's own minor) for a Debian or Ubuntu Python, `dnf install python3-devel` on
Fedora and RHEL; a conda, uv or pyenv Python that lost them is reinstalled (`conda install
--force-reinstall python=X.Y`, `uv python install --reinstall X.Y`, `pyenv install --force
X.Y.Z`). Or make the environment from a Python that ships them (`uv venv --python X.Y` with
a uv-managed Python).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.windows.is_some() {
        return Vec::new();
    }
    // Only where an extension build could otherwise run: a toolkit torch would build with.
    let Some(build) = ctx.build_toolkit().filter(|b| b.exists) else {
        return Vec::new();
    };
    // Each missing include directory once, with the torch environments that build against it.
    let mut missing: Vec<(&PythonHeaders, Vec<String>)> = Vec::new();
    for t in ctx.torch_envs() {
        let Some(h) = t.env.headers.as_ref().filter(|h| !h.python_h) else {
            continue;
        };
        if t.env.windows || t.cuda().is_none() {
            continue;
        }
        match missing
            .iter_mut()
            .find(|(m, _)| m.include_dir == h.include_dir)
        {
            Some((_, labels)) => labels.push(t.label()),
            None => missing.push((h, vec![t.label()])),
        }
    }
    missing
        .into_iter()
        .map(|(h, labels)| {
            let mut f = Finding::new(
                &RULE,
                format!(
                    "An extension build would find no Python.h: Python {} at {} has no C headers ({})",
                    h.version,
                    h.base_prefix,
                    labels.join(", ")
                ),
            )
            .evidence(format!("no {}/Python.h", h.include_dir))
            .evidence(format!("base prefix {} ({})", h.base_prefix, h.base_from));
            if let Some(e) = &h.origin_evidence {
                f = f.evidence(format!("installed by {}: {e}", origin_name(h.origin)));
            }
            f.evidence(format!(
                "{} = {} -> toolkit {}",
                build.chosen_by,
                build.home,
                build.version.as_deref().unwrap_or("?")
            ))
            .evidence("predicted, for every source including torch's headers: \"fatal error: Python.h: No such file or directory\"")
            .cause(cause(h.origin))
            .steps(steps(ctx, h))
        })
        .collect()
}

fn origin_name(o: PythonOrigin) -> &'static str {
    match o {
        PythonOrigin::Dpkg => "dpkg",
        PythonOrigin::Rpm => "rpm",
        PythonOrigin::Conda => "conda",
        PythonOrigin::Uv => "uv",
        PythonOrigin::Pyenv => "pyenv",
        PythonOrigin::Other => "another installer",
    }
}

fn cause(o: PythonOrigin) -> &'static str {
    match o {
        PythonOrigin::Dpkg => "Debian and Ubuntu package a Python's C headers apart from its interpreter (pythonX.Y-dev): a venv made from the system Python has none unless that package is installed, and every extension build includes Python.h through torch's headers.",
        PythonOrigin::Rpm => "RPM distributions package a Python's C headers apart from its interpreter (python3-devel): without it every extension build stops at Python.h.",
        _ => "This Python normally ships its C headers; they are gone from its include directory (removed to slim an image, or a damaged install), and every extension build includes Python.h through torch's headers.",
    }
}

fn steps(ctx: &Context, h: &PythonHeaders) -> Vec<FixStep> {
    let xy = h.version.trim_end_matches(['m', 't']);
    let q = cudoctor_plan::quote;
    match h.origin {
        // Debian's package of the headers is named by the interpreter's own minor.
        PythonOrigin::Dpkg if !h.version.ends_with('t') => vec![FixStep::Shell(format!(
            "apt-get install python{xy}-dev"
        ))],
        PythonOrigin::Rpm => vec![FixStep::Prose(format!(
            "Install the headers of Python {xy}: `dnf install python3-devel` for the distribution's default python3, `dnf install python{xy}-devel` for another"
        ))],
        PythonOrigin::Conda => vec![FixStep::Shell(format!(
            "conda install -p {} --force-reinstall python={xy}",
            q(&h.base_prefix)
        ))],
        PythonOrigin::Uv => vec![FixStep::Shell(format!("uv python install --reinstall {xy}"))],
        PythonOrigin::Pyenv => {
            let full = h
                .base_prefix
                .rsplit('/')
                .next()
                .filter(|v| v.starts_with(xy))
                .unwrap_or(xy);
            vec![FixStep::Shell(format!("pyenv install --force {}", q(full)))]
        }
        _ => {
            let on_debian = ctx
                .snap
                .host
                .distro
                .as_deref()
                .is_some_and(|d| d.contains("Debian") || d.contains("Ubuntu"));
            let mut steps = vec![FixStep::Prose(format!(
                "Install the C headers of the Python at {} (a python.org or source build installs them with it), or make the environment from a Python that ships them (`uv python install {xy}`, then `uv venv --python {xy}`)",
                h.base_prefix
            ))];
            if on_debian && h.base_prefix == "/usr" && !h.version.ends_with('t') {
                steps.push(FixStep::Shell(format!("apt-get install python{xy}-dev")));
            }
            steps
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn headers_of(origin: PythonOrigin, present: bool) -> PythonHeaders {
        let (base, version) = match origin {
            PythonOrigin::Conda => ("/opt/conda", "3.11"),
            PythonOrigin::Uv => (
                "/root/.local/share/uv/python/cpython-3.12.8-linux-x86_64-gnu",
                "3.12",
            ),
            PythonOrigin::Pyenv => ("/root/.pyenv/versions/3.11.7", "3.11"),
            _ => ("/usr", "3.11"),
        };
        PythonHeaders {
            version: version.into(),
            base_prefix: base.into(),
            base_from: format!("pyvenv.cfg: home = {base}/bin"),
            include_dir: format!("{base}/include/python{version}"),
            python_h: present,
            origin,
            origin_evidence: (origin == PythonOrigin::Dpkg)
                .then(|| "/var/lib/dpkg/info/python3.11-minimal.list".into()),
        }
    }

    fn with(origin: PythonOrigin, present: bool) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.host.distro = Some("Debian GNU/Linux 12 (bookworm)".into());
        for e in &mut s.python_envs {
            e.headers = Some(headers_of(origin, present));
        }
        s
    }

    #[test]
    fn a_venv_of_debians_python_without_the_dev_package_is_predicted_with_its_package() {
        let f = run(&RULE, &with(PythonOrigin::Dpkg, false));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title
                .contains("Python 3.11 at /usr has no C headers (torch 2.11.0+cu130 in /opt/venv)"),
            "{}",
            f[0].title
        );
        let ev = f[0].evidence.join("\n");
        assert!(ev.contains("no /usr/include/python3.11/Python.h"), "{ev}");
        assert!(ev.contains("installed by dpkg: /var/lib/dpkg/info/python3.11-minimal.list"));
        assert!(ev.contains("\"fatal error: Python.h: No such file or directory\""));
        assert_eq!(f[0].fix[0].text(), "apt-get install python3.11-dev");
    }

    #[test]
    fn each_installer_gets_its_own_fix() {
        let fix = |o| run(&RULE, &with(o, false))[0].fix[0].text().to_string();
        assert_eq!(
            fix(PythonOrigin::Conda),
            "conda install -p /opt/conda --force-reinstall python=3.11"
        );
        assert_eq!(fix(PythonOrigin::Uv), "uv python install --reinstall 3.12");
        assert_eq!(fix(PythonOrigin::Pyenv), "pyenv install --force 3.11.7");
        assert!(fix(PythonOrigin::Rpm).contains("dnf install python3-devel"));
        let other = run(&RULE, &with(PythonOrigin::Other, false));
        assert!(other[0].fix[0].text().contains("uv venv --python 3.11"));
        // A /usr Python on Debian not confirmed by dpkg still gets the package as a second step.
        assert_eq!(other[0].fix[1].text(), "apt-get install python3.11-dev");
    }

    #[test]
    fn headers_present_unknown_no_toolkit_or_no_cuda_torch_say_nothing() {
        assert!(run(&RULE, &with(PythonOrigin::Dpkg, true)).is_empty());
        // An older snapshot: nothing known of the headers.
        assert!(run(&RULE, &h200()).is_empty());
        // No toolkit to build with.
        let mut s = with(PythonOrigin::Dpkg, false);
        s.toolkit = Default::default();
        s.env.remove("CUDA_HOME");
        assert!(run(&RULE, &s).is_empty());
        // A CPU torch: no CUDA extension build here.
        let mut s = with(PythonOrigin::Dpkg, false);
        s.python_envs[0].torch.as_mut().unwrap().cuda = None;
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn two_environments_of_one_base_are_one_finding() {
        let mut s = with(PythonOrigin::Dpkg, false);
        let mut second = s.python_envs[0].clone();
        second.prefix = "/srv/other".into();
        s.python_envs.push(second);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0]
            .title
            .contains("in /opt/venv, torch 2.11.0+cu130 in /srv/other"));
    }
}
