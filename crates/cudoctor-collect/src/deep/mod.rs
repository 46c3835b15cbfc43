//! The runtime probe (`--deep`): a Python script shipped inside the binary, run in each target
//! interpreter as a child process with a timeout. cudoctor never imports torch itself: a crash
//! on `import torch` or a hang kills the child, and the report says which stage it died in.

pub mod parse;

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use cudoctor_snapshot::{DeepFacts, ProbeRun, ProbeStatus, PythonEnv};

use crate::host::Host;
use parse::{classify, Ending, ProbeOutput};

/// The probe script, run as `python -I -c PROBE_SCRIPT`.
pub const PROBE_SCRIPT: &str = include_str!("probe.py");

/// Default time a probe may take before it is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Time kept back from the probe's own budget to write its report and exit.
const BUDGET_MARGIN: Duration = Duration::from_secs(10);
/// Most stdout kept from one probe (the report is a few tens of KiB).
const MAX_STDOUT_LINE: u64 = 4 << 20;
const MAX_STDERR: usize = 256 << 10;
/// How long to wait for the rest of stderr once the child has ended.
const STDERR_GRACE: Duration = Duration::from_secs(2);

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
    let live = host.root() == Path::new("/");
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
                    status: ProbeStatus::NotStarted,
                    detail: "runtime probes run only on the live machine, not under --root"
                        .to_string(),
                    ..Default::default()
                }
            })
        })
        .collect();
    DeepFacts { runs }
}

/// Runs the probe in one interpreter and classifies how it ended.
pub fn run_probe(interpreter: &str, env_prefix: Option<&str>, options: &DeepOptions) -> ProbeRun {
    let mut cmd = Command::new(interpreter);
    if options.isolated {
        cmd.arg("-I");
    }
    cmd.arg("-c")
        .arg(PROBE_SCRIPT)
        .args(options.probe_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &options.extra_env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let (ending, output, stderr) = match cmd.spawn() {
        Ok(child) => supervise(child, interpreter, options),
        Err(e) => (
            Ending::NotStarted(e.to_string()),
            ProbeOutput::default(),
            String::new(),
        ),
    };
    classify(
        interpreter,
        env_prefix,
        ending,
        output,
        &stderr,
        started.elapsed().as_secs_f64(),
    )
}

/// Reads the child's stdout as it comes (for progress, and so a hang still leaves the stages it
/// passed), kills it at the deadline, and returns how it ended.
fn supervise(
    mut child: Child,
    interpreter: &str,
    options: &DeepOptions,
) -> (Ending, ProbeOutput, String) {
    let deadline = Instant::now() + options.timeout;
    let (tx, rx) = mpsc::channel::<String>();
    let stdout_reader = child.stdout.take().map(|out| {
        thread::spawn(move || {
            let mut reader = BufReader::new(out);
            loop {
                let mut line = Vec::new();
                match (&mut reader)
                    .take(MAX_STDOUT_LINE)
                    .read_until(b'\n', &mut line)
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx
                            .send(String::from_utf8_lossy(&line).into_owned())
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
        })
    });
    let (err_tx, err_rx) = mpsc::channel::<String>();
    if let Some(err) = child.stderr.take() {
        thread::spawn(move || {
            let mut kept: Vec<u8> = Vec::new();
            let mut buf = [0u8; 8192];
            let mut err = err;
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                kept.extend_from_slice(buf.get(..n).unwrap_or(&[]));
                if kept.len() > 2 * MAX_STDERR {
                    // Keep the tail: the end of a traceback is what explains a failure.
                    kept.drain(..kept.len() - MAX_STDERR);
                }
            }
            let _ = err_tx.send(String::from_utf8_lossy(&kept).into_owned());
        });
    }
    let mut output = ProbeOutput::default();
    let mut timed_out = false;
    loop {
        let now = Instant::now();
        if now >= deadline {
            timed_out = true;
            break;
        }
        match rx.recv_timeout(deadline - now) {
            Ok(line) => {
                if let Some(stage) = output.apply(&line) {
                    if let Some(progress) = &options.progress {
                        progress(&ProbeProgress {
                            interpreter,
                            stage: &stage,
                        });
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                timed_out = true;
                break;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    // Stdout closed: the child is exiting. Wait for it within what is left of the deadline.
    let mut status = None;
    while !timed_out {
        match child.try_wait() {
            Ok(Some(s)) => {
                status = Some(s);
                break;
            }
            Ok(None) if Instant::now() >= deadline => timed_out = true,
            Ok(None) => thread::sleep(Duration::from_millis(5)),
            Err(_) => break,
        }
    }
    if timed_out {
        // The probe's workers die with it (they ask the kernel for that at start).
        let _ = child.kill();
        let _ = child.wait();
    }
    // Lines that arrived between the last read and the end.
    while let Ok(line) = rx.try_recv() {
        output.apply(&line);
    }
    if let Some(h) = stdout_reader {
        if !timed_out {
            let _ = h.join();
        }
    }
    while let Ok(line) = rx.try_recv() {
        output.apply(&line);
    }
    // A worker that outlived the probe could hold stderr open: wait for it only briefly.
    let stderr = err_rx.recv_timeout(STDERR_GRACE).unwrap_or_default();
    let ending = if timed_out {
        Ending::TimedOut {
            after_s: options.timeout.as_secs_f64(),
        }
    } else {
        match status {
            Some(s) => match (s.code(), s.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(sig)) => Ending::Signalled(sig),
                (None, None) => Ending::Exited(-1),
            },
            None => Ending::Exited(-1),
        }
    };
    (ending, output, stderr)
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
