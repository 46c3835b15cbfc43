use super::deep_support::probes;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU006",
    name: "nccl-version-differs",
    layer: Layer::Multigpu,
    severity: Severity::Warning,
    summary: "torch runs another NCCL than the one its environment's nvidia-nccl wheel installs",
    docs: r#"## What it checks
With `--deep`, the NCCL version torch reports at run time (`torch.cuda.nccl.version()`, the copy
actually loaded) against the version of the environment's `nvidia-nccl-cu*` wheel, which torch was
built to use. Other copies of libnccl on the machine are listed.

## Why it matters
A different copy wins when LD_LIBRARY_PATH or LD_PRELOAD puts a system or toolkit libnccl first.
Jobs then run an NCCL torch was not tested with: hangs, "invalid usage" errors, or missing
features; nodes of a cluster that load different copies can fail to talk to each other.

## How to fix
Remove the directory holding the other libnccl from LD_LIBRARY_PATH (or LD_PRELOAD), or
reinstall the wheel torch asks for.
"#,
    check,
};

/// `2.28.9` and `2.28.9.post1` are the same release for this purpose.
fn release(v: &str) -> Vec<u32> {
    v.split(['.', '+', '-'])
        .take(3)
        .map_while(|p| p.parse().ok())
        .collect()
}

fn check(ctx: &Context) -> Vec<Finding> {
    probes(ctx)
        .into_iter()
        .filter_map(|p| {
            let loaded = p.result.torch.as_ref()?.nccl.as_deref()?;
            let env = ctx
                .snap
                .python_envs
                .iter()
                .find(|e| Some(e.prefix.as_str()) == p.run.env_prefix.as_deref())?;
            let wheel = env.packages.iter().find(|x| x.name.starts_with("nvidia-nccl"))?;
            let (a, b) = (release(loaded), release(&wheel.version));
            if a.len() < 3 || b.len() < 3 || a == b {
                return None;
            }
            let mut f = Finding::new(
                &RULE,
                format!("torch loads NCCL {loaded}, but {} in {} is {}", wheel.name, env.prefix, wheel.version),
            )
            .evidence(format!("torch.cuda.nccl.version() = {loaded}"))
            .evidence(format!("{} {} in {}", wheel.name, wheel.version, wheel.location))
            .cause("Another libnccl is found before the wheel's (LD_LIBRARY_PATH, LD_PRELOAD or a system copy), so torch runs an NCCL it was not built with.");
            if let Some(m) = &ctx.snap.multigpu {
                for lib in m.nccl_libraries.iter().filter(|l| l.version.as_deref().is_some_and(|v| release(v) == a)) {
                    f = f.evidence(format!("a copy of NCCL {loaded}: {} ({})", lib.path, lib.origin));
                }
            }
            for var in ["LD_LIBRARY_PATH", "LD_PRELOAD"] {
                if let Some(v) = ctx.snap.env.get(var) {
                    f = f.evidence(format!("{var}={v}"));
                }
            }
            Some(f.prose("Remove the directory of the other libnccl from LD_LIBRARY_PATH / LD_PRELOAD"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;
    use cudoctor_snapshot::{NcclLibrary, Package};

    #[test]
    fn a_system_nccl_winning_over_the_wheel() {
        let mut s = h200_deep();
        s.python_envs[0].packages.push(Package {
            name: "nvidia-nccl-cu13".into(),
            version: "2.28.9".into(),
            location: "/opt/venv/lib/python3.12/site-packages".into(),
        });
        assert!(run(&RULE, &s).is_empty());
        result_mut(&mut s).torch.as_mut().unwrap().nccl = Some("2.21.5".into());
        s.multigpu
            .as_mut()
            .unwrap()
            .nccl_libraries
            .push(NcclLibrary {
                path: "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5".into(),
                version: Some("2.21.5".into()),
                origin: "system".into(),
            });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5")));
    }

    #[test]
    fn releases_compare_by_three_numbers() {
        assert_eq!(release("2.28.9.post1"), vec![2, 28, 9]);
        assert_eq!(release("2.28"), vec![2, 28]);
    }
}
