use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::RunFacts;

use super::support::ms;
use crate::rule::RunRule;

/// Collectives taking this share of the step time are worth a look.
const SHARE: f64 = 0.3;

pub static RULE: RunRule = RunRule {
    code: "RUN007",
    name: "collectives-dominate",
    layer: Layer::Multigpu,
    severity: Severity::Warning,
    summary: "NCCL collectives take a large share of each step",
    docs: r#"## What it checks
In distributed runs the observer reads torch's NCCL flight recorder (switched on by `cudoctor run`
with `TORCH_NCCL_TRACE_BUFFER_SIZE` and `TORCH_NCCL_ENABLE_TIMING` unless the user set them): every
collective, including those DDP and FSDP issue from C++, with its device time. The rule compares
the NCCL time per step with the median step time of the same rank.

## Why it matters
NCCL kernels overlap with compute when things go well; when their time approaches the step's, the
GPUs wait on the interconnect: a slow link (PCIe instead of NVLink, P2P off), a small bucket size,
or communication that cannot overlap.

## How to fix
Check the links with `cudoctor check --deep` (all-reduce bus bandwidth against what the links
allow); raise DDP's `bucket_cap_mb`, overlap communication with compute, or use gradient
accumulation to communicate less often.
"#,
    check,
};

fn check(facts: &RunFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &facts.processes {
        let (Some(c), Some(step)) = (&p.collectives, p.steps.median_ms()) else {
            continue;
        };
        let Some(total) = c.nccl_ms() else { continue };
        if p.steps.count == 0 || step <= 0.0 {
            continue;
        }
        let per_step = total / p.steps.count as f64;
        let share = per_step / step;
        if share < SHARE {
            continue;
        }
        let mut f = RULE
            .finding(format!(
                "NCCL collectives take {:.0}% of each step in {}",
                share * 100.0,
                p.label()
            ))
            .evidence(format!(
                "{} of NCCL time per step against a median step of {}",
                ms(per_step),
                ms(step)
            ));
        for op in c.nccl.iter().take(4) {
            f = f.evidence(format!(
                "{}: {} calls, {:.1} MiB, {}",
                op.op,
                op.calls,
                op.bytes as f64 / 1048576.0,
                op.total_ms.map(ms).unwrap_or_else(|| "untimed".into())
            ));
        }
        out.push(f
            .cause("The GPUs spend much of each step in collectives: the interconnect or the communication pattern limits the step.")
            .shell("cudoctor check --deep  # all-reduce bus bandwidth against what the links allow"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::fixtures::*;
    use cudoctor_snapshot::{CollectiveCalls, CollectiveObservation};

    #[test]
    fn a_large_share_of_nccl_time_is_named() {
        let mut p = process(1);
        p.rank = Some(0);
        p.steps.count = 10;
        p.steps.durations_ms = vec![100.0; 9];
        p.collectives = Some(CollectiveObservation {
            backend: "nccl".into(),
            nccl: vec![CollectiveCalls {
                op: "nccl:all_reduce".into(),
                calls: 40,
                bytes: 1 << 30,
                total_ms: Some(500.0),
            }],
            ..Default::default()
        });
        let f = (RULE.check)(&run_of(vec![p.clone()]));
        assert_eq!(
            f[0].title,
            "NCCL collectives take 50% of each step in rank 0 (pid 1)"
        );
        p.collectives.as_mut().unwrap().nccl[0].total_ms = Some(50.0);
        assert!((RULE.check)(&run_of(vec![p])).is_empty());
    }
}
