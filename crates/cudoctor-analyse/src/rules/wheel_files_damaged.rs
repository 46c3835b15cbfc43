use crate::views::wheels::coverage;
use std::collections::BTreeMap;

use cudoctor_snapshot::{DamagedFile, FileProblem};

use crate::finding::Subject;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "FW010",
    name: "wheel-files-damaged",
    layer: Layer::Framework,
    severity: Severity::Error,
    summary: "Files of torch or an nvidia-* wheel do not match the wheel's RECORD",
    docs: r#"## What it checks
Every file that torch's and the nvidia-* distributions' `RECORD` lists (the wheel format's list of
path, SHA-256 and size): missing files always, and the size of every shared library (`*.so*`) and
of every path two distributions list; every file's size and SHA-256 with `check --verify-wheels`.
The default check reads no file's content, so its cost does not grow with the size of the
libraries: a same-size corruption, or a truncated header or Python file, is left to
`--verify-wheels`. A file that another installed distribution also lists, and whose content is
that one's, is FW011, not this.

## Why it matters
An interrupted download or install, a full disk, or a hand-deleted library leaves a package
registered but broken: `import torch` fails with "cannot open shared object file", symbols are
missing, or CUDA silently reports no GPU. pip considers it installed, so `pip install` again does
nothing.

## How to fix
Reinstall the damaged distribution at its version, alone:
`--force-reinstall --no-deps <package>==<version>` with pip, `--reinstall --no-deps` with uv
(the report prints the command in the environment's own installer; torch's `+cuXXX` builds
from their PyTorch index). If the same file is damaged again, the installer's cached wheel is
the bad copy: remove it from the cache (`pip cache remove <name>` with pip, `uv cache clean
<name>` with uv; the report prints the one for the environment) and reinstall.
"#,
    check,
};

/// A DLL or a Python extension module of Windows (`.dll`, `.pyd`).
fn is_windows_module(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".dll") || lower.ends_with(".pyd")
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &ctx.snap.python_envs {
        let Some(w) = &env.wheel_check else { continue };
        let mut by_package: BTreeMap<(&str, &str), Vec<&DamagedFile>> = BTreeMap::new();
        for d in &w.damaged {
            by_package
                .entry((d.package.as_str(), d.version.as_str()))
                .or_default()
                .push(d);
        }
        let target = crate::context::target_env(env);
        for ((package, version), files) in by_package {
            let mut f = Finding::new(
                &RULE,
                format!(
                    "{package} {version} in {} is damaged: {} file{} differ{} from its RECORD",
                    env.prefix,
                    files.len(),
                    if files.len() == 1 { "" } else { "s" },
                    if files.len() == 1 { "s" } else { "" }
                ),
            );
            for d in files.iter().take(5) {
                f = f.evidence(describe(d));
            }
            if files.len() > 5 {
                f = f.evidence(format!("... and {} more", files.len() - 5));
            }
            f = f.evidence(coverage(w)).cause(
                "The distribution is registered as installed but its files are not the wheel's (an interrupted install or download, a full disk, a deleted or edited file), so imports or CUDA calls fail in ways that look like a version problem.",
            );
            f = f.about(Subject::Package {
                env: env.prefix.clone(),
                name: package.to_string(),
            });
            // A library file it lacks is what the loader then cannot find (LIB001 follows).
            for d in files.iter().filter(|d| d.problem == FileProblem::Missing) {
                let name = d.path.rsplit(['/', '\\']).next().unwrap_or(&d.path);
                if cudoctor_ldso::families::split_soname(name).is_some() {
                    f = f.about(Subject::MissingLibrary {
                        env: env.prefix.clone(),
                        soname: name.to_string(),
                    });
                } else if env.windows && is_windows_module(name) {
                    // What Windows' DLL search then cannot find (PLT020 follows), named
                    // without case as Windows compares names.
                    f = f.about(Subject::MissingLibrary {
                        env: env.prefix.clone(),
                        soname: name.to_ascii_lowercase(),
                    });
                }
            }
            f = f.command(
                &target,
                format!(
                    "{}   # puts back {}'s own files, nothing else changes",
                    target.install(&cudoctor_plan::Install::exact(package, version)),
                    cudoctor_plan::comment(package)
                ),
            );
            if files.iter().any(|d| d.problem != FileProblem::Missing) {
                f = f.command(&target, format!(
                    "{}   # only if the reinstalled file is damaged again: the cached wheel is the bad copy",
                    target.cache_remove(package)
                ));
            }
            out.push(f);
        }
    }
    out
}

fn describe(d: &DamagedFile) -> String {
    match d.problem {
        FileProblem::Missing => format!("{}: missing (RECORD lists it)", d.path),
        FileProblem::SizeDiffers => format!(
            "{}: {} bytes, RECORD says {}",
            d.path,
            d.actual_size.unwrap_or(0),
            d.recorded_size.unwrap_or(0)
        ),
        FileProblem::HashDiffers => {
            format!("{}: same size, SHA-256 differs from RECORD", d.path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, run};
    use cudoctor_snapshot::WheelCheck;

    #[test]
    fn one_finding_per_damaged_distribution_with_its_exact_reinstall() {
        let mut s = h200();
        let sp = s.python_envs[0].site_packages[0].clone();
        let mut w = WheelCheck {
            packages: vec![
                "torch 2.11.0+cu130".into(),
                "nvidia-cudnn-cu13 9.19.0.56".into(),
            ],
            files_checked: 100,
            hash_budget_bytes: Some(16 << 20),
            ..Default::default()
        };
        s.python_envs[0].wheel_check = Some(w.clone());
        assert!(run(&RULE, &s).is_empty());
        w.damaged.push(DamagedFile {
            package: "nvidia-cudnn-cu13".into(),
            version: "9.19.0.56".into(),
            path: format!("{sp}/nvidia/cudnn/lib/libcudnn.so.9"),
            problem: FileProblem::SizeDiffers,
            recorded_size: Some(100),
            actual_size: Some(50),
        });
        w.damaged.push(DamagedFile {
            package: "torch".into(),
            version: "2.11.0+cu130".into(),
            path: format!("{sp}/torch/lib/libtorch_cuda.so"),
            problem: FileProblem::Missing,
            ..Default::default()
        });
        s.python_envs[0].wheel_check = Some(w);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2);
        assert!(f[0].evidence[0].ends_with("libcudnn.so.9: 50 bytes, RECORD says 100"));
        assert_eq!(
            f[0].fix[0],
            "/opt/venv/bin/python -m pip install --force-reinstall --no-deps nvidia-cudnn-cu13==9.19.0.56   # puts back nvidia-cudnn-cu13's own files, nothing else changes"
        );
        assert!(f[0].fix[1].contains("pip cache remove nvidia_cudnn_cu13"));
        assert!(f[1].fix[0].contains(
            "--no-deps torch==2.11.0+cu130 --index-url https://download.pytorch.org/whl/cu130"
        ));
        assert_eq!(f[1].fix.len(), 1, "a missing file needs no cache advice");
    }
}
