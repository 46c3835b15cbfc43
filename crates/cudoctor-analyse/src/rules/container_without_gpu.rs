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
    if !ctx.snap.driver.gpus.is_empty() || p.wsl {
        return Vec::new();
    }
    let visible = ctx.var("NVIDIA_VISIBLE_DEVICES");
    let hidden = matches!(visible, Some("void") | Some("none"));
    let missing_nodes = !p.device_nodes.iter().any(|n| {
        n == "/dev/nvidiactl" || n.trim_start_matches("/dev/nvidia").parse::<u32>().is_ok()
    });
    let missing_lib = p.libcuda_paths.is_empty();
    if !(hidden
        || (missing_nodes && ctx.expects_gpu())
        || (missing_lib && ctx.snap.driver.driver_found()))
    {
        return Vec::new();
    }
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
    let rt = container.runtime.as_str();
    vec![f
        .cause(if hidden {
            "NVIDIA_VISIBLE_DEVICES tells the NVIDIA runtime to inject no GPU."
        } else {
            "The container runtime did not inject the GPU devices and driver libraries: it was started without GPU access or without the NVIDIA Container Toolkit."
        })
        .prose(match rt {
            "kubernetes" => "Request GPUs in the pod spec: resources.limits: {nvidia.com/gpu: 1} (needs the NVIDIA device plugin)",
            "podman" => "podman run --device nvidia.com/gpu=all ...   (CDI spec from: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)",
            _ => "docker run --gpus all ...   (host needs the NVIDIA Container Toolkit: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker)",
        })]
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
}
