//! NVIDIA Xid events in a pasted kernel log (`NVRM: Xid (PCI:0000:3b:00): 79, pid=..., ...`):
//! read per GPU, explained from NVIDIA's catalogue (`cudoctor-kb`'s `xid.toml`): what each
//! means and the next action (restart the application, reset the GPU, reboot, contact support).

use cudoctor_kb::{Kb, XidAction};
use std::collections::BTreeMap;

/// GPUs remembered; further ones are counted only.
const MAX_GPUS: usize = 64;
/// Distinct Xids remembered per GPU.
const MAX_XIDS_PER_GPU: usize = 32;

/// One Xid number seen on one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XidSeen {
    pub xid: u32,
    pub count: u64,
    pub first_line: u64,
    pub first_text: String,
}

/// Every Xid event of a log, per GPU (its PCI address as the driver prints it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XidLog {
    pub gpus: BTreeMap<String, Vec<XidSeen>>,
    /// Events on GPUs past the bound.
    pub dropped: u64,
}

/// The GPU address and Xid number of an Xid line: the one reader, shared with the collector's
/// kernel-log probe.
pub use cudoctor_types::xid::parse;

impl XidLog {
    /// Records `line` if it is an Xid event.
    pub fn feed(&mut self, line_no: u64, line: &str) {
        let Some((pci, xid)) = parse(line) else {
            return;
        };
        if !self.gpus.contains_key(&pci) && self.gpus.len() >= MAX_GPUS {
            self.dropped += 1;
            return;
        }
        let seen = self.gpus.entry(pci).or_default();
        if let Some(s) = seen.iter_mut().find(|s| s.xid == xid) {
            s.count += 1;
            return;
        }
        match seen.len() < MAX_XIDS_PER_GPU {
            true => seen.push(XidSeen {
                xid,
                count: 1,
                first_line: line_no,
                first_text: line.chars().take(400).collect(),
            }),
            false => self.dropped += 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    /// The earliest event.
    pub fn first(&self) -> Option<&XidSeen> {
        self.gpus.values().flatten().min_by_key(|s| s.first_line)
    }
}

/// How urgent an action is: the most urgent one of a GPU is its next step.
fn urgency(a: Option<XidAction>) -> u8 {
    XidAction::urgency(a)
}

/// What an action asks of the operator, in a few words.
pub fn action_words(a: Option<XidAction>) -> &'static str {
    match a {
        Some(XidAction::DrainAndReplace) => "drain the GPU and have it replaced",
        Some(XidAction::Reboot) => "drain the node and reboot it",
        Some(XidAction::Reset) => "drain the GPU's jobs and reset it",
        Some(XidAction::ContactSupport) => {
            "collect nvidia-bug-report.sh and contact NVIDIA support"
        }
        Some(XidAction::CheckApp) => "check the application",
        Some(XidAction::RestartApp) => "restart the application",
        Some(XidAction::None) | None => "follow the Xid it accompanies",
    }
}

/// The explanation's texts for a log's Xid events: a title, a cause, one evidence line per GPU,
/// and the fix steps (most urgent action first).
pub fn describe(log: &XidLog, kb: &Kb) -> (String, String, Vec<String>, Vec<String>) {
    let mut evidence = Vec::new();
    let mut steps: Vec<(u8, String)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (pci, seen) in &log.gpus {
        let mut parts = Vec::new();
        let mut worst: Option<XidAction> = None;
        for s in seen {
            let row = kb.xid(s.xid);
            let name = row.map_or("not in NVIDIA's catalogue as cudoctor knows it", |r| {
                r.name.as_str()
            });
            let times = if s.count > 1 {
                format!(" x{}", s.count)
            } else {
                String::new()
            };
            parts.push(format!(
                "Xid {}{times} (line {}): {name}",
                s.xid, s.first_line
            ));
            let action = row.and_then(|r| r.action);
            if urgency(action) > urgency(worst) {
                worst = action;
            }
            if let Some(r) = row {
                let mut text = format!("Xid {}: {} {}", r.xid, r.meaning, r.action_text);
                if let Some(fr) = &r.dcgm_fr {
                    text.push_str(&format!(" (DCGM: {fr})"));
                }
                if !steps.iter().any(|(_, t)| *t == text) {
                    steps.push((urgency(action), text));
                }
                if !names.contains(&r.name) {
                    names.push(r.name.clone());
                }
            }
        }
        evidence.push(format!(
            "GPU {pci}: {}. Next: {}.",
            parts.join("; "),
            action_words(worst)
        ));
    }
    if log.dropped > 0 {
        evidence.push(format!(
            "{} more Xid events were counted but not kept.",
            log.dropped
        ));
    }
    steps.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut fix: Vec<String> = steps.into_iter().map(|(_, t)| t).collect();
    fix.push(
        "Before returning the GPU to service, check it: 'nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT' and 'dmesg -T | grep -i xid' after the reset; a fault that returns means the hardware."
            .to_string(),
    );
    let gpus = log.gpus.len();
    let title = format!(
        "The kernel log shows NVIDIA Xid events on {gpus} GPU{}",
        if gpus == 1 { "" } else { "s" }
    );
    let what = if names.is_empty() {
        "events NVIDIA's catalogue as cudoctor knows it does not describe".to_string()
    } else {
        names.join("; ")
    };
    let cause = format!(
        "The NVIDIA driver reported Xid events ({what}). An Xid is the driver's record of a GPU error: some come from the application (a page fault, an exception), others from the GPU, its memory or its PCIe/NVLink link. Each GPU's events and the next action are listed below."
    );
    (title, cause, evidence, fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xid_lines_of_every_format_are_read() {
        for (line, want) in [
            ("[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", ("0000:a1:00", 79)),
            ("May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.", ("0000:2b:00", 79)),
            ("NVRM: Xid (0000:01:00): 13, 0004 00000000 000090c0 00001b0c 00000000 00000000", ("0000:01:00", 13)),
            ("[ 1234.5] NVRM: Xid (PCI:0000:ca:00): 119, pid=1234, name=python, Timeout after 6s of waiting for RPC response from GPU4 GSP!", ("0000:ca:00", 119)),
        ] {
            assert_eq!(parse(line), Some((want.0.to_string(), want.1)), "{line}");
        }
        assert_eq!(
            parse("NVRM: loading NVIDIA UNIX x86_64 Kernel Module 535.104.05"),
            None
        );
    }

    #[test]
    fn a_dmesg_with_several_gpus_is_summarised_per_gpu() {
        let mut log = XidLog::default();
        log.feed(
            1,
            "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=x, An uncorrectable double bit error",
        );
        log.feed(
            2,
            "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=x, An uncorrectable double bit error",
        );
        log.feed(
            3,
            "NVRM: Xid (PCI:0000:86:00): 31, pid=2, name=y, Ch 00000008, intr 00000000. MMU Fault",
        );
        let kb = Kb::embedded();
        let (title, _cause, evidence, fix) = describe(&log, kb);
        assert!(title.contains("2 GPUs"), "{title}");
        assert_eq!(evidence.len(), 2);
        assert!(
            evidence[0].starts_with("GPU 0000:3b:00: Xid 48 x2 (line 1)"),
            "{evidence:?}"
        );
        assert!(
            evidence[1].contains("Xid 31") && evidence[1].contains("restart the application"),
            "{evidence:?}"
        );
        // The most urgent step (48's reset) comes before the application's restart.
        let pos = |n: &str| fix.iter().position(|f| f.starts_with(n));
        assert!(pos("Xid 48") < pos("Xid 31"), "{fix:?}");
    }
}
