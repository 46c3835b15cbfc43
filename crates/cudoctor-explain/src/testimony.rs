//! What a report says, in prose, of whose the failure is, beside its errors. Users who found
//! the fault in the program say so in a few shapes, whatever the program:
//!
//! - the program is meant to work on a machine without a GPU, and does not ("unable to build
//!   without CUDA", "not running on a server without GPU"): that it asks for a GPU there is its
//!   own doing, whatever its error says of the missing driver or CUDA;
//! - the failure came with a change of the program's source ("does not happen on commits
//!   before 4c37636", "bisected it to commit ..."): the machine did not change;
//! - the program imports a package its declared requirements leave out ("X is needed but not
//!   specified in requirements"): the packaging's omission, not the user's environment;
//! - the report locates a defect in the program's own build files or the flags its build sets
//!   ("flag position incorrect in build.ninja", "a typo in setup.py", "which will incorrectly set
//!   the nvcc parameter"): whatever the compiler then says, its input was wrong.
//!   "Missing in setup.py" is left out: an architecture missing from a build's list is the
//!   build's target, which the corpora label as the GPU's kernel image missing;
//! - the report says the published build itself is broken ("broken nightly pip install", "the
//!   3.1 wheel is broken"): a packaging mistake of the project, not the user's setup. What a
//!   wheel is said to miss is left out: "kernels missing from the wheel" is the GPU's
//!   architecture left out of the build, "the wheel is missing CUDA" a CPU build;
//! - the report finds the GPU's memory leaking while the program runs ("memory leak during
//!   training", "显存泄漏", confirmed by the run that leaks: a step, an epoch, training,
//!   inference, or memory that keeps growing): an out-of-memory that follows is the program
//!   holding what it should free, not a card too small or memory held by another process.
//!   Memory left behind after a failure ("失败之后的内存泄漏") is not this: that is memory held
//!   by a process, which the out-of-memory answer already covers.
//!
//! Alone these name no cause; beside an answer of the environment they say the reporter found
//! the environment sound, and the answer becomes the program's. Statements that another program
//! or the same stack elsewhere works are *not* read so: on the tuning corpora the reports of
//! real environment faults say it as often ("works fine with the official image", "works
//! normally with other CUDA applications"), since each program brings its own build.

use crate::scanner::{shorten_ref, tail_ref};
use aho_corasick::AhoCorasick;
use std::sync::OnceLock;

/// Whose fault the words of [`ANCHORS`] tell, once [`confirmed`] by the text around them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Testimony {
    /// The program is meant to run (or build) on a machine without a GPU, and fails there.
    WithoutGpuByDesign,
    /// The failure began with a commit of the program's source.
    ProgramRegression,
    /// A package the program imports is missing from its declared requirements.
    UndeclaredDependency,
    /// A defect the report locates in the program's own build files.
    BuildFileDefect,
    /// The project's published build (a release, a nightly, a wheel) is said to be broken.
    PublishedBuildBroken,
    /// The program was told to run on the CPU (its CPU option, a CPU device) and still fails
    /// for lack of CUDA: it asks for the GPU regardless.
    CpuAsked,
    /// The report finds the failing value hard-coded in the program (a soname, a device).
    HardCoded,
    /// The report finds the program's GPU memory leaking while it runs: an out-of-memory is
    /// the program's.
    MemoryLeak,
}

