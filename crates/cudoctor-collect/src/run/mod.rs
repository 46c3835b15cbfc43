//! `cudoctor run -- CMD`: runs the user's own command with an observer in every Python process
//! it starts, and collects what the observers saw.
//!
//! The observer is a `sitecustomize.py` (embedded in the binary) written to a private temporary
//! directory that is put first on `PYTHONPATH`; every Python process of the command inherits the
//! variable (torchrun ranks, `subprocess` children) and loads it at start-up. It chains to the
//! sitecustomize it shadows. The command's stdin, stdout and stderr are the terminal's own; its
//! exit status is returned whole. Signals cudoctor receives go to the command: to its process
//! group when it has its own (no terminal on stdin), else the terminal already delivered them to
//! the whole foreground group and only the ones it did not (SIGTERM, SIGHUP) are passed on.

use std::ffi::OsString;
use std::fmt;
#[cfg(unix)]
use std::io::IsTerminal;
#[cfg(unix)]
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
#[cfg(unix)]
use std::sync::{Arc, Mutex};
#[cfg(unix)]
use std::thread;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use cudoctor_snapshot::{ChildExit, ProcessRecord, RunFacts};
#[cfg(unix)]
use rustix::process::{kill_process, kill_process_group, Pid, Signal};
#[cfg(unix)]
use signal_hook::consts::{
    SIGALRM, SIGHUP, SIGINT, SIGKILL, SIGPIPE, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
};
#[cfg(unix)]
use signal_hook::iterator::Signals;

/// The observer, written as `sitecustomize.py`.
pub const OBSERVER_SCRIPT: &str = include_str!("observer.py");

/// Flight-recorder entries kept per process group: enough for tens of collectives per step
/// between two reads (the observer reads it every 10 steps).
const NCCL_TRACE_ENTRIES: &str = "4000";

/// How the observer runs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Profile the GPU kernels of the step after this one (torch's profiler; it prints a few
    /// lines of its own on stderr).
    pub profile_step: Option<u64>,
    /// Do not measure a math-path attention call against a fused backend.
    pub no_cost: bool,
}

