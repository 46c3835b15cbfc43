//! Views over what installed distributions declare (`PythonEnv::declared`): their
//! `Requires-Dist` evaluated with this environment's markers, and the torch release a package
//! says it was built against.

use cudoctor_snapshot::{DeclaredRequirements, PythonEnv};
use cudoctor_types::requirement::{PyVersion, SpecOp};
use cudoctor_types::Requirement;

use crate::{Context, Finding};

/// The torch release a package was built against, with every place that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltForTorch {
    /// As the first source writes it: `2.7.1+cu126`, `2.7.1`, `2.5` (a label's minor).
    pub version: String,
    /// "xformers/cpp_lib.json: torch 2.7.1+cu126", "xformers 0.0.31's METADATA: Requires-Dist:
    /// torch==2.7.1".
    pub evidence: Vec<String>,
}

impl BuiltForTorch {
    /// Whether the installed torch `installed` is the release recorded (local labels aside; a
    /// recorded `2.5` takes any 2.5.x).
    pub fn matches(&self, installed: &str) -> Option<bool> {
        let want: PyVersion = self.version.parse().ok()?;
        let have: PyVersion = installed.parse().ok()?;
        let n = want.release.len();
        Some(
            want.epoch == have.epoch && have.release.iter().take(n).eq(want.release.iter()) && {
                // 2.7.1 against 2.7.1.post1 or a pre-release: the whole public version must match
                // when the record gives three numbers.
                n < 3 || want.public() == have.public()
            },
        )
    }

    /// The public release (`2.7.1` of `2.7.1+cu126`).
    pub fn public(&self) -> &str {
        self.version.split('+').next().unwrap_or(&self.version)
    }
}

impl<'a> Context<'a> {
    /// What `package` of `env` declares, when it was read.
    pub fn declared(&self, env: &'a PythonEnv, package: &str) -> Option<&'a DeclaredRequirements> {
        env.declared.iter().find(|d| d.package == package)
    }

    /// Whether requirement `r` binds environment `env` when its distribution was installed with
    /// `extras`: its marker evaluated with the environment's values (`extra` as each of
    /// `extras`, or none). `None` when a variable of the marker is unknown.
    pub fn requirement_binds(
        &self,
        env: &PythonEnv,
        r: &Requirement,
        extras: &[String],
    ) -> Option<bool> {
        if r.marker_extras().is_empty() {
            return r.marker_holds(&|n| {
                if n == "extra" {
                    Some(String::new())
                } else {
                    self.marker_var(env, n)
                }
            });
        }
        let mut unknown = false;
        for e in extras {
            match r.marker_holds(&|n| {
                if n == "extra" {
                    Some(e.clone())
                } else {
                    self.marker_var(env, n)
                }
            }) {
                Some(true) => return Some(true),
                Some(false) => {}
                None => unknown = true,
            }
        }
        (!unknown).then_some(false)
    }

    /// The torch release `package` of `env` was built against: its build record
    /// (`cpp_lib.json`), an exact `torch==` pin of its metadata that binds here, a `+pt25` label.
    pub fn built_for_torch(&self, env: &'a PythonEnv, package: &str) -> Option<BuiltForTorch> {
        let d = self.declared(env, package)?;
        let mut version: Option<String> = None;
        let mut evidence = Vec::new();
        let recorded = d
            .built_for_torch
            .as_ref()
            .filter(|r| !r.source.starts_with("version label"));
        if let Some(r) = recorded {
            version = Some(r.version.clone());
            evidence.push(format!("{}: built for torch {}", r.source, r.version));
        }
        for line in &d.requires {
            let Ok(r) = line.parse::<Requirement>() else {
                continue;
            };
            if r.name != "torch" || self.requirement_binds(env, &r, &[]) != Some(true) {
                continue;
            }
            let [s] = r.specifiers.as_slice() else {
                continue;
            };
            if s.op != SpecOp::Eq || s.version.contains('*') {
                continue;
            }
            version.get_or_insert_with(|| s.version.clone());
            evidence.push(format!(
                "{} {}'s METADATA: Requires-Dist: {line}",
                d.package, d.version
            ));
        }
        if let Some(r) = d
            .built_for_torch
            .as_ref()
            .filter(|r| r.source.starts_with("version label"))
        {
            version.get_or_insert_with(|| r.version.clone());
            evidence.push(format!(
                "{} {}: built for torch {}",
                d.package, r.source, r.version
            ));
        }
        Some(BuiltForTorch {
            version: version?,
            evidence,
        })
    }
}

impl Context<'_> {
    /// The fix of a package built for torch `built_for` while `torch_version` is installed: a
    /// matching pair, the package's prebuilt build for the installed torch (`--only-binary`: a
    /// build is chosen, never a source build) or the torch it was built for (with the paired
    /// torchvision/torchaudio that are installed), in the environment's installer.
    pub fn matching_torch_pair(
        &self,
        mut f: Finding,
        env: &PythonEnv,
        pkg: &str,
        built_for: &str,
        torch_version: &str,
    ) -> Finding {
        let ctx = self;
        let target = ctx.target_env(env);
        let installed_public = torch_version.split('+').next().unwrap_or(torch_version);
        // The package's prebuilt build for the installed torch: `torch==X` is met by the installed
        // `X+cu126` too, so torch stays; `--only-binary` keeps the installer from a source build.
        let keep = cudoctor_plan::Install {
            only_binary: vec![pkg.to_string()],
            ..cudoctor_plan::Install::pins([pkg.to_string(), format!("torch=={installed_public}")])
        };
        f = f
            .prose(format!(
                "Install the {pkg} build made for the installed torch {torch_version}:"
            ))
            .command(&target, target.install(&keep))
            .prose(format!("or the torch {pkg} was built for:"));
        ctx.torch_built_for(f, env, built_for, torch_version)
    }

