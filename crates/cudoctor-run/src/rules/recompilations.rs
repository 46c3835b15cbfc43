use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::RunFacts;

use super::support::{first_line, shell_words};
use crate::rule::RunRule;

/// dynamo's default recompile limit per frame: past it, the frame runs eagerly.
const RECOMPILE_LIMIT: u64 = 8;

pub static RULE: RunRule = RunRule {
    code: "RUN003",
    name: "recompilations",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "torch.compile recompiled frames of the program",
    docs: r#"## What it checks
The observer counts dynamo's compilations through its compile callbacks (a frame's second and
later compile ids are recompilations) and keeps the reasons dynamo gives when a frame's guards
fail (`get_and_maybe_log_recompilation_reasons`).

## Why it matters
Each recompilation stops the program for the compile time; a frame that keeps failing its guards
(a changing shape, a Python value, a new dtype) reaches dynamo's recompile limit (8 by default)
and then runs eagerly for the rest of the run. One recompilation for a new shape is usual (dynamo
then marks the size dynamic): the rule is a note until it happens often.

## How to fix
The reason names the guard that failed. Mark varying sizes dynamic (`torch._dynamo.mark_dynamic`
or `torch.compile(dynamic=True)`), keep Python scalars that change out of the compiled function,
or pad inputs to a few fixed shapes. `TORCH_LOGS=recompiles` prints each one.
"#,
    check,
};

fn check(facts: &RunFacts) -> Vec<Finding> {
    let Some((label, c)) = facts
        .processes
        .iter()
        .filter_map(|p| p.compile.as_ref().map(|c| (p.label(), c)))
        .max_by_key(|(_, c)| c.recompilations)
    else {
        return Vec::new();
    };
    if c.recompilations == 0 {
        return Vec::new();
    }
    let severity = if c.recompilations >= RECOMPILE_LIMIT / 2 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let mut f = RULE
        .finding(format!(
            "torch.compile recompiled {} time{}",
            c.recompilations,
            if c.recompilations == 1 { "" } else { "s" }
        ))
        .severity(severity)
        .evidence(format!(
            "{label}: {} compilations, {} of them recompilations, {} graphs",
            c.compilations, c.recompilations, c.unique_graphs
        ));
    for r in c.recompile_reasons.iter().take(4) {
        f = f.evidence(format!(
            "failed guard, {}×: {}",
            r.count,
            first_line(&r.reason)
        ));
    }
    if let Some(s) = c.compile_s {
        f = f.evidence(format!("{s:.1} s spent compiling"));
    }
    vec![f
        .cause("A guard of an already compiled frame failed (a new shape, dtype or Python value), so dynamo compiled the frame again.")
        .prose("mark a size that varies as dynamic: torch._dynamo.mark_dynamic(tensor, dim), or torch.compile(..., dynamic=True)")
        .shell(format!("TORCH_LOGS=recompiles {}  # each recompilation with its guard", shell_words(&facts.command)))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::fixtures::*;
    use cudoctor_snapshot::{CompileObservation, Counted};

    #[test]
    fn one_recompilation_is_a_note_many_a_warning() {
        let mut p = process(1);
        p.compile = Some(CompileObservation {
            compilations: 2,
            recompilations: 1,
            recompile_reasons: vec![Counted {
                reason: "tensor 'x' size mismatch at index 0. expected 10, actual 11".into(),
                count: 1,
            }],
            ..Default::default()
        });
        let f = (RULE.check)(&run_of(vec![p.clone()]));
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].evidence[1].contains("size mismatch"));
        p.compile.as_mut().unwrap().recompilations = 6;
        assert_eq!(
            (RULE.check)(&run_of(vec![p]))[0].severity,
            Severity::Warning
        );
    }
}
