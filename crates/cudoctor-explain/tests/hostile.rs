//! Hostile input: garbage, invalid UTF-8, one huge line, huge logs, empty input.
//! The 1 GB case runs only with CUDOCTOR_EXPLAIN_HUGE=1 (use --release); 100 MB cases always run.

use cudoctor_explain::scanner::MAX_LINE_BYTES;
use cudoctor_explain::{explain_reader, explain_str, Category};
use std::io::{BufReader, Cursor, Read};
use std::time::Instant;

/// A log generated on the fly: benign training lines (a block of 4096 distinct lines served
/// over and over) up to `total` bytes, with `error` injected as one line once `inject_at` bytes
/// have been produced. Nothing is stored beyond the block.
struct SyntheticLog {
    total: u64,
    produced: u64,
    inject_at: u64,
    error: Vec<u8>,
    injected: bool,
    block: Vec<u8>,
    pos: usize,
}

impl SyntheticLog {
    fn new(total: u64, inject_at: u64, error: &str) -> Self {
        let mut block = Vec::new();
        for s in 1..=4096u64 {
            block.extend_from_slice(
                format!(
                    "[rank{}]: 2026-11-30 12:00:{:02} | INFO | epoch {} step {} | loss {:.4} | lr 3.0e-4 | tokens/s {} | grad_norm 0.{}\n",
                    s % 8, s % 60, s / 1000, s, 1.0 / (s as f64), 10_000 + s % 977, s % 1000
                )
                .as_bytes(),
            );
        }
        SyntheticLog {
            total,
            produced: 0,
            inject_at,
            error: format!("{error}\n").into_bytes(),
            injected: false,
            block,
            pos: 0,
        }
    }
}

impl Read for SyntheticLog {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.produced >= self.total {
            return Ok(0);
        }
        // Inject at a line boundary: finish the current line first.
        let at_line_start = self.pos == 0 || self.block.get(self.pos - 1) == Some(&b'\n');
        if !self.injected && self.produced >= self.inject_at && !at_line_start {
            let rest = self.block.get(self.pos..).unwrap_or_default();
            let line_end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1);
            let n = line_end.min(buf.len());
            buf.get_mut(..n)
                .unwrap_or_default()
                .copy_from_slice(rest.get(..n).unwrap_or_default());
            self.pos = (self.pos + n) % self.block.len().max(1);
            self.produced += n as u64;
            return Ok(n);
        }
        if !self.injected && self.produced >= self.inject_at {
            self.injected = true;
            let n = self.error.len().min(buf.len());
            buf.get_mut(..n)
                .unwrap_or_default()
                .copy_from_slice(self.error.get(..n).unwrap_or_default());
            self.produced += n as u64;
            return Ok(n);
        }
        let rest = self.block.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf.get_mut(..n)
            .unwrap_or_default()
            .copy_from_slice(rest.get(..n).unwrap_or_default());
        self.pos = (self.pos + n) % self.block.len().max(1);
        self.produced += n as u64;
        Ok(n)
    }
}

/// One line of `len` bytes whose first bytes are `head`, then filler, then a newline.
struct OneLongLine {
    head: Vec<u8>,
    len: u64,
    pos: u64,
}

impl Read for OneLongLine {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos > self.len || buf.is_empty() {
            return Ok(0);
        }
        if self.pos == self.len {
            buf[0] = b'\n';
            self.pos += 1;
            return Ok(1);
        }
        if let Some(head) = self.head.get(self.pos as usize..).filter(|h| !h.is_empty()) {
            let n = head.len().min(buf.len());
            buf.get_mut(..n)
                .unwrap_or_default()
                .copy_from_slice(head.get(..n).unwrap_or_default());
            self.pos += n as u64;
            return Ok(n);
        }
        let n = (buf.len() as u64).min(self.len - self.pos) as usize;
        buf.get_mut(..n).unwrap_or_default().fill(b'x');
        self.pos += n as u64;
        Ok(n)
    }
}

/// Peak resident memory of this process in KiB (Linux), to check that a scan stays bounded.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.00 GiB is free.";

#[test]
fn empty_input_has_nothing_to_explain() {
    for input in ["", "\n\n\r\n", "   \t  \n"] {
        let e = explain_str(input);
        assert_eq!(e.category, Category::Unknown);
        assert!(e.cause.starts_with("Nothing to explain"), "{}", e.cause);
    }
}