    /// The torch release `built_for` (a package's build record) with the paired companions that
    /// are installed, from the index of its CUDA variant, in the environment's installer.
    pub fn torch_built_for(
        &self,
        mut f: Finding,
        env: &PythonEnv,
        built_for: &str,
        torch_version: &str,
    ) -> Finding {
        let ctx = self;
        let public = built_for.split('+').next().unwrap_or(built_for);
        let target = ctx.target_env(env);
        // The torch it was built for, with the paired companions that are installed.
        let label = torch_version.split_once('+').map(|(_, l)| l);
        let release = ctx.kb.torch(public);
        let torch_pin = if built_for.contains('+') {
            built_for.to_string()
        } else {
            match label {
                Some(l) if release.is_some_and(|r| r.variant(l).is_some()) => {
                    format!("{built_for}+{l}")
                }
                _ => built_for.to_string(),
            }
        };
        let mut pins = vec![format!("torch=={torch_pin}")];
        let pin_label = torch_pin.split_once('+').map(|(_, l)| l);
        for (name, paired) in [
            (
                "torchvision",
                release.and_then(|r| r.torchvision.as_deref()),
            ),
            ("torchaudio", release.and_then(|r| r.torchaudio.as_deref())),
        ] {
            if env.package(name).is_none() {
                continue;
            }
            match paired {
                Some(v) => pins.push(match pin_label {
                    Some(l) => format!("{name}=={v}+{l}"),
                    None => format!("{name}=={v}"),
                }),
                None => {
                    f = f.prose(format!(
                        "The {name} paired with torch {} is not in the knowledge base: `cudoctor plan --torch {}` names it",
                        public,
                        public
                    ))
                }
            }
        }
        let op =
            cudoctor_plan::Install::pins(pins).index(cudoctor_plan::torch_index_url(pin_label));
        f.command(&target, target.install(&op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_torch_matches_by_release() {
        let b = |v: &str| BuiltForTorch {
            version: v.into(),
            evidence: vec![],
        };
        assert_eq!(b("2.7.1+cu126").matches("2.7.1"), Some(true));
        assert_eq!(b("2.7.1").matches("2.7.1+cu128"), Some(true));
        assert_eq!(b("2.7.1").matches("2.8.0"), Some(false));
        assert_eq!(b("2.5").matches("2.5.1+cu124"), Some(true));
        assert_eq!(b("2.5").matches("2.6.0"), Some(false));
        assert_eq!(b("2.7.1+cu126").public(), "2.7.1");
    }
}
