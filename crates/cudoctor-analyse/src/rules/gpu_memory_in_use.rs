use crate::{Context, Finding, Layer, Rule, Severity};

/// Share of a GPU's memory in use by others above which a job is likely to run out.
const BUSY_SHARE: f64 = 0.5;

pub static RULE: Rule = Rule {
    code: "DRV005",
    name: "gpu-memory-in-use",
    layer: Layer::Driver,
    severity: Severity::Warning,
    summary: "Much of a GPU's memory is already used by other processes",
    docs: r#"## What it checks
Memory used on each GPU at the time of the check, and which processes hold it.

## Why it matters
A job that expects the whole GPU fails with "CUDA out of memory" although its own use is
modest, or runs slower while another job shares the GPU.

## How to fix
Find the holders with `nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`
and stop them, or choose another GPU with CUDA_VISIBLE_DEVICES.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.gpus()
        .iter()
        .filter_map(|g| {
            let (used, total) = (g.gpu.memory_used_mib?, g.gpu.memory_total_mib?);
            if total == 0 || (used as f64) / (total as f64) < BUSY_SHARE {
                return None;
            }
            let holders: Vec<String> = ctx
                .snap
                .driver
                .processes
                .iter()
                .filter(|p| p.gpu_index == Some(g.gpu.index) || (p.gpu_uuid.is_some() && p.gpu_uuid == g.gpu.uuid))
                .map(|p| format!("pid {} {} ({} MiB)", p.pid, p.name.as_deref().unwrap_or(""), p.used_mib.map_or("?".into(), |m| m.to_string())))
                .collect();
            let mut f = Finding::new(&RULE, format!("{} has {used} of {total} MiB in use", g.label()))
                .evidence(format!("memory used {used} MiB of {total} MiB (from {})", g.gpu.source))
                .cause("Other processes hold GPU memory; a new job gets only what is left and may fail with \"CUDA out of memory\".")
                .shell("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv")
                .prose(format!("or use a free GPU: list GPUs other than {} in CUDA_VISIBLE_DEVICES", g.gpu.index));
            for h in holders {
                f = f.evidence(h);
            }
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_mostly_full_gpu_is_reported() {
        let mut s = h200();
        s.driver.gpus[1].memory_used_mib = Some(70000);
        s.driver.gpus[1].memory_total_mib = Some(81920);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("GPU 1"));
        assert!(run(&RULE, &h200()).is_empty());
    }
}
