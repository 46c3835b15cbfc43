//! The machine under the stack, machine-wide: a nouveau module in the NVIDIA driver's way, the
//! kernel log's Xid events, and a `dcgmi diag --json` result left on disk. Each GPU's own health
//! (ECC, row remapping, clock events, PCIe link, NVLink errors, inforom) comes from NVML in the
//! driver probe (`driver/dynamic.rs`). Nothing here needs root, runs a program or waits.
//!
//! The kernel log is read from `/dev/kmsg`, opened read-only and non-blocking: each read gives
//! one record, and EAGAIN (no more records) ends the reading; a byte and a time bound end it
//! sooner on a huge log. Where /dev/kmsg cannot be opened (kernel.dmesg_restrict=1 without
//! CAP_SYSLOG, a container without it) the systemd journal's kernel records of this boot are
//! read instead: `journalctl -k -o json` (the system's own journalctl, at a fixed path, through
//! the timed runner: its own process group, a few seconds at most, its newest
//! [`MAX_JOURNAL_RECORDS`] records, output capped), as a user of the `systemd-journal` or `adm`
//! group may where the ring buffer is closed to them. Where neither can be read the facts say
//! why: nothing is guessed.

#[cfg(unix)]
use std::io::Read;
use std::time::SystemTime;
#[cfg(unix)]
use std::time::{Duration, Instant};

use cudoctor_snapshot::{DcgmDiag, DcgmTest, HealthFacts, KernelLog, KernelLogRead, XidEvent};

use crate::host::Host;

/// Most bytes of kernel log read (the ring buffer is 256 KiB to a few MiB on servers).
#[cfg(unix)]
const MAX_KMSG_BYTES: usize = 16 << 20;
/// Most time spent reading it.
#[cfg(unix)]
const MAX_KMSG_TIME: Duration = Duration::from_millis(300);
/// Most kernel records asked of the journal (its newest of this boot), and the time it may take.
const MAX_JOURNAL_RECORDS: usize = 10_000;
#[cfg(unix)]
const MAX_JOURNAL_TIME: Duration = Duration::from_secs(3);
/// Where the system's journalctl is looked for (PATH is not searched: no program of the user's
/// PATH is run for a system fact).
#[cfg(unix)]
const JOURNALCTL: &[&str] = &["/usr/bin/journalctl", "/bin/journalctl"];
/// Xid events kept; further ones are counted.
const MAX_XIDS: usize = 256;
/// Where a `dcgmi diag --json` result is looked for: DCGM's log directory (files whose name
/// holds "diag" and ends in `.json`, as operators save `dcgmi diag -r N --json > ...` there) and
/// cudoctor's own well-known file. Nothing else is searched.
pub const DCGM_DIAG_DIRS: &[&str] = &["/var/log/nvidia-dcgm"];
pub const DCGM_DIAG_FILE: &str = "/var/lib/cudoctor/dcgm-diag.json";
/// Largest diag file read.
const MAX_DIAG_BYTES: u64 = 4 << 20;

pub fn collect(host: &Host) -> Option<HealthFacts> {
    if host.is_windows() {
        return None;
    }
    Some(HealthFacts {
        nouveau_loaded: host.read_text("/proc/modules").ok().map(|t| nouveau_in(&t)),
        kernel_log: kernel_log(host),
        dcgm_diag: dcgm_diag(host),
    })
}

/// Whether /proc/modules lists the nouveau module (its first column).
fn nouveau_in(modules: &str) -> bool {
    modules
        .lines()
        .any(|l| l.split_whitespace().next() == Some("nouveau"))
}

fn kernel_log(host: &Host) -> KernelLog {
    if host.runs_programs() {
        let log = live_kmsg();
        return match &log.read {
            KernelLogRead::NotRead { why } => journal(host, why),
            KernelLogRead::Read { .. } => log,
        };
    }
    // Under --root: a regular file at <root>/dev/kmsg (a test tree) holds records in the same
    // form; a real device node there is never opened.
    match host.read_text("/dev/kmsg") {
        Ok(text) => kmsg_records(text.as_bytes(), "/dev/kmsg (a file under --root)"),
        Err(e) => KernelLog {
            read: KernelLogRead::NotRead {
                why: format!("/dev/kmsg under --root: {e}"),
            },
            ..KernelLog::default()
        },
    }
}

