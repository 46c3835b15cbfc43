use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::{Counted, RunFacts};

use super::support::{first_line, shell_words};
use crate::rule::RunRule;

pub static RULE: RunRule = RunRule {
    code: "RUN002",
    name: "graph-breaks",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "torch.compile broke the program's graphs",
    docs: r#"## What it checks
At exit, the observer reads dynamo's own counters (`torch._dynamo.utils.counters["graph_break"]`)
in every process that compiled: each graph break with dynamo's reason, and how often it happened.

## Why it matters
At each break the compiled graph ends, the next piece of Python runs eagerly and a new graph
starts: fewer fusions, more kernel launches, and guards to check at every call. A break inside
the training step can cost most of what compiling was for, silently.

## How to fix
Dynamo's reason names the construct (a `print`, a `.item()`, a data-dependent branch, an
unsupported library call) and usually a hint. Move it out of the compiled region, or rewrite it
in tensor operations. `TORCH_LOGS=graph_breaks` prints each break with its source line.
"#,
    check,
};

fn check(facts: &RunFacts) -> Vec<Finding> {
    let Some((label, breaks)) = facts
        .processes
        .iter()
        .filter_map(|p| p.compile.as_ref().map(|c| (p.label(), c)))
        .max_by_key(|(_, c)| c.graph_break_count())
        .map(|(l, c)| (l, &c.graph_breaks))
    else {
        return Vec::new();
    };
    let total: u64 = breaks.iter().map(|b| b.count).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut f = RULE.finding(format!(
        "torch.compile broke the graph {total} time{} ({} reason{})",
        if total == 1 { "" } else { "s" },
        breaks.len(),
        if breaks.len() == 1 { "" } else { "s" }
    ));
    for b in breaks.iter().take(5) {
        f = f.evidence(format!("{label}: {}× {}", b.count, first_line(&b.reason)));
    }
    f = f.cause("Dynamo could not trace these constructs, so each one ended a graph and ran eagerly before a new graph began.");
    for hint in hints(breaks).into_iter().take(3) {
        f = f.prose(hint);
    }
    vec![f.shell(format!(
        "TORCH_LOGS=graph_breaks {}  # each break with its source line",
        shell_words(&facts.command)
    ))]
}

/// Dynamo's own "Hint:" lines, deduplicated.
fn hints(breaks: &[Counted]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for b in breaks {
        for line in b.reason.lines() {
            if let Some(h) = line.trim().strip_prefix("Hint:") {
                let h = h.trim().to_string();
                if !h.is_empty() && !h.contains("report an issue") && !out.contains(&h) {
                    out.push(h);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::fixtures::*;
    use cudoctor_snapshot::CompileObservation;

    #[test]
    fn breaks_are_counted_with_dynamos_reasons_and_hints() {
        let mut p = process(1);
        p.compile = Some(CompileObservation {
            graph_breaks: vec![Counted {
                // torch 2.15's reason for a print() in a compiled function, as captured.
                reason: "Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types ['str'] (has_kwargs False)\n  Hint: Avoid calling builtin `print` with argument types ['str']. Consider using an equivalent alternative function/method to `print`.\n  Hint: Please report an issue to PyTorch.".into(),
                count: 2,
            }],
            ..Default::default()
        });
        let f = (RULE.check)(&run_of(vec![p]));
        assert_eq!(
            f[0].title,
            "torch.compile broke the graph 2 times (1 reason)"
        );
        assert_eq!(
            f[0].evidence[0],
            "pid 1: 2× Failed to trace builtin operator"
        );
        assert!(f[0].fix[0]
            .text()
            .starts_with("Avoid calling builtin `print`"));
        assert!(f[0]
            .fix
            .last()
            .unwrap()
            .text()
            .starts_with("TORCH_LOGS=graph_breaks python train.py"));
    }

    #[test]
    fn no_compile_no_finding() {
        assert!((RULE.check)(&run_of(vec![process(1)])).is_empty());
    }
}
