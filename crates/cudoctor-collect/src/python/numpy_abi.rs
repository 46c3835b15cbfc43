//! The NumPy 1.x / 2.x question: where NumPy 2 is installed, which recorded distributions'
//! metadata still require NumPy 1 (`Requires-Dist: numpy<2`, `numpy~=1.26`): built against
//! NumPy 1, their extension modules stop at import with "A module that was compiled using NumPy
//! 1.x cannot be run in NumPy 2". Read from dist-info METADATA only; nothing is imported.

use cudoctor_snapshot::{NumpyOnePin, PythonEnv};
use cudoctor_types::{normalise_name, Requirement};

use crate::host::Host;

/// A NumPy 1.x release a NumPy-1 requirement admits (the last of the 1.x line).
const LAST_NUMPY_1: &str = "1.26.4";

/// The distributions of `env` (those recorded in its packages) that require NumPy 1 while NumPy
/// 2 or later is installed; empty otherwise.
pub fn numpy_1_pins(host: &Host, env: &PythonEnv) -> Vec<NumpyOnePin> {
    let Some(numpy) = env.package("numpy") else {
        return Vec::new();
    };
    let major: Option<u32> = numpy.version.split('.').next().and_then(|m| m.parse().ok());
    if major.is_none_or(|m| m < 2) {
        return Vec::new();
    }
    let python: Option<String> = env
        .python_version
        .as_deref()
        .map(|v| v.split('.').take(2).collect::<Vec<_>>().join("."));
    let mut out = Vec::new();
    for pkg in env.packages.iter().filter(|p| p.name != "numpy") {
        let listing = super::memo::list_dir(host, &pkg.location);
        let Some(dir) = listing.iter().find(|entry| {
            entry.ends_with(".dist-info")
                && super::site::dist_name_version(entry)
                    .is_some_and(|(n, _)| normalise_name(&n) == pkg.name)
        }) else {
            continue;
        };
        let Ok(metadata) =
            super::memo::read_text(host, &format!("{}/{dir}/METADATA", pkg.location))
        else {
            continue;
        };
        for line in super::frameworks::parse_requires_dist(&metadata) {
            let Ok(req) = line.parse::<Requirement>() else {
                continue;
            };
            if req.name != "numpy" || !req.marker_extras().is_empty() {
                continue;
            }
            let vars = |k: &str| match k {
                "python_version" => python.clone(),
                "sys_platform" => Some("linux".into()),
                "platform_system" => Some("Linux".into()),
                "os_name" => Some("posix".into()),
                _ => None,
            };
            if req.marker_holds(&vars) != Some(true) {
                continue;
            }
            if req.admits(&numpy.version) == Some(false) && req.admits(LAST_NUMPY_1) == Some(true) {
                out.push(NumpyOnePin {
                    package: pkg.name.clone(),
                    version: pkg.version.clone(),
                    requirement: req.text.clone(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_snapshot::Package;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn env_with(
        dir: &std::path::Path,
        numpy: &str,
        metadata: &[(&str, &str, &str)],
    ) -> (Host, PythonEnv) {
        let site = "/v/lib/python3.12/site-packages";
        let root = dir.join(site.trim_start_matches('/'));
        let mut env = PythonEnv {
            prefix: "/v".into(),
            python_version: Some("3.12.3".into()),
            site_packages: vec![site.into()],
            ..Default::default()
        };
        env.packages.push(Package {
            name: "numpy".into(),
            version: numpy.into(),
            location: site.into(),
        });
        for (name, version, requires) in metadata {
            let d = root.join(format!("{name}-{version}.dist-info"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("METADATA"),
                format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}\n\nlong text\nRequires-Dist: numpy<1\n"),
            )
            .unwrap();
            env.packages.push(Package {
                name: normalise_name(name),
                version: (*version).into(),
                location: site.into(),
            });
        }
        let host = Host::rooted(dir.to_path_buf(), BTreeMap::new(), Duration::from_secs(2));
        (host, env)
    }

    #[test]
    fn a_numpy_1_requirement_under_numpy_2_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let (host, env) = env_with(
            dir.path(),
            "2.1.3",
            &[
                ("torch_scatter", "2.1.2", "Requires-Dist: numpy<2,>=1.21"),
                ("mmcv", "2.2.0", "Requires-Dist: numpy (~=1.26)"),
                ("transformers", "4.57.0", "Requires-Dist: numpy>=1.17"),
                (
                    "deepspeed",
                    "0.16.0",
                    "Requires-Dist: numpy<2; extra == \"dev\"",
                ),
                (
                    "apex",
                    "0.1",
                    "Requires-Dist: numpy<2; python_version < \"3.9\"",
                ),
            ],
        );
        let pins = numpy_1_pins(&host, &env);
        let names: Vec<&str> = pins.iter().map(|p| p.package.as_str()).collect();
        assert_eq!(names, ["torch-scatter", "mmcv"], "{pins:?}");
        assert_eq!(pins[0].requirement, "numpy<2,>=1.21");
    }

    #[test]
    fn numpy_1_installed_or_absent_asks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (host, env) = env_with(
            dir.path(),
            "1.26.4",
            &[("torch_scatter", "2.1.2", "Requires-Dist: numpy<2")],
        );
        assert!(numpy_1_pins(&host, &env).is_empty());
        let mut no_numpy = env.clone();
        no_numpy.packages.retain(|p| p.name != "numpy");
        assert!(numpy_1_pins(&host, &no_numpy).is_empty());
    }
}
