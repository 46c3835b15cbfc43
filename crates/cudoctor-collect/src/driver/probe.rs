//! The driver's own libraries, asked once: libcuda's `cuDriverGetVersion`, then one NVML session
//! for the driver's and GPUs' facts and, when wanted, the GPU topology.
//!
//! By default the questions are asked in a child process, cudoctor's own binary started with
//! [`CHILD_ARGUMENT`] (see [`DriverProbe`]), for three reasons:
//! - a wedged driver can hang NVML inside the kernel; a child's process group is killed at the
//!   deadline and the report comes out, while a thread stuck in the driver keeps the process
//!   from exiting;
//! - a broken driver install can crash inside NVML or libcuda (SIGSEGV in a mismatched
//!   library); in a child that is a finding, not the end of cudoctor;
//! - `nvmlInit_v2` maps about 18 MiB (its own heap and pages, measured on the H200 machine) that
//!   `nvmlShutdown` never gives back: half of the check's peak memory, in a process that only
//!   needs a few numbers from it.
//!
//! The child writes one JSON line per answer as soon as it has it, libcuda's first (it opens no
//! device), so a hang in NVML still leaves libcuda's answer.

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cudoctor_snapshot::{LibrariesFailed, LibraryFailure, Outcome, Topology};
use serde::{Deserialize, Serialize};

use super::dynamic::{self, NvmlFacts};
use crate::host::Host;
use crate::nvml::NvmlError;
use crate::runner;

/// The first argument that makes cudoctor's binary answer as the driver probe's child (see
/// [`serve`]). Not a subcommand: it is never shown, and the binary checks for it before parsing.
pub const CHILD_ARGUMENT: &str = "__probe-driver-libraries";
/// The second argument when the topology is wanted too.
const WITH_TOPOLOGY: &str = "topology";
/// Most output read from the child: a few KiB per GPU.
const MAX_CHILD_OUTPUT: usize = 1 << 20;

/// Where the driver's libraries are asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverProbe {
    /// Loaded into this process (library users and tests; a Windows build for now).
    InThisProcess,
    /// In a child process: this program, which must answer [`CHILD_ARGUMENT`] through [`serve`].
    Child(PathBuf),
}

/// GPU topology with notes on GPUs NVML could not open.
pub type TopologyAnswer = (Topology, Vec<String>);

/// One answer, as the child writes it.
#[derive(Debug, Serialize, Deserialize)]
enum Line {
    Libcuda(Result<i32, String>),
    Nvml(Result<NvmlFacts, NvmlError>),
    Topology(Result<TopologyAnswer, String>),
}

/// An answer, or why there is none.
#[derive(Debug)]
pub enum Answer<T, E> {
    Got(Result<T, E>),
    Missing { outcome: Outcome, why: String },
}

impl<T, E> Default for Answer<T, E> {
    fn default() -> Self {
        Answer::Missing {
            outcome: Outcome::Skipped,
            why: "not asked".into(),
        }
    }
}

impl<T, E> Answer<T, E> {
    fn is_missing(&self) -> bool {
        matches!(self, Answer::Missing { .. })
    }
}

/// What the driver's libraries said.
#[derive(Debug, Default)]
pub struct Answers {
    pub libcuda: Answer<i32, String>,
    pub nvml: Answer<NvmlFacts, NvmlError>,
    /// Asked only when wanted.
    pub topology: Answer<TopologyAnswer, String>,
    /// How the asking stopped before every answer came, if it did.
    pub failed: Option<LibrariesFailed>,
}

impl Answers {
    fn take(&mut self, line: Line) {
        match line {
            Line::Libcuda(r) => self.libcuda = Answer::Got(r),
            Line::Nvml(r) => self.nvml = Answer::Got(r),
            Line::Topology(r) => self.topology = Answer::Got(r),
        }
    }

    /// Records that the asking stopped (`how`) in the first library that had not answered.
    fn stopped(&mut self, how: LibraryFailure) {
        let library = if self.libcuda.is_missing() {
            "libcuda"
        } else {
            "nvml"
        };
        self.failed = Some(LibrariesFailed {
            library: library.into(),
            how,
        });
    }

    /// Marks every answer still missing (of those asked) with `outcome` and `why`.
    fn not_answered(&mut self, with_topology: bool, outcome: Outcome, why: &str) {
        fn mark<T, E>(answer: &mut Answer<T, E>, outcome: Outcome, why: &str) {
            if answer.is_missing() {
                *answer = Answer::Missing {
                    outcome,
                    why: why.to_string(),
                };
            }
        }
        mark(&mut self.libcuda, outcome, why);
        mark(&mut self.nvml, outcome, why);
        if with_topology {
            mark(&mut self.topology, outcome, why);
        }
    }

