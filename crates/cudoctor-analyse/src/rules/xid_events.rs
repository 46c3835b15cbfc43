use std::collections::BTreeMap;

use cudoctor_kb::XidAction;
use cudoctor_snapshot::XidEvent;

use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "GPU004",
    name: "xid-events",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "The kernel log records NVIDIA Xid events on a GPU",
    docs: r#"## What it checks
The Xid events of the kernel log since boot (/dev/kmsg, read without blocking where this user
may read it), per GPU: what each means and the next action from NVIDIA's Xid catalogue
(cudoctor's `xid.toml`), with DCGM's failure reason (DCGM_FR_XID_ERROR, or the specific code
DCGM ties the Xid to, such as DCGM_FR_FALLEN_OFF_BUS for Xid 79).

An Xid the catalogue answers with a GPU reset, a reboot or a call to support (48, 62, 64, 74,
79, 95, 109, 119, 120, ...) is an error; one the catalogue answers by restarting the
application (13, 31, 43, 45, 94, ...) is an application's fault, reported as information: the
GPU stays healthy.

## Why it matters
An Xid is the driver's record of a GPU error. A node whose GPU fell off the bus, timed out its
GSP firmware or hit an uncontained memory error keeps failing jobs until it is reset, and
passes every software check meanwhile.

## How to fix
Follow the catalogue's action for the most urgent Xid: drain the GPU's jobs and reset it
(`nvidia-smi -r -i N`), reboot the node, or collect `nvidia-bug-report.sh` and contact support.
After the reset, check `nvidia-smi -q -d ECC,ROW_REMAPPER` and the kernel log again: a fault
that returns means the hardware.
"#,
    check,
};

fn urgent(a: Option<XidAction>) -> bool {
    XidAction::is_fault(a)
}

