use super::deep_support::{probes, truthy};
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU002",
    name: "p2p-disabled-by-env",
    layer: Layer::Multigpu,
    severity: Severity::Warning,
    summary: "NCCL peer-to-peer is switched off by the environment on NVLink-connected GPUs",
    docs: r#"## What it checks
NCCL variables in the environment (and in the `--deep` all-reduce's) that switch off the
peer-to-peer transport: `NCCL_P2P_DISABLE=1`, or `NCCL_P2P_LEVEL=LOC` (or its old integer form
0), while NVML shows GPUs joined by NVLink. `NCCL_SHM_DISABLE=1` on top is reported with them: with
both off, NCCL falls back to sockets.

## Why it matters
NCCL's documentation: NCCL_P2P_DISABLE "disables the peer to peer (P2P) transport, which uses
CUDA direct access between GPUs, using NVLink or PCI"; NCCL_P2P_LEVEL=LOC means "Never use P2P".
On NVLink machines these are usually left over from a workaround for a PCIe-only box, and they
cost most of the all-reduce bandwidth.

## How to fix
Unset the variables (look in shell start-up files, job scripts, container images and
`/etc/nccl.conf` or `~/.nccl.conf`, which NCCL also reads).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(topology) = ctx.snap.multigpu.as_ref().and_then(|m| m.topology.as_ref()) else {
        return Vec::new();
    };
    if !topology.any_nvlink() {
        return Vec::new();
    }
    // The machine's environment, and whatever the probe's workers ran with.
    let mut vars: Vec<(String, String)> = ctx
        .snap
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for p in probes(ctx) {
        if let Some(ar) = &p.result.all_reduce {
            for (k, v) in &ar.env {
                if !vars.iter().any(|(vk, _)| vk == k) {
                    vars.push((k.clone(), v.clone()));
                }
            }
        }
    }
    let get = |k: &str| vars.iter().find(|(vk, _)| vk == k).map(|(_, v)| v.as_str());
    let mut offending = Vec::new();
    if let Some(v) = get("NCCL_P2P_DISABLE").filter(|v| truthy(v)) {
        offending.push(("NCCL_P2P_DISABLE", v.to_string()));
    }
    if let Some(v) = get("NCCL_P2P_LEVEL").filter(|v| {
        let v = v.trim();
        v.eq_ignore_ascii_case("LOC") || v == "0"
    }) {
        offending.push(("NCCL_P2P_LEVEL", v.to_string()));
    }
    if offending.is_empty() {
        return Vec::new();
    }
    let nvlink_pairs: Vec<String> = topology
        .pairs
        .iter()
        .filter(|p| p.link_class() == cudoctor_snapshot::LinkClass::NvLink)
        .map(|p| format!("GPU {}-GPU {} {}", p.a, p.b, p.label()))
        .collect();
    let mut f = Finding::new(&RULE, "NCCL peer-to-peer is switched off although the GPUs are joined by NVLink")
        .evidence(format!("NVLink pairs (NVML): {}", nvlink_pairs.join(", ")))
        .cause("NCCL will not use NVLink between these GPUs: collectives go through host memory (or sockets), at a fraction of the link's bandwidth.");
    for (k, v) in &offending {
        f = f
            .evidence(format!("{k}={v}"))
            .shell(format!("unset {}", cudoctor_plan::quote(k)));
    }
    if let Some(v) = get("NCCL_SHM_DISABLE").filter(|v| truthy(v)) {
        f = f
            .evidence(format!(
                "NCCL_SHM_DISABLE={v}: with P2P also off, NCCL falls back to sockets"
            ))
            .shell("unset NCCL_SHM_DISABLE");
    }
    vec![f.shell("grep -rn NCCL_ ~/.bashrc ~/.profile /etc/nccl.conf ~/.nccl.conf 2>/dev/null")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::deep_support::fixtures::*;
    use crate::testing::run;

    #[test]
    fn variables_that_switch_p2p_off_on_nvlink() {
        let mut s = h200_deep();
        assert!(run(&RULE, &s).is_empty());
        s.env.insert("NCCL_P2P_LEVEL".into(), "NVL".into());
        assert!(run(&RULE, &s).is_empty(), "NVL keeps P2P on NVLink");
        s.env.insert("NCCL_P2P_DISABLE".into(), "1".into());
        s.env.insert("NCCL_SHM_DISABLE".into(), "1".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].evidence[0].contains("NV18"));
        assert!(f[0].fix.iter().any(|x| x == "unset NCCL_P2P_DISABLE"));
        assert!(f[0].fix.iter().any(|x| x == "unset NCCL_SHM_DISABLE"));
    }

    #[test]
    fn the_probes_own_environment_counts_and_pcie_is_left_alone() {
        let mut s = h200_deep();
        result_mut(&mut s)
            .all_reduce
            .as_mut()
            .unwrap()
            .env
            .insert("NCCL_P2P_LEVEL".into(), "LOC".into());
        assert_eq!(run(&RULE, &s).len(), 1);
        let t = s.multigpu.as_mut().unwrap().topology.as_mut().unwrap();
        t.pairs[0].nvlinks = 0;
        t.pairs[0].p2p_nvlink = Some(cudoctor_snapshot::P2pStatus::NotSupported);
        assert!(run(&RULE, &s).is_empty());
    }
}
