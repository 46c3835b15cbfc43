//! The one seam between probes and the machine: a filesystem root, an environment map and a
//! command runner with a timeout. Tests hand probes a temp dir laid out like `/`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cudoctor_snapshot::{ScanKind, StopReason, StoppedEarly};

use crate::runner;

/// Largest text file a probe reads; larger ones are cut (procfs files and version files are tiny).
const MAX_TEXT_FILE: u64 = 4 << 20;
/// Most names read from one directory (a site-packages holds a few thousand).
pub const MAX_DIR_ENTRIES: usize = 100_000;
/// Most output kept from one child process.
pub(crate) const MAX_COMMAND_OUTPUT: usize = 8 << 20;

#[derive(Debug, Clone)]
pub struct Host {
    /// Real directory that stands for the machine's `/`.
    root: PathBuf,
    env: BTreeMap<String, String>,
    /// Whether NVML and libcuda may be asked (off under a fake root).
    pub dynamic_loading: bool,
    /// Where they are asked: in this process unless the program sets a child.
    pub driver_probe: crate::driver::probe::DriverProbe,
    pub command_timeout: Duration,
    /// When the command's reading of files must end (every hashing, walking and scanning
    /// loop asks it); none unless the program sets one.
    deadline: cudoctor_types::Deadline,
    /// The loops that stopped early, shared by the clones handed to probes.
    stops: Arc<Mutex<Vec<StoppedEarly>>>,
    /// The systemd journal's kernel records, asked once for every probe that reads the kernel
    /// log where /dev/kmsg is closed (the Xid reader, the security modules' denials).
    journal: Arc<OnceLock<Result<crate::health::JournalKernel, String>>>,
}

/// What a child process did.
#[derive(Debug, Clone)]
pub enum CommandOutcome {
    /// It exited (with any status).
    Exited {
        status: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// It could not be started (not found, not executable).
    NotStarted(String),
    /// It outlived the timeout and was killed.
    TimedOut(Duration),
    /// It belongs to an inspected root (`--root`), whose programs are never run: a mounted
    /// image is untrusted, and its programs were built for another machine anyway.
    NotRunUnderRoot,
}

impl Host {
    /// This machine, as the current process sees it.
    pub fn real(command_timeout: Duration) -> Host {
        Host {
            root: PathBuf::from("/"),
            env: process_env(),
            dynamic_loading: true,
            driver_probe: crate::driver::probe::DriverProbe::InThisProcess,
            command_timeout,
            deadline: cudoctor_types::Deadline::NONE,
            stops: Arc::default(),
            journal: Arc::default(),
        }
    }

    /// A machine laid out under `root`; the environment is still this process's.
    pub fn rooted(root: PathBuf, env: BTreeMap<String, String>, command_timeout: Duration) -> Host {
        let is_real_root = root == Path::new("/");
        Host {
            root,
            env,
            dynamic_loading: is_real_root,
            driver_probe: crate::driver::probe::DriverProbe::InThisProcess,
            command_timeout,
            deadline: cudoctor_types::Deadline::NONE,
            stops: Arc::default(),
            journal: Arc::default(),
        }
    }

    /// The journal's kernel records of this machine, read by `read` the first time any probe
    /// asks and shared after (one bounded journalctl call per check).
    pub(crate) fn kernel_journal(
        &self,
        read: impl FnOnce() -> Result<crate::health::JournalKernel, String>,
    ) -> Result<crate::health::JournalKernel, String> {
        self.journal.get_or_init(read).clone()
    }

    /// The same machine, its file work bounded by `deadline`.
    pub fn with_deadline(mut self, deadline: cudoctor_types::Deadline) -> Host {
        self.deadline = deadline;
        self
    }

    pub fn deadline(&self) -> cudoctor_types::Deadline {
        self.deadline
    }

    /// Whether the deadline has passed; when it has, the loop `scan` working in `place` is
    /// recorded as stopped early. A loop asks this between steps and ends when it says yes.
    pub fn out_of_time(&self, scan: ScanKind, place: &str) -> bool {
        if !self.deadline.passed() {
            return false;
        }
        let budget_s = self.deadline.budget_s().unwrap_or(0.0);
        self.stopped(scan, place, StopReason::Deadline { budget_s });
        true
    }

