use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "DRV002",
    name: "no-gpu-visible",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "The driver is loaded but shows no GPU",
    docs: r#"## What it checks
Whether a loaded driver reports at least one GPU.

## Why it matters
A driver with no GPU means the GPU fell off the bus, is bound to another driver (vfio), was
excluded, or the container was given none. CUDA then reports "no CUDA-capable device".

## How to fix
Check `nvidia-smi` and `dmesg | grep -i nvrm` for Xid errors or "GPU has fallen off the bus"; a
reboot or a reseat may be needed. In a container, pass GPUs with `--gpus all` and check
NVIDIA_VISIBLE_DEVICES.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let d = &ctx.snap.driver;
    // GPUs not read (a Windows tree's driver comes from its files), or the libraries that list
    // them hung or crashed (DRV007): none listed is unknown.
    if !d.driver_found() || !d.gpus.is_empty() || d.gpus_not_read || d.libraries_failed.is_some() {
        return Vec::new();
    }
    let mut f = Finding::new(&RULE, "The NVIDIA driver is loaded but no GPU is visible")
        .about(crate::Subject::Driver)
        .evidence(ctx.driver_evidence())
        .cause("The driver answered but listed no GPU: the device is missing, failed, excluded, or hidden from this container.")
        .shell("nvidia-smi")
        .shell("sudo dmesg | grep -iE 'nvrm|xid'   # look for Xid errors or 'fallen off the bus'");
    if let Some(v) = ctx.var("NVIDIA_VISIBLE_DEVICES") {
        f = f.evidence(format!("NVIDIA_VISIBLE_DEVICES={v}"));
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn driver_without_gpus_is_an_error() {
        assert_eq!(
            run(&RULE, &machine(Some(("580.65.06", "13.0")), &[])).len(),
            1
        );
        assert!(run(&RULE, &h200()).is_empty());
        assert!(run(&RULE, &machine(None, &[])).is_empty());
    }

    #[test]
    fn a_driver_whose_gpus_were_not_read_is_no_finding() {
        let mut s = machine(Some(("560.94", "12.6")), &[]);
        s.driver.gpus_not_read = true;
        assert!(run(&RULE, &s).is_empty());
    }
}