/// The anchor words and what each tells.
const ANCHORS: &[(&str, Testimony)] = &[
    ("without gpu", Testimony::WithoutGpuByDesign),
    ("without a gpu", Testimony::WithoutGpuByDesign),
    ("without any gpu", Testimony::WithoutGpuByDesign),
    ("without an nvidia", Testimony::WithoutGpuByDesign),
    ("without nvidia", Testimony::WithoutGpuByDesign),
    ("without cuda", Testimony::WithoutGpuByDesign),
    ("without a cuda", Testimony::WithoutGpuByDesign),
    ("没有gpu的", Testimony::WithoutGpuByDesign),
    ("无gpu的", Testimony::WithoutGpuByDesign),
    ("commits previous to", Testimony::ProgramRegression),
    ("commits prior to", Testimony::ProgramRegression),
    ("commits before", Testimony::ProgramRegression),
    ("commit before", Testimony::ProgramRegression),
    ("commit previous to", Testimony::ProgramRegression),
    ("commit prior to", Testimony::ProgramRegression),
    ("since commit", Testimony::ProgramRegression),
    ("after commit", Testimony::ProgramRegression),
    ("introduced by commit", Testimony::ProgramRegression),
    ("introduced in commit", Testimony::ProgramRegression),
    ("bisected", Testimony::ProgramRegression),
    ("git bisect", Testimony::ProgramRegression),
    (
        "not specified in requirements",
        Testimony::UndeclaredDependency,
    ),
    (
        "not specified in the requirements",
        Testimony::UndeclaredDependency,
    ),
    (
        "not listed in requirements",
        Testimony::UndeclaredDependency,
    ),
    (
        "not listed in the requirements",
        Testimony::UndeclaredDependency,
    ),
    (
        "not declared in requirements",
        Testimony::UndeclaredDependency,
    ),
    (
        "not included in requirements",
        Testimony::UndeclaredDependency,
    ),
    (
        "not included in the requirements",
        Testimony::UndeclaredDependency,
    ),
    ("missing from requirements", Testimony::UndeclaredDependency),
    (
        "missing from the requirements",
        Testimony::UndeclaredDependency,
    ),
    ("not in requirements.txt", Testimony::UndeclaredDependency),
    (
        "missing from requirements.txt",
        Testimony::UndeclaredDependency,
    ),
    ("incorrect in", Testimony::BuildFileDefect),
    ("wrong in", Testimony::BuildFileDefect),
    ("bug in", Testimony::BuildFileDefect),
    ("typo in", Testimony::BuildFileDefect),
    ("mistake in", Testimony::BuildFileDefect),
    ("incorrectly set", Testimony::BuildFileDefect),
    ("wrongly set", Testimony::BuildFileDefect),
    ("incorrectly pass", Testimony::BuildFileDefect),
    ("wrongly pass", Testimony::BuildFileDefect),
    // A release of the program that works where the next fails ("5.1.0 works fine on the same
    // system", "3.14 is fine"): confirmed by the version right before it.
    ("works fine", Testimony::ProgramRegression),
    ("worked fine", Testimony::ProgramRegression),
    ("was fine", Testimony::ProgramRegression),
    ("is fine", Testimony::ProgramRegression),
    ("--cpu", Testimony::CpuAsked),
    ("device='cpu'", Testimony::CpuAsked),
    ("device=\"cpu\"", Testimony::CpuAsked),
    ("device=cpu", Testimony::CpuAsked),
    ("cpu mode", Testimony::CpuAsked),
    ("使用cpu", Testimony::CpuAsked),
    ("用cpu", Testimony::CpuAsked),
    ("cpu模式", Testimony::CpuAsked),
    ("hardcodes", Testimony::HardCoded),
    ("hard-codes", Testimony::HardCoded),
    ("hardcoded", Testimony::HardCoded),
    ("hard-coded", Testimony::HardCoded),
    ("hard coded", Testimony::HardCoded),
    ("memory leak", Testimony::MemoryLeak),
    ("leaks memory", Testimony::MemoryLeak),
    ("leaking memory", Testimony::MemoryLeak),
    ("memory is leaking", Testimony::MemoryLeak),
    ("memory keeps leaking", Testimony::MemoryLeak),
    ("显存泄漏", Testimony::MemoryLeak),
    ("显存泄露", Testimony::MemoryLeak),
    ("内存泄漏", Testimony::MemoryLeak),
    ("内存泄露", Testimony::MemoryLeak),
    ("broken nightly", Testimony::PublishedBuildBroken),
    ("broken release", Testimony::PublishedBuildBroken),
    ("broken wheel", Testimony::PublishedBuildBroken),
    ("nightly is broken", Testimony::PublishedBuildBroken),
    ("release is broken", Testimony::PublishedBuildBroken),
    ("wheel is broken", Testimony::PublishedBuildBroken),
    ("wheels are broken", Testimony::PublishedBuildBroken),
];

/// A program's own build files, by name.
const BUILD_FILES: [&str; 8] = [
    "build.ninja",
    "setup.py",
    "cmakelists",
    "makefile",
    "pyproject.toml",
    "build.sh",
    "build script",
    "meson.build",
];

