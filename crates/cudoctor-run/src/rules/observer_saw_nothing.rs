use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::RunFacts;

use crate::rule::RunRule;

pub static RULE: RunRule = RunRule {
    code: "RUN005",
    name: "observer-saw-nothing",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "no Python process of the command loaded cudoctor's observer, or none imported torch",
    docs: r#"## What it checks
Every Python process that loads the observer writes one record at exit. The rule fires when
none did, or when none of those that did imported torch.

## Why it matters
Without a record there is nothing to judge: the report's silence would not mean the fast paths
ran.

## How to fix
The observer comes in through `PYTHONPATH` (a `sitecustomize`). Python ignores it under
`python -I` or `-E`, and a launcher that builds a fresh environment for its children (some job
schedulers, `env -i`) drops the variable; a process killed with SIGKILL writes nothing. Run the
Python command directly under `cudoctor run`, without `-I`/`-E`.
"#,
    check,
};

fn check(facts: &RunFacts) -> Vec<Finding> {
    if facts.processes.is_empty() {
        let mut f = RULE
            .finding("no Python process of the command reported to the observer")
            .evidence(format!("command: {}", facts.command.join(" ")));
        for u in &facts.unreadable {
            f = f.evidence(format!("unreadable record: {u}"));
        }
        return vec![f
            .cause("The command started no Python process that loaded the observer: it is not Python, it runs Python with -I or -E, it clears PYTHONPATH for its children, or its processes were killed before exit.")
            .prose("run the Python command itself, without -I or -E: cudoctor run -- python train.py")];
    }
    if facts.torch_processes().next().is_none() {
        return vec![RULE.finding("no observed process imported torch")
            .severity(Severity::Info)
            .evidence(format!(
                "{} Python process{} observed, none imported torch",
                facts.processes.len(),
                if facts.processes.len() == 1 { "" } else { "es" }
            ))
            .cause("The program ran without torch, so there are no attention, compile or CUDA memory facts to judge.")];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::fixtures::*;

    #[test]
    fn silence_is_reported_not_taken_for_health() {
        let f = (RULE.check)(&run_of(vec![]));
        assert_eq!(f[0].severity, Severity::Warning);
        let mut p = process(1);
        p.torch = None;
        assert_eq!((RULE.check)(&run_of(vec![p]))[0].severity, Severity::Info);
        assert!((RULE.check)(&run_of(vec![process(2)])).is_empty());
    }
}
