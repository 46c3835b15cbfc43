//! Shared plumbing of the commands: colour decisions, loading inputs, the knowledge base.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context as _};
use cudoctor_collect::driver::probe::DriverProbe;
use cudoctor_collect::Host;
use cudoctor_kb::Kb;
use cudoctor_render::Style;
use cudoctor_snapshot::{Snapshot, SCHEMA_VERSION};

use crate::cli::MachineArgs;

/// Colour only on a terminal, never when NO_COLOR is set; CLICOLOR_FORCE forces it.
pub fn style() -> Style {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty() && v != "0");
    let color = if set("NO_COLOR") {
        false
    } else if set("CLICOLOR_FORCE") {
        true
    } else {
        std::io::stdout().is_terminal()
    };
    Style { color }
}

/// The width text reports are laid out for: `COLUMNS` where set, else the terminal's (TIOCGWINSZ
/// on standard output), else 80 (piped); at most 120 (`cudoctor_render::layout`).
pub fn report_width() -> usize {
    let columns = std::env::var("COLUMNS").ok();
    let tty = terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0));
    cudoctor_render::layout::terminal_width(columns.as_deref(), tty)
}

/// An error with its causes, `: ` between them as `{:#}` writes them, a cause left out when
/// the text so far already ends with it (an error that quotes its source in its own message
/// would otherwise say the reason twice).
pub fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.is_empty() && out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

pub fn knowledge_base(args: &MachineArgs) -> anyhow::Result<Kb> {
    match &args.kb {
        Some(dir) => {
            let _watchdog = cudoctor_collect::watchdog::arm_input(format!(
                "reading the knowledge base in {}",
                dir.display()
            ));
            Kb::from_dir(dir)
                .with_context(|| format!("reading the knowledge base in {}", dir.display()))
        }
        None => match Kb::try_embedded() {
            Ok(kb) => Ok(kb.clone()),
            Err(e) => bail!("the built-in knowledge base is invalid: {e}"),
        },
    }
}

/// The `--python` paths as the collector reads them, absolute: a relative one is taken from the
/// current directory (as the shell does), or from the root under `--root`. Refuses one that
/// names neither an interpreter nor an environment.
pub fn check_pythons(host: &Host, pythons: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::with_capacity(pythons.len());
    for p in pythons {
        // A Windows path (`C:\...`) names a Python of a Windows machine or tree as it is.
        let path = if cudoctor_collect::host::is_drive_path(p) {
            p.clone()
        } else if host.runs_programs() {
            absolute_machine_path(p).context("reading the current directory for --python")?
        } else if p.starts_with('/') {
            p.clone()
        } else {
            format!("/{p}")
        };
        if let Some(problem) = cudoctor_collect::python::explicit_problem(host, &path) {
            // The message names the path as the user typed it.
            bail!("{}", problem.replacen(&path, p, 1));
        }
        out.push(path);
    }
    Ok(out)
}

pub fn host(args: &MachineArgs) -> anyhow::Result<Host> {
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        bail!(
            "--timeout must be more than 0 and at most 3600 seconds, got {}",
            args.timeout
        );
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    // The reading of files (hashing, walking, scanning) ends at --timeout too: a hostile or
    // huge tree is said as "stopped early", never a command that runs on.
    let deadline = cudoctor_types::Deadline::after(timeout);
    match &args.root {
        None => {
            let mut host = Host::real(timeout).with_deadline(deadline);
            host.driver_probe = driver_probe();
            Ok(host)
        }
        Some(root) => {
            if !root.is_dir() {
                bail!("--root {}: not a directory", root.display());
            }
            let real = Host::real(timeout);
            Ok(Host::rooted(root.clone(), real.env().clone(), timeout).with_deadline(deadline))
        }
    }
}

/// Where the driver's libraries are asked: in a child, this binary again (a hung driver is
/// killed, a crash is a report, NVML's memory is not ours). On Linux `/proc/self/exe` names
/// this very file even after an upgrade replaced the path; on Windows the running executable's
/// path (a file in use cannot be replaced there). `CUDOCTOR_DRIVER_PROBE=this-process` asks in
/// this process (for measuring the two side by side), as does a platform without either.
fn driver_probe() -> DriverProbe {
    let in_this_process =
        std::env::var_os("CUDOCTOR_DRIVER_PROBE").is_some_and(|v| v == "this-process");
    if in_this_process {
        return DriverProbe::InThisProcess;
    }
    if cfg!(target_os = "linux") {
        return DriverProbe::Child("/proc/self/exe".into());
    }
    match std::env::current_exe() {
        Ok(exe) if cfg!(windows) => DriverProbe::Child(exe),
        _ => DriverProbe::InThisProcess,
    }
}

/// Largest snapshot file read (real ones are 100-200 KB).
const MAX_SNAPSHOT_FILE: u64 = 64 << 20;

/// An input named on the command line must be a regular file or a directory: a FIFO, a device
/// or a socket would block a read forever or never end (`/dev/zero`).
pub fn check_input_path(shown: &str, real: &Path) -> anyhow::Result<()> {
    let meta = std::fs::metadata(real).with_context(|| format!("{shown}: cannot read it"))?;
    if !(meta.is_file() || meta.is_dir()) {
        bail!("{shown}: not a regular file or directory (a FIFO, device or socket is not read)");
    }
    Ok(())
}

