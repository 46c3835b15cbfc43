//! The runtime probe (`--deep`): a Python script shipped inside the binary, run in each target
//! interpreter as a child process with a timeout. cudoctor never imports torch itself: a crash
//! on `import torch` or a hang kills the child, and the report says which stage it died in.

pub mod frameworks;
pub mod parse;

use std::fmt;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

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
pub fn collect(host: &Host, envs: &[PythonEnv], options: &DeepOptions) -> DeepFacts {
    let mut targets: Vec<&PythonEnv> = envs
        .iter()
        .filter(|e| e.torch.is_some() && e.interpreter.is_some())
        .collect();
    if targets.is_empty() {
        targets.extend(envs.iter().find(|e| e.interpreter.is_some()));
    }
    let live = host.runs_programs();
    let runs = targets
        .into_iter()
        .filter_map(|env| {
            let interpreter = env.interpreter.as_deref()?;
            Some(if live {
                run_probe(interpreter, Some(&env.prefix), options)
            } else {
                ProbeRun {
                    interpreter: interpreter.to_string(),
                    env_prefix: Some(env.prefix.clone()),
                    status: ProbeStatus::NotRunUnderRoot,
                    ..Default::default()
                }
            })
        })
        .collect();
    // After the torch probes: a framework's process on the GPU would disturb their timings.
    let frameworks = frameworks::probe_all(envs, options, live);
    DeepFacts { runs, frameworks }
}

/// Runs the probe in one interpreter and classifies how it ended.
pub fn run_probe(interpreter: &str, env_prefix: Option<&str>, options: &DeepOptions) -> ProbeRun {
    let mut cmd = options.python(interpreter);
    cmd.arg("-c").arg(PROBE_SCRIPT).args(options.probe_args());
    let limits = options.limits(MAX_STDOUT, MAX_STDERR);
    let mut output = ProbeOutput::default();
    // Each line as it comes: for progress, and so a hang still leaves the stages it passed.
    let mut on_line = |line: &str| {
        if let Some(stage) = output.apply(line) {
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

    #[test]
    fn the_script_is_embedded() {
        assert!(PROBE_SCRIPT.contains(parse::TAG));
    }
}
