//! The runtime probe (`--deep`): a Python script shipped inside the binary, run in each target
//! interpreter as a child process with a timeout. cudoctor never imports torch itself: a crash
//! on `import torch` or a hang kills the child, and the report says which stage it died in.

pub mod frameworks;
pub mod parse;

use std::fmt;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudoctor_snapshot::{DeepFacts, ProbeRun, ProbeStatus, PythonEnv};

use crate::host::Host;
use crate::runner;
use parse::{classify, Ending, ProbeOutput};

/// The probe script, run as `python -I -c PROBE_SCRIPT`.
pub const PROBE_SCRIPT: &str = include_str!("probe.py");

/// Default time a probe may take before it is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Time kept back from the probe's own budget to write its report and exit.
const BUDGET_MARGIN: Duration = Duration::from_secs(10);
/// Most stdout kept from one probe, and the longest line read (the report is a few tens of KiB).
const MAX_STDOUT: usize = 4 << 20;
/// Most stderr kept (its tail).
const MAX_STDERR: usize = 256 << 10;

/// Called with each stage a probe starts, for a progress display.
pub type ProgressFn = Arc<dyn Fn(&ProbeProgress) + Send + Sync>;

/// A stage of one probe run, as it starts.
#[derive(Debug, Clone, Copy)]
pub struct ProbeProgress<'a> {
    pub interpreter: &'a str,
    pub stage: &'a str,
}

/// What `--deep` runs and how.
#[derive(Clone)]
pub struct DeepOptions {
    /// Wall time allowed per interpreter; the child is killed after it.
    pub timeout: Duration,
    /// Run with `python -I` (no user site-packages, no PYTHONPATH). On by default: the probe must
    /// see the environment as its own interpreter does, not as this shell's variables bend it.
    pub isolated: bool,
    /// Switch off the fused attention backends before measuring the default dispatch (a test of
    /// the rules: the report must then show a math fallback).
    pub disable_fused: bool,
    /// Stages to skip: `sdpa`, `extensions`, `compile`, `all-reduce`.
    pub skip: Vec<String>,
    /// Attention sequence lengths (default 1024, 4096, 16384).
    pub seq_lens: Option<Vec<u32>>,
    /// All-reduce message sizes in MiB (default 1, 64, 1024).
    pub sizes_mib: Option<Vec<u64>>,
    /// Variables added to the probe's environment (e.g. `NCCL_P2P_DISABLE=1` to compare).
    pub extra_env: Vec<(String, String)>,
    pub progress: Option<ProgressFn>,
}

impl Default for DeepOptions {
    fn default() -> Self {
        DeepOptions {
            timeout: DEFAULT_TIMEOUT,
            isolated: true,
            disable_fused: false,
            skip: Vec::new(),
            seq_lens: None,
            sizes_mib: None,
            extra_env: Vec::new(),
            progress: None,
        }
    }
}

impl fmt::Debug for DeepOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeepOptions")
            .field("timeout", &self.timeout)
            .field("isolated", &self.isolated)
            .field("disable_fused", &self.disable_fused)
            .field("skip", &self.skip)
            .field("seq_lens", &self.seq_lens)
            .field("sizes_mib", &self.sizes_mib)
            .field("extra_env", &self.extra_env)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl DeepOptions {
    /// The probe's command-line arguments.
    pub fn probe_args(&self) -> Vec<String> {
        let budget = self
            .timeout
            .saturating_sub(BUDGET_MARGIN)
            .max(self.timeout / 2);
        let mut args = vec![
            "--budget-s".to_string(),
            format!("{:.0}", budget.as_secs_f64()),
        ];
        if let Some(l) = &self.seq_lens {
            args.push("--seq-lens".into());
            args.push(join(l));
        }
        if let Some(s) = &self.sizes_mib {
            args.push("--sizes-mib".into());
            args.push(join(s));
        }
        if !self.skip.is_empty() {
            args.push("--skip".into());
            args.push(self.skip.join(","));
        }
        if self.disable_fused {
            args.push("--disable-fused".into());
        }
        args
    }
}

impl DeepOptions {
    /// The interpreter as every probe runs it: `-I` unless asked otherwise, with the extra
    /// variables set. The probe's own arguments follow.
    fn python(&self, interpreter: &str) -> Command {
        let mut cmd = Command::new(interpreter);
        if self.isolated {
            cmd.arg("-I");
        }
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
        cmd
    }

    /// The child's bounds: the deep timeout, and how much of its output is kept.
    fn limits(&self, max_stdout: usize, max_stderr: usize) -> runner::Limits {
        runner::Limits {
            timeout: self.timeout,
            max_stdout,
            max_stderr,
            stderr_tail: true,
        }
    }
}

