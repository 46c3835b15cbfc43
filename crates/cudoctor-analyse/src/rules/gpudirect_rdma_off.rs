use cudoctor_snapshot::KernelModuleFlavour;

use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU012",
    name: "gpudirect-rdma-off",
    layer: Layer::Multigpu,
    severity: Severity::Warning,
    summary: "Active InfiniBand/RoCE ports next to GPUs, but nvidia_peermem (GPUDirect RDMA) is not loaded",
    docs: r#"## What it checks
On a machine with GPUs and an active InfiniBand/RoCE port (`/sys/class/infiniband`), whether
`nvidia_peermem` (or the older `nv_peer_mem`) is in `/proc/modules`.

## Why it matters
With GPUDirect RDMA the network card reads and writes GPU memory directly; without it NCCL
stages every inter-node transfer through host memory, which costs bandwidth and latency. NCCL
can also reach GPU memory through DMA-BUF (open kernel modules, a recent kernel and NCCL), in
which case the module is not needed: on open kernel modules this is reported as info, to check
with `NCCL_DEBUG=INFO` ("GPU Direct RDMA Enabled" / "DMABUF").

## How to fix
`sudo modprobe nvidia-peermem` (shipped with the driver; it needs the MLNX_OFED/rdma-core
stack loaded first), and add it to `/etc/modules-load.d/` to load it at boot.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(net) = ctx.snap.multigpu.as_ref().and_then(|m| m.network.as_ref()) else {
        return Vec::new();
    };
    if net.peermem_loaded != Some(false) || ctx.snap.driver.gpus.is_empty() {
        return Vec::new();
    }
    let active: Vec<String> = net
        .ib_devices
        .iter()
        .flat_map(|d| {
            d.ports
                .iter()
                .filter(|p| p.active())
                .map(move |p| format!("{}/{} ({})", d.name, p.port, p.rate))
        })
        .collect();
    if active.is_empty() {
        return Vec::new();
    }
    let open = ctx
        .snap
        .driver
        .kernel_module
        .as_ref()
        .is_some_and(|k| k.flavour == KernelModuleFlavour::Open);
    let mut f = Finding::new(
        &RULE,
        "GPUDirect RDMA's kernel module (nvidia_peermem) is not loaded next to active InfiniBand/RoCE ports",
    )
    .evidence(format!("active ports: {}", active.join(", ")))
    .evidence("nvidia_peermem / nv_peer_mem: not in /proc/modules")
    .cause("Without GPUDirect RDMA, NCCL copies every inter-node message through host memory.")
    .shell("sudo modprobe nvidia-peermem")
    .shell("NCCL_DEBUG=INFO torchrun ... 2>&1 | grep -i -E 'GDR|DMABUF|GPU Direct'   # what NCCL really uses");
    if open {
        f = f
            .severity(Severity::Info)
            .confidence(Confidence::Unsure)
            .evidence(
                "open kernel modules: NCCL may use DMA-BUF instead, which needs no nvidia_peermem",
            );
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, run};
    use cudoctor_snapshot::{IbDevice, IbPort, KernelModule, MultiGpuFacts, NetworkFacts};

    #[test]
    fn only_with_active_ports_and_gpus() {
        let mut s = h200();
        let mut net = NetworkFacts {
            ib_devices: vec![IbDevice {
                name: "mlx5_0".into(),
                ports: vec![IbPort {
                    port: 1,
                    state: "4: ACTIVE".into(),
                    rate: "400 Gb/sec (4X NDR)".into(),
                    ..Default::default()
                }],
            }],
            peermem_loaded: Some(true),
            ..Default::default()
        };
        s.multigpu = Some(MultiGpuFacts {
            network: Some(net.clone()),
            ..Default::default()
        });
        assert!(run(&RULE, &s).is_empty());
        net.peermem_loaded = Some(false);
        s.multigpu.as_mut().unwrap().network = Some(net);
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Warning);
        s.driver.kernel_module = Some(KernelModule {
            flavour: KernelModuleFlavour::Open,
            banner: String::new(),
        });
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Info);
        s.driver.gpus.clear();
        assert!(run(&RULE, &s).is_empty());
    }
}
