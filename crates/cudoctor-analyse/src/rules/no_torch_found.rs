use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "FW004",
    name: "no-torch-found",
    layer: Layer::Framework,
    severity: Severity::Info,
    summary: "No Python environment with PyTorch was found",
    docs: r#"## What it checks
Which Python environments were inspected (active venv, conda env, python3/python on PATH,
`--python`) and whether any has torch.

## Why it matters
Framework, kernel-image and library checks need the environment your jobs run in. If it was not
found, they had nothing to judge.

## How to fix
Activate the environment, or point at it: `cudoctor check --python /path/to/venv/bin/python`.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if !ctx.torch_envs().is_empty() {
        return Vec::new();
    }
    // A Windows machine's torch environments are judged by their own rules (PLT020, PLT021).
    if ctx
        .snap
        .windows
        .as_ref()
        .is_some_and(|w| !w.torch_envs.is_empty())
    {
        return Vec::new();
    }
    let others: Vec<String> = ctx.frameworks().iter().map(|v| v.label()).collect();
    let mut f = Finding::new(
        &RULE,
        "No PyTorch found in the inspected Python environments",
    )
    .cause(if others.is_empty() {
        "Framework checks were skipped: none of the environments below has torch installed.".to_string()
    } else {
        format!(
            "torch's checks were skipped: none of the environments below has torch installed. The other frameworks found were judged: {}.",
            others.join(", ")
        )
    })
    .prose("To inspect another environment: cudoctor check --python PATH (its interpreter or its directory)");
    if ctx.snap.python_envs.is_empty() {
        f = f.evidence(if ctx.snap.host.os == "windows" {
            "no Python environment found (no VIRTUAL_ENV, CONDA_PREFIX, python.exe on PATH, registered Python or portable layout)"
        } else {
            "no Python environment found (no VIRTUAL_ENV, CONDA_PREFIX, or python3 on PATH)"
        });
    }
    for e in &ctx.snap.python_envs {
        f = f.evidence(format!(
            "{} ({}, via {})",
            e.prefix,
            e.python_version.as_deref().unwrap_or("?"),
            e.found_via.join(", ")
        ));
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_windows_environment_with_torch_counts() {
        let s = crate::rules::windows_torch_dll_fails::tests::windows_env(None);
        assert!(run(&RULE, &s).is_empty());
        let mut without = s.clone();
        without.windows = None;
        assert_eq!(run(&RULE, &without).len(), 1);
    }

    #[test]
    fn reported_only_without_torch() {
        assert_eq!(run(&RULE, &machine(None, &[])).len(), 1);
        assert!(run(&RULE, &h200()).is_empty());
    }
}
