use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "KRN007",
    name: "binary-search-incomplete",
    layer: Layer::Kernels,
    severity: Severity::Info,
    summary: "The search for CUDA binaries stopped at a limit before it saw a whole tree",
    docs: r#"## What it checks
The walks that look for CUDA binaries outside the site directories' packages (torch's extension
cache, editable installs' source trees, `PYTHONPATH` entries, the project directory) look at a
bounded number of directory entries and levels, so that a check of a huge tree stays fast. This
says where a walk stopped early.

## Why it matters
A CUDA binary beyond the limit is not judged: its kernel images and libraries are unknown to the
check, and "no problems found" does not cover it.

## How to fix
Name the directory that holds the build with `cudoctor kernels DIR` (no limit), or run
`cudoctor check` on a smaller project directory (`cudoctor check PATH`).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(found) = &ctx.snap.binaries else {
        return Vec::new();
    };
    found
        .places
        .iter()
        .filter_map(|p| {
            let limit = p.limit_hit.as_ref()?;
            Some(
                Finding::new(
                    &RULE,
                    format!(
                        "The search for CUDA binaries in {} ({}) stopped at {limit}",
                        p.path,
                        p.kind.describe()
                    ),
                )
                .confidence(Confidence::Unsure)
                .evidence(format!(
                    "{}: {} directory entries looked at, limit {limit}",
                    p.path, p.entries
                ))
                .cause("The walk is bounded so that the check stays fast; binaries beyond the limit are not judged.")
                .shell(format!("cudoctor kernels {}", cudoctor_plan::quote(&p.path))),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{BinaryDiscovery, PlaceKind, SearchedPlace};

    #[test]
    fn a_walk_that_hit_its_limit_is_said() {
        let mut s = h200();
        assert!(run(&RULE, &s).is_empty());
        s.binaries = Some(BinaryDiscovery {
            binaries: Vec::new(),
            places: vec![
                SearchedPlace {
                    path: "/work/proj".into(),
                    kind: PlaceKind::Project,
                    entries: 20_000,
                    limit_hit: Some("20000 directory entries".into()),
                },
                SearchedPlace {
                    path: "/src".into(),
                    kind: PlaceKind::PythonPath,
                    entries: 12,
                    limit_hit: None,
                },
            ],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("/work/proj (the project directory)"));
        assert!(f[0].fix[0].text().contains("cudoctor kernels /work/proj"));
    }
}