/// A path argument (text from [`cudoctor_types::os_text`]) made absolute from the working
/// directory, its bytes kept.
pub fn absolute_machine_path(p: &str) -> anyhow::Result<String> {
    if p.starts_with('/') {
        return Ok(p.to_string());
    }
    let cwd = std::env::current_dir()?;
    Ok(
        cudoctor_types::os_text::from_path(&cwd.join(cudoctor_types::os_text::to_os(p)))
            .into_owned(),
    )
}

/// Reads an input file named on the command line through the one opener
/// ([`cudoctor_types::regular_file::read_input`]): a FIFO, a device, a directory or a file over
/// `limit` bytes is refused at once with a message naming `what` (exit 2), never waited on.
/// A read the kernel blocks in (a hung mount) ends cudoctor with a message
/// ([`cudoctor_collect::watchdog`]).
pub fn read_input(what: &str, path: &Path, limit: u64) -> anyhow::Result<Vec<u8>> {
    let _watchdog =
        cudoctor_collect::watchdog::arm_input(format!("reading {what} {}", path.display()));
    cudoctor_types::regular_file::read_input(path, limit)
        .map_err(|e| anyhow::anyhow!("cannot read {what} {}: {e}", path.display()))
}

/// Reads a snapshot file with a clear message for every way it can be wrong.
pub fn read_snapshot(path: &Path) -> anyhow::Result<Snapshot> {
    let bytes = read_input("snapshot", path, MAX_SNAPSHOT_FILE)?;
    snapshot_from_json(&bytes, &path.display().to_string())
}

/// Parses a snapshot (or a whole `--format json` report) named `what` in messages.
pub fn snapshot_from_json(bytes: &[u8], what: &str) -> anyhow::Result<Snapshot> {
    use cudoctor_snapshot::LoadError;
    cudoctor_snapshot::from_json(bytes).map_err(|e| match e {
        LoadError::NotJson(e) => anyhow::Error::new(e).context(format!("{what} is not JSON")),
        LoadError::Schema(v) => anyhow::anyhow!(
            "{what} has snapshot schema {v}; this cudoctor reads schema {SCHEMA_VERSION}"
        ),
        LoadError::NoSchema => {
            anyhow::anyhow!("{what} is not a cudoctor snapshot (no schema_version)")
        }
        LoadError::Invalid(e) => {
            anyhow::Error::new(e).context(format!("{what} is not a valid cudoctor snapshot"))
        }
    })
}

/// Writes a file cudoctor produces, through the one atomic writer
/// ([`cudoctor_types::atomic_write`]): a temporary file beside it, renamed over it; a symbolic
/// link at `path` is refused (exit 2), never written through.
pub fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    cudoctor_types::atomic_write::write(path, text.as_bytes()).map_err(anyhow::Error::new)
}

/// Refuses, before any work, an output path that the writer would refuse after it: a symbolic
/// link or something other than a regular file.
pub fn check_output_path(path: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(anyhow::Error::new(
            cudoctor_types::atomic_write::WriteError::Symlink(path.to_path_buf()),
        )),
        Ok(m) if !m.is_file() => Err(anyhow::Error::new(
            cudoctor_types::atomic_write::WriteError::NotRegular(path.to_path_buf()),
        )),
        _ => Ok(()),
    }
}

/// Makes sure descriptors 0, 1 and 2 are open (on /dev/null when they were closed), so no file
/// cudoctor opens later lands on one of them and gets a report or a message written into it.
pub fn ensure_standard_descriptors() {
    #[cfg(unix)]
    {
        use std::os::fd::{AsRawFd as _, IntoRawFd as _};
        for _ in 0..3 {
            let Ok(f) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")
            else {
                return;
            };
            if f.as_raw_fd() > 2 {
                return;
            }
            // It filled a closed standard descriptor: keep it open for the process's life.
            let _ = f.into_raw_fd();
        }
    }
}

/// Writes a message to standard error. A standard error that cannot be written (closed, a
/// reader gone, a full disk) loses the message, never the run: the exit status still tells.
pub fn note(text: &str) {
    use std::io::Write as _;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Set once standard output's reader has gone away: nothing more is written there.
static READER_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes report text to standard output. A reader that went away (`cudoctor check | head`) is
/// no error: the rest of the output is dropped quietly and the command ends with its own
/// status, as a pipeline expects; any other write error is said on standard error and ends the
/// program with status 2. Whatever a renderer let through, no control character from the
/// machine reaches the terminal: only the colour sequences of a coloured report pass
/// ([`cudoctor_types::inert::output`]).
pub fn emit(text: &str) {
    use std::io::Write as _;
    use std::sync::atomic::Ordering;
    if READER_GONE.load(Ordering::Relaxed) {
        return;
    }
    let text = cudoctor_types::inert::output(text, style().color);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            READER_GONE.store(true, Ordering::Relaxed);
            return;
        }
        note(&format!("cudoctor: error: cannot write the report: {e}\n"));
        std::process::exit(2);
    }
}

/// `print!` through [`emit`].
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::output::emit(&format!($($t)*)) };
}

/// `println!` through [`emit`].
#[macro_export]
macro_rules! outln {
    () => { $crate::output::emit("\n") };
    ($($t:tt)*) => { $crate::output::emit(&(format!($($t)*) + "\n")) };
}

/// The project searched for CUDA binaries when none is named: the current directory when it is
/// a Python project's root, on this machine only (under `--root` the current directory is not
/// the inspected machine's).
pub fn project_of_cwd(
    host: &Host,
    machine: &MachineArgs,
) -> Option<cudoctor_collect::discovery::ProjectDir> {
    if machine.root.is_some() {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    cudoctor_collect::discovery::project_of_cwd(host, &cudoctor_types::os_text::from_path(&cwd))
}
