//! The bounded campaign on stable Rust: every seed as it is, then seeded mutants until the
//! time budget is spent. Each input runs on a worker thread under a watchdog, so a hang is
//! reported (with the input) instead of stalling the run; a panic is caught and reported; an
//! allocation meter (the caller's global allocator) bounds what one input may allocate.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::mutate::{mutate, Rng};
use crate::Target;

/// Bounds of one campaign.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time for the whole campaign of one target (the seeds always run, however long).
    pub budget: Duration,
    /// Longest one input may take before it counts as a hang.
    pub per_input: Duration,
    /// Longest mutant (seeds longer than this are kept whole).
    pub max_len: usize,
    /// Most bytes one input may have allocated at once.
    pub max_alloc: usize,
}

/// Measures the allocation of the thread it is called on (a global allocator's counters).
pub trait Meter: Sync {
    /// Starts a new measurement on this thread.
    fn start(&self);
    /// The most bytes live at once on this thread since [`Meter::start`].
    fn peak(&self) -> usize;
}

/// No measurement (for drivers without a counting allocator).
pub struct NoMeter;

impl Meter for NoMeter {
    fn start(&self) {}
    fn peak(&self) -> usize {
        0
    }
}

/// What a campaign did.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: &'static str,
    pub seeds: usize,
    pub inputs: u64,
    pub rng_seed: u64,
    pub slowest: Duration,
    pub peak_alloc: usize,
    pub elapsed: Duration,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} inputs ({} seeds) in {:.1} s, seed {:#x}; slowest {:.1} ms, largest allocation {} KiB",
            self.target,
            self.inputs,
            self.seeds,
            self.elapsed.as_secs_f64(),
            self.rng_seed,
            self.slowest.as_secs_f64() * 1e3,
            self.peak_alloc >> 10
        )
    }
}

/// A defect, with the input that shows it saved to a file.
#[derive(Debug)]
pub enum Failure {
    Seeds(String),
    Panic { message: String, input: PathBuf },
    Hang { limit: Duration, input: PathBuf },
    Allocation { bytes: usize, input: PathBuf },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Seeds(e) => write!(f, "seed corpus: {e}"),
            Failure::Panic { message, input } => {
                write!(f, "panic: {message}; input saved to {}", input.display())
            }
            Failure::Hang { limit, input } => write!(
                f,
                "no answer after {:.1} s (a hang); input saved to {}",
                limit.as_secs_f64(),
                input.display()
            ),
            Failure::Allocation { bytes, input } => write!(
                f,
                "one input allocated {} MiB at once; input saved to {}",
                bytes >> 20,
                input.display()
            ),
        }
    }
}

