//! The bounded fuzz campaign of every target (see docs/fuzzing.md): seeds, then seeded
//! mutants for `CUDOCTOR_FUZZ_SECONDS` per target (default 3; CI sets more), each input under
//! a time limit and an allocation limit. `CUDOCTOR_FUZZ_SEED` repeats a run's mutants.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use cudoctor_fuzz::campaign::{self, Limits, Meter};

/// What one input may allocate at once: far above any real parse of inputs of at most 256 KiB,
/// far below what an unbounded table read reaches.
const MAX_ALLOC: usize = 256 << 20;
/// Past this the allocator refuses (the process aborts, the current input is on disk): an
/// allocation that large would take the machine down before the campaign could measure it.
const HARD_CAP: usize = 2 << 30;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Counts live bytes per thread (parsers run on the campaign's worker thread).
struct Counting;

// The one unsafe block of the workspace's tests: a global allocator must implement the unsafe
// GlobalAlloc trait. It only counts and forwards to the system allocator.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !track(layout.size() as isize) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged; the caller upholds GlobalAlloc's contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        track(-(layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !track(layout.size() as isize) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !track(new_size as isize - layout.size() as isize) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Adds `delta` to this thread's live bytes; false when that would pass [`HARD_CAP`].
fn track(delta: isize) -> bool {
    LIVE.try_with(|live| {
        let now = live.get().saturating_add(delta);
        if now > HARD_CAP as isize {
            return false;
        }
        live.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        true
    })
    .unwrap_or(true)
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

struct ThreadMeter;

impl Meter for ThreadMeter {
    fn start(&self) {
        let live = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(live));
        BASE.with(|b| b.set(live));
    }
    fn peak(&self) -> usize {
        let base = BASE.with(Cell::get);
        (PEAK.with(Cell::get) - base).max(0) as usize
    }
}

thread_local! {
    static BASE: Cell<isize> = const { Cell::new(0) };
}

fn limits() -> Limits {
    let seconds = std::env::var("CUDOCTOR_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Limits {
        budget: Duration::from_secs_f64(seconds),
        // Unoptimised builds parse a 256 KiB input in milliseconds; seconds mean a hang.
        per_input: Duration::from_secs(10),
        max_len: 256 << 10,
        max_alloc: MAX_ALLOC,
    }
}

/// The run's seed: `CUDOCTOR_FUZZ_SEED` (hex), else the clock.
fn base_seed() -> u64 {
    std::env::var("CUDOCTOR_FUZZ_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// Each target its own sequence from one seed.
fn rng_seed(base: u64, name: &str) -> u64 {
    name.bytes().fold(base, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn campaign_of(name: &str) {
    let target = cudoctor_fuzz::target(name).expect("a target of that name");
    static METER: ThreadMeter = ThreadMeter;
    let base = base_seed();
    match campaign::run(target, &limits(), rng_seed(base, name), &METER) {
        Ok(report) => eprintln!("fuzz {report}"),
        Err(failure) => panic!(
            "fuzz {name}: {failure}\n(repeat: CUDOCTOR_FUZZ_SEED={base:x} cargo test -p cudoctor-fuzz --test bounded fuzz_{name})"
        ),
    }
}

#[test]
fn every_target_is_tested_here() {
    let names: Vec<&str> = cudoctor_fuzz::TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "elf",
            "fatbin",
            "pe",
            "ld_so_cache",
            "tool_output",
            "python_metadata",
            "snapshot",
            "explain",
            "fleet_frames",
            "values",
            "machine_files",
            "mcp",
            "dcgm_diag",
            "kernel_log"
        ]
    );
}

#[test]
fn fuzz_elf() {
    campaign_of("elf");
}

#[test]
fn fuzz_fatbin() {
    campaign_of("fatbin");
}

#[test]
fn fuzz_pe() {
    campaign_of("pe");
}

#[test]
fn fuzz_ld_so_cache() {
    campaign_of("ld_so_cache");
}

#[test]
fn fuzz_tool_output() {
    campaign_of("tool_output");
}

#[test]
fn fuzz_python_metadata() {
    campaign_of("python_metadata");
}

#[test]
fn fuzz_snapshot() {
    campaign_of("snapshot");
}

#[test]
fn fuzz_explain() {
    campaign_of("explain");
}

#[test]
fn fuzz_fleet_frames() {
    campaign_of("fleet_frames");
}

#[test]
fn fuzz_values() {
    campaign_of("values");
}

#[test]
fn fuzz_machine_files() {
    campaign_of("machine_files");
}

#[test]
fn fuzz_mcp() {
    campaign_of("mcp");
}

#[test]
fn fuzz_dcgm_diag() {
    campaign_of("dcgm_diag");
}

#[test]
fn fuzz_kernel_log() {
    campaign_of("kernel_log");
}