#[cfg(unix)]
fn live_kmsg() -> KernelLog {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open("/dev/kmsg");
    let mut file = match file {
        Ok(f) => f,
        Err(e) => {
            return KernelLog {
                read: KernelLogRead::NotRead {
                    why: format!("/dev/kmsg: {e}"),
                },
                ..KernelLog::default()
            }
        }
    };
    let started = Instant::now();
    let mut reader = KmsgReader::default();
    let mut buf = vec![0u8; 16 << 10];
    let mut truncated = false;
    loop {
        if reader.bytes >= MAX_KMSG_BYTES || started.elapsed() >= MAX_KMSG_TIME {
            truncated = true;
            break;
        }
        match file.read(&mut buf) {
            // One record per read; 0 would be the end of a regular file.
            Ok(0) => break,
            Ok(n) => reader.feed(buf.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            // EPIPE: records were overwritten while reading; the next read goes on.
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::PIPE.raw_os_error()) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                if reader.records == 0 {
                    return KernelLog {
                        read: KernelLogRead::NotRead {
                            why: format!("/dev/kmsg: {e}"),
                        },
                        ..KernelLog::default()
                    };
                }
                break;
            }
        }
    }
    reader.finish("/dev/kmsg", truncated)
}

#[cfg(not(unix))]
fn live_kmsg() -> KernelLog {
    KernelLog {
        read: KernelLogRead::NotRead {
            why: "no /dev/kmsg on this system".into(),
        },
        ..KernelLog::default()
    }
}

/// The kernel records of this boot in the systemd journal, each with the kernel's own
/// timestamp (microseconds since boot) where the journal kept it, and whether the reading was
/// cut at its bound.
#[derive(Debug, Clone, Default)]
pub(crate) struct JournalKernel {
    pub records: Vec<(Option<u64>, String)>,
    pub truncated: bool,
}

/// The journal's kernel records of this boot (`journalctl -k -o json`: the system's own
/// journalctl at a fixed path, its own process group, [`MAX_JOURNAL_TIME`] at most, the newest
/// [`MAX_JOURNAL_RECORDS`], output capped), asked once per check and shared by the probes that
/// read the kernel log where /dev/kmsg is closed; why not, where it cannot be read.
pub(crate) fn journal_kernel(host: &Host) -> Result<JournalKernel, String> {
    host.kernel_journal(|| ask_journal(host))
}

#[cfg(unix)]
fn ask_journal(host: &Host) -> Result<JournalKernel, String> {
    use crate::host::CommandOutcome;
    let Some(journalctl) = JOURNALCTL.iter().find(|p| host.is_file(p)) else {
        return Err("no journalctl (no systemd journal to read)".into());
    };
    let mut cmd = std::process::Command::new(host.fs_path(journalctl));
    let lines = MAX_JOURNAL_RECORDS.to_string();
    cmd.args(["-k", "-o", "json", "--no-pager", "-q", "-n", &lines]);
    let timeout = host.command_timeout.min(MAX_JOURNAL_TIME);
    match crate::host::run_with_timeout(cmd, timeout) {
        CommandOutcome::Exited {
            status: Some(0),
            stdout,
            ..
        } => {
            let j = parse_journal(&stdout, crate::host::MAX_COMMAND_OUTPUT);
            if j.records.is_empty() {
                return Err("journalctl -k: no kernel records of this boot (none kept, or this user may not read the system journal: that takes the systemd-journal or adm group)".into());
            }
            Ok(j)
        }
        CommandOutcome::Exited { status, stderr, .. } => Err(format!(
            "journalctl -k: exit status {}: {}",
            status.map_or("none (killed)".to_string(), |s| s.to_string()),
            stderr.trim().chars().take(300).collect::<String>()
        )),
        CommandOutcome::TimedOut(d) => Err(format!(
            "journalctl -k: no answer within {} s",
            d.as_secs_f32()
        )),
        CommandOutcome::NotStarted(e) => Err(format!("journalctl -k: {e}")),
        CommandOutcome::NotRunUnderRoot => Err("journalctl -k: not run under --root".into()),
    }
}

#[cfg(not(unix))]
fn ask_journal(_host: &Host) -> Result<JournalKernel, String> {
    Err("no systemd journal on this platform".into())
}

