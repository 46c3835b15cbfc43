use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "DRV003",
    name: "driver-library-mismatch",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary:
        "The loaded kernel module and the driver's user-space libraries are different versions",
    docs: r#"## What it checks
Whether the kernel module's version (/proc/driver/nvidia/version, /sys/module/nvidia/version)
equals the version NVML or nvidia-smi report, and whether nvidia-smi failed with "Driver/library
version mismatch".

## Why it matters
After a driver upgrade without a reboot, the old kernel module stays loaded while the new
libraries are on disk. nvidia-smi then fails with "Failed to initialize NVML: Driver/library
version mismatch" and CUDA cannot start.

## How to fix
Reboot, or unload and reload the module when no process uses the GPU:
`sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let d = &ctx.snap.driver;
    let mut f = Finding::new(
        &RULE,
        "Kernel module and driver libraries differ: reboot needed",
    )
    .about(crate::Subject::Driver);
    match (&d.module_version, &d.version) {
        (Some(module), Some(lib)) if lib.source != module.source && module.value != lib.value => {
            f = f
                .evidence(format!(
                    "kernel module {} (from {})",
                    module.value, module.source
                ))
                .evidence(format!(
                    "user-space driver {} (from {})",
                    lib.value, lib.source
                ));
        }
        _ => match &d.library_mismatch {
            Some(said) => f = f.evidence(format!("{}: {}", said.source, said.value)),
            None => return Vec::new(),
        },
    }
    vec![f
        .cause("The driver was upgraded (or downgraded) but the old kernel module is still loaded; the new libraries refuse to talk to it.")
        .shell("sudo reboot")
        .prose("or, with no GPU process running, reload the module:")
        .shell("sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::Sourced;

    fn module(version: &str) -> Option<Sourced<String>> {
        Some(Sourced::new(version.into(), "/proc/driver/nvidia/version"))
    }

    #[test]
    fn module_and_library_versions_differ() {
        let mut s = h200();
        s.driver.module_version = module("570.86.15");
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].evidence[0].contains("570.86.15"));
    }

    #[test]
    fn a_source_reporting_the_mismatch() {
        let mut s = machine(None, &[]);
        assert!(run(&RULE, &s).is_empty());
        s.driver.library_mismatch = Some(Sourced::new(
            "Failed to initialize NVML: Driver/library version mismatch".into(),
            "nvidia-smi --query-gpu",
        ));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].evidence[0],
            "nvidia-smi --query-gpu: Failed to initialize NVML: Driver/library version mismatch"
        );
    }

    #[test]
    fn same_versions_are_fine() {
        let mut s = h200();
        s.driver.module_version = module("580.159.04");
        assert!(run(&RULE, &s).is_empty());
    }
}
