use cudoctor_snapshot::{LinkClass, PathLevel};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU004",
    name: "gpus-without-p2p",
    layer: Layer::Multigpu,
    severity: Severity::Info,
    summary:
        "Some GPU pairs have no peer-to-peer path (NVML: P2P not supported, or across CPU sockets)",
    docs: r#"## What it checks
For each pair of GPUs, NVML's P2P status for reads and writes (`nvmlDeviceGetP2PStatus`, what
`nvidia-smi topo -p2p r` shows) and their closest common PCIe ancestor
(`nvmlDeviceGetTopologyCommonAncestor`: PIX, PXB, PHB, NODE, SYS), for pairs without NVLink.

## Why it matters
Without P2P, NCCL and `tensor.to("cuda:1")` copy through host memory: multi-GPU jobs spanning
those GPUs are slower. Pairs on different CPU sockets (SYS) are the usual case; "disabled by a
driver registry key" or "chipset not supported" on one socket points at BIOS or driver settings
(PCIe ACS, IOMMU).

## How to fix
Nothing is broken. Place jobs on GPUs that share a PCIe switch or NVLink (`nvidia-smi topo -m`),
e.g. with CUDA_VISIBLE_DEVICES. Where P2P is blocked within one socket, check the BIOS for ACS
and IOMMU settings.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(t) = ctx.snap.multigpu.as_ref().and_then(|m| m.topology.as_ref()) else {
        return Vec::new();
    };
    let blocked: Vec<String> = t
        .pairs
        .iter()
        .filter(|p| p.link_class() != LinkClass::NvLink)
        .filter(|p| {
            p.p2p_ok() == Some(false)
                || (p.p2p_ok().is_none() && p.level == Some(PathLevel::System))
        })
        .map(|p| {
            let why = p
                .p2p_read
                .filter(|s| *s != cudoctor_snapshot::P2pStatus::Ok)
                .map(|s| s.describe())
                .unwrap_or("no P2P status");
            format!("GPU {} - GPU {}: {} ({why})", p.a, p.b, p.label())
        })
        .collect();
    if blocked.is_empty() {
        return Vec::new();
    }
    let mut f = Finding::new(
        &RULE,
        format!("{} GPU pair(s) have no peer-to-peer path", blocked.len()),
    )
    .cause("Copies and collectives between these GPUs go through host memory.")
    .shell("nvidia-smi topo -m  # place a job's GPUs under one switch or NVLink");
    for b in blocked.iter().take(16) {
        f = f.evidence(b.clone());
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;
    use cudoctor_snapshot::P2pStatus;

    #[test]
    fn nvlink_pairs_pass_and_sys_pairs_are_noted() {
        let mut s = h200_deep();
        assert!(run(&RULE, &s).is_empty());
        let t = s.multigpu.as_mut().unwrap().topology.as_mut().unwrap();
        let p = &mut t.pairs[0];
        p.nvlinks = 0;
        p.p2p_nvlink = Some(P2pStatus::NotSupported);
        p.p2p_read = Some(P2pStatus::TopologyNotSupported);
        p.p2p_write = Some(P2pStatus::TopologyNotSupported);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].evidence[0],
            "GPU 0 - GPU 1: SYS (topology not supported)"
        );
    }
}
