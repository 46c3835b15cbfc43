use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT040",
    name: "check-stopped-early",
    layer: Layer::Platform,
    severity: Severity::Info,
    summary: "A part of the check stopped before the end of its input (time budget or a cap)",
    docs: r#"## What it checks
Every loop of the check that hashes, walks, lists or scans files (wheel files against their
RECORD, site directories and `.pth` files, the search for CUDA binaries, kernel images, the
loader's emulation) ends at the command's time budget (`--timeout`) or at a cap on files and
bytes. This says which loop stopped early, where, and why.

## Why it matters
What a stopped loop did not look at is not judged: "no problems found" does not cover it. A
tree so large (or so hostile: a multi-GB file, millions of entries) that the budget is spent
is itself worth a look.

## How to fix
Run the check again with a larger `--timeout`, or look at the place named with a command of
its own (`cudoctor kernels DIR`, `cudoctor libs PATH`).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.snap
        .stopped_early
        .iter()
        .map(|s| {
            Finding::new(
                &RULE,
                format!(
                    "{} stopped early in {}",
                    capitalised(s.scan.describe()),
                    s.place
                ),
            )
            .confidence(Confidence::Unsure)
            .evidence(format!("{}: stopped early: {}", s.place, s.why))
            .cause("What the stopped loop did not look at is not judged by this check.")
        })
        .collect()
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{ScanKind, StopReason, StoppedEarly};

    #[test]
    fn a_loop_stopped_at_the_deadline_is_said_with_its_place() {
        let mut s = h200();
        assert!(run(&RULE, &s).is_empty());
        s.stopped_early.push(StoppedEarly {
            scan: ScanKind::WheelFiles,
            place: "/opt/v/lib/python3.12/site-packages".into(),
            why: StopReason::Deadline { budget_s: 2.0 },
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.starts_with("The check of wheel files"));
        assert!(f[0].title.contains("/opt/v/lib/python3.12/site-packages"));
        let ev = f[0].evidence.join("\n");
        assert!(ev.contains("stopped early: the time budget of 2 s"), "{ev}");
    }
}