    /// Records that the loop `scan` working in `place` stopped early, and why (once per loop
    /// and place).
    pub fn stopped(&self, scan: ScanKind, place: &str, why: StopReason) {
        let mut stops = self.stops.lock().unwrap_or_else(|e| e.into_inner());
        if !stops.iter().any(|s| s.scan == scan && s.place == place) {
            stops.push(StoppedEarly {
                scan,
                place: place.to_string(),
                why,
            });
        }
    }

    /// Every loop recorded as stopped early, by kind and place.
    pub fn stopped_early(&self) -> Vec<StoppedEarly> {
        let mut stops = self.stops.lock().unwrap_or_else(|e| e.into_inner()).clone();
        stops.sort_by(|a, b| (a.scan, &a.place).cmp(&(b.scan, &b.place)));
        stops
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether programs may run: only on the live machine. Under `--root` every fact comes from
    /// files, or stays unknown as [`CommandOutcome::NotRunUnderRoot`].
    pub fn runs_programs(&self) -> bool {
        self.root == Path::new("/")
    }

    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The real path of a machine path (`/proc/x` -> `<root>/proc/x`). Relative paths are taken
    /// from the machine's `/`.
    pub fn real_path(&self, machine_path: &str) -> PathBuf {
        let mut real = self.root.clone();
        let bytes = cudoctor_types::os_text::to_os(machine_path);
        for comp in Path::new(&bytes).components() {
            if let Component::Normal(c) = comp {
                real.push(c);
            }
        }
        real
    }

    /// The real path to open for a machine path. Under a fake root, symlinks inside it are
    /// followed within the root (an absolute link target means the machine's `/`, not ours).
    /// A Windows drive path (`C:\x`, `C:/x`, the paths of a Windows environment) under a root
    /// is read in the Windows tree there (`<root>/C/x`, names matched without case).
    pub fn fs_path(&self, machine_path: &str) -> PathBuf {
        if self.root == Path::new("/") {
            return PathBuf::from(cudoctor_types::os_text::to_os(machine_path).into_owned());
        }
        if is_drive_path(machine_path) {
            let path = cudoctor_pe::winfs::WinPath::new(machine_path);
            return cudoctor_pe::winfs::WinFs::rooted(&self.root)
                .host_path(&path)
                // Not there: a path under the root that does not exist either.
                .unwrap_or_else(|| self.real_path(&path.as_str().replace(['\\', ':'], "/")));
        }
        match self.resolve(machine_path) {
            Some((real, _)) => self.real_path(&real),
            None => self.unresolved_path(machine_path),
        }
    }

    /// The real path of a machine path whose links cannot be followed inside the root (a
    /// broken chain, a loop, a missing file). Where a component of it is a link, the system
    /// would follow that link on the real machine (`lib.so -> /etc/shadow`, `-> /proc/...`),
    /// outside the root: then the empty path, which every open refuses.
    fn unresolved_path(&self, machine_path: &str) -> PathBuf {
        let real = self.real_path(machine_path);
        let mut at = self.root.clone();
        if let Ok(rest) = real.strip_prefix(&self.root) {
            for c in rest.components() {
                at.push(c);
                match std::fs::symlink_metadata(&at) {
                    Ok(m) if m.file_type().is_symlink() => return PathBuf::new(),
                    Ok(_) => {}
                    // Missing from here on: nothing the system could follow.
                    Err(_) => break,
                }
            }
        }
        real
    }

    /// The machine path of a real path under the root (the inverse of [`Host::real_path`]).
    pub fn machine_path(&self, real: &Path) -> String {
        match real.strip_prefix(&self.root) {
            Ok(rest) if self.root != Path::new("/") => {
                format!("/{}", cudoctor_types::os_text::from_os(rest.as_os_str()))
            }
            _ => cudoctor_types::os_text::from_os(real.as_os_str()).into_owned(),
        }
    }

    pub fn exists(&self, p: &str) -> bool {
        self.fs_path(p).exists()
    }

    pub fn is_dir(&self, p: &str) -> bool {
        self.fs_path(p).is_dir()
    }

    pub fn is_file(&self, p: &str) -> bool {
        self.fs_path(p).is_file()
    }

    /// Reads a small text file; invalid UTF-8 is replaced, huge files are cut. Opened without
    /// blocking and refused unless it is a regular file: a FIFO in an inspected root (as
    /// `torch/version.py` or `/proc/version`) must not hang the probe.
    pub fn read_text(&self, p: &str) -> io::Result<String> {
        let bytes = cudoctor_types::regular_file::read(&self.fs_path(p), MAX_TEXT_FILE)?;
        // Valid UTF-8 (nearly every file read) is taken as it is, without a copy.
        Ok(String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// Names in a directory, sorted; empty when it cannot be read.
    /// At most [`MAX_DIR_ENTRIES`] names: a directory of millions of entries is cut there and
    /// said as stopped early.
    pub fn list_dir(&self, p: &str) -> Vec<String> {
        let mut names: Vec<String> = match std::fs::read_dir(self.fs_path(p)) {
            // Bounded by the cap, not by the deadline: a listing cut by time would read as
            // files absent (a library not found), and 100,000 names take milliseconds.
            Ok(rd) => rd
                .filter_map(Result::ok)
                .take(MAX_DIR_ENTRIES + 1)
                .map(|e| cudoctor_types::os_text::from_os(&e.file_name()).into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        if names.len() > MAX_DIR_ENTRIES {
            names.truncate(MAX_DIR_ENTRIES);
            self.stopped(
                ScanKind::Listing,
                p,
                StopReason::Files {
                    limit: MAX_DIR_ENTRIES as u64,
                },
            );
        }
        names.sort();
        names
    }

    /// Follows every symlink in `p` inside the root, returning the real machine path and each
    /// link target met on the way. `None` when the chain is broken, loops, or leaves no file.
    pub fn resolve(&self, p: &str) -> Option<(String, Vec<String>)> {
        cudoctor_ldso::rootfs::RootFs::new(&self.root)
            .follow(p)
            .ok()
    }

    /// Every match of `name` on PATH, in PATH order, as machine paths (links not followed).
    pub fn which_all(&self, name: &str) -> Vec<String> {
        let mut hits = Vec::new();
        for dir in self.path_entries() {
            let candidate = format!(
                "{}/{}{}",
                dir.trim_end_matches('/'),
                name,
                self.exe_suffix()
            );
            if self.is_file(&candidate) && !hits.contains(&candidate) {
                hits.push(candidate);
            }
        }
        hits
    }

    pub fn which(&self, name: &str) -> Option<String> {
        self.which_all(name).into_iter().next()
    }

    /// PATH split, relative and empty entries dropped (a probe must not depend on the cwd).
    pub fn path_entries(&self) -> Vec<String> {
        let path = self.var("PATH").unwrap_or("");
        if self.is_live_windows() {
            return split_windows_path_list(path);
        }
        split_path_list(path)
    }

    /// The live machine of a Windows build: its paths are drive paths (`C:\...`), its PATH is
    /// `;`-separated, its programs end in `.exe`, and it has none of Linux's /proc, /sys or /etc.
    pub fn is_live_windows(&self) -> bool {
        cfg!(windows) && self.root == Path::new("/")
    }

    /// A Windows machine: the live one of a Windows build, or a Windows tree under `--root`
    /// (`<root>/C/Windows`, docs/windows.md). Linux's /proc, /sys and /etc are not its files.
    pub fn is_windows(&self) -> bool {
        self.is_live_windows()
            || (self.root != Path::new("/")
                && cudoctor_pe::winfs::WinFs::rooted(&self.root)
                    .is_dir(&cudoctor_pe::winfs::WinPath::new(r"C:\Windows")))
    }

    /// What a program's file name ends with on this machine.
    fn exe_suffix(&self) -> &'static str {
        if self.is_live_windows() {
            ".exe"
        } else {
            ""
        }
    }

    /// Runs a program given by machine path, with no stdin, a timeout and bounded output.
    pub fn run(&self, program: &str, args: &[&str]) -> CommandOutcome {
        self.run_with_env(program, args, &[])
    }

    /// As [`Host::run`], adding variables to the child's environment.
    pub fn run_with_env(
        &self,
        program: &str,
        args: &[&str],
        extra_env: &[(&str, &str)],
    ) -> CommandOutcome {
        if !self.runs_programs() {
            return CommandOutcome::NotRunUnderRoot;
        }
        let mut cmd = Command::new(self.fs_path(program));
        cmd.args(args);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        run_with_timeout(cmd, self.command_timeout)
    }
}

/// A Windows drive-absolute path: `C:\...` or `C:/...`.
pub fn is_drive_path(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/')
}

/// Splits a `:`-separated list, keeping absolute entries only.
pub fn split_path_list(list: &str) -> Vec<String> {
    list.split(':')
        .filter(|e| e.starts_with('/'))
        .map(str::to_string)
        .collect()
}

/// Splits a Windows `;`-separated list, keeping drive-absolute (`C:\x`) and UNC (`\\srv\x`)
/// entries only; quotes around an entry (allowed in Windows' PATH) are dropped.
pub fn split_windows_path_list(list: &str) -> Vec<String> {
    list.split(';')
        .map(|e| e.trim().trim_matches('"'))
        .filter(|e| {
            let b = e.as_bytes();
            e.starts_with("\\\\")
                || (b.len() >= 3
                    && b[0].is_ascii_alphabetic()
                    && b[1] == b':'
                    && (b[2] == b'\\' || b[2] == b'/'))
        })
        .map(str::to_string)
        .collect()
}

/// The process's variables. Windows' names are case-insensitive (`Path` is PATH): they are
/// kept upper-cased there, so a probe's `var("PATH")` finds them.
fn process_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .map(|(k, v)| {
            let k = cudoctor_types::os_text::from_os(&k).into_owned();
            (
                if cfg!(windows) {
                    k.to_ascii_uppercase()
                } else {
                    k
                },
                cudoctor_types::os_text::from_os(&v).into_owned(),
            )
        })
        .collect()
}

/// A machine path with `.`, `..` and repeated separators resolved lexically: `/a/./b/../c` is
/// `/a/c`; a Windows drive path keeps its drive and Windows' separators (`C:\a/b\..\c` is
/// `C:\a\c`).
pub fn normalise(p: &str) -> String {
    if !is_drive_path(p) {
        return cudoctor_ldso::rootfs::normalise(p);
    }
    let (drive, rest) = p.split_at(2);
    let mut out: Vec<&str> = Vec::new();
    for c in rest.split(['/', '\\']).filter(|c| !c.is_empty()) {
        match c {
            "." => {}
            ".." => {
                out.pop();
            }
            _ => out.push(c),
        }
    }
    format!("{}\\{}", drive.to_ascii_uppercase(), out.join("\\"))
}

/// Runs `cmd` through the bounded [`runner`](crate::runner): the whole process group is killed
/// after `timeout`, output is capped.
pub fn run_with_timeout(cmd: Command, timeout: Duration) -> CommandOutcome {
    let limits = runner::Limits {
        max_stdout: MAX_COMMAND_OUTPUT,
        max_stderr: MAX_COMMAND_OUTPUT,
        ..runner::Limits::tool(timeout)
    };
    let done = runner::run(cmd, &limits, None);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match done.ending {
        runner::Ending::NotStarted(e) => CommandOutcome::NotStarted(e),
        runner::Ending::TimedOut => CommandOutcome::TimedOut(timeout),
        runner::Ending::Exited(code) => CommandOutcome::Exited {
            status: Some(code),
            stdout: text(&done.stdout),
            stderr: text(&done.stderr),
        },
        runner::Ending::Signalled(_) => CommandOutcome::Exited {
            status: None,
            stdout: text(&done.stdout),
            stderr: text(&done.stderr),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::time::Instant;

    fn fake() -> (tempfile::TempDir, Host) {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::rooted(
            dir.path().to_path_buf(),
            BTreeMap::new(),
            Duration::from_secs(2),
        );
        (dir, host)
    }

    #[test]
    fn resolves_absolute_links_inside_the_root() {
        let (dir, host) = fake();
        std::fs::create_dir_all(dir.path().join("usr/local/cuda-13.0/bin")).unwrap();
        std::fs::create_dir_all(dir.path().join("etc/alternatives")).unwrap();
        symlink(
            "/usr/local/cuda-13.0",
            dir.path().join("etc/alternatives/cuda"),
        )
        .unwrap();
        symlink("/etc/alternatives/cuda", dir.path().join("usr/local/cuda")).unwrap();
        let (real, hops) = host.resolve("/usr/local/cuda/bin").unwrap();
        assert_eq!(real, "/usr/local/cuda-13.0/bin");
        assert_eq!(hops, vec!["/etc/alternatives/cuda", "/usr/local/cuda-13.0"]);
    }

    #[test]
    fn resolves_relative_links_and_reports_loops() {
        let (dir, host) = fake();
        std::fs::create_dir_all(dir.path().join("opt/a")).unwrap();
        symlink("a", dir.path().join("opt/b")).unwrap();
        assert_eq!(host.resolve("/opt/b").unwrap().0, "/opt/a");
        symlink("loop2", dir.path().join("opt/loop1")).unwrap();
        symlink("loop1", dir.path().join("opt/loop2")).unwrap();
        assert!(host.resolve("/opt/loop1").is_none());
        assert!(host.resolve("/opt/missing").is_none());
    }

    #[test]
    fn a_fifo_or_a_device_is_refused_not_waited_on() {
        let (dir, host) = fake();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let fifo = dir.path().join("proc/version");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
        let started = std::time::Instant::now();
        let err = host.read_text("/proc/version").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(started.elapsed() < Duration::from_secs(2));
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("proc/zero")).unwrap();
        assert!(host.read_text("/proc/zero").is_err());
    }

    /// A link whose target is not inside the root (an absolute path the root lacks, `..` past
    /// its top, /proc) names nothing: its path opens nothing of this machine.
    #[test]
    fn a_link_leading_out_of_the_root_opens_nothing() {
        let (dir, host) = fake();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("secret");
        std::fs::write(&victim, "secret").unwrap();
        std::fs::create_dir_all(dir.path().join("lib")).unwrap();
        symlink(&victim, dir.path().join("lib/a.so")).unwrap();
        symlink("/proc/self/environ", dir.path().join("lib/b.so")).unwrap();
        symlink(outside.path(), dir.path().join("lib/d")).unwrap();
        for p in ["/lib/a.so", "/lib/b.so", "/lib/d/secret"] {
            assert!(!host.exists(p), "{p}");
            assert!(host.read_text(p).is_err(), "{p}");
            assert!(std::fs::read(host.fs_path(p)).is_err(), "{p}");
        }
        assert!(host.list_dir("/lib/d").is_empty());
    }

    #[test]
    fn a_hung_program_is_killed_at_the_timeout() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let started = Instant::now();
        let out = run_with_timeout(cmd, Duration::from_millis(200));
        assert!(matches!(out, CommandOutcome::TimedOut(_)));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_missing_program_is_reported_not_started() {
        let host = Host::real(Duration::from_secs(2));
        assert!(matches!(
            host.run("/no/such/dir/nvidia-smi", &[]),
            CommandOutcome::NotStarted(_)
        ));
    }

    #[test]
    fn programs_of_an_inspected_root_are_never_run() {
        let (dir, host) = fake();
        let marker = dir.path().join("ran");
        let prog = dir.path().join("usr/bin/nvidia-smi");
        std::fs::create_dir_all(prog.parent().unwrap()).unwrap();
        std::fs::write(&prog, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(matches!(
            host.run("/usr/bin/nvidia-smi", &[]),
            CommandOutcome::NotRunUnderRoot
        ));
        assert!(!marker.exists());
    }
}