/// The journal's kernel records of this boot, where /dev/kmsg could not be read (`kmsg_why`).
fn journal(host: &Host, kmsg_why: &str) -> KernelLog {
    match journal_kernel(host) {
        Ok(j) => kernel_log_of(&j),
        Err(why) => KernelLog {
            read: KernelLogRead::NotRead {
                why: format!("{kmsg_why}; {why}"),
            },
            ..KernelLog::default()
        },
    }
}

/// The Xid events of /dev/kmsg records (`prio,seq,time_us,flags[,...];message`) held in one
/// buffer (a root's `/dev/kmsg` file), `source` named as where they were read.
pub fn kmsg_records(bytes: &[u8], source: &str) -> KernelLog {
    let mut reader = KmsgReader::default();
    reader.feed(bytes);
    reader.finish(source, false)
}

/// The source named for records read from the journal.
pub const JOURNAL_SOURCE: &str = "journalctl -k (the systemd journal)";

/// The Xid events of the journal's kernel records.
fn kernel_log_of(j: &JournalKernel) -> KernelLog {
    let mut reader = KmsgReader::default();
    for (time_us, message) in &j.records {
        reader.record(*time_us, message);
    }
    reader.finish(JOURNAL_SOURCE, j.truncated)
}

/// `journalctl -o json` output, one JSON object a line: each record's MESSAGE (a string, or an
/// array of bytes where it is not UTF-8) and the kernel's own timestamp of it
/// (`_SOURCE_MONOTONIC_TIMESTAMP`, microseconds since boot as in /dev/kmsg; the journal's
/// `__MONOTONIC_TIMESTAMP` where absent). `cap` is the output bound: output that reached it, or
/// as many records as were asked for, is a truncated reading. A line that is not such an
/// object (a cut last line) is passed over.
pub(crate) fn parse_journal(stdout: &str, cap: usize) -> JournalKernel {
    let mut j = JournalKernel::default();
    let mut lines = 0usize;
    for line in stdout.lines() {
        lines += 1;
        let Ok(serde_json::Value::Object(rec)) = serde_json::from_str::<serde_json::Value>(line)
        else {
            continue;
        };
        let message = match rec.get("MESSAGE") {
            Some(serde_json::Value::String(m)) => m.clone(),
            Some(serde_json::Value::Array(bytes)) => {
                let bytes: Vec<u8> = bytes
                    .iter()
                    .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
            _ => continue,
        };
        let time = |key: &str| {
            rec.get(key)
                .and_then(|v| v.as_str())
                .and_then(|t| t.parse::<u64>().ok())
        };
        let time_us = time("_SOURCE_MONOTONIC_TIMESTAMP").or_else(|| time("__MONOTONIC_TIMESTAMP"));
        j.records.push((time_us, message));
    }
    j.truncated = stdout.len() >= cap || lines >= MAX_JOURNAL_RECORDS;
    j
}

/// [`parse_journal`]'s records read for their Xid events (`journalctl -k -o json`'s output).
pub fn journal_json(stdout: &str, cap: usize) -> KernelLog {
    kernel_log_of(&parse_journal(stdout, cap))
}

/// Reads /dev/kmsg records (`prio,seq,time_us,flags[,...];message`, continuation lines starting
/// with a space) and keeps their Xid events.
#[derive(Default)]
struct KmsgReader {
    partial: Vec<u8>,
    bytes: usize,
    records: u64,
    xids: Vec<XidEvent>,
    dropped: u64,
}

impl KmsgReader {
    fn feed(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len();
        self.partial.extend_from_slice(chunk);
        // Each line is read where it lies and the consumed part dropped once at the end: a
        // 4 MiB file of short lines (a hostile root's /dev/kmsg) costs one pass, not a shift of
        // the rest per line.
        let buffer = std::mem::take(&mut self.partial);
        let mut start = 0;
        while let Some(len) = buffer
            .get(start..)
            .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
        {
            let line = buffer.get(start..=start + len).unwrap_or_default();
            self.line(&String::from_utf8_lossy(line));
            start += len + 1;
        }
        self.partial = buffer;
        self.partial.drain(..start);
    }

    fn line(&mut self, line: &str) {
        let line = line.trim_end_matches('\n');
        if line.starts_with(' ') || line.is_empty() {
            return; // a record's key=value continuation
        }
        let (time_us, message) = match line.split_once(';') {
            Some((header, message)) if header.split(',').count() >= 3 => (
                header.split(',').nth(2).and_then(|t| t.parse().ok()),
                message,
            ),
            _ => (None, line),
        };
        self.record(time_us, message);
    }

    /// One record of the kernel log: its message and the kernel's timestamp of it.
    fn record(&mut self, time_us: Option<u64>, message: &str) {
        self.records += 1;
        let Some((pci, xid)) = cudoctor_types::xid::parse(message) else {
            return;
        };
        if self.xids.len() >= MAX_XIDS {
            self.dropped += 1;
            return;
        }
        self.xids.push(XidEvent {
            xid,
            pci,
            time_us,
            text: message.chars().take(300).collect(),
        });
    }

    fn finish(mut self, source: &str, truncated: bool) -> KernelLog {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.line(&String::from_utf8_lossy(&rest));
        }
        KernelLog {
            read: KernelLogRead::Read {
                source: source.to_string(),
                records: self.records,
                truncated,
            },
            xids: self.xids,
            xids_dropped: self.dropped,
        }
    }
}

