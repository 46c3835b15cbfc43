use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::RunFacts;

use crate::rule::RunRule;

pub static RULE: RunRule = RunRule {
    code: "RUN004",
    name: "compile-runs-eager",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "the program asked for torch.compile but ran (part of) it eagerly",
    docs: r#"## What it checks
The observer records each `torch.compile(...)` call's backend and mode, and at exit dynamo's frame
counters, inductor's generated-kernel count and what can switch compilation off
(`TORCH_COMPILE_DISABLE`, `TORCHDYNAMO_DISABLE`, `torch._dynamo.config.disable`). The rule fires
when compilation was asked for and switched off, when dynamo gave up on frames (they ran eagerly),
or when a debugging backend that generates no kernels (`eager`, `aot_eager`) was asked for.

## Why it matters
`torch.compile` degrades silently: a disabled or failing compile runs the model eagerly, with no
error, and the expected speed-up never comes.

## How to fix
Unset the variable that disables it; read the failure (`TORCH_LOGS=+dynamo`) when frames are
given up on; with `suppress_errors` on, compile errors become silent eager fallbacks.
"#,
    check,
};

fn check(facts: &RunFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &facts.processes {
        let Some(c) = &p.compile else { continue };
        if c.requests.is_empty() {
            continue;
        }
        let mut reasons: Vec<String> = Vec::new();
        let mut fixes: Vec<String> = Vec::new();
        for d in &c.disabled_by {
            reasons.push(format!("compilation switched off by {d}"));
            if let Some((var, _)) = d.split_once('=') {
                fixes.push(format!("unset {var}"));
            } else {
                fixes.push(format!("python -c \"import torch._dynamo; print(torch._dynamo.config.disable)\"  # True: find where the program sets {d}"));
            }
        }
        let eager = c.eager_frames();
        if eager > 0 {
            reasons.push(format!(
                "dynamo gave up on {eager} of {} frames, which ran eagerly{}",
                c.frames_total,
                if c.suppress_errors {
                    " (suppress_errors is on: their errors were hidden)"
                } else {
                    ""
                }
            ));
        }
        let non_generating: Vec<String> = c
            .requests
            .iter()
            .filter(|r| matches!(r.backend.as_str(), "eager" | "aot_eager"))
            .map(|r| format!("{}× backend={}", r.count, r.backend))
            .collect();
        if !non_generating.is_empty() {
            reasons.push(format!(
                "{} asked for a backend that generates no kernels (a debugging backend: the code runs eagerly)",
                non_generating.join(", ")
            ));
        }
        if reasons.is_empty() {
            continue;
        }
        let mut f = RULE.finding(format!("torch.compile ran eagerly in {}", p.label()));
        let requested: Vec<String> = c
            .requests
            .iter()
            .map(|r| match &r.mode {
                Some(m) => format!("{}× backend={} mode={m}", r.count, r.backend),
                None => format!("{}× backend={}", r.count, r.backend),
            })
            .collect();
        f = f.evidence(format!("torch.compile calls: {}", requested.join(", ")));
        for r in reasons {
            f = f.evidence(r);
        }
        if let Some(n) = c.generated_kernels {
            f = f.evidence(format!("kernels inductor generated: {n}"));
        }
        f = f.cause("The program asked for compiled code, but what ran was eager PyTorch.");
        for x in fixes {
            f = f.shell(x);
        }
        out.push(f.shell(format!(
            "TORCH_LOGS=+dynamo,+inductor {}  # every compile decision",
            crate::shell_words(&facts.command)
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::fixtures::*;
    use cudoctor_snapshot::{CompileObservation, CompileRequest};

    fn compiled(backend: &str) -> CompileObservation {
        CompileObservation {
            requests: vec![CompileRequest {
                backend: backend.into(),
                mode: None,
                count: 1,
            }],
            frames_total: 2,
            frames_ok: 2,
            generated_kernels: Some(3),
            ..Default::default()
        }
    }

    #[test]
    fn a_working_compile_says_nothing() {
        let mut p = process(1);
        p.compile = Some(compiled("inductor"));
        assert!((RULE.check)(&run_of(vec![p])).is_empty());
    }

    #[test]
    fn disabled_and_given_up_frames_are_named() {
        let mut p = process(1);
        let mut c = compiled("inductor");
        c.disabled_by = vec!["TORCH_COMPILE_DISABLE=1".into()];
        c.frames_ok = 1;
        p.compile = Some(c);
        let f = (RULE.check)(&run_of(vec![p]));
        assert_eq!(f.len(), 1);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("gave up on 1 of 2 frames")));
        assert_eq!(f[0].fix[0].text(), "unset TORCH_COMPILE_DISABLE");
    }

    #[test]
    fn the_eager_backend_generates_nothing() {
        let mut p = process(1);
        p.compile = Some(compiled("eager"));
        let f = (RULE.check)(&run_of(vec![p]));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("generates no kernels")));
    }
}
