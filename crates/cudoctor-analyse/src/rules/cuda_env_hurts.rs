use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT030",
    name: "cuda-env-hurts",
    layer: Layer::Platform,
    severity: Severity::Warning,
    summary: "An environment variable left set slows or serialises CUDA work",
    docs: r#"## What it checks
Variables DCGM's deployment check counts as hurting CUDA (DCGM_FR_BAD_CUDA_ENV) and that are
meant for debugging or one narrow case: `CUDA_LAUNCH_BLOCKING=1` and
`CUDA_DEVICE_MAX_CONNECTIONS`. (NCCL_P2P_DISABLE and NCCL_IB_DISABLE set globally are
MGPU rules: p2p-disabled-by-env, nccl-transport-forced-slow.)

## Why it matters
`CUDA_LAUNCH_BLOCKING=1` makes every kernel launch wait for the kernel to finish: a debugging
aid that, left in a profile or a job script, serialises the GPU and slows training many times
over. `CUDA_DEVICE_MAX_CONNECTIONS` limits the hardware work queues the driver uses; `1` is
what Megatron-style tensor parallelism asks for to order communication and compute, any other
job set to it loses concurrency between streams.

## How to fix
Unset the variable where it is set (shell profile, job script, container image ENV), or set it
only for the program that needs it.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(v) = ctx.var("CUDA_LAUNCH_BLOCKING").filter(|v| v.trim() == "1") {
        out.push(
            Finding::new(&RULE, "CUDA_LAUNCH_BLOCKING=1 makes every kernel launch wait")
                .evidence(format!("CUDA_LAUNCH_BLOCKING={v} (DCGM failure reason DCGM_FR_BAD_CUDA_ENV)"))
                .cause("CUDA_LAUNCH_BLOCKING=1 is a debugging setting: each launch waits for its kernel to finish, so the CPU and GPU never overlap and every job on this environment runs many times slower.")
                .shell("unset CUDA_LAUNCH_BLOCKING")
                .prose("and remove it from the shell profile, job script or image ENV that sets it"),
        );
    }
    if let Some(v) = ctx.var("CUDA_DEVICE_MAX_CONNECTIONS") {
        out.push(
            Finding::new(&RULE, format!("CUDA_DEVICE_MAX_CONNECTIONS={v} limits the GPU's work queues"))
                .severity(Severity::Info)
                .evidence(format!("CUDA_DEVICE_MAX_CONNECTIONS={v} (DCGM failure reason DCGM_FR_BAD_CUDA_ENV)"))
                .cause("CUDA_DEVICE_MAX_CONNECTIONS sets how many hardware queues the driver spreads streams over (8 by default): 1 is what Megatron-style tensor parallelism asks for, set globally it serialises the streams of every other program.")
                .shell("unset CUDA_DEVICE_MAX_CONNECTIONS")
                .prose("or set it only in the launch script of the program that needs it"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn launch_blocking_is_a_warning_and_max_connections_information() {
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = h200();
        s.env.insert("CUDA_LAUNCH_BLOCKING".into(), "0".into());
        assert!(run(&RULE, &s).is_empty());
        s.env.insert("CUDA_LAUNCH_BLOCKING".into(), "1".into());
        s.env
            .insert("CUDA_DEVICE_MAX_CONNECTIONS".into(), "1".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[1].severity, Severity::Info);
        assert!(f[0].evidence[0].contains("DCGM_FR_BAD_CUDA_ENV"));
    }
}