/// The newest `dcgmi diag --json` result of the well-known places.
fn dcgm_diag(host: &Host) -> Option<DcgmDiag> {
    let mut candidates: Vec<String> = DCGM_DIAG_DIRS
        .iter()
        .flat_map(|dir| {
            host.list_dir(dir)
                .into_iter()
                .filter(|n| n.contains("diag") && n.ends_with(".json"))
                .map(move |n| format!("{dir}/{n}"))
        })
        .collect();
    candidates.push(DCGM_DIAG_FILE.to_string());
    let modified = |p: &str| {
        std::fs::metadata(host.fs_path(p))
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| m.modified().ok())
    };
    let (path, mtime) = candidates
        .iter()
        .filter_map(|p| Some((p.clone(), modified(p)?)))
        .max_by_key(|(_, t)| *t)?;
    let age_s = SystemTime::now()
        .duration_since(mtime)
        .ok()
        .map(|d| d.as_secs());
    let mut diag = DcgmDiag {
        path: path.clone(),
        age_s,
        ..DcgmDiag::default()
    };
    let text = match cudoctor_types::regular_file::read(&host.fs_path(&path), MAX_DIAG_BYTES) {
        Ok(bytes) => bytes,
        Err(e) => {
            diag.unreadable = Some(e.to_string());
            return Some(diag);
        }
    };
    match dcgm_diag_tests(&text) {
        Ok(tests) => diag.tests = tests,
        Err(why) => diag.unreadable = Some(why),
    }
    Some(diag)
}

