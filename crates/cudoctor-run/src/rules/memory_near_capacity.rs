use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::RunFacts;

use super::support::mib;
use crate::rule::RunRule;

/// Reserved memory above this share of the GPU leaves no room for a longer batch.
const NEAR: f64 = 0.92;

pub static RULE: RunRule = RunRule {
    code: "RUN006",
    name: "memory-near-capacity",
    layer: Layer::Acceleration,
    severity: Severity::Warning,
    summary: "the program's CUDA memory reached the GPU's capacity, or an allocation failed",
    docs: r#"## What it checks
The observer reads the caching allocator's counters in each process: the highest allocation and
reservation over the run (per step, too), the GPU's total memory, and `num_ooms`, the allocations
that failed.

## Why it matters
A run at the edge of memory fails on the first longer batch; failed allocations make the allocator
free its cache and retry, which stalls the step even when the program survives.

## How to fix
Look at the memory curve of the report for the step that grows. Lower the batch or sequence length,
use activation checkpointing, make sure attention runs a fused backend (the math path is O(N²)),
and try `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` against fragmentation.
"#,
    check,
};

fn check(facts: &RunFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &facts.processes {
        let Some(m) = &p.memory else { continue };
        let Some(total) = m.total_mib.filter(|t| *t > 0.0) else {
            continue;
        };
        let share = m.peak_reserved_mib / total;
        if m.ooms == 0 && share < NEAR {
            continue;
        }
        let mut f = RULE
            .finding(if m.ooms > 0 {
                format!(
                    "{} allocation{} failed on {} in {}",
                    m.ooms,
                    if m.ooms == 1 { "" } else { "s" },
                    m.device,
                    p.label()
                )
            } else {
                format!(
                    "{} reserved {:.0}% of {}'s memory",
                    p.label(),
                    share * 100.0,
                    m.device
                )
            })
            .evidence(format!(
                "peak allocated {}, peak reserved {} of {}",
                mib(m.peak_allocated_mib),
                mib(m.peak_reserved_mib),
                mib(total)
            ));
        if m.ooms > 0 {
            f = f
                .severity(Severity::Error)
                .evidence(format!("num_ooms = {}", m.ooms));
        }
        out.push(f
            .cause("The program's tensors and the allocator's cache filled the GPU.")
            .shell(format!("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True {}  # less fragmentation", crate::shell_words(&facts.command)))
            .prose("lower the batch or sequence length, or use activation checkpointing (torch.utils.checkpoint)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::fixtures::*;
    use cudoctor_snapshot::MemoryObservation;

    #[test]
    fn near_capacity_and_ooms() {
        let mut p = process(1);
        p.memory = Some(MemoryObservation {
            device: "cuda:0".into(),
            peak_allocated_mib: 100_000.0,
            peak_reserved_mib: 120_000.0,
            total_mib: Some(143_000.0),
            ooms: 0,
        });
        assert!((RULE.check)(&run_of(vec![p.clone()])).is_empty());
        p.memory.as_mut().unwrap().peak_reserved_mib = 140_000.0;
        assert_eq!(
            (RULE.check)(&run_of(vec![p.clone()]))[0].severity,
            Severity::Warning
        );
        p.memory.as_mut().unwrap().ooms = 2;
        assert_eq!((RULE.check)(&run_of(vec![p]))[0].severity, Severity::Error);
    }
}
