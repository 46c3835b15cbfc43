use super::deep_support::{first_line, probes};
use crate::{Context, Finding, Layer, Rule, Severity};
use cudoctor_snapshot::AllReduceFailure;

pub static RULE: Rule = Rule {
    code: "MGPU005",
    name: "allreduce-fails",
    layer: Layer::Multigpu,
    severity: Severity::Error,
    summary: "An NCCL all-reduce across the local GPUs fails or hangs",
    docs: r#"## What it checks
With `--deep` on 2 or more GPUs, the probe starts one process per GPU, joins them with NCCL and
all-reduces a tensor, checking the sum. A failure keeps NCCL's error text; a hang is stopped after
a time limit.

## Why it matters
Every distributed job on this machine (DDP, FSDP, DeepSpeed, tensor parallelism) would fail or hang
the same way at its first collective.

## How to fix
Run with `NCCL_DEBUG=INFO` and read the last lines before the error. In containers, NCCL needs
shared memory: `docker run --ipc=host` or `--shm-size=1g` or more ("unhandled system error",
"Bus error"). "unhandled cuda error" often means a GPU error: see the driver's kernel log. Try
`NCCL_P2P_DISABLE=1` once: if it then works, peer-to-peer is broken (PCIe ACS/IOMMU, driver).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let in_container = ctx.snap.platform.container.is_some();
    probes(ctx)
        .into_iter()
        .filter_map(|p| {
            let ar = p.result.all_reduce.as_ref()?;
            let error = ar.error.as_ref()?;
            let mut f = Finding::new(&RULE, format!("the NCCL all-reduce across {} GPUs fails in {}", ar.world, p.label()))
                .evidence(first_line(error))
                .cause("NCCL could not complete a collective between the local GPUs; distributed jobs fail or hang at their first all-reduce.")
                .shell("NCCL_DEBUG=INFO cudoctor check --deep 2>&1 | tail -50");
            if let Some(v) = &ar.nccl_version {
                f = f.evidence(format!("NCCL {v}"));
            }
            match ar.failure {
                Some(AllReduceFailure::SharedMemory) if in_container => {
                    f = f.prose("NCCL needs shared memory: start the container with --ipc=host (or --shm-size=8g)");
                }
                Some(AllReduceFailure::Hang) => {
                    f = f.shell("NCCL_P2P_DISABLE=1 cudoctor check --deep  # if this passes, peer-to-peer is broken");
                }
                _ => {}
            }
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;
    use cudoctor_snapshot::ContainerFacts;

    #[test]
    fn an_nccl_error_in_a_container_suggests_shared_memory() {
        let mut s = h200_deep();
        assert!(run(&RULE, &s).is_empty());
        s.platform.container = Some(ContainerFacts {
            runtime: "docker".into(),
            evidence: vec!["/.dockerenv".into()],
            ..Default::default()
        });
        let ar = result_mut(&mut s).all_reduce.as_mut().unwrap();
        ar.error = Some(
            "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error"
                .into(),
        );
        ar.failure = Some(AllReduceFailure::SharedMemory);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix.iter().any(|x| x.contains("--ipc=host")));
        assert!(!f[0].fix.iter().any(|x| x.contains("NCCL_P2P_DISABLE")));
    }

    #[test]
    fn a_hang_suggests_trying_without_peer_to_peer() {
        let mut s = h200_deep();
        let ar = result_mut(&mut s).all_reduce.as_mut().unwrap();
        ar.error = Some("the all-reduce did not finish in 60 s and was stopped".into());
        ar.failure = Some(AllReduceFailure::Hang);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix.iter().any(|x| x.contains("NCCL_P2P_DISABLE=1")));
        assert!(!f[0].fix.iter().any(|x| x.contains("--ipc=host")));
    }
}
