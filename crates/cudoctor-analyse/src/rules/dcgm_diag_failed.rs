use crate::{Context, Finding, Layer, Rule, Severity};

/// A diag result older than this speaks of another state of the node.
const RECENT_S: u64 = 7 * 24 * 3600;

pub static RULE: Rule = Rule {
    code: "GPU008",
    name: "dcgm-diag-failed",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "A recent DCGM diagnostic on this node failed a test",
    docs: r#"## What it checks
A `dcgmi diag --json` result saved on disk in a well-known place — a file whose name holds
"diag" and ends in `.json` in /var/log/nvidia-dcgm/, or /var/lib/cudoctor/dcgm-diag.json —
the newest one, when it is less than 7 days old: any sub-test whose status is "Fail".
(Save one with `dcgmi diag -r 1 --json > /var/lib/cudoctor/dcgm-diag.json`.)

## Why it matters
DCGM's diagnostic exercises what a fast check cannot (memory, PCIe bandwidth, NVLink, stress):
a node it failed is not healthy, whatever the software stack looks like.

## How to fix
Read the failed test's warning, fix what it names (DCGM's failure-reason code says what), and
run the diagnostic again: `dcgmi diag -r 3 --json`.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(d) = ctx.snap.health.as_ref().and_then(|h| h.dcgm_diag.as_ref()) else {
        return Vec::new();
    };
    if d.age_s.is_none_or(|a| a > RECENT_S) {
        return Vec::new();
    }
    let failed: Vec<_> = d.tests.iter().filter(|t| t.failed()).collect();
    if failed.is_empty() {
        return Vec::new();
    }
    let names: Vec<&str> = failed.iter().map(|t| t.name.as_str()).collect();
    let mut names_unique = names.clone();
    names_unique.dedup();
    let hours = d.age_s.unwrap_or(0) / 3600;
    let mut f = Finding::new(
        &RULE,
        format!(
            "DCGM's diagnostic failed on this node: {}",
            names_unique.join(", ")
        ),
    )
    .evidence(format!("{} ({hours} h old)", d.path));
    for t in failed {
        let gpus = if t.gpus.is_empty() {
            String::new()
        } else {
            let g: Vec<String> = t.gpus.iter().map(u32::to_string).collect();
            format!(" on GPU {}", g.join(", "))
        };
        f = f.evidence(format!(
            "{}: {}{gpus}{}",
            t.name,
            t.result,
            t.warning
                .as_deref()
                .map(|w| format!(": {w}"))
                .unwrap_or_default()
        ));
    }
    vec![f
        .cause("DCGM's diagnostic, run on this node recently, found a fault: the node is not healthy until the failed test passes.")
        .prose("fix what the failed test's warning names, then run the diagnostic again")
        .shell("dcgmi diag -r 3 --json")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{DcgmDiag, DcgmTest};

    fn with_diag(age_s: u64, result: &str) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.health.as_mut().unwrap().dcgm_diag = Some(DcgmDiag {
            path: "/var/log/nvidia-dcgm/diag-r1.json".into(),
            age_s: Some(age_s),
            tests: vec![
                DcgmTest {
                    name: "Denylist".into(),
                    result: "Pass".into(),
                    ..Default::default()
                },
                DcgmTest {
                    name: "Memory".into(),
                    result: result.into(),
                    gpus: vec![1],
                    warning: Some("GPU 1 had uncorrectable memory errors".into()),
                },
            ],
            unreadable: None,
        });
        s
    }

    #[test]
    fn a_recent_failed_test_keeps_the_node_from_healthy() {
        let f = run(&RULE, &with_diag(3600, "Fail"));
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("Memory"));
        assert!(f[0].evidence[1].contains("on GPU 1"));
        assert!(run(&RULE, &with_diag(3600, "Pass")).is_empty());
        assert!(
            run(&RULE, &with_diag(30 * 24 * 3600, "Fail")).is_empty(),
            "a month-old result"
        );
        assert!(run(&RULE, &h200()).is_empty());
    }
}