/// What a build sets that a report may say it sets wrongly.
const BUILD_FLAGS: [&str; 5] = ["parameter", "flag", "option", "argument", "-gencode"];

/// How far after "incorrect in" the build file is looked for (bytes).
const BUILD_FILE_REACH: usize = 24;

/// How far before "without GPU" the failure to run or build is looked for (bytes).
const WITHOUT_REACH: usize = 48;

/// Words that say the program does not work in the setting named after them.
const NOT_WORKING: &[&str] = &[
    "unable to",
    "can't",
    "cannot",
    "can not",
    "not running",
    "not run",
    "not work",
    "not build",
    "not start",
    "fails to",
    "failed to",
    "fail to",
    "doesn't",
    "does not",
    "won't",
    "no longer",
    "broken",
    "无法",
    "不能",
];

/// The verbs of a program run, built or installed somewhere (their stems).
const RUN_VERBS: [&str; 7] = [
    "run", "build", "work", "start", "install", "deploy", "compil",
];

/// Words that say the setting is a property of a build ("compiled without CUDA"): a package
/// built so is an environment's CPU build, not a program meant for machines without a GPU.
const BUILT_WITHOUT: &[&str] = &["compiled", "built", "compile", "编译"];

fn automaton() -> Option<&'static AhoCorasick> {
    static AC: OnceLock<Option<AhoCorasick>> = OnceLock::new();
    AC.get_or_init(|| crate::words_automaton(ANCHORS.iter().map(|(w, _)| *w)))
        .as_ref()
}

/// Every anchor word (the scan's gate must not pass over their lines).
pub fn literals() -> impl Iterator<Item = &'static str> {
    ANCHORS.iter().map(|(w, _)| *w)
}

/// What the line testifies, if anything.
pub fn testimony_of(line: &str) -> Option<Testimony> {
    automaton()?
        .find_overlapping_iter(line)
        .filter_map(|m| {
            let (anchor, t) = ANCHORS.get(m.pattern().as_usize())?;
            let before = line.get(..m.start()).unwrap_or_default();
            let after = line.get(m.end()..).unwrap_or_default();
            confirmed(anchor, *t, before, after).then_some(*t)
        })
        .next()
}

/// Words that say a run still fails: after the CPU was asked for, the failure is the program's.
const STILL_FAILS: [&str; 8] = [
    "still",
    "even",
    "还是",
    "仍然",
    "依然",
    "doesn't work",
    "does not work",
    "not working",
];

/// Words right after a CPU setting that make it a build of the package, or a run that works.
const CPU_RUN_WORKS: [&str; 11] = [
    "版",
    "version",
    "build",
    "wheel",
    "package",
    "无问题",
    "没问题",
    "正常",
    "works",
    "fine",
    "no problem",
];

/// How far around a CPU setting its failure, and after "hard-coded" what is hard-coded, are
/// looked for (bytes).
const NEAR_REACH: usize = 80;

/// Words of a run that goes on (or of memory that grows with it): a leak said with one of them
/// is the program's while it runs.
const RUN_GOES_ON: [&str; 25] = [
    "training",
    "train",
    "epoch",
    "iteration",
    "step",
    "batch",
    "inference",
    "loop",
    "over time",
    "increas",
    "grow",
    "keeps",
    "each call",
    "every call",
    "训练",
    "推理",
    "增长",
    "增加",
    "持续",
    "迭代",
    "during",
    "evaluat",
    "validat",
    "验证",
    "测试",
];

/// The stack's names: a version of one of them that works is the environment's, not a release
/// of the program.
const STACK_NAMES: [&str; 12] = [
    "cuda",
    "driver",
    "nvidia",
    "torch",
    "pytorch",
    "tensorflow",
    "jax",
    "cudnn",
    "nccl",
    "toolkit",
    "python",
    "gcc",
];

/// Whether `before` ends with a version ("5.1.0 ", "v3.14 ") that is not a version of the
/// stack's ("CUDA 11.8 works fine" is the environment's).
fn release_before(before: &str) -> bool {
    let mut words = before.split_whitespace().rev();
    let Some(version) = words.next() else {
        return false;
    };
    let v = version.trim_start_matches(['v', 'V']);
    let is_version = v.contains('.')
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let owner = words.next().unwrap_or_default().to_ascii_lowercase();
    is_version && !STACK_NAMES.iter().any(|n| owner.contains(n))
}

