use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "FW030",
    name: "numpy-1-build-under-numpy-2",
    layer: Layer::Framework,
    severity: Severity::Warning,
    summary: "A package that requires NumPy 1.x is installed beside NumPy 2",
    docs: r#"## What it checks
Where NumPy 2 or later is installed: the `Requires-Dist` lines on numpy of the environment's
CUDA and framework packages (their dist-info METADATA). One that admits NumPy 1.x but not the
installed NumPy (`numpy<2`, `numpy~=1.26`) is a finding.

## Why it matters
NumPy 2 changed its C ABI. An extension module compiled against NumPy 1 stops at import with
"A module that was compiled using NumPy 1.x cannot be run in NumPy 2.x as it may crash" (or
"numpy.core.multiarray failed to import", "_ARRAY_API not found"). A package that pins
`numpy<2` says it was built that way; pip installed NumPy 2 over it anyway (a later install,
`--no-deps`, or another package's requirement).

## How to fix
Either keep NumPy 1 in this environment (`pip install "numpy<2"`), or upgrade the package to a
release built for NumPy 2 (its metadata then admits numpy 2).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &ctx.snap.python_envs {
        if env.numpy_1_pins.is_empty() {
            continue;
        }
        let numpy = env
            .package("numpy")
            .map(|p| p.version.clone())
            .unwrap_or_else(|| "2".into());
        let names: Vec<String> = env
            .numpy_1_pins
            .iter()
            .map(|p| format!("{} {}", p.package, p.version))
            .collect();
        let mut f = Finding::new(
            &RULE,
            format!(
                "{} {} NumPy 1.x, but NumPy {numpy} is installed in {}",
                names.join(", "),
                if names.len() == 1 {
                    "requires"
                } else {
                    "require"
                },
                env.prefix
            ),
        )
        .evidence(format!("numpy {numpy} in {}", env.prefix));
        for p in &env.numpy_1_pins {
            f = f.evidence(format!(
                "{} {}: Requires-Dist: {} (its dist-info METADATA)",
                p.package, p.version, p.requirement
            ));
        }
        out.push(
            f.cause("Built against NumPy 1, their extension modules stop at import under NumPy 2 (\"A module that was compiled using NumPy 1.x cannot be run in NumPy 2\").")
                .prose(format!(
                    "Keep NumPy 1 in {}: install \"numpy<2\" with its installer; or upgrade {} to a release built for NumPy 2",
                    env.prefix,
                    env.numpy_1_pins
                        .iter()
                        .map(|p| p.package.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{NumpyOnePin, Package};

    #[test]
    fn a_numpy_1_pin_beside_numpy_2_is_named_with_its_requirement() {
        let mut s = h200();
        let mut env = torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]);
        env.packages.push(Package {
            name: "numpy".into(),
            version: "2.1.3".into(),
            location: "/v/lib/python3.12/site-packages".into(),
        });
        env.numpy_1_pins.push(NumpyOnePin {
            package: "torch-scatter".into(),
            version: "2.1.2".into(),
            requirement: "numpy<2".into(),
        });
        s.python_envs.push(env);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].title
                .contains("torch-scatter 2.1.2 requires NumPy 1.x"),
            "{}",
            f[0].title
        );
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("Requires-Dist: numpy<2")));
    }

    #[test]
    fn no_pin_no_finding() {
        let mut s = h200();
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        assert!(run(&RULE, &s).is_empty());
    }
}
