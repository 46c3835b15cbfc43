use crate::views::paths::short;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "LIB003",
    name: "ld-library-path-shadows",
    layer: Layer::Libraries,
    severity: Severity::Warning,
    summary:
        "LD_LIBRARY_PATH makes a component load another copy of a library than it otherwise would",
    docs: r#"## What it checks
The emulated process resolved twice, with and without LD_LIBRARY_PATH: every library that
LD_LIBRARY_PATH supplies in place of another file.

## Why it matters
LD_LIBRARY_PATH is searched before RUNPATH and the system cache: a /usr/local/cuda/lib64 or an
old cuDNN directory in it silently replaces the copies a wheel was built and tested with, giving
"cuDNN version incompatibility", "undefined symbol" errors or wrong results. (torch's own
libraries use RPATH, which wins over LD_LIBRARY_PATH; extensions built with RUNPATH or no path
do not.)

## How to fix
Remove the directory from LD_LIBRARY_PATH (often set in ~/.bashrc or a module file), or prefix
only the commands that need it.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.snap
        .loader
        .iter()
        .flat_map(|l| &l.processes)
        .flat_map(|p| {
            p.shadowed.iter().map(move |s| {
                Finding::new(&RULE, format!("LD_LIBRARY_PATH replaces {} for {}", s.name, short(&s.object)))
                    .evidence(format!("with LD_LIBRARY_PATH: {}", s.from_ld_library_path))
                    .evidence(match &s.otherwise {
                        Some(o) => format!("without it: {o}"),
                        None => "without it: not found at all (the library is only loadable because of LD_LIBRARY_PATH)".into(),
                    })
                    .evidence(format!("process emulated: `import torch` in {}", p.env_prefix))
                    .cause("LD_LIBRARY_PATH is searched before the object's own RUNPATH and the system cache, so it overrides the copy the package expects.")
                    .prose(format!(
                        "Remove {} from LD_LIBRARY_PATH (in the shell profile or module file that sets it)",
                        s.from_ld_library_path.rsplit_once('/').map(|(d, _)| d).unwrap_or(&s.from_ld_library_path)
                    ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{LoaderFacts, ProcessLinks, ShadowedLibrary};

    #[test]
    fn a_shadowed_cudnn_is_reported() {
        let mut s = h200();
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![],
                shadowed: vec![ShadowedLibrary {
                    object: "/opt/venv/lib/python3.12/site-packages/ext.so".into(),
                    name: "libcudnn.so.9".into(),
                    from_ld_library_path: "/usr/local/cudnn-9.1/lib/libcudnn.so.9".into(),
                    otherwise: Some(
                        "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
                            .into(),
                    ),
                }],
                runtime_dirs: vec![],
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix[0].contains("/usr/local/cudnn-9.1/lib"));
    }
}
