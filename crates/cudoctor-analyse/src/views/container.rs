//! The container cudoctor runs in, as the platform rules read it: whether it reached its GPUs,
//! and how to start it with them.

use cudoctor_snapshot::ContainerFacts;

use crate::Context;

/// The GPUs were reached: listed by a source that opens them (NVML, nvidia-smi). The
/// kernel module's /proc/driver/nvidia/gpus lists the host's GPUs in a container that cannot
/// open any of them, so a listing from there alone proves nothing here.
pub fn gpus_reached(ctx: &Context) -> bool {
    ctx.snap
        .driver
        .gpus
        .iter()
        .any(|g| !g.source.starts_with("/proc/driver/nvidia"))
}

/// The fix that gives this container its GPUs, for the runtime and mode in use.
pub fn start_with_gpus(ctx: &Context, container: &ContainerFacts) -> &'static str {
    match (container.runtime.as_str(), cdi_mode(ctx, container)) {
        ("kubernetes", _) => "Request GPUs in the pod spec: resources.limits: {nvidia.com/gpu: 1} (needs the NVIDIA device plugin or GPU operator on the node)",
        ("podman", _) => "podman run --device nvidia.com/gpu=all ...   (CDI spec from: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)",
        (_, true) => "docker run --device nvidia.com/gpu=all ...   (CDI; the spec from: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)",
        _ => "docker run --gpus all ...   (host needs the NVIDIA Container Toolkit: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker)",
    }
}

/// How the runtime hands GPUs to this container: the Container Device Interface (specs seen,
/// a CDI device name in NVIDIA_VISIBLE_DEVICES, or Podman, which knows only CDI) or the
/// NVIDIA runtime's legacy hook.
pub fn cdi_mode(ctx: &Context, container: &ContainerFacts) -> bool {
    container.runtime == "podman"
        || ctx
            .var("NVIDIA_VISIBLE_DEVICES")
            .is_some_and(|v| v.contains("nvidia.com/gpu="))
        || container
            .gpu_access
            .as_ref()
            .is_some_and(|a| !a.cdi_specs.is_empty())
}
