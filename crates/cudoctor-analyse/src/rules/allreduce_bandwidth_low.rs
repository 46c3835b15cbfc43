use cudoctor_snapshot::{LinkClass, Topology};

use super::deep_support::{probes, truthy, ProbeView};
use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

/// Conservative floor per NVLink link, GB/s of all-reduce bus bandwidth. Every NVLink generation
/// from 2 (V100) to 4 (H100/H200) carries 25 GB/s per link and direction (NVIDIA: 300 GB/s over 6
/// links, 600 over 12, 900 over 18, both directions); NVLink 5 carries twice that. 10 GB/s is 40%
/// of the slowest; the real 2xH200 machine measured 327 GB/s over 18 links (18 GB/s per link).
const NVLINK_FLOOR_PER_LINK: f64 = 10.0;
/// Conservative floor over PCIe: a PCIe 3.0 x16 link carries about 16 GB/s per direction; NCCL
/// reaches well over a third of it even through host memory.
const PCIE_FLOOR: f64 = 5.0;
/// Smaller messages measure latency, not bandwidth.
const MIN_SIZE_MIB: u64 = 64;

pub static RULE: Rule = Rule {
    code: "MGPU001",
    name: "allreduce-bandwidth-low",
    layer: Layer::Multigpu,
    severity: Severity::Warning,
    summary: "NCCL all-reduce bus bandwidth is far below what the GPUs' links allow",
    docs: r#"## What it checks
With `--deep` on 2 or more GPUs, the probe all-reduces 1, 64 and 1024 MiB across every visible
GPU (one process each, NCCL) and computes the bus bandwidth as nccl-tests does
(busbw = bytes / time * 2(n-1)/n). The largest message of at least 64 MiB is compared with a
conservative floor for the link class from NVML's topology: 10 GB/s per NVLink link of the
least-connected GPU, 5 GB/s over PCIe. The floors are estimates, deliberately low: NVLink 2-4
carry 25 GB/s per link and direction, and the real 2xH200 machine (NV18) measured 327 GB/s.

## Why it matters
Data-parallel training spends much of each step in all-reduce. Bandwidth a tenth of the link's
means NVLink is not used (P2P off, NCCL going through host memory or sockets), and the job runs
far slower than the hardware allows, with no error.

## How to fix
Run once with `NCCL_DEBUG=INFO` and read which transport each channel uses ("via P2P/IPC" or
"P2P/CUMEM" is NVLink or PCIe peer-to-peer; "via SHM" or "NET/Socket" is the slow path). Unset
NCCL_P2P_DISABLE / NCCL_P2P_LEVEL=LOC; check that no other job shares the GPUs; on PCIe systems,
PCIe ACS or an IOMMU can block peer-to-peer (see `nvidia-smi topo -p2p r`).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let topology = ctx.snap.multigpu.as_ref().and_then(|m| m.topology.as_ref());
    probes(ctx)
        .into_iter()
        .filter_map(|p| judge(ctx, p, topology))
        .collect()
}

/// The floor for the GPUs' links and how it was reached. `None` when the topology is unknown.
pub fn expected_floor(t: &Topology) -> Option<(f64, String)> {
    if t.pairs.is_empty() {
        return None;
    }
    let all_nvlink = t.pairs.iter().all(|p| p.link_class() == LinkClass::NvLink);
    if all_nvlink {
        let links = t.gpus.iter().map(|g| g.active_nvlinks()).min().unwrap_or(0);
        if links > 0 {
            return Some((
                NVLINK_FLOOR_PER_LINK * links as f64,
                format!("NVLink, {links} active links per GPU: floor {NVLINK_FLOOR_PER_LINK} GB/s per link"),
            ));
        }
        // NVLink through a switch whose links NVML did not list: use one link's floor.
        return Some((
            NVLINK_FLOOR_PER_LINK,
            "NVLink (link count unknown): floor of one link".into(),
        ));
    }
    let worst = t
        .pairs
        .iter()
        .filter_map(|p| match p.link_class() {
            LinkClass::Pcie(l) => Some(l.label()),
            _ => None,
        })
        .next_back()
        .unwrap_or("PCIe");
    Some((
        PCIE_FLOOR,
        format!("PCIe ({worst} between some GPUs): floor {PCIE_FLOOR} GB/s"),
    ))
}

fn judge(ctx: &Context, p: ProbeView, topology: Option<&Topology>) -> Option<Finding> {
    let ar = p.result.all_reduce.as_ref()?;
    if ar.error.is_some() || ar.world < 2 {
        return None;
    }
    let run = ar.largest().filter(|r| r.size_mib >= MIN_SIZE_MIB)?;
    let busbw = run.busbw_gbps?;
    let (floor, how) = expected_floor(topology?)?;
    if busbw >= floor {
        return None;
    }
    let mut f = Finding::new(
        &RULE,
        format!(
            "all-reduce over {} GPUs reaches {busbw:.1} GB/s, below the {floor:.0} GB/s the links should give at least",
            ar.world
        ),
    )
    .confidence(Confidence::Likely)
    .evidence(format!(
        "bus bandwidth {busbw:.1} GB/s at {} MiB ({} ms per all-reduce) in {}",
        run.size_mib,
        run.ms.map_or("?".into(), |m| format!("{m:.3}")),
        p.label()
    ))
    .evidence(format!("expected at least (an estimate): {how}"))
    .cause("NCCL is not using the fast path between the GPUs: peer-to-peer is off or blocked, so traffic goes through host memory or sockets, or other work shares the GPUs.");
    let env = |k: &str| ar.env.get(k).or_else(|| ctx.snap.env.get(k));
    if let Some(v) = env("NCCL_P2P_DISABLE").filter(|v| truthy(v)) {
        f = f
            .evidence(format!("NCCL_P2P_DISABLE={v}"))
            .shell("unset NCCL_P2P_DISABLE");
    }
    if let Some(v) = env("NCCL_P2P_LEVEL") {
        f = f.evidence(format!("NCCL_P2P_LEVEL={v}"));
    }
    Some(f.shell("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH cudoctor check --deep 2>&1 | grep -E 'via|Channel'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;

    #[test]
    fn the_real_nv18_bandwidth_passes() {
        let s = h200_deep();
        let (floor, _) =
            expected_floor(s.multigpu.as_ref().unwrap().topology.as_ref().unwrap()).unwrap();
        assert_eq!(floor, 180.0);
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn pcie_speed_on_nvlink_is_caught_with_the_variable() {
        let mut s = h200_deep();
        s.env.insert("NCCL_P2P_DISABLE".into(), "1".into());
        let ar = result_mut(&mut s).all_reduce.as_mut().unwrap();
        for r in &mut ar.results {
            r.busbw_gbps = Some(21.4);
        }
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("21.4 GB/s"), "{}", f[0].title);
        assert!(f[0].evidence.iter().any(|e| e.contains("estimate")));
        assert_eq!(f[0].fix[0], "unset NCCL_P2P_DISABLE");
    }

    #[test]
    fn no_topology_no_verdict() {
        let mut s = h200_deep();
        s.multigpu = None;
        let ar = result_mut(&mut s).all_reduce.as_mut().unwrap();
        ar.results[2].busbw_gbps = Some(1.0);
        assert!(run(&RULE, &s).is_empty());
    }
}