fn join<T: ToString>(xs: &[T]) -> String {
    xs.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// Runs the probe in every environment that has torch, or in the first one found when none
/// has (so the report can say "no torch" from the interpreter's own mouth). Only on the live
/// machine: under `--root` the interpreters belong to another system.
///
/// Every probe process starts at once, each with its own budget: torch's probe and its compile
/// test (two processes per environment, `run_probe`) and each other framework's probe. The wall
/// time is then about the slowest probe's, not their sum; `DeepFacts::wall_s` says which.
pub fn collect(host: &Host, envs: &[PythonEnv], options: &DeepOptions) -> DeepFacts {
    let started = Instant::now();
    let mut targets: Vec<&PythonEnv> = envs
        .iter()
        .filter(|e| e.torch.is_some() && e.interpreter.is_some())
        .collect();
    if targets.is_empty() {
        targets.extend(envs.iter().find(|e| e.interpreter.is_some()));
    }
    let live = host.runs_programs();
    let (runs, frameworks) = std::thread::scope(|scope| {
        let frameworks = scope.spawn(|| frameworks::probe_all(envs, options, live));
        let handles: Vec<_> = targets
            .into_iter()
            .filter_map(|env| {
                let interpreter = env.interpreter.as_deref()?;
                Some(scope.spawn(move || {
                    if live {
                        run_probe(interpreter, Some(&env.prefix), options)
                    } else {
                        ProbeRun {
                            interpreter: interpreter.to_string(),
                            env_prefix: Some(env.prefix.clone()),
                            status: ProbeStatus::NotRunUnderRoot,
                            ..Default::default()
                        }
                    }
                }))
            })
            .collect();
        let runs: Vec<ProbeRun> = handles.into_iter().filter_map(|h| h.join().ok()).collect();
        (runs, frameworks.join().unwrap_or_default())
    });
    let probed = runs.iter().any(|r| r.elapsed_s.is_some())
        || frameworks.iter().any(|f| f.elapsed_s.is_some());
    DeepFacts {
        runs,
        frameworks,
        wall_s: probed.then(|| started.elapsed().as_secs_f64()),
    }
}

/// The stage that runs in a process of its own beside the rest of the torch probe.
const COMPILE: &str = "compile";

/// Runs the probe in one interpreter and classifies how it ended. The compile test (a first
/// `torch.compile`, seconds of Triton and ptxas) runs as a second process at the same time as
/// the rest, with its own budget; its answer is put into the run as if one process had run both,
/// and a crash or hang of the compiler is the run's ending, as it was when it ran last in the
/// same process.
pub fn run_probe(interpreter: &str, env_prefix: Option<&str>, options: &DeepOptions) -> ProbeRun {
    if options.skip.iter().any(|s| s == COMPILE) {
        return run_probe_process(interpreter, env_prefix, options, Part::All);
    }
    std::thread::scope(|scope| {
        let compile =
            scope.spawn(|| run_probe_process(interpreter, env_prefix, options, Part::Compile));
        let mut run = run_probe_process(interpreter, env_prefix, options, Part::AllButCompile);
        if let Ok(compile) = compile.join() {
            merge_compile(&mut run, compile);
        }
        run
    })
}

/// Which stages one probe process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Every stage not skipped.
    All,
    /// Every stage but the compile test.
    AllButCompile,
    /// torch's import, CUDA's answer and the compile test.
    Compile,
}

fn run_probe_process(
    interpreter: &str,
    env_prefix: Option<&str>,
    options: &DeepOptions,
    part: Part,
) -> ProbeRun {
    let mut cmd = options.python(interpreter);
    cmd.arg("-c").arg(PROBE_SCRIPT).args(options.probe_args());
    match part {
        Part::All => {}
        Part::AllButCompile => {
            cmd.args(["--skip", COMPILE]);
        }
        Part::Compile => {
            cmd.args(["--only", COMPILE]);
        }
    }
    let limits = options.limits(MAX_STDOUT, MAX_STDERR);
    let mut output = ProbeOutput::default();
    // Each line as it comes: for progress, and so a hang still leaves the stages it passed.
    let mut on_line = |line: &str| {
        if let Some(stage) = output.apply(line) {
            // The compile process's own import and CUDA stages would repeat the main one's.
            if part == Part::Compile && stage != COMPILE {
                return;
            }
            if let Some(progress) = &options.progress {
                progress(&ProbeProgress {
                    interpreter,
                    stage: &stage,
                });
            }
        }
    };
    let done = runner::run(cmd, &limits, Some(&mut on_line));
    let ending = match done.ending {
        runner::Ending::Exited(code) => Ending::Exited(code),
        runner::Ending::Signalled(sig) => Ending::Signalled(sig),
        runner::Ending::TimedOut => Ending::TimedOut {
            after_s: options.timeout.as_secs_f64(),
        },
        runner::Ending::NotStarted(e) => Ending::NotStarted(e),
    };
    classify(
        interpreter,
        env_prefix,
        ending,
        output,
        &String::from_utf8_lossy(&done.stderr),
        done.elapsed.as_secs_f64(),
    )
}

