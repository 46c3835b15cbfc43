use super::deep_support::truthy;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU013",
    name: "nccl-transport-forced-slow",
    layer: Layer::Multigpu,
    severity: Severity::Warning,
    summary: "NCCL_SHM_DISABLE or NCCL_P2P_DISABLE forces a slower path between GPUs (cases MGPU002 leaves out)",
    docs: r#"## What it checks
`NCCL_SHM_DISABLE=1` on a machine with several GPUs, and `NCCL_P2P_DISABLE=1` /
`NCCL_P2P_LEVEL=LOC` where NVML reports PCIe peer-to-peer working between some pair and no NVLink.
Switching P2P off on NVLink GPUs is MGPU002 (which also mentions SHM then), so this rule stays
silent in that case.

## Why it matters
Within a node NCCL moves data by P2P (NVLink or PCIe), else through shared host memory (SHM),
else through the network transport. Disabling SHM where P2P is not available, or P2P where the
PCIe switch supports it, pushes every collective one step down: lower bandwidth, no error.
The articles recommend these variables only as a test of whether P2P/SHM is the problem.

## How to fix
Unset the variables (look in job scripts, shell start-up files, container images and
`/etc/nccl.conf`/`~/.nccl.conf`), then measure again (`cudoctor check --deep` runs an
all-reduce).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let gpus = ctx.snap.driver.gpus.len();
    if gpus < 2 {
        return Vec::new();
    }
    let topology = ctx.snap.multigpu.as_ref().and_then(|m| m.topology.as_ref());
    let nvlink = topology.is_some_and(|t| t.any_nvlink());
    let p2p_off = ctx
        .var("NCCL_P2P_DISABLE")
        .filter(|v| truthy(v))
        .map(|v| ("NCCL_P2P_DISABLE", v))
        .or_else(|| {
            ctx.var("NCCL_P2P_LEVEL")
                .filter(|v| v.trim().eq_ignore_ascii_case("LOC") || v.trim() == "0")
                .map(|v| ("NCCL_P2P_LEVEL", v))
        });
    // MGPU002's case: P2P off on NVLink, with SHM mentioned there.
    if nvlink && p2p_off.is_some() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(v) = ctx.var("NCCL_SHM_DISABLE").filter(|v| truthy(v)) {
        let mut f = Finding::new(
            &RULE,
            format!(
                "NCCL_SHM_DISABLE={v} takes shared memory away from NCCL on a {gpus}-GPU machine"
            ),
        )
        .evidence(format!("NCCL_SHM_DISABLE={v}"))
        .evidence(format!("{gpus} GPUs (driver)"));
        if let Some((k, pv)) = p2p_off {
            f = f.evidence(format!(
                "{k}={pv}: with P2P also off, GPUs of this node talk through the network transport"
            ));
        }
        out.push(
            f.cause("Between GPUs that cannot use P2P, NCCL's next path is shared host memory; without it, intra-node traffic goes through sockets or the NIC.")
                .shell("unset NCCL_SHM_DISABLE"),
        );
    }
    if let (Some((k, v)), Some(t)) = (p2p_off, topology) {
        let working: Vec<String> = t
            .pairs
            .iter()
            .filter(|p| p.p2p_ok() == Some(true))
            .map(|p| format!("GPU {}-GPU {} {}", p.a, p.b, p.label()))
            .collect();
        if !working.is_empty() {
            out.push(
                Finding::new(&RULE, format!("{k}={v} switches off PCIe peer-to-peer that works between these GPUs"))
                    .evidence(format!("{k}={v}"))
                    .evidence(format!("P2P supported (NVML): {}", working.join(", ")))
                    .cause("NCCL will stage GPU-to-GPU copies through host memory instead of PCIe peer-to-peer.")
                    .shell(format!("unset {k}")),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::h200_deep;
    use crate::testing::run;

    #[test]
    fn shm_off_and_pcie_p2p_off_but_not_mgpu002s_case() {
        let mut s = h200_deep();
        s.env.insert("NCCL_P2P_DISABLE".into(), "1".into());
        s.env.insert("NCCL_SHM_DISABLE".into(), "1".into());
        assert!(run(&RULE, &s).is_empty(), "NVLink + P2P off is MGPU002's");
        s.env.remove("NCCL_P2P_DISABLE");
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.starts_with("NCCL_SHM_DISABLE=1"));
        // A PCIe machine whose pair supports P2P.
        let t = s.multigpu.as_mut().unwrap().topology.as_mut().unwrap();
        t.pairs[0].nvlinks = 0;
        t.pairs[0].p2p_nvlink = Some(cudoctor_snapshot::P2pStatus::NotSupported);
        s.env.remove("NCCL_SHM_DISABLE");
        s.env.insert("NCCL_P2P_LEVEL".into(), "LOC".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].title.contains("PCIe peer-to-peer"));
    }
}