fn rank(a: Option<XidAction>) -> u8 {
    XidAction::urgency(a)
}

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(h) = &ctx.snap.health else {
        return Vec::new();
    };
    let mut by_gpu: BTreeMap<String, Vec<&XidEvent>> = BTreeMap::new();
    for e in &h.kernel_log.xids {
        by_gpu.entry(e.pci.clone()).or_default().push(e);
    }
    let gpus = ctx.gpus();
    let mut out = Vec::new();
    for (pci, events) in by_gpu {
        let gpu = gpus
            .iter()
            .find(|g| crate::views::pci::same_gpu(g.gpu.bus_id.as_deref(), &pci));
        let label = match gpu {
            Some(g) => format!("{} at PCI {pci}", g.label()),
            None => format!("the GPU at PCI {pci} (not among the GPUs the driver lists now)"),
        };
        // Distinct Xids in the order first seen, with their counts.
        let mut seen: Vec<(u32, usize, &XidEvent)> = Vec::new();
        for e in &events {
            match seen.iter_mut().find(|(x, _, _)| *x == e.xid) {
                Some(s) => s.1 += 1,
                None => seen.push((e.xid, 1, e)),
            }
        }
        let mut worst: Option<XidAction> = None;
        let mut f = Finding::new(&RULE, String::new());
        if let Some(g) = gpu {
            f = f.about(Subject::Gpu { index: g.gpu.index });
        }
        let mut steps: Vec<(u8, String)> = Vec::new();
        for (xid, count, first) in &seen {
            let row = ctx.kb.xid(*xid);
            let action = row.and_then(|r| r.action);
            if rank(action) > rank(worst) {
                worst = action;
            }
            let fr = row
                .and_then(|r| r.dcgm_fr.as_deref())
                .unwrap_or("DCGM_FR_XID_ERROR");
            let when = first
                .time_us
                .map(|t| format!(", first {:.0} s after boot", t as f64 / 1e6))
                .unwrap_or_default();
            f = f.evidence(format!(
                "Xid {xid} x{count}{when}: {} (DCGM failure reason {fr}); kernel log: {}",
                row.map_or("not in NVIDIA's catalogue as cudoctor knows it", |r| r
                    .name
                    .as_str()),
                first.text
            ));
            if let Some(r) = row {
                let text = format!("Xid {}: {} {}", r.xid, r.meaning, r.action_text);
                if !steps.iter().any(|(_, t)| *t == text) {
                    steps.push((rank(action), text));
                }
            }
        }
        steps.sort_by_key(|s| std::cmp::Reverse(s.0));
        let xids: Vec<String> = seen.iter().map(|(x, _, _)| x.to_string()).collect();
        f.title = format!("The kernel log records Xid {} on {label}", xids.join(", "));
        f = f.cause(if urgent(worst) {
            "The NVIDIA driver recorded GPU errors that NVIDIA's catalogue answers with a GPU reset, a reboot or a call to support: until then this GPU can fail or hang the jobs placed on it."
        } else {
            "The NVIDIA driver recorded errors that NVIDIA's catalogue puts on the application (a bad memory access, an exception): the GPU itself stays healthy."
        });
        if !urgent(worst) {
            f = f.severity(Severity::Info);
        }
        for (_, s) in steps {
            f = f.prose(s);
        }
        if urgent(worst) {
            f = f.prose("after the reset or reboot, check again: 'nvidia-smi -q -d ECC,ROW_REMAPPER' and the kernel log; a fault that returns means the hardware");
        }
        out.push(f);
    }
    if h.kernel_log.xids_dropped > 0 {
        if let Some(last) = out.last_mut() {
            last.evidence.push(format!(
                "{} more Xid events were counted but not kept",
                h.kernel_log.xids_dropped
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn with_xids(lines: &[(&str, u32, &str)]) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        let log = &mut s.health.as_mut().unwrap().kernel_log;
        for (pci, xid, text) in lines {
            log.xids.push(XidEvent {
                xid: *xid,
                pci: pci.to_string(),
                time_us: Some(5_000_000),
                text: text.to_string(),
            });
        }
        s
    }

    #[test]
    fn a_clean_log_has_none() {
        assert!(run(&RULE, &h200()).is_empty());
    }

    #[test]
    fn pci_addresses_of_the_driver_and_nvml_meet() {
        assert_eq!(
            crate::views::pci::pci_key("0000:00:06"),
            crate::views::pci::pci_key("00000000:00:06.0")
        );
        assert_eq!(crate::views::pci::pci_key("3b:00"), Some((0, 0x3b, 0)));
        assert_eq!(crate::views::pci::pci_key("0001:6c:00"), Some((1, 0x6c, 0)));
        assert_ne!(
            crate::views::pci::pci_key("0001:6c:00"),
            crate::views::pci::pci_key("0000:6c:00")
        );
        assert_eq!(crate::views::pci::pci_key("nonsense"), None);
    }

    /// Real lines (tests/fixtures/kernel-log/xid-lines.txt): Xid 79 of
    /// akash-network/support#209 put on the H200's GPU 0, Xid 13 of leptonai/gpud#46 on GPU 1.
    #[test]
    fn each_gpu_gets_its_events_with_meaning_action_and_dcgm_code() {
        let s = with_xids(&[
            ("0000:00:06", 79, "NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
            ("0000:00:07", 13, "NVRM: Xid (PCI:0000:00:07): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"),
            ("0000:00:07", 13, "NVRM: Xid (PCI:0000:00:07): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception"),
        ]);
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2);
        assert!(
            f[0].title.contains("Xid 79") && f[0].title.contains("GPU 0"),
            "{}",
            f[0].title
        );
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].evidence[0].contains("DCGM_FR_FALLEN_OFF_BUS"),
            "{:?}",
            f[0].evidence
        );
        assert!(f[1].title.contains("GPU 1"));
        assert_eq!(
            f[1].severity,
            Severity::Info,
            "an application's Xid 13 leaves the GPU healthy"
        );
        assert!(f[1].evidence[0].contains("x2"));
        assert!(f[1].evidence[0].contains("DCGM_FR_XID_ERROR"));
    }

    #[test]
    fn a_gpu_gone_from_the_driver_is_still_named_by_its_address() {
        let s = with_xids(&[(
            "0000:44:00",
            79,
            "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
        )]);
        let f = run(&RULE, &s);
        assert!(f[0]
            .title
            .contains("not among the GPUs the driver lists now"));
    }
}
