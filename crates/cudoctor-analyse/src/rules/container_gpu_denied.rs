use cudoctor_snapshot::health::NVML_ERROR_UNKNOWN;
use cudoctor_snapshot::{NodeOpen, NVIDIACTL_MINOR, NVIDIA_MAJOR};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT004",
    name: "container-gpu-denied",
    layer: Layer::Platform,
    severity: Severity::Error,
    summary: "A container has the GPU's device nodes but its device cgroup denies them",
    docs: r#"## What it checks
Inside a container whose /dev/nvidia* nodes are there while the driver lists no GPU: the
device cgroup's rules (cgroup v1 `devices.list`: a rule for character major 195), a read-only,
non-blocking open of /dev/nvidiactl (no ioctl; under cgroup v2 the rules are an eBPF program
and the open is the only way to see them), and NVML's answer: `NVML_ERROR_UNKNOWN` (999,
nvidia-smi's "Failed to initialize NVML: Unknown Error").

## Why it matters
The nodes are visible but every open fails with "Operation not permitted": CUDA reports no
device. In a container that had its GPUs, the classic cause is the host's systemd reloading
its cgroups (`systemctl daemon-reload`, a package upgrade): it rewrites the container's device
rules from its own unit and drops the ones the NVIDIA runtime's hook added
(nvidia-container-toolkit issue 48, NVIDIA's troubleshooting guide). A container given
`-v /dev:/dev` or `--device` without the runtime's rules ends the same way.

## How to fix
Restart the container (it gets its rules again). For good, on the host: let the runtime
create the `/dev/char` links systemd needs (`sudo nvidia-ctk system create-dev-char-symlinks
--create-all`, and its udev rule), or hand GPUs over through CDI (`sudo nvidia-ctk cdi generate
--output=/etc/cdi/nvidia.yaml`, then `--device nvidia.com/gpu=all`), whose device rules systemd
keeps.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let p = &ctx.snap.platform;
    let Some(container) = &p.container else {
        return Vec::new();
    };
    if crate::views::container::gpus_reached(ctx) || p.wsl {
        return Vec::new();
    }
    let has_nodes = p.device_nodes.iter().any(|n| n == "/dev/nvidiactl");
    if !has_nodes {
        return Vec::new();
    }
    let access = container.gpu_access.as_ref();
    let cgroup_denies =
        access.and_then(|a| a.cgroup.allows_read(NVIDIA_MAJOR, NVIDIACTL_MINOR)) == Some(false);
    let open_refused = access.and_then(|a| a.nvidiactl_open) == Some(NodeOpen::NotPermitted);
    let nvml_unknown = ctx.snap.driver.nvml_init_error == Some(NVML_ERROR_UNKNOWN);
    if !(cgroup_denies
        || open_refused
        || (nvml_unknown && access.and_then(|a| a.nvidiactl_open) != Some(NodeOpen::Opened)))
    {
        return Vec::new();
    }
    let mut f = Finding::new(
        &RULE,
        format!(
            "This {} container's device cgroup denies the GPU nodes it has",
            container.runtime
        ),
    )
    .about(crate::Subject::Driver)
    .evidence(format!("device nodes: {}", p.device_nodes.join(" ")));
    if let Some(a) = access {
        match &a.cgroup {
            cudoctor_snapshot::CgroupDevices::V1 { rules } if cgroup_denies => {
                f = f.evidence(format!(
                    "cgroup v1 devices.list has no rule for c {NVIDIA_MAJOR}:{NVIDIACTL_MINOR} (/dev/nvidiactl): {}",
                    rules.join(", ")
                ));
            }
            cudoctor_snapshot::CgroupDevices::V1 { rules } => {
                // A list that allows all (`a *:* rwm`) is shown without its exceptions: a
                // `devices.deny` of the NVIDIA major is not in it, the open tells.
                f = f.evidence(format!(
                    "cgroup v1 devices.list reads {}, but the kernel does not list the exceptions of an allow-all list: the open below is what the rules do",
                    rules.join(", ")
                ));
            }
            cudoctor_snapshot::CgroupDevices::V2 => {
                f = f.evidence("cgroup v2: the device rules are an eBPF program, not readable; judged by opening /dev/nvidiactl");
            }
            cudoctor_snapshot::CgroupDevices::Unknown => {}
        }
        if open_refused {
            f = f.evidence("open(\"/dev/nvidiactl\", O_RDONLY|O_NONBLOCK): Operation not permitted (EPERM, the device cgroup)");
        }
    }
    if nvml_unknown {
        f = f.evidence("nvmlInit_v2 returned NVML_ERROR_UNKNOWN (999): nvidia-smi says \"Failed to initialize NVML: Unknown Error\"");
    }
    let had_gpus = nvml_unknown
        || container
            .gpu_access
            .as_ref()
            .is_some_and(|a| !a.driver_mounts.is_empty());
    f = f.cause(if had_gpus {
        "The runtime mounted the driver into this container, but its device cgroup no longer lets it open the GPU: the host's systemd reloaded its cgroups (systemctl daemon-reload, a package upgrade) and dropped the device rules the NVIDIA runtime's hook had added."
    } else {
        "The /dev/nvidia* nodes are in the container (a /dev mount or --device) but its device cgroup lets it open none of them: the NVIDIA runtime, which adds those rules, did not start it."
    });
    f = f.prose("restart the container: it gets its device rules again");
    if had_gpus {
        f = f
            .prose("for good, on the host: sudo nvidia-ctk system create-dev-char-symlinks --create-all (the /dev/char links systemd needs to keep the rules)")
            .prose("or hand the GPUs over through CDI, whose rules systemd keeps: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml, then start with --device nvidia.com/gpu=all");
    } else {
        f = f.prose(crate::views::container::start_with_gpus(ctx, container));
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{CgroupDevices, ContainerFacts, ContainerGpuAccess};

    fn container(access: ContainerGpuAccess) -> cudoctor_snapshot::Snapshot {
        let mut s = machine(Some(("580.159.04", "13.0")), &[]);
        s.platform.device_nodes = vec![
            "/dev/nvidia0".into(),
            "/dev/nvidiactl".into(),
            "/dev/nvidia-uvm".into(),
        ];
        s.platform.libcuda_paths = vec!["/usr/lib/x86_64-linux-gnu/libcuda.so.1".into()];
        s.platform.container = Some(ContainerFacts {
            runtime: "docker".into(),
            evidence: vec!["/.dockerenv exists".into()],
            gpu_access: Some(access),
        });
        s
    }

    #[test]
    fn v1_rules_without_the_nvidia_major_are_a_denial() {
        let s = container(ContainerGpuAccess {
            cgroup: CgroupDevices::V1 {
                rules: vec!["c 1:3 rwm".into(), "c 136:* rwm".into()],
            },
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].evidence[1].contains("no rule for c 195:255"));
        assert!(f[0]
            .fix
            .iter()
            .any(|x| x.to_string().contains("--gpus all")));
    }

    #[test]
    fn nvml_unknown_error_after_a_cgroup_reload_on_v2() {
        let mut s = container(ContainerGpuAccess {
            cgroup: CgroupDevices::V2,
            nvidiactl_open: Some(NodeOpen::NotPermitted),
            driver_mounts: vec!["/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04".into()],
            ..Default::default()
        });
        s.driver.nvml_init_error = Some(999);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].cause.contains("systemd reloaded"), "{}", f[0].cause);
        assert!(f[0]
            .fix
            .iter()
            .any(|x| x.to_string().contains("create-dev-char-symlinks")));
    }

    #[test]
    fn an_allow_all_list_with_a_denied_major_is_told_by_the_open() {
        // cgroup v1 shows `a *:* rwm` for a cgroup that allows all but `c 195:* rwm` (its
        // devices.deny): the open's EPERM is the evidence, not the list.
        let s = container(ContainerGpuAccess {
            cgroup: CgroupDevices::V1 {
                rules: vec!["a *:* rwm".into()],
            },
            nvidiactl_open: Some(NodeOpen::NotPermitted),
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(
            !f[0].evidence[1].contains("no rule"),
            "{}",
            f[0].evidence[1]
        );
        assert!(
            f[0].evidence[1].contains("exceptions"),
            "{}",
            f[0].evidence[1]
        );
        assert!(f[0].evidence[2].contains("Operation not permitted"));
    }

    #[test]
    fn allowed_nodes_or_listed_gpus_are_fine() {
        let s = container(ContainerGpuAccess {
            cgroup: CgroupDevices::V1 {
                rules: vec!["c 195:* rwm".into()],
            },
            nvidiactl_open: Some(NodeOpen::Opened),
            ..Default::default()
        });
        assert!(run(&RULE, &s).is_empty());
        let mut s = container(ContainerGpuAccess {
            cgroup: CgroupDevices::V1 { rules: vec![] },
            ..Default::default()
        });
        s.driver.gpus = h200().driver.gpus;
        assert!(run(&RULE, &s).is_empty());
        assert!(run(&RULE, &h200()).is_empty());
    }
}