#[test]
fn binary_garbage_is_harmless() {
    // xorshift bytes: deterministic, every byte value, no structure.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let data: Vec<u8> = (0..8 * 1024 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let e = explain_reader(Cursor::new(&data));
    assert_eq!(e.stats.bytes, data.len() as u64);
    assert!(e.cause.len() < 10_000);
    // Garbage with an error in the middle: still found.
    let mut mixed = data.get(..100_000).unwrap_or_default().to_vec();
    mixed.extend_from_slice(b"\nAssertionError: Torch not compiled with CUDA enabled\n");
    mixed.extend_from_slice(data.get(100_000..200_000).unwrap_or_default());
    assert_eq!(
        explain_reader(Cursor::new(mixed)).category,
        Category::CpuOnlyWheel
    );
}

#[test]
fn invalid_utf8_around_an_error() {
    let mut data = vec![0xff, 0xfe, 0xc3, b'\n', 0x80, 0x80];
    data.extend_from_slice("ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory \u{fffd}".as_bytes());
    data.extend_from_slice(&[0xed, 0xa0, 0x80, b'\n', 0xf8, 0x88]);
    let e = explain_reader(Cursor::new(data));
    assert_eq!(e.category, Category::LibraryPath);
    assert_eq!(
        e.fields.get("lib").map(String::as_str),
        Some("libcudart.so.11.0")
    );
}

#[test]
fn large_inputs_stay_bounded() {
    let before = peak_rss_kib();

    // 100 MB log, error near the end, streamed through a reader (nothing on disk).
    let total: u64 = 100 * 1024 * 1024;
    let start = Instant::now();
    let log = SyntheticLog::new(total, total - 10_000, OOM);
    let e = explain_reader(BufReader::with_capacity(64 * 1024, log));
    let took = start.elapsed();
    println!(
        "100 MB log: {:?}, {} lines, {} candidate lines",
        took, e.stats.lines, e.stats.candidate_lines
    );
    assert_eq!(e.category, Category::OutOfMemory);
    assert!(e.stats.bytes >= total);
    assert!(e.stats.lines > 500_000);

    // A single 100 MB line: only the first MAX_LINE_BYTES are examined, the rest is consumed.
    let line = OneLongLine {
        head: b"AssertionError: Torch not compiled with CUDA enabled ".to_vec(),
        len: 100 * 1024 * 1024,
        pos: 0,
    };
    let start = Instant::now();
    let e = explain_reader(BufReader::new(line));
    println!("100 MB line: {:?}", start.elapsed());
    assert_eq!(e.category, Category::CpuOnlyWheel);
    assert_eq!(e.stats.truncated_lines, 1);
    assert_eq!(e.stats.lines, 1);
    assert_eq!(e.stats.bytes, 100 * 1024 * 1024 + 1);
    assert!(e.matched.iter().all(|m| m.text.len() < MAX_LINE_BYTES));

    if let (Some(b), Some(a)) = (before, peak_rss_kib()) {
        println!("peak RSS {b} KiB -> {a} KiB");
        // Other tests of this binary run concurrently (8 MB of garbage); 64 MB is a generous bound
        // for "not proportional to the input" when 200 MB went through.
        assert!(
            a.saturating_sub(b) < 64 * 1024,
            "peak RSS grew by {} KiB",
            a - b
        );
    }
}

#[test]
fn one_gigabyte_log() {
    if std::env::var_os("CUDOCTOR_EXPLAIN_HUGE").is_none() {
        cudoctor_testkit::skip_opt_in(
            "one_gigabyte_log",
            "CUDOCTOR_EXPLAIN_HUGE=1 (and use --release) to scan a generated 1 GB log",
        );
        return;
    }
    let before = peak_rss_kib();
    let total: u64 = 1024 * 1024 * 1024;
    let start = Instant::now();
    let log = SyntheticLog::new(
        total,
        total / 2,
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12020).",
    );
    let e = explain_reader(BufReader::with_capacity(64 * 1024, log));
    println!("1 GB log: {:?}, {} lines", start.elapsed(), e.stats.lines);
    assert_eq!(e.category, Category::DriverTooOld);
    assert_eq!(e.fields.get("found_cuda").map(String::as_str), Some("12.2"));
    if let (Some(b), Some(a)) = (before, peak_rss_kib()) {
        assert!(
            a.saturating_sub(b) < 64 * 1024,
            "peak RSS grew by {} KiB",
            a - b
        );
    }
}