/// Puts the compile process's answer into the main run: its `compile` report, its stage's
/// time and errors, its process's wall time; and, when torch's probe itself ended well but the
/// compile process crashed or hung, that ending (in the compile stage), as one process running
/// the compile test last would have ended. Nothing is taken when the main run did not get as
/// far as torch (no torch, a failed import: the compile process can only say the same).
fn merge_compile(run: &mut ProbeRun, compile: ProbeRun) {
    let Some(main) = run.result.as_mut() else {
        return;
    };
    if main.torch.is_none() {
        return;
    }
    run.compile_elapsed_s = compile.elapsed_s;
    if let Some(c) = compile.result {
        if c.compile.is_some() {
            main.compile = c.compile;
        }
        main.stages
            .extend(c.stages.into_iter().filter(|s| s.name == COMPILE));
        main.errors
            .extend(c.errors.into_iter().filter(|e| e.starts_with(COMPILE)));
    }
    let compile_failed = matches!(
        compile.status,
        ProbeStatus::Crashed | ProbeStatus::TimedOut | ProbeStatus::BadOutput
    );
    if run.status == ProbeStatus::Ok && compile_failed {
        run.status = compile.status;
        run.detail = compile.detail;
        run.last_stage = compile.last_stage;
        run.exit_code = compile.exit_code;
        run.signal = compile.signal;
        run.stderr_tail = compile.stderr_tail;
        if let Some(r) = run.result.as_mut() {
            // The report of one process that stopped in its last stage.
            r.complete = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_carry_the_options() {
        let o = DeepOptions {
            timeout: Duration::from_secs(60),
            disable_fused: true,
            skip: vec!["compile".into()],
            seq_lens: Some(vec![512, 2048]),
            ..Default::default()
        };
        let args = o.probe_args();
        assert_eq!(args[..2], ["--budget-s".to_string(), "50".to_string()]);
        assert!(args.windows(2).any(|w| w == ["--seq-lens", "512,2048"]));
        assert!(args.windows(2).any(|w| w == ["--skip", "compile"]));
        assert!(args.contains(&"--disable-fused".to_string()));
    }

    fn reported(stages: &[&str]) -> ProbeRun {
        use cudoctor_snapshot::{ProbeResult, StageTime, TorchInfo};
        ProbeRun {
            interpreter: "py".into(),
            status: ProbeStatus::Ok,
            elapsed_s: Some(3.0),
            result: Some(ProbeResult {
                complete: true,
                torch: Some(TorchInfo {
                    version: "2.11.0".into(),
                    ..Default::default()
                }),
                stages: stages
                    .iter()
                    .map(|s| StageTime {
                        name: s.to_string(),
                        seconds: Some(1.0),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_compile_process_answer_joins_the_run() {
        use cudoctor_snapshot::CompileProbe;
        let mut run = reported(&["python", "import torch", "sdpa"]);
        let mut compile = reported(&["python", "import torch", "cuda", "compile"]);
        compile.elapsed_s = Some(5.0);
        compile.result.as_mut().unwrap().compile = Some(CompileProbe {
            ok: true,
            ..Default::default()
        });
        compile.result.as_mut().unwrap().errors = vec![
            "compile: profiler: x".into(),
            "cuda: not the compile test's".into(),
        ];
        merge_compile(&mut run, compile);
        assert_eq!(run.status, ProbeStatus::Ok);
        assert_eq!(run.compile_elapsed_s, Some(5.0));
        let r = run.result.unwrap();
        assert!(r.complete);
        assert!(r.compile.unwrap().ok);
        let names: Vec<&str> = r.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["python", "import torch", "sdpa", "compile"]);
        assert_eq!(r.errors, ["compile: profiler: x"]);
    }

    #[test]
    fn a_compiler_crash_ends_the_run_in_the_compile_stage() {
        let mut run = reported(&["python", "import torch"]);
        let mut compile = reported(&["python", "import torch", "cuda"]);
        compile.status = ProbeStatus::Crashed;
        compile.signal = Some(11);
        compile.detail = "killed by signal 11 (SIGSEGV) during stage \"compile\"".into();
        compile.last_stage = Some(cudoctor_snapshot::ProbeStage::Compile);
        merge_compile(&mut run, compile);
        assert_eq!(run.status, ProbeStatus::Crashed);
        assert_eq!(run.signal, Some(11));
        assert_eq!(run.last_stage, Some(cudoctor_snapshot::ProbeStage::Compile));
        assert!(!run.result.unwrap().complete);
    }

    #[test]
    fn nothing_joins_a_run_that_never_had_torch() {
        let mut run = reported(&["python", "import torch"]);
        run.status = ProbeStatus::NoTorch;
        run.result.as_mut().unwrap().torch = None;
        let mut compile = reported(&["python"]);
        compile.status = ProbeStatus::Crashed;
        merge_compile(&mut run, compile);
        assert_eq!(run.status, ProbeStatus::NoTorch);
        assert_eq!(run.compile_elapsed_s, None);
    }

    #[test]
    fn the_script_is_embedded() {
        assert!(PROBE_SCRIPT.contains(parse::TAG));
    }
}
