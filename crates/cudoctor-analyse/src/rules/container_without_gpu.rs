use crate::views::container::{cdi_mode, gpus_reached, start_with_gpus};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT001",
    name: "container-without-gpu",
    layer: Layer::Platform,
    severity: Severity::Error,
    summary: "Running in a container that was given no GPU",
    docs: r#"## What it checks
Inside a container (/.dockerenv, /run/.containerenv, cgroup or environment markers): whether the
GPU device nodes (/dev/nvidia*) and the driver's libcuda were passed in.

## Why it matters
A container sees the GPU only when the runtime injects the device nodes and the driver's
user-space libraries (the NVIDIA Container Toolkit does both). Started without `--gpus`, torch
reports "Found no NVIDIA driver on your system" although the host is fine. NVIDIA_VISIBLE_DEVICES
set to `void` or `none` has the same effect.

The causes are told apart: no device nodes (started without GPUs), the nodes without the
driver's libraries (a hand-made `--device`, or a stale CDI spec), NVIDIA_VISIBLE_DEVICES set to
`void`/`none` (in Kubernetes: the pod requested no `nvidia.com/gpu`); the fix is the one of the
runtime in use, the NVIDIA runtime's hook (legacy) or CDI (specs in /etc/cdi or /var/run/cdi, a
CDI name in NVIDIA_VISIBLE_DEVICES, Podman). Nodes the device cgroup denies are PLT004.
The GPU's nodes show that the host has its driver loaded (only it makes them): with the nodes
and no libcuda this is said even where no kernel module is seen (a `--root` tree of a
container's files has no /proc), and "no driver" (DRV001) follows from it.

## How to fix
Install the NVIDIA Container Toolkit on the host and start the container with `--gpus all`
(Docker), `--device nvidia.com/gpu=all` (Podman with CDI), or a `nvidia.com/gpu` resource limit
(Kubernetes).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let p = &ctx.snap.platform;
    let Some(container) = &p.container else {
        return Vec::new();
    };
    // The driver listing GPUs proves the container reaches them, whatever the markers say.
    // Under WSL the GPU node is /dev/dxg and libcuda lives in /usr/lib/wsl/lib: the /dev/nvidia*
    // and libcuda checks below do not apply there.
    if gpus_reached(ctx) || p.wsl {
        return Vec::new();
    }
    let visible = ctx.var("NVIDIA_VISIBLE_DEVICES");
    let hidden = matches!(visible, Some("void") | Some("none"));
    let missing_nodes = !p.device_nodes.iter().any(|n| {
        n == "/dev/nvidiactl" || n.trim_start_matches("/dev/nvidia").parse::<u32>().is_ok()
    });
    let missing_lib = p.libcuda_paths.is_empty();
    // The driver's libraries missing count where a driver is known to be there: its kernel
    // module seen, or the GPU's nodes in the container (only a host with the driver loaded
    // has them to pass in; a --root tree of a container's files has no /proc to show it).
    if !(hidden
        || (missing_nodes && ctx.expects_gpu())
        || (missing_lib && (ctx.snap.driver.driver_found() || !missing_nodes)))
    {
        return Vec::new();
    }
    let cdi = cdi_mode(ctx, container);
    let access = container.gpu_access.as_ref();
    let mut f = Finding::new(
        &RULE,
        format!("This {} container has no GPU access", container.runtime),
    )
    .about(crate::Subject::Driver)
    .evidence(format!("container: {}", container.evidence.join("; ")))
    .evidence(if missing_nodes {
        "no /dev/nvidia* device nodes".to_string()
    } else {
        format!("device nodes: {}", p.device_nodes.join(" "))
    })
    .evidence(if missing_lib {
        "no libcuda.so in the driver library directories".to_string()
    } else {
        format!("libcuda: {}", p.libcuda_paths.join(" "))
    });
    if let Some(v) = visible {
        f = f.evidence(format!("NVIDIA_VISIBLE_DEVICES={v}"));
    }
    if let Some(a) = access {
        f = f.evidence(format!(
            "GPU hand-over: {}{}",
            if cdi {
                "CDI"
            } else {
                "the NVIDIA runtime's hook (legacy mode)"
            },
            if a.cdi_specs.is_empty() {
                String::new()
            } else {
                format!("; CDI specs: {}", a.cdi_specs.join(" "))
            }
        ));
        f = f.evidence(if a.driver_mounts.is_empty() {
            "the runtime mounted no driver file into the container (/proc/self/mountinfo)"
                .to_string()
        } else {
            format!("driver files mounted: {}", a.driver_mounts.join(" "))
        });
    }
    let rt = container.runtime.as_str();
    let kubernetes = rt == "kubernetes" || ctx.var("KUBERNETES_SERVICE_HOST").is_some();
    let (title, cause, fix): (String, &str, String) = if hidden && kubernetes {
        (
            "This pod requested no GPU: NVIDIA_VISIBLE_DEVICES hides them".into(),
            "The pod's spec asks for no nvidia.com/gpu resource, so the device plugin gave it none and NVIDIA_VISIBLE_DEVICES tells the runtime to inject no GPU.",
            start_with_gpus(ctx, container).into(),
        )
    } else if hidden {
        (
            format!("This {rt} container has no GPU access: NVIDIA_VISIBLE_DEVICES hides them"),
            "NVIDIA_VISIBLE_DEVICES tells the NVIDIA runtime to inject no GPU.",
            start_with_gpus(ctx, container).into(),
        )
    } else if missing_nodes {
        (
            format!("This {rt} container was started without its GPUs: no /dev/nvidia* device nodes"),
            "The container runtime did not inject the GPU devices and driver libraries: it was started without GPU access or without the NVIDIA Container Toolkit.",
            start_with_gpus(ctx, container).into(),
        )
    } else if cdi {
        (
            format!("The GPU's device nodes reached this {rt} container, its driver libraries did not"),
            "The devices were handed over through CDI but the spec mounts no libcuda: a spec generated before the driver was installed or upgraded names libraries that are gone.",
            "on the host: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml, then start the container again".into(),
        )
    } else {
        (
            format!("The GPU's device nodes reached this {rt} container, its driver libraries did not"),
            "/dev/nvidia* was passed in by hand (--device or a /dev mount) without the NVIDIA runtime, which is what mounts the driver's user-space libraries (libcuda, libnvidia-ml).",
            start_with_gpus(ctx, container).into(),
        )
    };
    f.title = title;
    vec![f.cause(cause).prose(fix)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::ContainerFacts;

    fn in_docker(mut s: cudoctor_snapshot::Snapshot) -> cudoctor_snapshot::Snapshot {
        s.platform.container = Some(ContainerFacts {
            runtime: "docker".into(),
            evidence: vec!["/.dockerenv exists".into()],
            ..Default::default()
        });
        s
    }

    #[test]
    fn a_container_with_cuda_torch_and_no_devices() {
        let mut s = in_docker(machine(None, &[]));
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix[0].contains("--gpus all"));
    }

    #[test]
    fn a_container_with_gpus_is_fine() {
        let mut s = in_docker(h200());
        s.platform.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
        s.platform.libcuda_paths = vec!["/usr/lib/x86_64-linux-gnu/libcuda.so.1".into()];
        assert!(run(&RULE, &s).is_empty());
        assert!(run(&RULE, &machine(None, &[])).is_empty());
    }

    #[test]
    fn gpus_listed_by_the_driver_are_never_a_finding() {
        // No /dev/nvidia* recorded and no libcuda path found, yet the driver lists the GPUs.
        let s = in_docker(h200());
        assert!(s.platform.device_nodes.is_empty());
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn wsl_has_dxg_instead_of_nvidia_nodes() {
        let mut s = in_docker(machine(None, &[]));
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        assert_eq!(run(&RULE, &s).len(), 1);
        s.platform.wsl = true;
        s.platform.device_nodes = vec!["/dev/dxg".into()];
        assert!(run(&RULE, &s).is_empty());
    }

    fn nodes_without_libraries(cdi_specs: Vec<String>) -> cudoctor_snapshot::Snapshot {
        let mut s = in_docker(machine(Some(("580.159.04", "13.0")), &[]));
        s.platform.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
        if let Some(c) = &mut s.platform.container {
            c.gpu_access = Some(cudoctor_snapshot::ContainerGpuAccess {
                cdi_specs,
                ..Default::default()
            });
        }
        s
    }

    #[test]
    fn libraries_not_injected_are_told_by_the_mode_in_use() {
        let legacy = run(&RULE, &nodes_without_libraries(vec![]));
        assert_eq!(legacy.len(), 1);
        assert!(
            legacy[0].title.contains("driver libraries did not"),
            "{}",
            legacy[0].title
        );
        assert!(legacy[0].cause.contains("by hand"));
        assert!(legacy[0].fix[0].contains("--gpus all"));
        let cdi = run(
            &RULE,
            &nodes_without_libraries(vec!["/etc/cdi/nvidia.yaml".into()]),
        );
        assert!(cdi[0].cause.contains("CDI"));
        assert!(cdi[0].fix[0].contains("nvidia-ctk cdi generate"));
        assert!(cdi[0]
            .evidence
            .iter()
            .any(|e| e.contains("GPU hand-over: CDI")));
    }

    #[test]
    fn nodes_without_libraries_need_no_kernel_module_seen() {
        // A --root tree of a container's files: no /proc, so no driver known at all; the
        // nodes alone show the host has one.
        let mut s = in_docker(machine(None, &[]));
        s.platform.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
        assert!(!s.driver.driver_found());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title.contains("driver libraries did not"),
            "{}",
            f[0].title
        );
        // A healthy container tree: its injected libcuda is there.
        s.platform.libcuda_paths = vec!["/usr/lib/x86_64-linux-gnu/libcuda.so.1".into()];
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn a_pod_that_requested_no_gpu() {
        let mut s = machine(None, &[]);
        s.platform.container = Some(ContainerFacts {
            runtime: "kubernetes".into(),
            evidence: vec!["KUBERNETES_SERVICE_HOST is set".into()],
            ..Default::default()
        });
        s.env
            .insert("KUBERNETES_SERVICE_HOST".into(), "10.96.0.1".into());
        s.env.insert("NVIDIA_VISIBLE_DEVICES".into(), "void".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("pod requested no GPU"));
        assert!(f[0].fix[0].contains("nvidia.com/gpu"));
    }

    #[test]
    fn no_nodes_in_a_cdi_docker_names_the_cdi_device() {
        let mut s = in_docker(machine(None, &[]));
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        s.env
            .insert("NVIDIA_VISIBLE_DEVICES".into(), "nvidia.com/gpu=all".into());
        let f = run(&RULE, &s);
        assert!(f[0].title.contains("no /dev/nvidia*"));
        assert!(f[0].fix[0].contains("--device nvidia.com/gpu=all"));
    }
}
