//! The one reader of an NVIDIA Xid line of the kernel log (`NVRM: Xid (PCI:0000:3b:00): 79, ...`):
//! the GPU's PCI address and the Xid number. `cudoctor explain` reads pasted logs with it and
//! the collector reads the machine's own kernel log (/dev/kmsg) with it.

use regex::Regex;
use std::sync::OnceLock;

fn pattern() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\bXid:?\s*\((?:PCI:)?([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?|[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?)\):?\s*(\d{1,4})\b").ok()
    })
    .as_ref()
}

/// The GPU address (lower case, as the driver printed it) and the Xid number of an Xid line.
pub fn parse(line: &str) -> Option<(String, u32)> {
    let caps = pattern()?.captures(line)?;
    let pci = caps.get(1)?.as_str().to_ascii_lowercase();
    let xid = caps.get(2)?.as_str().parse().ok()?;
    Some((pci, xid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real lines of public threads (tests/fixtures/kernel-log/xid-lines.txt names each one's
    /// source): every `NVRM: Xid (...)` line is read, nothing else is.
    #[test]
    fn every_real_xid_line_of_the_fixture_is_read() {
        let text = include_str!("../../../tests/fixtures/kernel-log/xid-lines.txt");
        let mut read = 0;
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let parsed = parse(line);
            // A 2009 forum line names the GPU by a bus:device pair of another width (0003:00):
            // no PCI address to tie it to.
            let is_xid_line = line.contains("Xid (") && !line.contains("Xid (0003:00)");
            assert_eq!(parsed.is_some(), is_xid_line, "{line}");
            read += usize::from(parsed.is_some());
        }
        assert!(read > 60, "{read}");
        assert_eq!(
            parse("Dec  2 11:38:47 worker4 kernel: [  219.471050] NVRM: Xid (PCI:0000:07:00): 64, pid='<unknown>', name=<unknown>, Dynamic Page Retirement"),
            Some(("0000:07:00".into(), 64))
        );
        assert_eq!(
            parse("NVRM: Xid (0000:01:00): 13, 0005 00000000"),
            Some(("0000:01:00".into(), 13))
        );
        assert_eq!(
            parse("NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus."),
            None
        );
    }
}