/// The test results of a `dcgmi diag --json` document, at most [`MAX_DIAG_TESTS`]; why not
/// when it is not JSON or holds none.
pub fn dcgm_diag_tests(bytes: &[u8]) -> Result<Vec<DcgmTest>, String> {
    let v =
        serde_json::from_slice::<serde_json::Value>(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let tests = diag_tests(&v);
    if tests.is_empty() {
        return Err("no DCGM diagnostic test results in it".into());
    }
    Ok(tests)
}

/// The most test results kept of one document (DCGM's longest run, level 4, has about twenty
/// tests on each of eight GPUs).
pub const MAX_DIAG_TESTS: usize = 512;
/// The most GPU ids kept of one result.
const MAX_DIAG_GPUS: usize = 64;

/// Every test result of a `dcgmi diag --json` document: objects with a `name` and a `results`
/// array, each result's `status` (DCGM 2 to 4 spell the layout differently around these keys:
/// `test_categories[].tests[]` with `gpu_ids` in 2 and 3, `entity_id` in 4).
fn diag_tests(v: &serde_json::Value) -> Vec<DcgmTest> {
    let mut out = Vec::new();
    walk(v, &mut out, 0);
    out
}

fn walk(v: &serde_json::Value, out: &mut Vec<DcgmTest>, depth: usize) {
    use serde_json::Value;
    if depth > 16 || out.len() >= MAX_DIAG_TESTS {
        return;
    }
    match v {
        Value::Object(map) => {
            if let (Some(Value::String(name)), Some(Value::Array(results))) =
                (map.get("name"), map.get("results"))
            {
                for r in results {
                    if out.len() >= MAX_DIAG_TESTS {
                        return;
                    }
                    let Some(status) = r.get("status").and_then(Value::as_str) else {
                        continue;
                    };
                    let gpus = match (r.get("gpu_ids"), r.get("entity_id")) {
                        (Some(Value::String(ids)), _) => ids
                            .split(',')
                            .filter_map(|i| i.trim().parse().ok())
                            .take(MAX_DIAG_GPUS)
                            .collect(),
                        // An id past u32 names no GPU (it is not wrapped onto GPU 0).
                        (Some(Value::Number(n)), _) | (_, Some(Value::Number(n))) => n
                            .as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .into_iter()
                            .collect(),
                        _ => Vec::new(),
                    };
                    let warning = r.get("warnings").and_then(|w| match w {
                        Value::Array(ws) => ws
                            .iter()
                            .find_map(|w| {
                                w.get("warning")
                                    .and_then(Value::as_str)
                                    .or_else(|| w.as_str())
                            })
                            .map(str::to_string),
                        Value::String(s) => Some(s.clone()),
                        _ => None,
                    });
                    out.push(DcgmTest {
                        name: name.chars().take(100).collect(),
                        result: status.chars().take(20).collect(),
                        gpus,
                        warning: warning.map(|w| w.chars().take(300).collect()),
                    });
                }
                return;
            }
            for v in map.values() {
                walk(v, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for v in items {
                walk(v, out, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The fixture's real lines, each made a /dev/kmsg record as the kernel writes it
    /// (`prio,seq,time_us,flags;message`), with a dictionary continuation line after some.
    fn kmsg_of_fixture() -> String {
        let text = include_str!("../../../tests/fixtures/kernel-log/xid-lines.txt");
        let mut out = String::new();
        for (i, line) in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .enumerate()
        {
            out.push_str(&format!("3,{i},{},-;{}\n", 1_000_000 + i, line.trim()));
            if i % 3 == 0 {
                out.push_str(" SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n");
            }
        }
        out
    }

    #[test]
    fn every_xid_record_of_a_real_log_is_kept_with_its_gpu_and_time() {
        let mut r = KmsgReader::default();
        // Fed in uneven pieces, as reads of a file would give it.
        let text = kmsg_of_fixture();
        for chunk in text.as_bytes().chunks(97) {
            r.feed(chunk);
        }
        let log = r.finish("/dev/kmsg", false);
        let xids = &log.xids;
        assert!(xids.len() > 60, "{}", xids.len());
        let fallen = xids
            .iter()
            .find(|x| x.pci == "0000:a1:00")
            .expect("Xid 79 of akash-network/support#209");
        assert_eq!(fallen.xid, 79);
        assert!(fallen.time_us.is_some_and(|t| t >= 1_000_000));
        assert!(xids.iter().any(|x| x.xid == 64 && x.pci == "0000:07:00"));
        assert!(matches!(log.read, KernelLogRead::Read { records, .. } if records > 100));
    }

    #[test]
    fn a_log_without_xids_has_none() {
        let mut r = KmsgReader::default();
        r.feed(b"6,1,100,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04\n6,2,200,-;nvidia-modeset: Loading\n");
        let log = r.finish("/dev/kmsg", false);
        assert!(log.xids.is_empty());
    }

    /// Real `journalctl -k -o json` output (tests/fixtures/kernel-log/README.md): every Xid
    /// line of the log it was written from is read, with the kernel's own timestamp, and a
    /// message journalctl prints as bytes is read too.
    #[test]
    fn the_journal_s_kernel_records_are_read_as_the_ring_buffer_s() {
        let text = include_str!("../../../tests/fixtures/kernel-log/journalctl-k.json");
        let log = journal_json(text, crate::host::MAX_COMMAND_OUTPUT);
        let KernelLogRead::Read {
            source,
            records,
            truncated,
        } = &log.read
        else {
            panic!("{:?}", log.read)
        };
        assert_eq!(source, JOURNAL_SOURCE);
        assert_eq!(*records as usize, text.lines().count());
        assert!(!truncated);
        // The same Xid lines as the ring buffer's reading of the fixture (each distinct
        // message once in the journal).
        let mut from_kmsg = KmsgReader::default();
        from_kmsg.feed(kmsg_of_fixture().as_bytes());
        let mut expected: Vec<(String, u32)> = from_kmsg
            .finish("/dev/kmsg", false)
            .xids
            .iter()
            .map(|x| (x.pci.clone(), x.xid))
            .collect();
        expected.sort();
        expected.dedup();
        let mut got: Vec<(String, u32)> = log.xids.iter().map(|x| (x.pci.clone(), x.xid)).collect();
        got.sort();
        got.dedup();
        assert_eq!(got, expected);
        let fallen = log.xids.iter().find(|x| x.pci == "0000:a1:00").unwrap();
        assert_eq!(fallen.xid, 79);
        assert!(
            fallen.text.starts_with("NVRM: Xid (PCI:0000:a1:00): 79"),
            "{}",
            fallen.text
        );
        // _SOURCE_MONOTONIC_TIMESTAMP: microseconds since boot, rising.
        assert!(log.xids.windows(2).all(|w| w[0].time_us < w[1].time_us));
        // The last record's MESSAGE is an array of bytes (Latin-1): read, not passed over.
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert!(last["MESSAGE"].is_array());
    }

    #[test]
    fn a_cut_journal_is_a_truncated_reading_and_a_cut_line_is_passed_over() {
        let text = include_str!("../../../tests/fixtures/kernel-log/journalctl-k.json");
        let cut = &text[..text.len() / 2];
        let log = journal_json(cut, cut.len());
        assert!(matches!(
            log.read,
            KernelLogRead::Read {
                truncated: true,
                ..
            }
        ));
        assert!(!log.xids.is_empty());
        let whole = journal_json(text, crate::host::MAX_COMMAND_OUTPUT);
        assert!(log.xids.len() < whole.xids.len());
        // Lines that are not journal records: nothing read from them, no panic.
        let odd = journal_json("not json\n[1,2]\n{\"MESSAGE\": null}\n{}\n", 1 << 20);
        assert!(odd.xids.is_empty());
    }

    /// A hostile result of one test with 200,000 results (2.4 MB, under the file cap): every
    /// one was kept (the bound was checked per object, not per result), and an entity id past
    /// u32 was wrapped onto GPU 0.
    #[test]
    fn a_diag_result_keeps_a_bounded_number_of_tests_and_no_wrapped_gpu() {
        let results = "{\"status\":\"Fail\"},".repeat(200_000);
        let doc = format!(
            "{{\"name\":\"x\",\"results\":[{{\"status\":\"Fail\",\"entity_id\":4294967296,\"gpu_ids\":null}},{results}{{}}]}}"
        );
        let tests = dcgm_diag_tests(doc.as_bytes()).unwrap();
        assert_eq!(tests.len(), MAX_DIAG_TESTS);
        assert!(tests[0].gpus.is_empty(), "{:?}", tests[0].gpus);
        let ids = format!(
            "{{\"name\":\"x\",\"results\":[{{\"status\":\"Pass\",\"gpu_ids\":\"{}\"}}]}}",
            "1,".repeat(100_000)
        );
        let tests = dcgm_diag_tests(ids.as_bytes()).unwrap();
        assert_eq!(tests[0].gpus.len(), MAX_DIAG_GPUS);
        assert!(dcgm_diag_tests(b"[]").is_err());
        assert!(dcgm_diag_tests(b"\xff").is_err());
    }

    /// Many short records in one buffer are read in one pass (each used to shift the rest).
    #[test]
    fn many_short_kmsg_records_in_one_buffer_are_read_in_one_pass() {
        let mut text = "6,1,2,-;x\n".repeat(400_000).into_bytes();
        text.extend_from_slice(b"4,2,3,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, fallen off\n");
        text.extend_from_slice(b"4,3,4,-;NVRM: Xid (PCI:0000:3c:00): 48, no end of line");
        let started = std::time::Instant::now();
        let log = kmsg_records(&text, "/dev/kmsg");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let xids: Vec<u32> = log.xids.iter().map(|x| x.xid).collect();
        assert_eq!(xids, [79, 48]);
        let KernelLogRead::Read { records, .. } = log.read else {
            panic!("{:?}", log.read)
        };
        assert_eq!(records, 400_002);
    }

    #[test]
    fn the_bound_on_events_kept_counts_the_rest() {
        let mut r = KmsgReader::default();
        for i in 0..(MAX_XIDS + 5) {
            r.feed(
                format!("3,{i},1,-;NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception\n")
                    .as_bytes(),
            );
        }
        let log = r.finish("/dev/kmsg", false);
        assert_eq!(log.xids.len(), MAX_XIDS);
        assert_eq!(log.xids_dropped, 5);
    }

    #[test]
    fn nouveau_is_read_from_the_first_column_of_proc_modules() {
        assert!(nouveau_in(
            "nouveau 2416640 0 - Live 0x0000000000000000\nttm 98304 1 nouveau, Live 0x0\n"
        ));
        assert!(!nouveau_in(
            "nvidia_uvm 1544192 0 - Live 0x0\nnvidia 62238720 1 nvidia_uvm, Live 0x0\n"
        ));
        // A module that depends on nouveau names it in its fourth column only.
        assert!(!nouveau_in("drm_ttm_helper 16384 1 nouveau, Live 0x0\n"));
    }

    fn rooted(dir: &std::path::Path) -> Host {
        Host::rooted(dir.to_path_buf(), BTreeMap::new(), Duration::from_secs(5))
    }

    #[test]
    fn a_tree_with_a_kmsg_file_nouveau_and_a_failed_diag() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("dev")).unwrap();
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::create_dir_all(root.join("var/log/nvidia-dcgm")).unwrap();
        std::fs::write(root.join("dev/kmsg"), kmsg_of_fixture()).unwrap();
        std::fs::write(root.join("proc/modules"), "nouveau 2416640 0 - Live 0x0\n").unwrap();
        // The layout of `dcgmi diag -r 1 --json` (DCGM 3.x): categories, tests, per-GPU results.
        std::fs::write(
            root.join("var/log/nvidia-dcgm/diag-r1.json"),
            r#"{"DCGM GPU Diagnostic": {"test_categories": [
                {"category": "Deployment", "tests": [
                    {"name": "Denylist", "results": [{"status": "Pass"}]},
                    {"name": "Persistence Mode", "results": [{"status": "Fail", "warnings": [{"warning": "Persistence mode for GPU 0 is currently disabled.", "error_id": 29}]}]},
                    {"name": "Page Retirement/Row Remap", "results": [{"gpu_ids": "0", "status": "Pass"}, {"gpu_ids": "1", "status": "Fail", "warnings": [{"warning": "GPU 1 had uncorrectable memory errors and row remapping failed."}]}]}
                ]}]}, "version": "3.3.5"}"#,
        )
        .unwrap();
        let h = collect(&rooted(root)).unwrap();
        assert_eq!(h.nouveau_loaded, Some(true));
        assert!(h.kernel_log.xids.len() > 60);
        let diag = h.dcgm_diag.unwrap();
        assert_eq!(diag.path, "/var/log/nvidia-dcgm/diag-r1.json");
        assert_eq!(diag.tests.len(), 4);
        let failed: Vec<_> = diag.tests.iter().filter(|t| t.failed()).collect();
        assert_eq!(failed.len(), 2);
        assert_eq!(failed[1].gpus, vec![1]);
        assert!(failed[0]
            .warning
            .as_deref()
            .unwrap()
            .contains("Persistence"));
    }

    #[test]
    fn a_bare_tree_reads_nothing_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let h = collect(&rooted(dir.path())).unwrap();
        assert_eq!(h.nouveau_loaded, None);
        assert!(matches!(h.kernel_log.read, KernelLogRead::NotRead { .. }));
        assert!(h.dcgm_diag.is_none());
    }

    #[test]
    fn the_live_kernel_log_never_blocks() {
        // Readable or not (dmesg_restrict), the reading ends within its time bound.
        let started = Instant::now();
        let log = live_kmsg();
        assert!(started.elapsed() < Duration::from_secs(2), "{log:?}");
    }

    #[test]
    fn the_journal_is_asked_within_its_bound_and_says_why_when_it_cannot_be_read() {
        // This machine's journal, if any: the asking ends within its time bound, and a reading
        // of no kernel record is "not read", with /dev/kmsg's reason kept in front.
        let host = Host::real(Duration::from_secs(20));
        let started = Instant::now();
        let log = journal(&host, "/dev/kmsg: Permission denied (os error 13)");
        assert!(
            started.elapsed() < MAX_JOURNAL_TIME + Duration::from_secs(2),
            "{log:?}"
        );
        match &log.read {
            KernelLogRead::NotRead { why } => {
                assert!(
                    why.starts_with("/dev/kmsg: Permission denied; ")
                        || why.starts_with("/dev/kmsg: Permission denied (os error 13); "),
                    "{why}"
                )
            }
            KernelLogRead::Read {
                source, records, ..
            } => {
                assert_eq!(source, JOURNAL_SOURCE);
                assert!(*records > 0);
            }
        }
    }
}
