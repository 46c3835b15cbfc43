use std::collections::BTreeMap;

use crate::finding::Subject;
use crate::views::wheels::coverage;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "FW011",
    name: "wheel-files-overwritten",
    layer: Layer::Framework,
    severity: Severity::Warning,
    summary:
        "Two installed wheels install different files at the same path; one overwrote the other",
    docs: r#"## What it checks
Paths that the `RECORD`s of two installed distributions both list with different content, and
which one's content is on disk (size, then SHA-256). The usual case: a CUDA-12 package
(`jax[cuda12]`, `cupy-cuda12x`) brings `nvidia-cudnn-cu12` or `nvidia-nccl-cu12` into an
environment whose torch uses `nvidia-cudnn-cu13`/`nvidia-nccl-cu13`; both install
`nvidia/cudnn/lib/libcudnn*.so.9` and `nvidia/nccl/lib/libnccl.so.2`, and the one installed last
wins.

## Why it matters
The overwritten distribution still looks installed, but its libraries are the other one's: torch
then loads a cuDNN or NCCL built for another CUDA major, which fails at import, at the first
convolution, or in the first collective — or works until a version-specific symbol is needed.
Reinstalling either package only moves the damage to the other.

## How to fix
Keep the two CUDA majors apart: one environment per framework (`python -m venv` /
`uv venv`), or builds of the same CUDA major (e.g. `jax[cuda13]` next to a CUDA-13 torch). Then put
back the overwritten distribution's files with `--force-reinstall --no-deps` at its version.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &ctx.snap.python_envs {
        let Some(w) = &env.wheel_check else { continue };
        // (loser, winner) -> paths; `None` winner: undecided within the hash budget.
        let mut pairs: BTreeMap<(String, Option<String>), Vec<&str>> = BTreeMap::new();
        for sp in &w.shared_paths {
            let winner = sp.winner().map(|o| format!("{} {}", o.package, o.version));
            for o in &sp.owners {
                if o.matches == Some(true) {
                    continue;
                }
                if o.matches.is_none() && winner.is_some() {
                    continue;
                }
                pairs
                    .entry((format!("{} {}", o.package, o.version), winner.clone()))
                    .or_default()
                    .push(sp.path.as_str());
            }
        }
        let python = cudoctor_plan::quote(&format!("{}/bin/python", env.prefix));
        for ((loser, winner), paths) in pairs {
            let title = match &winner {
                Some(wn) => format!("{wn} overwrote {} file{} of {loser} in {}", paths.len(), if paths.len() == 1 { "" } else { "s" }, env.prefix),
                None => format!("{loser} shares {} path{} with another wheel in {} (which one's file is there is undecided)", paths.len(), if paths.len() == 1 { "" } else { "s" }, env.prefix),
            };
            let mut f = Finding::new(&RULE, title);
            for p in paths.iter().take(5) {
                let owners = w
                    .shared_paths
                    .iter()
                    .find(|s| s.path == *p)
                    .map(|s| {
                        s.owners
                            .iter()
                            .map(|o| {
                                let m = match o.matches {
                                    Some(true) => "matches",
                                    Some(false) => "differs",
                                    None => "not hashed",
                                };
                                format!("{} {} ({m})", o.package, o.version)
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                f = f.evidence(format!("{p}: listed by {owners}"));
            }
            if paths.len() > 5 {
                f = f.evidence(format!("... and {} more", paths.len() - 5));
            }
            f = f.evidence(coverage(w)).cause(
                "Both wheels install a file at the same path; the one installed last replaced the other's, so one of them is registered but runs the other's library.",
            );
            if winner.is_none() {
                f = f.shell(format!(
                    "cudoctor check --python {python} --verify-wheels   # hashes the shared files to say whose they are"
                ));
            }
            f = f.prose("Keep one CUDA major per environment: install the other framework in its own venv (uv venv / python -m venv), or a build of the same CUDA major");
            if let Some((name, version)) = loser.split_once(' ') {
                f = f
                    .about(Subject::Package {
                        env: env.prefix.clone(),
                        name: name.to_string(),
                    })
                    .command(
                        &crate::context::target_env(env),
                        format!(
                            "{}   # then, with the other wheel gone, puts back {}'s files",
                            crate::context::target_env(env)
                                .install(&cudoctor_plan::Install::exact(name, version)),
                            cudoctor_plan::comment(name)
                        ),
                    );
            }
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, run};
    use cudoctor_snapshot::{PathOwner, SharedPath, WheelCheck};

    fn owner(p: &str, v: &str, m: Option<bool>) -> PathOwner {
        PathOwner {
            package: p.into(),
            version: v.into(),
            matches: m,
        }
    }

    #[test]
    fn names_who_overwrote_whom() {
        let mut s = h200();
        let sp = s.python_envs[0].site_packages[0].clone();
        let shared = |m12, m13| SharedPath {
            path: format!("{sp}/nvidia/nccl/lib/libnccl.so.2"),
            owners: vec![
                owner("nvidia-nccl-cu12", "2.26.2", m12),
                owner("nvidia-nccl-cu13", "2.28.9", m13),
            ],
        };
        s.python_envs[0].wheel_check = Some(WheelCheck {
            shared_paths: vec![shared(Some(true), Some(false))],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].title
                .starts_with("nvidia-nccl-cu12 2.26.2 overwrote 1 file of nvidia-nccl-cu13 2.28.9"),
            "{}",
            f[0].title
        );
        assert!(f[0].evidence[0]
            .contains("nvidia-nccl-cu12 2.26.2 (matches), nvidia-nccl-cu13 2.28.9 (differs)"));
        assert!(f[0]
            .fix
            .last()
            .unwrap()
            .contains("--force-reinstall --no-deps nvidia-nccl-cu13==2.28.9"));

        s.python_envs[0].wheel_check.as_mut().unwrap().shared_paths = vec![shared(None, None)];
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2, "undecided: both named");
        assert!(f[0].fix[0].contains("--verify-wheels"));
    }
}
