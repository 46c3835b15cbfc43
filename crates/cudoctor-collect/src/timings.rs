//! Where the time of one run goes: wall-time spans of the probes and of the command's own
//! steps (judging, rendering, exit), printed to stderr when CUDOCTOR_TIMINGS is set (for
//! benchmarking; off by default), with the process's peak memory. Times count from the process's start as the binary marks it
//! ([`mark_start`]), so the spans of a check add up to its wall time.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The spans of this process.
pub struct Timings {
    enabled: bool,
    spans: Mutex<Vec<(&'static str, f64, f64)>>,
}

static START: OnceLock<Instant> = OnceLock::new();

/// Marks now as the process's start (the first call counts; later ones change nothing).
pub fn mark_start() {
    START.get_or_init(Instant::now);
}

/// Milliseconds since [`mark_start`] (or since the first time anything asked).
fn now_ms() -> f64 {
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

/// The process's timings, on when CUDOCTOR_TIMINGS is set in its environment.
pub fn global() -> &'static Timings {
    static TIMINGS: OnceLock<Timings> = OnceLock::new();
    TIMINGS.get_or_init(|| Timings {
        enabled: std::env::var_os("CUDOCTOR_TIMINGS").is_some(),
        spans: Mutex::new(Vec::new()),
    })
}

impl Timings {
    /// Runs `f`, recording its span under `name` when timings are on.
    pub fn time<T>(&self, name: &'static str, f: impl FnOnce() -> T) -> T {
        if !self.enabled {
            return f();
        }
        let begin = now_ms();
        let out = f();
        self.record(name, begin, now_ms());
        out
    }

    /// Records that `name` ran from `begin` (milliseconds since the start) until now.
    pub fn since(&self, name: &'static str, begin: f64) {
        if self.enabled {
            self.record(name, begin, now_ms());
        }
    }

    /// Milliseconds since the process's start (for [`Timings::since`]).
    pub fn now(&self) -> f64 {
        if self.enabled {
            now_ms()
        } else {
            0.0
        }
    }

    fn record(&self, name: &'static str, begin: f64, end: f64) {
        if let Ok(mut spans) = self.spans.lock() {
            spans.push((name, begin, end));
        }
    }

    /// Prints the spans recorded so far, in the order they ended, and forgets them.
    pub fn report(&self) {
        if !self.enabled {
            return;
        }
        let Ok(mut spans) = self.spans.lock() else {
            return;
        };
        use std::io::Write as _;
        // A standard error that cannot be written loses the timings, never the run.
        let mut err = std::io::stderr().lock();
        for (name, begin, end) in spans.drain(..) {
            let _ = writeln!(
                err,
                "cudoctor timing: {name:9} {begin:7.1} ms -> {end:7.1} ms ({:.1} ms)",
                end - begin
            );
        }
        if let Some(memory) = memory() {
            let _ = writeln!(err, "cudoctor memory: {memory}");
        }
    }
}

/// The process's peak and current resident memory, and what the current is made of (heap and
/// other anonymous pages, pages of mapped files), as /proc/self/status gives them.
fn memory() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let fields: Vec<String> = ["VmHWM", "VmRSS", "RssAnon", "RssFile"]
        .iter()
        .filter_map(|key| {
            let line = status.lines().find(|l| l.starts_with(&format!("{key}:")))?;
            let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{key} {:.1} MiB", kib / 1024.0))
        })
        .collect();
    (!fields.is_empty()).then(|| fields.join(", "))
}
