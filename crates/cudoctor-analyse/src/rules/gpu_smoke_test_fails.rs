use super::deep_support::{probes, ProbeView};
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "ACC006",
    name: "gpu-smoke-test-fails",
    layer: Layer::Acceleration,
    severity: Severity::Error,
    summary: "A GPU fails to initialise or computes a wrong matmul",
    docs: r#"## What it checks
With `--deep`, the probe initialises every visible GPU through torch, multiplies two 1024x1024
matrices of ones and checks that every element is exactly 1024.

## Why it matters
A GPU that cannot be initialised (an Xid error, a GPU fallen off the bus, ECC errors pending a
reset) or that returns wrong numbers breaks or silently corrupts every job scheduled on it.

## How to fix
Look at the driver's kernel log (`sudo dmesg | grep -i xid`), `nvidia-smi -q -d ECC,PAGE_RETIREMENT`,
and reset the GPU (`sudo nvidia-smi -r -i <index>`) or drain the node. Hide the GPU with
CUDA_VISIBLE_DEVICES until then.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    probes(ctx).into_iter().flat_map(judge).collect()
}

fn judge(p: ProbeView) -> Vec<Finding> {
    p.result
        .devices
        .iter()
        .filter_map(|d| {
            let label = format!("GPU {} ({})", d.index, d.name);
            if let Some(e) = &d.error {
                return Some(
                    Finding::new(&RULE, format!("{label} fails in torch in {}", p.label()))
                        .about(p.subject())
                        .evidence(e.clone())
                        .cause("torch could not initialise this GPU or run a small matmul on it.")
                        .shell("sudo dmesg | grep -i xid")
                        .shell(format!("sudo nvidia-smi -r -i {}  # reset, once no job uses it", d.index)),
                );
            }
            (d.matmul_ok == Some(false)).then(|| {
                Finding::new(&RULE, format!("{label} computes a wrong matmul in {}", p.label()))
                    .about(p.subject())
                    .evidence("ones(1024,1024) @ ones(1024,1024) did not give 1024 everywhere")
                    .cause("The GPU returned wrong numbers for the simplest matmul: faulty memory or a broken GPU.")
                    .shell("nvidia-smi -q -d ECC,PAGE_RETIREMENT")
                    .prose(format!("Keep jobs off GPU {}: list only the other GPUs in CUDA_VISIBLE_DEVICES", d.index))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;

    #[test]
    fn healthy_gpus_pass_and_broken_ones_are_named() {
        let mut s = h200_deep();
        assert!(run(&RULE, &s).is_empty());
        result_mut(&mut s).devices[1].matmul_ok = Some(false);
        result_mut(&mut s).devices[0].error =
            Some("RuntimeError: CUDA error: uncorrectable ECC error encountered".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2);
        assert!(f[0].title.starts_with("GPU 0"));
        assert!(f[1].title.contains("wrong matmul"));
    }
}
