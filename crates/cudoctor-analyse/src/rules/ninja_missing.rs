use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK014",
    name: "ninja-missing",
    layer: Layer::Toolkit,
    severity: Severity::Info,
    summary: "No ninja for torch's extension builds: load() stops, setup.py builds slowly",
    docs: r#"## What it checks
Where a CUDA torch and a toolkit to build with are installed (the machine is set up to build
extensions), whether torch's `cpp_extension` can find `ninja`: it runs `ninja --version` through
PATH (`is_ninja_available`, `verify_ninja_availability`). The `ninja` wheel puts the program in
the environment's `bin/`, found only while that directory is on PATH (the environment active).

## Why it matters
`torch.utils.cpp_extension.load()` and `load_inline()` (the JIT builds of DeepSpeed ops, many
research repositories and notebooks) stop with "RuntimeError: Ninja is required to load C++
extensions". `setup.py` / pip builds with `BuildExtension` warn "Attempted to use ninja as the
BuildExtension backend but we could not find ninja. Falling back to using the slow distutils
backend." and compile one file at a time.

A note, not a problem: torch does not need ninja to run, and most environments never build an
extension; where one does, this names the failure before the build.

## How to fix
Install the `ninja` wheel into the environment with its own installer, and run builds with the
environment active (its `bin/` on PATH).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.windows.is_some() {
        return Vec::new();
    }
    let Some(tools) = &ctx.snap.toolkit.build_tools else {
        return Vec::new();
    };
    if tools.ninja_on_path.is_some() {
        return Vec::new();
    }
    // Only where an extension build could otherwise run: a toolkit torch would build with.
    let Some(build) = ctx.build_toolkit().filter(|b| b.exists) else {
        return Vec::new();
    };
    ctx.torch_envs()
        .into_iter()
        .filter(|t| t.cuda().is_some())
        .map(|t| {
            let prefix = t.env.prefix.trim_end_matches('/');
            let in_env = format!("{prefix}/bin/ninja");
            let has_program = tools.ninja_in_envs.contains(&in_env);
            let target = ctx.target_env(t.env);
            let evidence_build = format!(
                "{} = {} -> toolkit {}",
                build.chosen_by,
                build.home,
                build.version.as_deref().unwrap_or("?")
            );
            if has_program {
                // The wheel is there; PATH does not lead to it (the environment is not active).
                let f = Finding::new(
                    &RULE,
                    format!("ninja is installed in {prefix} but not on PATH: torch's extension builds find it only with the environment active"),
                )
                .evidence(format!("{in_env} exists; no ninja in any PATH entry"))
                .evidence(evidence_build)
                .evidence("torch's cpp_extension runs `ninja --version` through PATH")
                .cause("A program started by the environment's interpreter's full path, without activating the environment, runs load() / load_inline() with a PATH that has no ninja: \"RuntimeError: Ninja is required to load C++ extensions\".")
                .steps([FixStep::Shell(format!(
                    "export PATH={}:\"$PATH\"   # or activate the environment",
                    cudoctor_plan::quote(&format!("{prefix}/bin"))
                ))]);
                return f;
            }
            Finding::new(
                &RULE,
                format!("No ninja for the extension builds of {}: load() / load_inline() would stop", t.label()),
            )
            .evidence("no ninja in any PATH entry")
            .evidence(format!("no {in_env} (the ninja wheel's program)"))
            .evidence(evidence_build)
            .evidence("predicted for load() / load_inline(): \"RuntimeError: Ninja is required to load C++ extensions\"")
            .cause("torch's cpp_extension runs `ninja --version` to decide whether it can build: the JIT builds require ninja, BuildExtension falls back to compiling one file at a time with distutils.")
            .command(&target, cudoctor_plan::install::install(&target, &["ninja".to_string()]))
            .prose("Run builds with the environment active: the ninja wheel puts its program in the environment's bin/")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::BuildTools;

    fn with(tools: BuildTools) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.toolkit.build_tools = Some(tools);
        s
    }

    #[test]
    fn no_ninja_anywhere_is_predicted_with_the_install_line() {
        let f = run(&RULE, &with(BuildTools::default()));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("Ninja is required to load C++ extensions")));
        assert_eq!(
            f[0].fix[0].text(),
            "/opt/venv/bin/python -m pip install ninja"
        );
    }

    #[test]
    fn ninja_in_the_env_only_is_a_note_about_path() {
        let f = run(
            &RULE,
            &with(BuildTools {
                ninja_in_envs: vec!["/opt/venv/bin/ninja".into()],
                ..Default::default()
            }),
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].fix[0].text().starts_with("export PATH=/opt/venv/bin:"));
    }

    #[test]
    fn ninja_on_path_no_toolkit_or_no_facts_say_nothing() {
        assert!(run(
            &RULE,
            &with(BuildTools {
                ninja_on_path: Some("/usr/bin/ninja".into()),
                ..Default::default()
            })
        )
        .is_empty());
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = with(BuildTools::default());
        s.toolkit = Default::default();
        s.toolkit.build_tools = Some(BuildTools::default());
        s.env.remove("CUDA_HOME");
        assert!(run(&RULE, &s).is_empty());
    }
}
