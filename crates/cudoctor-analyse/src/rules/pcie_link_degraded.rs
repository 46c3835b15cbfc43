use cudoctor_snapshot::health::clocks_event;
use cudoctor_snapshot::{GpuHealth, NvmlQuery};

use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "GPU003",
    name: "pcie-link-degraded",
    layer: Layer::Driver,
    severity: Severity::Warning,
    summary: "A GPU's PCIe link runs narrower than it can, or slower while the GPU is busy",
    docs: r#"## What it checks
Each GPU's PCIe link as NVML reports it: the width it trained to against the most the GPU and
its slot allow (nvmlDeviceGetCurrPcieLinkWidth / nvmlDeviceGetMaxPcieLinkWidth), and the
generation likewise. A GPU lowers its link generation when idle to save power, so the
generation is judged only while the GPU is busy (utilisation above zero and no Idle clock
event); at idle a lower generation is expected and not reported, and a narrower width is
information to check under load. The finding names DCGM's
failure reason: DCGM_FR_PCIE_WIDTH or DCGM_FR_PCIE_GENERATION.

## Why it matters
A x16 GPU trained at x8 or x4, or a Gen5 link running at Gen1 under load, moves host-to-device
data at a fraction of its speed: data loading, NCCL traffic through the host and
checkpointing slow down, and only on this node. The usual causes are a GPU or riser not seated
fully, a damaged cable or slot, or a BIOS setting that limits the slot.

## How to fix
Check the link under load with `nvidia-smi -q -d PCIE` (or `lspci -vv`, LnkSta against LnkCap);
reseat the GPU or its riser/cable, check the slot's BIOS setting (link speed "Auto"), and move
the GPU to another slot to tell the card from the board.
"#,
    check,
};

fn plausible(v: Option<u32>, max: u32) -> Option<u32> {
    v.filter(|&v| (1..=max).contains(&v))
}

/// Busy: NVML saw work in its last sample and does not report the Idle clock event.
fn busy(h: &GpuHealth) -> Option<bool> {
    let util = NvmlQuery::get(&h.utilization_gpu)?;
    let idle_event =
        NvmlQuery::get(&h.clocks_event_reasons).is_some_and(|m| m & clocks_event::GPU_IDLE != 0);
    Some(util > 0 && !idle_event)
}

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for g in ctx.gpus() {
        let Some(h) = &g.gpu.health else { continue };
        let p = &h.pcie;
        let width = plausible(NvmlQuery::get(&p.current_width), 32)
            .zip(plausible(NvmlQuery::get(&p.max_width), 32));
        let gen = plausible(NvmlQuery::get(&p.current_gen), 8)
            .zip(plausible(NvmlQuery::get(&p.max_gen), 8));
        let narrow = width.filter(|(cur, max)| cur < max);
        let slow_gen = gen.filter(|(cur, max)| cur < max);
        let busy = busy(h);
        let slow_under_load = slow_gen.filter(|_| busy == Some(true));
        if narrow.is_none() && slow_under_load.is_none() {
            continue;
        }
        let mut title = Vec::new();
        let mut f = Finding::new(&RULE, String::new()).about(Subject::Gpu { index: g.gpu.index });
        if let Some((cur, max)) = narrow {
            title.push(format!("x{cur} of x{max}"));
            f = f.evidence(format!("PCIe link width x{cur}, the GPU and slot allow x{max} (NVML; DCGM failure reason DCGM_FR_PCIE_WIDTH)"));
        }
        match (slow_gen, busy) {
            (Some((cur, max)), Some(true)) => {
                title.push(format!("Gen{cur} of Gen{max} while busy"));
                let util = NvmlQuery::get(&h.utilization_gpu).unwrap_or(0);
                f = f.evidence(format!("PCIe generation {cur} of {max} while the GPU is {util}% busy (NVML; DCGM failure reason DCGM_FR_PCIE_GENERATION)"));
            }
            (Some((cur, max)), _) => {
                f = f.evidence(format!(
                    "PCIe generation {cur} of {max}, not judged: at idle the link may train down"
                ));
            }
            (None, _) => {}
        }
        if slow_under_load.is_none() && busy != Some(true) {
            // Most GPUs keep their width at idle, a few consumer boards narrow it to save power:
            // worth knowing, not yet a fault until seen under load.
            f = f
                .severity(Severity::Info)
                .evidence("the GPU is idle: check the width again under load (a few boards narrow their link at idle)");
        }
        f.title = format!(
            "{}'s PCIe link runs below its capability: {}",
            g.label(),
            title.join(", ")
        );
        out.push(
            f.cause("The link trained below what the GPU and its slot support: a card or riser not seated fully, a damaged cable or slot, or a BIOS limit on the slot. Transfers between host and GPU run at a fraction of their speed on this node only.")
                .shell(format!("nvidia-smi -q -d PCIE -i {}", g.gpu.index))
                .prose("reseat the GPU (and its riser or cable), set the slot's link speed to Auto in the BIOS, or move the GPU to another slot to tell the card from the board"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn link(s: &mut cudoctor_snapshot::Snapshot, gen: u32, width: u32, util: u32, idle: bool) {
        let h = health_of(s, 0);
        h.pcie.current_gen = Some(NvmlQuery {
            rc: 0,
            value: Some(gen),
        });
        h.pcie.current_width = Some(NvmlQuery {
            rc: 0,
            value: Some(width),
        });
        h.utilization_gpu = Some(NvmlQuery {
            rc: 0,
            value: Some(util),
        });
        h.clocks_event_reasons = Some(NvmlQuery {
            rc: 0,
            value: Some(if idle { clocks_event::GPU_IDLE } else { 0 }),
        });
    }

    #[test]
    fn an_idle_gpu_with_its_link_trained_down_is_healthy() {
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = h200();
        // Gen1 at idle, full width: what an idle GPU does to save power.
        link(&mut s, 1, 16, 0, true);
        assert!(run(&RULE, &s).is_empty());
        // Busy in the last sample but the Idle event is on: still not judged.
        link(&mut s, 1, 16, 3, true);
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn a_low_generation_under_load_is_reported() {
        let mut s = h200();
        link(&mut s, 3, 16, 97, false);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].title.contains("Gen3 of Gen5 while busy"),
            "{}",
            f[0].title
        );
        assert!(f[0].evidence[0].contains("DCGM_FR_PCIE_GENERATION"));
    }

    #[test]
    fn a_narrow_link_is_reported_at_idle_too_without_judging_the_generation() {
        let mut s = h200();
        link(&mut s, 1, 8, 0, true);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("x8 of x16"));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("DCGM_FR_PCIE_WIDTH")));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("at idle the link may train down")));
        assert_eq!(f[0].severity, Severity::Info);
        link(&mut s, 5, 8, 90, false);
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Warning);
    }

    #[test]
    fn nonsense_readings_are_not_judged() {
        let mut s = h200();
        link(&mut s, 0, 0, 50, false);
        assert!(run(&RULE, &s).is_empty());
    }
}