/// Whether the text around an anchor makes it the testimony: "without GPU" after words that
/// say the program does not run or build there (and not after "compiled"); a commit with
/// its hash or a bisection; an undeclared requirement as said.
fn confirmed(anchor: &str, t: Testimony, before: &str, after: &str) -> bool {
    match t {
        Testimony::WithoutGpuByDesign => {
            let near = tail_ref(before, WITHOUT_REACH).to_lowercase();
            if BUILT_WITHOUT.iter().any(|w| near.contains(w)) {
                return false;
            }
            // The negation governs "without GPU" in one clause: a verb of running or building
            // (in the negation, "not running", or right after it, "unable to build"), then at
            // most a place ("on a server"); a clause break between ("can't use the GPU, running
            // without GPU") makes "without GPU" a fallback the program took, not a setting.
            NOT_WORKING.iter().any(|w| {
                near.rfind(w).is_some_and(|i| {
                    let between = near.get(i + w.len()..).unwrap_or_default();
                    let words: Vec<&str> = between.split_whitespace().collect();
                    let verb_in_negation = RUN_VERBS.iter().any(|v| w.ends_with(v));
                    let verb_next = words
                        .first()
                        .is_some_and(|first| RUN_VERBS.iter().any(|v| first.starts_with(v)));
                    !between.contains([',', '.', ';', ':'])
                        && words.len() <= 6
                        // A Chinese negation ("无法", "不能"): its verb is not a word apart.
                        && (verb_in_negation || verb_next || !w.is_ascii())
                })
            })
        }
        Testimony::ProgramRegression if anchor.ends_with("fine") => release_before(before),
        Testimony::CpuAsked => {
            // Told to run on the CPU, and still failing: said before or after the setting. A
            // CPU build ("使用CPU版的paddle") is the package, and a CPU run that works ("使用cpu无问题")
            // is no failure of it.
            let next = shorten_ref(after, 12).to_lowercase();
            if CPU_RUN_WORKS.iter().any(|w| next.contains(w)) {
                return false;
            }
            let near = |text: &str| {
                let lower = text.to_lowercase();
                STILL_FAILS.iter().any(|w| lower.contains(w))
            };
            near(tail_ref(before, NEAR_REACH)) || near(shorten_ref(after, NEAR_REACH))
        }
        Testimony::HardCoded => {
            // What is hard-coded is a library, a device or a path the failure names.
            let near = shorten_ref(after, NEAR_REACH).to_ascii_lowercase();
            [".so", ".dll", "cuda", "device", "path", "/usr/"]
                .iter()
                .any(|w| near.contains(w))
        }
        Testimony::ProgramRegression => {
            // A commit named by its hash (seven or more hex digits), or a bisection.
            let hash = after
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
                .take(3)
                .any(|w| w.len() >= 7 && w.bytes().all(|b| b.is_ascii_hexdigit()));
            let rest = after.trim_start();
            hash || anchor == "git bisect"
                || anchor == "bisected" && (rest.starts_with("to ") || rest.starts_with("it to "))
        }
        Testimony::UndeclaredDependency | Testimony::PublishedBuildBroken => true,
        Testimony::MemoryLeak => {
            let near = format!(
                "{} {}",
                tail_ref(before, NEAR_REACH),
                shorten_ref(after, NEAR_REACH)
            )
            .to_lowercase();
            // Memory left behind after a failure or held by another process is no leak of the
            // running program's.
            let left_behind = ["之后", "after the", "after a", "zombie", "another process"]
                .iter()
                .any(|w| near.contains(w));
            !left_behind && RUN_GOES_ON.iter().any(|w| near.contains(w))
        }
        Testimony::BuildFileDefect => {
            let near = shorten_ref(after, BUILD_FILE_REACH + 8).to_ascii_lowercase();
            // "incorrectly set(s)/pass(es)": what is set must be a flag of the build, not the
            // environment torch's own message speaks of ("an incorrectly set up environment").
            if anchor.starts_with("incorrectly") || anchor.starts_with("wrongly") {
                return BUILD_FLAGS.iter().any(|f| near.contains(f));
            }
            BUILD_FILES.iter().any(|f| near.contains(f))
        }
    }
}