    /// Whether NVML was asked and never answered within the time limit.
    pub fn nvml_timed_out(&self) -> bool {
        matches!(
            self.nvml,
            Answer::Missing {
                outcome: Outcome::TimedOut,
                ..
            }
        )
    }
}

/// Asks the driver's libraries, with `host`'s time limit on the whole.
pub fn ask(host: &Host, with_topology: bool) -> Answers {
    match &host.driver_probe {
        DriverProbe::Child(program) => in_child(program, with_topology, host.command_timeout),
        DriverProbe::InThisProcess => in_this_process(with_topology, host.command_timeout),
    }
}

/// The answers in the order the child gives them.
fn answer_lines(with_topology: bool, mut each: impl FnMut(Line)) {
    each(Line::Libcuda(dynamic::libcuda_driver_version()));
    let (nvml, topology) = dynamic::nvml_session(with_topology);
    each(Line::Nvml(nvml));
    if let Some(t) = topology {
        each(Line::Topology(t));
    }
}

/// The child's side: writes each answer as one JSON line on stdout. Returns the exit status.
pub fn serve(args: &[String]) -> i32 {
    no_crash_dialogs();
    let with_topology = args.iter().any(|a| a == WITH_TOPOLOGY);
    let stdout = std::io::stdout();
    let mut failed = false;
    answer_lines(with_topology, |line| {
        let mut out = stdout.lock();
        let written = serde_json::to_writer(&mut out, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        failed |= written.is_err();
    });
    i32::from(failed)
}

/// On Windows, a crash in the child ends it at once instead of waiting on Windows Error
/// Reporting's "has stopped working" dialog (which would keep it alive until the deadline and
/// read as a hang): SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX).
#[cfg(windows)]
#[allow(unsafe_code)]
fn no_crash_dialogs() {
    const SEM_FAILCRITICALERRORS: u32 = 0x0001;
    const SEM_NOGPFAULTERRORBOX: u32 = 0x0002;
    #[link(name = "kernel32")]
    extern "system" {
        fn SetErrorMode(mode: u32) -> u32;
    }
    // SAFETY: sets this process's error mode only; no pointers.
    unsafe { SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX) };
}

#[cfg(not(windows))]
fn no_crash_dialogs() {}

fn in_this_process(with_topology: bool, timeout: Duration) -> Answers {
    let deadline = Instant::now() + timeout;
    let (tx, rx) = mpsc::channel();
    // A thread stuck in the driver is abandoned and ends with the process.
    std::thread::spawn(move || answer_lines(with_topology, |line| drop(tx.send(line))));
    let mut answers = Answers::default();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => answers.take(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                answers.stopped(hung(timeout));
                let why = format!("no answer in {timeout:?}");
                answers.not_answered(with_topology, Outcome::TimedOut, &why);
                break;
            }
        }
    }
    answers
}

