use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "DRV001",
    name: "no-driver",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "No NVIDIA driver is loaded",
    docs: r#"## What it checks
Whether any source (the kernel module's /sys and /proc files, NVML, libcuda, nvidia-smi) shows a
loaded NVIDIA driver.

## Why it matters
Without a driver nothing can use a GPU: `torch.cuda.is_available()` is False and every CUDA call
fails with "no CUDA-capable device is detected" or "Found no NVIDIA driver on your system".
A machine with no GPU and no CUDA software needs no driver: then this is only information.

## How to fix
On a machine with an NVIDIA GPU, install the driver from the distribution's packages (e.g.
`sudo ubuntu-drivers install` on Ubuntu) and reboot. In a container, start it with the GPU
passed through (`docker run --gpus all ...`, with the NVIDIA Container Toolkit on the host).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.driver.driver_found() {
        return Vec::new();
    }
    let tried: Vec<String> = ctx
        .snap
        .driver
        .attempts
        .iter()
        .map(|a| a.to_string())
        .collect();
    let mut f = Finding::new(&RULE, "No NVIDIA driver is loaded").about(crate::Subject::Driver);
    for t in tried {
        f = f.evidence(t);
    }
    let cuda_torch: Vec<String> = ctx
        .torch_envs()
        .iter()
        .filter(|t| t.cuda().is_some())
        .map(|t| t.label())
        .collect();
    if ctx.expects_gpu() {
        for t in &cuda_torch {
            f = f.evidence(format!("{t} expects a CUDA driver"));
        }
        let in_container = ctx.snap.platform.container.is_some();
        f = f
            .cause(if in_container {
                "This runs in a container and no NVIDIA driver is visible in it: the container was most likely started without GPU access."
            } else {
                "No NVIDIA kernel driver is loaded, so no program can reach a GPU."
            })
            .prose(if in_container {
                "Start the container with GPUs: docker run --gpus all ... (needs the NVIDIA Container Toolkit on the host)"
            } else {
                "Install the NVIDIA driver (Ubuntu: sudo ubuntu-drivers install; other systems: the distribution's nvidia-driver package) and reboot"
            })
            .prose("Then check:")
            .shell("nvidia-smi")
    } else {
        f = f
            .severity(Severity::Info)
            .cause("No NVIDIA driver, GPU or CUDA software was found: this machine does not use CUDA. The remaining checks have little to judge.")
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_plain_cpu_machine_gets_information_only() {
        let f = run(&RULE, &machine(None, &[]));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
    }

    #[test]
    fn cuda_torch_without_a_driver_is_an_error() {
        let mut s = machine(None, &[]);
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("torch 2.11.0+cu130")));
    }

    #[test]
    fn silent_when_a_driver_is_loaded() {
        assert!(run(&RULE, &h200()).is_empty());
    }
}