/// The seed inputs of `target`: every file under its seed paths, sorted. A seed path that
/// does not exist is an error: a campaign without its seeds would test little and say nothing.
pub fn seeds(target: &Target) -> Result<Vec<Vec<u8>>, String> {
    let root = crate::workspace_root();
    let mut files = Vec::new();
    for s in target.seeds {
        let p = root.join(s);
        collect_files(&p, &mut files).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        out.push(std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    if out.is_empty() {
        return Err(format!("no seed files for {}", target.name));
    }
    Ok(out)
}

fn collect_files(p: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::metadata(p)?;
    if meta.is_dir() {
        for e in std::fs::read_dir(p)? {
            collect_files(&e?.path(), out)?;
        }
    } else if meta.is_file() {
        out.push(p.to_path_buf());
    }
    Ok(())
}

/// Where a campaign keeps its current input and its failures.
pub fn out_dir(target: &Target) -> PathBuf {
    std::env::var_os("CUDOCTOR_FUZZ_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target/fuzz"))
        .join(target.name)
}

type Outcome = (Option<String>, Duration, usize);

/// Runs `target` on its seeds, then on mutants until `limits.budget` is spent.
pub fn run(
    target: &'static Target,
    limits: &Limits,
    rng_seed: u64,
    meter: &'static dyn Meter,
) -> Result<Report, Failure> {
    let corpus = seeds(target).map_err(Failure::Seeds)?;
    let dir = out_dir(target);
    std::fs::create_dir_all(&dir).map_err(|e| Failure::Seeds(format!("{}: {e}", dir.display())))?;
    // Kept before each input: if the process dies (an allocation the allocator refuses, a
    // stack overflow), this file is the reproducer.
    let current = dir.join("current");
    let (to_worker, inputs) = mpsc::channel::<Vec<u8>>();
    let (to_main, outcomes) = mpsc::channel::<Outcome>();
    let run_one = target.run;
    std::thread::Builder::new()
        .name(format!("fuzz-{}", target.name))
        .spawn(move || {
            for input in inputs {
                meter.start();
                let started = Instant::now();
                let result = std::panic::catch_unwind(|| run_one(&input));
                let outcome = (
                    result.err().map(|p| panic_message(p.as_ref())),
                    started.elapsed(),
                    meter.peak(),
                );
                if to_main.send(outcome).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| Failure::Seeds(format!("cannot start the worker: {e}")))?;
    let save = |input: &[u8]| {
        let path = dir.join(format!("failure-{:016x}", fnv1a(input)));
        let _ = std::fs::write(&path, input);
        path
    };
    let started = Instant::now();
    let mut rng = Rng::new(rng_seed);
    let mut report = Report {
        target: target.name,
        seeds: corpus.len(),
        inputs: 0,
        rng_seed,
        slowest: Duration::ZERO,
        peak_alloc: 0,
        elapsed: Duration::ZERO,
    };
    // Mutants of mutants too: a few recent ones are mutated again.
    let mut recent: Vec<Vec<u8>> = Vec::new();
    let mut i = 0usize;
    loop {
        let input = if i < corpus.len() {
            corpus[i].clone()
        } else {
            if started.elapsed() >= limits.budget {
                break;
            }
            let base = if !recent.is_empty() && rng.one_in(3) {
                &recent[rng.below(recent.len())]
            } else {
                &corpus[rng.below(corpus.len())]
            };
            mutate(&mut rng, base, target.kind, &corpus, limits.max_len)
        };
        i += 1;
        let _ = std::fs::write(&current, &input);
        if to_worker.send(input.clone()).is_err() {
            return Err(Failure::Panic {
                message: "the worker thread ended".into(),
                input: save(&input),
            });
        }
        let (panicked, took, peak) = match outcomes.recv_timeout(limits.per_input) {
            Ok(o) => o,
            Err(_) => {
                return Err(Failure::Hang {
                    limit: limits.per_input,
                    input: save(&input),
                })
            }
        };
        report.inputs += 1;
        if let Some(message) = panicked {
            return Err(Failure::Panic {
                message,
                input: save(&input),
            });
        }
        if peak > limits.max_alloc {
            return Err(Failure::Allocation {
                bytes: peak,
                input: save(&input),
            });
        }
        report.slowest = report.slowest.max(took);
        report.peak_alloc = report.peak_alloc.max(peak);
        if recent.len() < 16 {
            recent.push(input);
        } else {
            let k = rng.below(recent.len());
            recent[k] = input;
        }
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InputKind, Target};

    fn limits(per_input: Duration) -> Limits {
        Limits {
            budget: Duration::from_millis(300),
            per_input,
            max_len: 1 << 16,
            max_alloc: 1 << 20,
        }
    }

    static PANICS: Target = Target {
        name: "test-panics",
        run: |d| assert!(d.len() % 7 != 3, "length 3 mod 7"),
        seeds: &["crates/cudoctor-fuzz/corpus/ld_so_cache"],
        kind: InputKind::Binary,
    };

    static HANGS: Target = Target {
        name: "test-hangs",
        run: |_| loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        seeds: &["crates/cudoctor-fuzz/corpus/ld_so_cache"],
        kind: InputKind::Binary,
    };

    static NO_SEEDS: Target = Target {
        name: "test-no-seeds",
        run: |_| {},
        seeds: &["crates/cudoctor-fuzz/corpus/does-not-exist"],
        kind: InputKind::Binary,
    };

    #[test]
    fn a_panic_is_reported_with_its_input_saved() {
        match run(&PANICS, &limits(Duration::from_secs(20)), 1, &NoMeter) {
            Err(Failure::Panic { message, input }) => {
                assert!(message.contains("length 3 mod 7"), "{message}");
                assert_eq!(std::fs::read(input).unwrap().len() % 7, 3);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_hang_is_reported_after_the_limit() {
        let started = Instant::now();
        assert!(matches!(
            run(&HANGS, &limits(Duration::from_millis(300)), 1, &NoMeter),
            Err(Failure::Hang { .. })
        ));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn missing_seeds_fail_the_campaign() {
        assert!(matches!(
            run(&NO_SEEDS, &limits(Duration::from_secs(1)), 1, &NoMeter),
            Err(Failure::Seeds(_))
        ));
    }
}
