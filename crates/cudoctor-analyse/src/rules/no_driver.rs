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

On a Jetson (the L4T release file /etc/nv_tegra_release, or a Jetson board in the device tree)
there is no discrete-GPU driver to install: JetPack drives the integrated GPU, and only NVIDIA's
JetPack builds of torch use it; the finding says so (an error when a PyPI or PyTorch-index torch
is installed, else information), with `plan`'s answer for the Jetson platform as its fix.

## How to fix
On a machine with an NVIDIA GPU, install the driver from the distribution's packages (e.g.
`sudo ubuntu-drivers install` on Ubuntu) and reboot. In a container, start it with the GPU
passed through (`docker run --gpus all ...`, with the NVIDIA Container Toolkit on the host).
"#,
    check,
};

/// A container started without GPU access (PLT001) is why no driver is seen inside it: the
/// container's start is the one remedy.
pub static FOLLOWS: crate::rule::Follows = crate::rule::Follows {
    rule: &RULE,
    cause: &super::container_without_gpu::RULE,
    sharing: crate::rule::Sharing::Nothing,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.driver.driver_found() {
        return Vec::new();
    }
    // Not read (a Windows tree under --root), or its libraries hung or crashed (DRV007):
    // unknown, which is not absent.
    if ctx.snap.driver.not_read() || ctx.snap.driver.libraries_failed.is_some() {
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
    if ctx.platform() == cudoctor_kb::Platform::Jetson {
        return vec![on_jetson(ctx, f, &cuda_torch)];
    }
    if ctx.expects_gpu() {
        for t in &cuda_torch {
            f = f.evidence(format!("{t} expects a CUDA driver"));
        }
        let in_container = ctx.snap.platform.container.is_some();
        // The GPU's nodes in a container: the host's driver is loaded (it made them), what
        // is missing in here is its user-space side (PLT001 names how it was started).
        let nodes: Vec<&str> = ctx
            .snap
            .platform
            .device_nodes
            .iter()
            .map(String::as_str)
            .filter(|n| {
                *n == "/dev/nvidiactl" || n.trim_start_matches("/dev/nvidia").parse::<u32>().is_ok()
            })
            .collect();
        if in_container && !nodes.is_empty() {
            f.title = "No NVIDIA driver is usable in this container: its device nodes are here, its libraries are not".into();
            f = f
                .evidence(format!("device nodes: {}", nodes.join(" ")))
                .cause("The GPU's device nodes reached this container, so the host's driver is loaded; its user-space libraries (libcuda, libnvidia-ml) were not injected, so nothing in here can load the driver.")
                .prose("Start the container through the NVIDIA Container Toolkit (docker run --gpus all ..., or --device nvidia.com/gpu=all with CDI) instead of passing /dev/nvidia* by hand");
        } else {
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
                });
        }
        f = f.prose("Then check:").shell("nvidia-smi")
    } else {
        f = f
            .severity(Severity::Info)
            .cause("No NVIDIA driver, GPU or CUDA software was found: this machine does not use CUDA. The remaining checks have little to judge.")
    }
    vec![f]
}

/// A Jetson has no discrete-GPU driver to install: JetPack (L4T) drives its integrated GPU,
/// and only NVIDIA's JetPack builds of torch run on it. What to install is what `plan` says
/// for the Jetson platform ([`cudoctor_plan::JETSON_INSTALL`]).
fn on_jetson(ctx: &Context, mut f: Finding, cuda_torch: &[String]) -> Finding {
    let h = &ctx.snap.host;
    for fact in [&h.l4t_release, &h.board_model].into_iter().flatten() {
        f = f.evidence(format!("Jetson: {fact}"));
    }
    f.title = "No discrete-GPU NVIDIA driver: this is a Jetson, driven by JetPack".into();
    if cuda_torch.is_empty() {
        return f.severity(Severity::Info).cause(
            "A Jetson module's GPU is driven by JetPack (L4T), not by the NVIDIA driver of discrete GPUs; the driver checks of discrete GPUs do not apply.",
        );
    }
    for t in cuda_torch {
        f = f.evidence(format!("{t} is a build from PyPI or PyTorch's index"));
    }
    f.cause(
        "A Jetson module's GPU is driven by JetPack (L4T), not by a discrete-GPU NVIDIA driver, and torch's wheels on PyPI and PyTorch's index are not built for it: this torch cannot use the GPU.",
    )
    .prose(cudoctor_plan::JETSON_INSTALL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn in_a_container_with_the_gpus_nodes_the_missing_part_is_the_libraries() {
        let mut s = machine(None, &[]);
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        s.platform.container = Some(cudoctor_snapshot::ContainerFacts {
            runtime: "docker".into(),
            evidence: vec!["/.dockerenv exists".into()],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert!(
            f[0].cause.contains("started without GPU access"),
            "{}",
            f[0].cause
        );
        s.platform.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
        let f = run(&RULE, &s);
        assert!(f[0]
            .title
            .contains("its device nodes are here, its libraries are not"));
        assert!(!f[0].cause.contains("started without GPU access"));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e == "device nodes: /dev/nvidia0 /dev/nvidiactl"));
    }

    #[test]
    fn a_driver_not_read_is_not_a_missing_driver() {
        let mut s = machine(None, &[]);
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        assert_eq!(run(&RULE, &s).len(), 1);
        s.driver.attempts = vec![cudoctor_snapshot::Attempt::new(
            "windows driver",
            cudoctor_snapshot::Outcome::Skipped,
            "a Windows tree under --root",
        )];
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn a_windows_trees_unreadable_driver_dll_is_not_a_missing_driver() {
        use cudoctor_snapshot::{Attempt, Outcome};
        let mut s = machine(None, &[]);
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        let damaged = Attempt::new(
            r"C:\Windows\System32\nvml.dll",
            Outcome::Failed,
            "not a PE file",
        );
        s.driver.attempts = vec![
            damaged.clone(),
            Attempt::new("windows driver", Outcome::Skipped, "the driver is unknown"),
        ];
        assert!(run(&RULE, &s).is_empty());
        // A source that found nothing still says no driver is there.
        s.driver.attempts = vec![
            damaged,
            Attempt::new("nvidia-smi", Outcome::Absent, "not found on PATH"),
        ];
        assert_eq!(run(&RULE, &s).len(), 1);
    }

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