fn in_child(program: &PathBuf, with_topology: bool, timeout: Duration) -> Answers {
    let mut cmd = std::process::Command::new(program);
    cmd.arg(CHILD_ARGUMENT);
    if with_topology {
        cmd.arg(WITH_TOPOLOGY);
    }
    let limits = runner::Limits {
        max_stdout: MAX_CHILD_OUTPUT,
        max_stderr: 64 << 10,
        stderr_tail: true,
        ..runner::Limits::tool(timeout)
    };
    let mut answers = Answers::default();
    let mut garbled: Option<String> = None;
    let mut on_line = |text: &str| match serde_json::from_str::<Line>(text) {
        Ok(line) => answers.take(line),
        Err(e) => {
            garbled.get_or_insert_with(|| format!("unreadable answer ({e})"));
        }
    };
    let done = runner::run(cmd, &limits, Some(&mut on_line));
    let not_started = match &done.ending {
        runner::Ending::NotStarted(e) => Some(e.clone()),
        // It ran but never answered and was not killed: not this program's child (an emulator
        // such as qemu-user runs /proc/self/exe as itself, a loader fails) rather than a
        // library that crashed or hung.
        // A Windows exception is a crash inside the libraries (nvcuda.dll is asked first), not
        // a start that failed: asked again here it would take cudoctor down. Only the loader's
        // own failures to start the program count as not started.
        runner::Ending::Exited(code)
            if answers.libcuda.is_missing()
                && answers.nvml.is_missing()
                && (!cudoctor_snapshot::is_windows_exception(*code)
                    || cudoctor_snapshot::is_windows_start_failure(*code as u32)) =>
        {
            Some(format!("it exited with status {code} without answering"))
        }
        _ => None,
    };
    if let Some(e) = not_started {
        // A program that cannot start itself (no /proc, a seccomp filter): ask here instead.
        let mut answers = in_this_process(with_topology, timeout);
        note_in_this_process(&mut answers, &e);
        return answers;
    }
    let said = String::from_utf8_lossy(&done.stderr);
    let said = super::truncate(super::first_line(said.trim()), 200);
    let with_said = |why: String| {
        if said.is_empty() {
            why
        } else {
            format!("{why}: {said}")
        }
    };
    match done.ending {
        runner::Ending::TimedOut => {
            answers.stopped(hung(timeout));
            let why = format!("no answer in {timeout:?}");
            answers.not_answered(with_topology, Outcome::TimedOut, &why);
        }
        runner::Ending::Signalled(signal) => {
            answers.stopped(LibraryFailure::Crashed { signal });
            let why = with_said(format!(
                "the process asking the driver's libraries was killed by {}",
                signal_name(signal)
            ));
            answers.not_answered(with_topology, Outcome::Failed, &why);
        }
        // Windows: a process killed by an unhandled exception exits with its code (what it
        // wrote before, if anything, is no answer: Wine's debugger writes there too).
        runner::Ending::Exited(code) if cudoctor_snapshot::is_windows_exception(code) => {
            let code = code as u32;
            answers.stopped(LibraryFailure::Exception { code });
            let why = with_said(format!(
                "the process asking the driver's libraries ended with {}",
                cudoctor_snapshot::windows_exception(code)
            ));
            answers.not_answered(with_topology, Outcome::Failed, &why);
        }
        runner::Ending::Exited(code) => {
            let why = garbled.unwrap_or_else(|| {
                with_said(format!(
                    "the process asking the driver's libraries exited with status {code} before answering"
                ))
            });
            answers.not_answered(with_topology, Outcome::Failed, &why);
        }
        runner::Ending::NotStarted(_) => {}
    }
    answers
}

fn hung(timeout: Duration) -> LibraryFailure {
    LibraryFailure::Hung {
        after_s: timeout.as_secs_f64(),
    }
}

/// Says in each answer's report that it was asked in this process, and why.
fn note_in_this_process(answers: &mut Answers, why: &str) {
    let note = format!("asked in cudoctor's own process: the probe process did not start ({why})");
    if let Answer::Got(Ok(n)) = &mut answers.nvml {
        n.notes.push(note);
    }
}

/// "signal 11 (SIGSEGV)", or "signal 64" for a signal without a name.
fn signal_name(signal: i32) -> String {
    match cudoctor_snapshot::signal_name(signal) {
        "signal" => format!("signal {signal}"),
        name => format!("signal {signal} ({name})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_cross_the_pipe_unchanged() {
        let lines = [
            Line::Libcuda(Ok(13000)),
            Line::Nvml(Err(NvmlError {
                message: "nvmlInit_v2 returned NVML error 18".into(),
                code: Some(18),
            })),
            Line::Topology(Err(
                "libnvidia-ml.so.1: cannot open shared object file".into()
            )),
        ];
        let mut answers = Answers::default();
        for line in lines {
            let text = serde_json::to_string(&line).unwrap();
            assert!(!text.contains('\n'));
            answers.take(serde_json::from_str(&text).unwrap());
        }
        assert!(matches!(answers.libcuda, Answer::Got(Ok(13000))));
        assert!(matches!(&answers.nvml, Answer::Got(Err(e)) if e.code == Some(18)));
        assert!(matches!(answers.topology, Answer::Got(Err(_))));
    }

    #[test]
    fn what_was_not_answered_says_why_and_keeps_what_was() {
        let mut answers = Answers::default();
        answers.take(Line::Libcuda(Ok(12080)));
        answers.stopped(hung(Duration::from_secs(2)));
        answers.not_answered(true, Outcome::TimedOut, "no answer in 2s");
        let failed = answers.failed.clone().unwrap();
        assert_eq!(failed.library, "nvml", "libcuda answered");
        assert!(matches!(answers.libcuda, Answer::Got(Ok(12080))));
        assert!(answers.nvml_timed_out());
        assert!(matches!(
            &answers.topology,
            Answer::Missing { outcome: Outcome::TimedOut, why } if why == "no answer in 2s"
        ));
        // Not asked: stays not asked.
        let mut answers = Answers::default();
        answers.not_answered(false, Outcome::Failed, "crashed");
        assert!(matches!(
            answers.topology,
            Answer::Missing {
                outcome: Outcome::Skipped,
                ..
            }
        ));
    }

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(11), "signal 11 (SIGSEGV)");
        assert_eq!(signal_name(64), "signal 64");
    }
}