#[derive(Debug)]
pub enum RunError {
    /// Nothing to run.
    NoCommand,
    /// The private directory could not be made or written.
    Setup(std::io::Error),
    /// The command could not be started (not found, not executable).
    Spawn(String, std::io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::NoCommand => write!(f, "no command given: cudoctor run -- CMD ARGS..."),
            RunError::Setup(e) => write!(f, "could not prepare the observer's directory: {e}"),
            RunError::Spawn(cmd, e) => write!(f, "could not start {cmd:?}: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs `command` to its end with the observer and returns what was observed. Returns only once
/// the command has ended; its exit status is in [`RunFacts::exit`].
pub fn run_observed(command: &[String], options: &RunOptions) -> Result<RunFacts, RunError> {
    let (program, args) = command.split_first().ok_or(RunError::NoCommand)?;
    let dir = tempfile::Builder::new()
        .prefix("cudoctor-run-")
        .tempdir()
        .map_err(RunError::Setup)?;
    let site = dir.path().join("site");
    let out = dir.path().join("out");
    std::fs::create_dir(&site).map_err(RunError::Setup)?;
    std::fs::create_dir(&out).map_err(RunError::Setup)?;
    std::fs::write(site.join("sitecustomize.py"), OBSERVER_SCRIPT).map_err(RunError::Setup)?;

    let mut cmd = Command::new(program);
    cmd.args(args);
    for (k, v) in observer_env(&site, &out, options, |k| std::env::var_os(k)) {
        cmd.env(k, v);
    }
    let started_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs());
    let started = Instant::now();
    let exit = run_to_end(cmd, program)?;
    let wall_s = started.elapsed().as_secs_f64();
    let (processes, unreadable) = read_records(&out);
    let chained_sitecustomize = processes
        .iter()
        .find_map(|p| p.chained_sitecustomize.clone());
    let failure_libraries = failure_libraries(&processes);
    // The GPUs, when a process failed without saying its own (CUDA was not initialised).
    let gpu_capabilities = if processes
        .iter()
        .any(|p| p.failure.is_some() && p.torch.as_ref().is_none_or(|t| t.capability.is_none()))
    {
        crate::driver::collect(&crate::Host::real(std::time::Duration::from_secs(5)))
            .gpus
            .iter()
            .filter_map(|g| g.compute_capability.clone())
            .collect()
    } else {
        Vec::new()
    };
    Ok(RunFacts {
        command: cudoctor_types::secret::redact_argv(command),
        started_at,
        wall_s,
        exit,
        processes,
        unreadable,
        chained_sitecustomize,
        failure_libraries,
        gpu_capabilities,
    })
}

/// The shared objects the failing processes had mapped that carry CUDA kernels, and those
/// their messages name (a library that failed to load is not mapped), each with its kernel
/// images and, for a torch JIT build, its build directory. Read with the kernel-image reader
/// (headers and fat-binary headers only).
pub fn failure_libraries(processes: &[ProcessRecord]) -> Vec<cudoctor_snapshot::FailureLibrary> {
    let mut paths: Vec<String> = Vec::new();
    let mut named: std::collections::HashSet<String> = std::collections::HashSet::new();
    for f in processes.iter().filter_map(|p| p.failure.as_ref()) {
        for m in &f.mapped {
            if !paths.contains(m) {
                paths.push(m.clone());
            }
        }
        for word in f
            .message
            .split(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == ',')
        {
            let word = word.trim_end_matches(':');
            let file = word.rsplit('/').next().unwrap_or(word);
            if word.starts_with('/') && (file.ends_with(".so") || file.contains(".so.")) {
                named.insert(word.to_string());
                if !paths.iter().any(|p| p == word) {
                    paths.push(word.to_string());
                }
            }
        }
    }
    if paths.is_empty() {
        return Vec::new();
    }
    let real: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let scans = cudoctor_fatbin::scan_many(&real, cudoctor_fatbin::default_threads());
    paths
        .into_iter()
        .zip(scans)
        .filter_map(|(path, (_, result))| {
            let exists = Path::new(&path).is_file();
            let mut images = cudoctor_snapshot::LibraryImages {
                path: path.clone(),
                ..Default::default()
            };
            match result {
                Ok(img) => {
                    images.sass = img.sass;
                    images.ptx = img.ptx;
                    images.ptx_isa = img.ptx_isa;
                }
                Err(e) => images.error = Some(e.to_string()),
            }
            let has_code = !images.sass.is_empty() || !images.ptx.is_empty();
            // Mapped libraries without kernels say nothing; a named one is kept either way.
            if !has_code && !named.contains(&path) {
                return None;
            }
            Some(cudoctor_snapshot::FailureLibrary {
                jit_build_dir: jit_build_dir(Path::new(&path)),
                images,
                exists,
            })
        })
        .collect()
}

/// The directory of a torch JIT build: `<dir>/<name>.so` (or `<name>_v<N>.so` after a rebuild
/// in one process) in a directory named `<name>` that holds torch's `build.ninja`.
pub fn jit_build_dir(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let dir_name = dir.file_name()?.to_str()?;
    let stem = path.file_name()?.to_str()?.strip_suffix(".so")?;
    let name = match stem.rsplit_once("_v") {
        Some((n, v)) if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) => n,
        _ => stem,
    };
    (name == dir_name && dir.join("build.ninja").is_file())
        .then(|| dir.to_string_lossy().into_owned())
}

/// Starts the command, forwards the signals cudoctor receives to it, and waits for its end.
#[cfg(unix)]
fn run_to_end(mut cmd: Command, program: &str) -> Result<ChildExit, RunError> {
    // With a terminal, the command stays in the terminal's foreground group so it can read it
    // and gets Ctrl-C from it directly; without one it gets its own group, which is signalled
    // as a whole.
    let own_group = !std::io::stdin().is_terminal();
    if own_group {
        cmd.process_group(0);
    }
    // The observed program dies with cudoctor: killed mid-run, cudoctor leaves no training
    // job running unobserved.
    crate::runner::die_with_parent(&mut cmd);
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT]).map_err(RunError::Setup)?;
    let handle = signals.handle();
    let mut child = cmd
        .spawn()
        .map_err(|e| RunError::Spawn(program.to_string(), e))?;
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let forwarded = Arc::new(Mutex::new(Vec::new()));
    let forwarder = {
        let forwarded = Arc::clone(&forwarded);
        thread::spawn(move || {
            for sig in signals.forever() {
                let Some(signal) = Signal::from_named_raw(sig) else {
                    continue;
                };
                let Some(pid) = pid else { continue };
                // A terminal's SIGINT/SIGQUIT reached the whole foreground group already.
                let already_delivered = !own_group && (sig == SIGINT || sig == SIGQUIT);
                if !already_delivered {
                    let _ = if own_group {
                        kill_process_group(pid, signal)
                    } else {
                        kill_process(pid, signal)
                    };
                }
                if let Ok(mut f) = forwarded.lock() {
                    f.push(sig);
                }
            }
        })
    };
    let status = child.wait();
    handle.close();
    let _ = forwarder.join();
    Ok(match status {
        Ok(s) => ChildExit {
            code: s.code(),
            signal: s.signal(),
            forwarded_signals: forwarded.lock().map(|f| f.clone()).unwrap_or_default(),
        },
        Err(_) => ChildExit::default(),
    })
}

