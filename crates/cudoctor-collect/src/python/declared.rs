//! What the CUDA-relevant distributions of an environment declare about each other, read from
//! their dist-info (never imported): the `Requires-Dist` lines naming CUDA-relevant
//! distributions (`uv pip check` reads the same lines), and the torch release a package's build
//! record names: xformers' `cpp_lib.json` (`"torch": "2.7.1+cu126"`), a local version label
//! such as `+pt25cu124` or `+pt2.5.1` (torch-scatter, torch-sparse and other wheels built per
//! torch release).

use cudoctor_snapshot::{DeclaredRequirements, PythonEnv, RecordedTorch};
use cudoctor_types::Requirement;

use super::site::is_interesting;
use crate::host::Host;

/// The declarations of every CUDA-relevant package of `env` (its `packages` already read).
pub fn read(host: &Host, env: &PythonEnv) -> Vec<DeclaredRequirements> {
    env.packages
        .iter()
        .filter_map(|p| {
            let mut errors = Vec::new();
            let requires: Vec<String> =
                super::frameworks::requires_dist(host, env, &p.name, &mut errors)
                    .into_iter()
                    .filter(|l| {
                        l.parse::<Requirement>()
                            .is_ok_and(|r| is_interesting(&r.name))
                    })
                    .collect();
            let built_for_torch =
                cpp_lib_torch(host, &p.name, &p.location).or_else(|| label_torch(&p.version));
            (!requires.is_empty() || built_for_torch.is_some()).then(|| DeclaredRequirements {
                package: p.name.clone(),
                version: p.version.clone(),
                requires,
                built_for_torch,
            })
        })
        .collect()
}

/// xformers' build record: `xformers/cpp_lib.json`, `{"version": {"torch": "2.7.1+cu126", ...}}`.
fn cpp_lib_torch(host: &Host, package: &str, location: &str) -> Option<RecordedTorch> {
    if package != "xformers" {
        return None;
    }
    let path = format!("{location}/xformers/cpp_lib.json");
    let text = host.read_text(&path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let torch = v.get("version")?.get("torch")?.as_str()?;
    (!torch.is_empty()).then(|| RecordedTorch {
        version: torch.to_string(),
        source: path,
    })
}

/// The torch of a local version label: `2.1.2+pt25cu124` (torch 2.5), `0.4.1+pt2.5.1cu124`,
/// `1.0+torch2.6`. `None` without one.
pub fn label_torch(version: &str) -> Option<RecordedTorch> {
    let (_, label) = version.split_once('+')?;
    let at = ["torch", "pt"].iter().find_map(|p| {
        label
            .match_indices(p)
            .map(|(i, _)| i + p.len())
            .find(|&i| label[i..].starts_with(|c: char| c.is_ascii_digit()))
    })?;
    let rest = &label[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let digits = rest[..end].trim_end_matches('.');
    let torch = if digits.contains('.') {
        digits.to_string()
    } else {
        // `pt25` is torch 2.5, `pt210` torch 2.10: the first digit is the major.
        if digits.len() < 2 {
            return None;
        }
        format!("{}.{}", &digits[..1], &digits[1..])
    };
    Some(RecordedTorch {
        version: torch,
        source: format!("version label {version}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_of_version_labels() {
        let t = |v: &str| label_torch(v).map(|r| r.version);
        assert_eq!(t("2.1.2+pt25cu124").as_deref(), Some("2.5"));
        assert_eq!(t("2.1.2+pt210cu128").as_deref(), Some("2.10"));
        assert_eq!(t("0.4.1+pt2.5.1cu124").as_deref(), Some("2.5.1"));
        assert_eq!(t("1.0+torch2.6.cu126").as_deref(), Some("2.6"));
        assert_eq!(t("2.11.0+cu130"), None);
        assert_eq!(t("0.0.31"), None);
        assert_eq!(t("1.0+cpt"), None);
    }

    #[test]
    fn xformers_build_record_and_requires_dist() {
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(sp.join("xformers")).unwrap();
        std::fs::create_dir_all(sp.join("xformers-0.0.31.dist-info")).unwrap();
        std::fs::write(
            sp.join("xformers-0.0.31.dist-info/METADATA"),
            "Metadata-Version: 2.1\nName: xformers\nVersion: 0.0.31\nRequires-Dist: numpy\nRequires-Dist: torch==2.7.1\n\nbody\n",
        )
        .unwrap();
        // The real file of the xformers 0.0.31 wheel.
        std::fs::write(
            sp.join("xformers/cpp_lib.json"),
            r#"{"version": {"cuda": 1208, "hip": null, "torch": "2.7.1+cu126", "python": "3.9.23", "flash": "v2.8.0.post2-3-g3ba6f82", "use_torch_flash": false}, "env": {"TORCH_CUDA_ARCH_LIST": "7.5 8.0+PTX 9.0a"}}"#,
        )
        .unwrap();
        let host = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(5),
        );
        let sp = "/lib/python3.11/site-packages".to_string();
        let env = PythonEnv {
            prefix: "/".into(),
            site_packages: vec![sp.clone()],
            packages: vec![cudoctor_snapshot::Package {
                name: "xformers".into(),
                version: "0.0.31".into(),
                location: sp.clone(),
            }],
            ..Default::default()
        };
        let d = read(&host, &env);
        assert_eq!(d.len(), 1);
        // numpy is among the packages whose pins are read (an extension's NumPy ABI, FW030).
        assert_eq!(
            d[0].requires,
            vec!["numpy".to_string(), "torch==2.7.1".to_string()]
        );
        let t = d[0].built_for_torch.as_ref().unwrap();
        assert_eq!(t.version, "2.7.1+cu126");
        assert_eq!(t.source, format!("{sp}/xformers/cpp_lib.json"));
    }
}
