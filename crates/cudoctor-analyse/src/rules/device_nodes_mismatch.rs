use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "GPU009",
    name: "device-nodes-mismatch",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "The /dev/nvidiaN device nodes do not match the GPUs the driver lists",
    docs: r#"## What it checks
Outside containers and WSL: the number of GPU device nodes in /dev (`/dev/nvidia0`,
`/dev/nvidia1`, ...; not nvidiactl, nvidia-uvm or nvidia-caps) against the GPUs the driver
lists (NVML, or /proc/driver/nvidia/gpus where NVML was not asked), DCGM's deployment check
DCGM_FR_DEVICE_COUNT_MISMATCH ("The number of devices NVML returns is different than the
number of devices in /dev").

## Why it matters
Each GPU is opened through its own node. Fewer nodes than GPUs: a GPU whose node was never
made (no udev rule, nvidia-modprobe missing or not setuid, nodes made by a script for another
count) cannot be opened, and CUDA shows fewer devices than the machine has. More nodes than
GPUs: a GPU the driver had when the nodes were made is gone (it fell off the bus: Xid 79, a
failed reset), or this process's device cgroup hides it from NVML. Either way the node does not
have the GPUs its jobs are placed for.

## How to fix
Missing nodes: `sudo nvidia-modprobe -c N` makes `/dev/nvidiaN` (N is the GPU's minor number,
"Device Minor" in /proc/driver/nvidia/gpus/*/information); running `nvidia-smi` once as root or
enabling `nvidia-persistenced` makes them all. A GPU gone: read the kernel log for its Xid,
count the GPUs on the bus (`lspci -d 10de:`), drain the node and reset the GPU or reboot; one
that returns missing is a hardware case.
"#,
    check,
};

/// A node left by a GPU that fell off the bus follows that GPU's Xid (GPU004 of a GPU the
/// driver no longer lists): the Xid's action is the one to take.
pub static FOLLOWS: crate::rule::Follows = crate::rule::Follows {
    rule: &RULE,
    cause: &super::xid_events::RULE,
    sharing: crate::rule::Sharing::UnlistedGpu,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let s = ctx.snap;
    let p = &s.platform;
    if s.host.os == "windows" || p.wsl || p.container.is_some() {
        return Vec::new();
    }
    // /dev was read (the control node every driver makes is there) and the driver listed GPUs
    // from one source that counts them all.
    let Some(nodes) = p.gpu_device_nodes() else {
        return Vec::new();
    };
    let gpus: Vec<_> = s.driver.gpus.iter().filter(|g| !g.what_if).collect();
    let Some(first) = gpus.first() else {
        return Vec::new();
    };
    let source = first.source.as_str();
    let counted = source == "nvml" || source.starts_with("/proc/driver/nvidia/gpus");
    if !counted || gpus.iter().any(|g| g.source != source) {
        return Vec::new();
    }
    let (n_nodes, n_gpus) = (nodes.len(), gpus.len());
    if n_nodes == n_gpus {
        return Vec::new();
    }
    let by = if source == "nvml" {
        "NVML (nvmlDeviceGetCount)"
    } else {
        "/proc/driver/nvidia/gpus"
    };
    // A Slurm job's device cgroup (ConstrainDevices) hides the GPUs it was not given from NVML
    // while /dev keeps every node: more nodes than GPUs is normal there.
    if n_nodes > n_gpus && source == "nvml" && s.env.contains_key("SLURM_JOB_ID") {
        return Vec::new();
    }
    let node_list: Vec<String> = nodes.iter().map(|n| format!("/dev/nvidia{n}")).collect();
    let gpu_list: Vec<String> = gpus
        .iter()
        .map(|g| match &g.bus_id {
            Some(bus) => format!("{} {} ({bus})", g.index, g.name),
            None => format!("{} {}", g.index, g.name),
        })
        .collect();
    let mut f = Finding::new(
        &RULE,
        format!(
            "{n_nodes} GPU device node{} in /dev for the {n_gpus} GPU{} the driver lists",
            if n_nodes == 1 { "" } else { "s" },
            if n_gpus == 1 { "" } else { "s" }
        ),
    )
    .evidence(format!(
        "/dev: {} (DCGM failure reason DCGM_FR_DEVICE_COUNT_MISMATCH)",
        if node_list.is_empty() {
            "no /dev/nvidiaN node".to_string()
        } else {
            node_list.join(" ")
        }
    ))
    .evidence(format!("{by}: {}", gpu_list.join(", ")));
    if n_nodes < n_gpus {
        // Minor numbers follow the PCI order the driver lists GPUs in: the numbers below the
        // GPU count that have no node are the likely missing ones.
        let missing: Vec<u32> = (0..n_gpus as u32).filter(|n| !nodes.contains(n)).collect();
        f = f.cause("A GPU the driver has has no device node, so no program can open it: CUDA shows fewer devices than the node has. The nodes are made by udev, nvidia-modprobe (setuid, called by the driver's libraries) or nvidia-persistenced; one of them did not run for this GPU.");
        for n in &missing {
            f = f.shell(format!("sudo nvidia-modprobe -c {n}"));
        }
        f = f.prose("N is the GPU's minor number ('Device Minor' in /proc/driver/nvidia/gpus/*/information); or run 'sudo nvidia-smi' once, or enable nvidia-persistenced, which make every node");
    } else {
        f = f.severity(Severity::Warning);
        // Xid 79 of a GPU the driver does not list now: the GPU that left its node.
        let listed = |pci: &str| {
            gpus.iter()
                .any(|g| crate::views::pci::same_gpu(g.bus_id.as_deref(), pci))
        };
        let fell: Vec<&str> = s.health.as_ref().map_or(Vec::new(), |h| {
            h.kernel_log
                .xids
                .iter()
                .filter(|x| x.xid == 79 && !listed(&x.pci))
                .map(|x| x.pci.as_str())
                .collect()
        });
        if let Some(pci) = fell.first() {
            f = f
                .severity(Severity::Error)
                .about(crate::Subject::Driver)
                .evidence(format!("kernel log: Xid 79 (fallen off the bus) for the GPU at PCI {pci}, which the driver no longer lists"));
        }
        f = f.cause("A GPU the driver had when these nodes were made is no longer listed: it fell off the bus or failed a reset (the kernel log names it), or this process's device cgroup hides it from NVML (a job scheduler's or systemd's device rules).");
        f = f
            .shell("lspci -d 10de:")
            .prose("compare the GPUs on the bus with the driver's list; read the kernel log for the lost GPU's Xid (cudoctor check names it: GPU004)")
            .prose("drain the node's jobs, then reset the GPU or reboot; a GPU that goes missing again is a hardware case (nvidia-bug-report.sh, then support)");
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn with_nodes(
        mut s: cudoctor_snapshot::Snapshot,
        nodes: &[&str],
    ) -> cudoctor_snapshot::Snapshot {
        s.platform.device_nodes = nodes.iter().map(|n| n.to_string()).collect();
        s
    }

    /// The real H200 pair's /dev (docs/device-runs/2026-11-30-h200x2).
    const H200X2_DEV: &[&str] = &[
        "/dev/nvidia-caps",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
        "/dev/nvidia0",
        "/dev/nvidia1",
        "/dev/nvidiactl",
    ];

    #[test]
    fn one_node_per_gpu_is_fine() {
        let s = with_nodes(h200(), H200X2_DEV);
        assert_eq!(s.driver.gpus.len(), 2);
        assert!(run(&RULE, &s).is_empty());
        // No /dev read (no nvidiactl): nothing said.
        assert!(run(&RULE, &with_nodes(h200(), &[])).is_empty());
    }

    #[test]
    fn a_missing_node_is_an_error_with_the_command_that_makes_it() {
        let s = with_nodes(
            h200(),
            &["/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"],
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(
            f[0].title,
            "1 GPU device node in /dev for the 2 GPUs the driver lists"
        );
        assert!(f[0].evidence[0].contains("DCGM_FR_DEVICE_COUNT_MISMATCH"));
        assert!(f[0].evidence[1].starts_with("NVML"), "{}", f[0].evidence[1]);
        let fixes: Vec<String> = f[0].fix.iter().map(|x| x.to_string()).collect();
        assert!(fixes[0].contains("sudo nvidia-modprobe -c 1"), "{fixes:?}");
    }

    #[test]
    fn a_node_left_by_a_lost_gpu_is_a_warning_or_an_error_with_its_xid() {
        let mut s = with_nodes(h200(), H200X2_DEV);
        s.driver.gpus.truncate(1);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        s.health = Some(cudoctor_snapshot::HealthFacts {
            kernel_log: cudoctor_snapshot::KernelLog {
                xids: vec![cudoctor_snapshot::XidEvent {
                    xid: 79,
                    pci: "0000:00:07".into(),
                    time_us: None,
                    text: "NVRM: Xid (PCI:0000:00:07): 79, GPU has fallen off the bus.".into(),
                }],
                ..Default::default()
            },
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].evidence.iter().any(|e| e.contains("Xid 79")));
        // In a Slurm job, the job's device cgroup hides the GPUs it was not given.
        s.env.insert("SLURM_JOB_ID".into(), "42".into());
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn containers_wsl_and_mixed_sources_are_not_counted() {
        let mut s = with_nodes(h200(), &["/dev/nvidia0", "/dev/nvidiactl"]);
        s.platform.wsl = true;
        assert!(run(&RULE, &s).is_empty());
        s.platform.wsl = false;
        s.platform.container = Some(cudoctor_snapshot::ContainerFacts {
            runtime: "docker".into(),
            evidence: vec!["/.dockerenv exists".into()],
            gpu_access: None,
        });
        assert!(run(&RULE, &s).is_empty());
        s.platform.container = None;
        s.driver.gpus[1].source = "nvidia-smi --query-gpu".into();
        assert!(run(&RULE, &s).is_empty());
        s.driver.gpus[1].source = "nvml".into();
        s.driver.gpus[1].what_if = true;
        assert!(run(&RULE, &s).is_empty(), "a --gpu what-if GPU has no node");
    }
}