/// Starts the command and waits for its end. A console's Ctrl-C reaches every process attached
/// to it, the command's included, so nothing is forwarded on Windows.
#[cfg(not(unix))]
fn run_to_end(mut cmd: Command, program: &str) -> Result<ChildExit, RunError> {
    let status = cmd
        .spawn()
        .and_then(|mut child| child.wait())
        .map_err(|e| RunError::Spawn(program.to_string(), e))?;
    Ok(ChildExit {
        code: status.code(),
        signal: None,
        forwarded_signals: Vec::new(),
    })
}

/// Ends this process as the command ended: with its exit code, or killed by the same signal so
/// a calling shell or scheduler sees what it would have seen. Signals whose default action dumps
/// core end with the shell's 128 + signal instead (no core file of cudoctor).
pub fn exit_as(exit: &ChildExit) -> ! {
    #[cfg(unix)]
    if let Some(sig) = exit.signal {
        let terminating = [
            SIGINT, SIGTERM, SIGHUP, SIGKILL, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM,
        ];
        if terminating.contains(&sig) {
            let _ = signal_hook::low_level::emulate_default_handler(sig);
        }
        std::process::exit(128 + sig);
    }
    std::process::exit(exit.code.unwrap_or(1))
}

/// The variables the command runs with on top of cudoctor's own: the observer first on
/// PYTHONPATH, where it writes, and torch's NCCL flight recorder with timing (unless the user
/// chose otherwise).
pub fn observer_env(
    site: &Path,
    out: &Path,
    options: &RunOptions,
    var: impl Fn(&str) -> Option<OsString>,
) -> Vec<(String, OsString)> {
    let mut path = OsString::from(site);
    if let Some(old) = var("PYTHONPATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    let mut env = vec![
        ("PYTHONPATH".to_string(), path),
        ("CUDOCTOR_RUN_DIR".to_string(), OsString::from(out)),
    ];
    for (k, v) in [
        ("TORCH_NCCL_TRACE_BUFFER_SIZE", NCCL_TRACE_ENTRIES),
        ("TORCH_NCCL_ENABLE_TIMING", "1"),
    ] {
        if var(k).is_none() {
            env.push((k.to_string(), OsString::from(v)));
        }
    }
    if let Some(step) = options.profile_step {
        env.push((
            "CUDOCTOR_RUN_PROFILE_STEP".to_string(),
            OsString::from(step.to_string()),
        ));
    }
    if options.no_cost {
        env.push(("CUDOCTOR_RUN_NO_COST".to_string(), OsString::from("1")));
    }
    env
}

/// How much of the records the observers wrote is read: real records are a few KB to a few
/// MB, one a Python process (ranks, DataLoader workers).
#[derive(Debug, Clone, Copy)]
struct RecordCaps {
    /// The largest one record read.
    file: u64,
    /// The most records read.
    count: usize,
    /// The most bytes read of all records together.
    total: u64,
}

const RECORD_CAPS: RecordCaps = RecordCaps {
    file: 32 << 20,
    count: 4096,
    total: 512 << 20,
};