/// The first line of each testimony a report gives, in the order they come: each speaks of
/// some answers only (a leak of memory, a CPU run of a missing CUDA), so one must not hide the
/// next.
#[derive(Debug, Default, Clone)]
pub struct Testimonies {
    pub each: Vec<(u64, String, Testimony)>,
}

impl Testimonies {
    pub fn feed(&mut self, line_no: u64, line: &str) {
        let Some(t) = testimony_of(line) else {
            return;
        };
        if !self.each.iter().any(|(_, _, seen)| *seen == t) {
            self.each.push((line_no, crate::scanner::shown(line), t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_meant_for_machines_without_a_gpu() {
        assert_eq!(
            testimony_of("Cannot start the app on a laptop without a GPU"),
            Some(Testimony::WithoutGpuByDesign)
        );
        // A build's own property is the environment's CPU build.
        assert_eq!(
            testimony_of("The installed version of foo was compiled without GPU support"),
            None
        );
        // Said without a failure of the program, it is no testimony.
        assert_eq!(testimony_of("I ran it on a box without a GPU"), None);
        // A fallback the program took after failing is no setting of the user's.
        assert_eq!(
            testimony_of("It can't use the card, so it is running without GPU acceleration"),
            None
        );
        assert_eq!(
            testimony_of("Unable to build without CUDA"),
            Some(Testimony::WithoutGpuByDesign)
        );
    }

    #[test]
    fn a_regression_located_in_the_program_s_history() {
        assert_eq!(
            testimony_of("It started after commit 9f3e2a1 of the server"),
            Some(Testimony::ProgramRegression)
        );
        assert_eq!(
            testimony_of("I bisected it to the change that reworked the loader"),
            Some(Testimony::ProgramRegression)
        );
        assert_eq!(testimony_of("since commit of my changes it fails"), None);
    }

    #[test]
    fn a_release_of_the_program_that_works_where_the_next_fails() {
        for line in [
            "4.2.0 works fine on the same machine",
            "v3.14 is fine, 3.15 fails",
            "the tool 0.45.0 was fine",
        ] {
            assert_eq!(
                testimony_of(line),
                Some(Testimony::ProgramRegression),
                "{line}"
            );
        }
        // A version of the stack that works is the environment's; no version, no release.
        for line in [
            "CUDA 11.8 works fine, 12.1 fails",
            "driver 535.104 is fine",
            "everything else works fine",
        ] {
            assert_eq!(testimony_of(line), None, "{line}");
        }
    }

    #[test]
    fn a_cpu_run_that_still_asks_for_cuda() {
        for line in [
            "I run it with --cpu but it doesn't work, Torch not compiled with CUDA enabled",
            "已经改成使用CPU执行，结果还是报错",
            "even with device='cpu' it looks for nvcuda.dll",
        ] {
            assert_eq!(testimony_of(line), Some(Testimony::CpuAsked), "{line}");
        }
        // A CPU build of the package, a CPU run that works, or a CPU option with no failure.
        for line in [
            "使用CPU版的paddle报错, still",
            "使用cpu无问题，勾选CUDA加速报错",
            "you can pass --cpu to run without a GPU",
        ] {
            assert_eq!(testimony_of(line), None, "{line}");
        }
    }

    #[test]
    fn a_leak_of_the_running_program() {
        for line in [
            "Memory leak during training, CUDA out of memory after 2 epochs",
            "GPU memory leakage: usage keeps increasing every iteration",
            "疑似显存泄漏，训练过程中显存持续增长",
            "There appears to be a memory leak during the validation routine",
            "GPU memory leakage during evaluation",
        ] {
            assert_eq!(testimony_of(line), Some(Testimony::MemoryLeak), "{line}");
        }
        // Memory left behind by a failed run, or a leak said of nothing that runs.
        for line in [
            "应该是运行 run_trian.sh 报上面的失败之后的内存泄漏",
            "is there a memory leak?",
        ] {
            assert_eq!(testimony_of(line), None, "{line}");
        }
    }

    #[test]
    fn a_value_hard_coded_in_the_program() {
        assert_eq!(
            testimony_of("the preload fails because it hardcodes `libcudart.so.12`"),
            Some(Testimony::HardCoded)
        );
        assert_eq!(testimony_of("the answer is hard-coded in the test"), None);
    }
}