/// A process's record as reports keep it: the secrets of its command line, its error messages
/// and its failure replaced (a token passed as `--hf-token` never reaches a report).
fn redacted(mut r: ProcessRecord) -> ProcessRecord {
    use cudoctor_types::secret::{redact_argv, redact_text};
    r.argv = redact_argv(&r.argv);
    r.errors = r.errors.iter().map(|e| redact_text(e)).collect();
    if let Some(f) = &mut r.failure {
        f.message = redact_text(&f.message);
    }
    r
}

/// Reads every `proc-PID.json` the observers wrote, sorted by rank then pid, within
/// [`RECORD_CAPS`]; each record not read is named with why (a cap says which).
pub fn read_records(out: &Path) -> (Vec<ProcessRecord>, Vec<String>) {
    read_records_capped(out, RECORD_CAPS)
}

fn read_records_capped(out: &Path, caps: RecordCaps) -> (Vec<ProcessRecord>, Vec<String>) {
    let mut records = Vec::new();
    let mut unreadable = Vec::new();
    // The listing is bounded too: a program that wrote millions of files costs a bounded
    // listing, and what was not listed is said.
    let listed_cap = caps.count.saturating_mul(4);
    let mut listed = 0usize;
    let mut files: Vec<PathBuf> = std::fs::read_dir(out)
        .map(|d| {
            d.filter_map(Result::ok)
                .take_while(|_| {
                    listed += 1;
                    listed <= listed_cap
                })
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    if listed > listed_cap {
        unreadable.push(format!(
            "more than {listed_cap} files in the records' directory: those past them were not read"
        ));
    }
    files.sort();
    let mut total = 0u64;
    let mut passed_over = 0usize;
    for f in files {
        if records.len() >= caps.count || unreadable.len() >= caps.count || total >= caps.total {
            passed_over += 1;
            continue;
        }
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A record the observed program left: a FIFO or device planted in the directory is
        // refused at once, an oversized one not read.
        let bytes = match cudoctor_types::regular_file::read_input(&f, caps.file) {
            Ok(b) => b,
            Err(e) => {
                unreadable.push(format!("{name}: {e}"));
                continue;
            }
        };
        total = total.saturating_add(bytes.len() as u64);
        if total > caps.total {
            passed_over += 1;
            continue;
        }
        match serde_json::from_slice::<ProcessRecord>(&bytes) {
            Ok(r) => records.push(redacted(r)),
            Err(e) => unreadable.push(format!("{name}: {e}")),
        }
    }
    if passed_over > 0 {
        unreadable.push(format!(
            "{passed_over} more records not read: at most {} records and {} MiB of them are read",
            caps.count,
            caps.total >> 20
        ));
    }
    records.sort_by_key(|r| (r.rank.unwrap_or(u32::MAX), r.pid));
    (records, unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_observer_goes_first_on_pythonpath_and_keeps_the_users() {
        let env = observer_env(
            Path::new("/tmp/x/site"),
            Path::new("/tmp/x/out"),
            &RunOptions {
                profile_step: Some(5),
                no_cost: false,
            },
            |k| match k {
                "PYTHONPATH" => Some("/work/src".into()),
                "TORCH_NCCL_ENABLE_TIMING" => Some("0".into()),
                _ => None,
            },
        );
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("PYTHONPATH").unwrap(), "/tmp/x/site:/work/src");
        assert_eq!(get("CUDOCTOR_RUN_DIR").unwrap(), "/tmp/x/out");
        // The user's own choice stays.
        assert_eq!(get("TORCH_NCCL_ENABLE_TIMING"), None);
        assert_eq!(get("TORCH_NCCL_TRACE_BUFFER_SIZE").unwrap(), "4000");
        assert_eq!(get("CUDOCTOR_RUN_PROFILE_STEP").unwrap(), "5");
    }

    /// A program that left more records than are read (DataLoader workers by the thousand, or a
    /// program writing records of its own): the first by name are read, the rest counted, and a
    /// record past the size cap is named with its size, never read.
    #[test]
    fn records_past_the_caps_are_counted_not_read() {
        let dir = tempfile::tempdir().unwrap();
        for pid in 100..110 {
            std::fs::write(
                dir.path().join(format!("proc-{pid}.json")),
                format!(r#"{{"pid":{pid}}}"#),
            )
            .unwrap();
        }
        std::fs::write(dir.path().join("proc-099.json"), " ".repeat(5000)).unwrap();
        let caps = RecordCaps {
            file: 4096,
            count: 4,
            total: 1 << 20,
        };
        let (records, bad) = read_records_capped(dir.path(), caps);
        assert_eq!(
            records.iter().map(|r| r.pid).collect::<Vec<_>>(),
            vec![100, 101, 102, 103]
        );
        assert!(
            bad[0].starts_with("proc-099.json: it is 5000 bytes"),
            "{bad:?}"
        );
        assert_eq!(
            bad[1],
            "6 more records not read: at most 4 records and 1 MiB of them are read"
        );
        // The total: two records of 11 bytes fit in 30 bytes, the other eight are counted.
        let caps = RecordCaps {
            file: 4096,
            count: 100,
            total: 30,
        };
        let (records, bad) = read_records_capped(dir.path(), caps);
        assert_eq!(records.len(), 2, "{records:?}");
        assert_eq!(
            bad.last().unwrap(),
            "8 more records not read: at most 100 records and 0 MiB of them are read"
        );
    }

    #[test]
    fn records_are_read_by_rank_and_bad_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("proc-20.json"), r#"{"pid":20,"rank":1}"#).unwrap();
        std::fs::write(dir.path().join("proc-30.json"), r#"{"pid":30,"rank":0}"#).unwrap();
        std::fs::write(dir.path().join("proc-40.json"), "{").unwrap();
        std::fs::write(dir.path().join("proc-50.json.tmp"), "{").unwrap();
        let (records, bad) = read_records(dir.path());
        assert_eq!(
            records.iter().map(|r| r.pid).collect::<Vec<_>>(),
            vec![30, 20]
        );
        assert_eq!(bad.len(), 1);
        assert!(bad[0].starts_with("proc-40.json"), "{bad:?}");
    }

    #[test]
    fn the_observer_is_embedded() {
        assert!(OBSERVER_SCRIPT.contains("CUDOCTOR_RUN_DIR"));
    }

    /// torch before 2.3 has no torch.compiler.is_compiling: the observer falls back to dynamo's
    /// once dynamo is imported, and to "not compiling" before that. The real observer code, with
    /// stand-ins for those torch modules.
    #[test]
    fn without_torch_compiler_is_compiling_the_observer_asks_dynamo_or_says_no() {
        let Some(python) = ["python3", "python"].into_iter().find(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        }) else {
            cudoctor_testkit::skip_missing_tool(
                "without_torch_compiler_is_compiling_the_observer_asks_dynamo_or_says_no",
                "no python3 here",
            );
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("observer.py"), OBSERVER_SCRIPT).unwrap();
        let check = r#"
import sys, types
import observer as o
for old_torch in (types.SimpleNamespace(), types.SimpleNamespace(compiler=types.SimpleNamespace())):
    o._is_compiling = o._not_compiling
    sys.modules.pop("torch._dynamo", None)
    o._find_is_compiling(old_torch)
    assert o._is_compiling() is False
    dynamo = types.ModuleType("torch._dynamo")
    dynamo.is_compiling = lambda: True
    sys.modules["torch._dynamo"] = dynamo
    o._find_is_compiling(old_torch)
    assert o._is_compiling() is True
new_torch = types.SimpleNamespace(compiler=types.SimpleNamespace(is_compiling=lambda: "new"))
o._find_is_compiling(new_torch)
assert o._is_compiling() == "new"
print("ok")
"#;
        let out = Command::new(python)
            .arg("-c")
            .arg(check)
            .current_dir(dir.path())
            .env_remove("CUDOCTOR_RUN_DIR")
            .env("PYTHONPATH", dir.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "ok\n",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn a_missing_program_is_a_clear_error() {
        let e = run_observed(
            &["/nonexistent/cudoctor-test-program".to_string()],
            &RunOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("could not start"), "{e}");
        assert!(matches!(
            run_observed(&[], &RunOptions::default()),
            Err(RunError::NoCommand)
        ));
    }
}
