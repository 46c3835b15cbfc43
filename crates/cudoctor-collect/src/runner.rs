//! The one way cudoctor runs a child program: whatever the child does, the call returns within
//! its time limit, with bounded output.
//!
//! - The child leads its own process group, and the whole group is killed (SIGKILL, which cannot
//!   be ignored) at the deadline, or as soon as the child itself exits: a background process it
//!   left behind must not hold our pipes open.
//! - Pipes are read without blocking, until the deadline and not after it, so a grandchild that
//!   escaped the group (setsid) and still holds stdout cannot keep us waiting.
//! - Output past the limits is read and thrown away (the child never blocks on a full pipe), so
//!   a child printing gigabytes costs no memory.
//! - Reaping is bounded too: a child stuck in the kernel (a wedged driver) is left to a thread.
//! - On Linux the child dies with cudoctor (`PR_SET_PDEATHSIG`): a cudoctor killed mid-probe
//!   leaves no nvidia-smi or interpreter behind.
//! - A descendant that left the group and the session (`setsid()`) is found once its parent has
//!   gone: where cudoctor made itself a subreaper ([`become_subreaper`], `--deep`), such an
//!   orphan is re-parented to cudoctor, and [`sweep_orphans`] kills it with its session.

use std::io::{self, Read};
#[cfg(unix)]
use std::os::fd::AsFd;
#[cfg(unix)]
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

#[cfg(unix)]
use rustix::event::{poll, PollFd, PollFlags, Timespec};
#[cfg(unix)]
use rustix::process::{kill_process_group, Pid, Signal};

/// How long pipes are still read after the child has exited and its group was killed.
const EXIT_GRACE: Duration = Duration::from_millis(300);
/// How long a killed child is waited for before it is left to a reaping thread.
const REAP_WAIT: Duration = Duration::from_secs(1);
/// How often the child is checked while its pipes stay silent.
const POLL_SLICE: Duration = Duration::from_millis(10);

/// What a run may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall time from start until the group is killed.
    pub timeout: Duration,
    /// Most stdout bytes kept (the first ones).
    pub max_stdout: usize,
    /// Most stderr bytes kept.
    pub max_stderr: usize,
    /// Keep the last stderr bytes rather than the first (the end of a traceback explains it).
    pub stderr_tail: bool,
}

impl Limits {
    /// A small tool's limits: 8 MiB of each stream, stderr from its start.
    pub fn tool(timeout: Duration) -> Limits {
        Limits {
            timeout,
            max_stdout: 8 << 20,
            max_stderr: 8 << 20,
            stderr_tail: false,
        }
    }
}

/// How the child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signalled(i32),
    /// Still running at the deadline; its group was killed.
    TimedOut,
    /// It could not be started (not found, not executable).
    NotStarted(String),
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Finished {
    pub ending: Ending,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// More stdout came than [`Limits::max_stdout`]; the rest was thrown away.
    pub stdout_cut: bool,
    pub stderr_cut: bool,
    pub elapsed: Duration,
}

/// Runs `cmd` with stdin from /dev/null under `limits`. `on_line` sees each stdout line as it
/// arrives (without its newline; a line longer than `max_stdout` is cut), for progress.
#[cfg(unix)]
pub fn run(
    mut cmd: Command,
    limits: &Limits,
    mut on_line: Option<&mut dyn FnMut(&str)>,
) -> Finished {
    let started = Instant::now();
    let deadline = started + limits.timeout;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    die_with_parent(&mut cmd);
    // Registered while spawning, so a sweep on another thread never takes it for an orphan.
    let mut children = CHILDREN.lock().unwrap_or_else(|p| p.into_inner());
    let spawned = cmd.spawn();
    if let Ok(c) = &spawned {
        children.push(c.id());
    }
    drop(children);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return Finished {
                ending: Ending::NotStarted(e.to_string()),
                stdout: Vec::new(),
                stderr: Vec::new(),
                stdout_cut: false,
                stderr_cut: false,
                elapsed: started.elapsed(),
            }
        }
    };
    let group = Pid::from_child(&child);
    let child_id = child.id();
    let mut out = Stream::new(child.stdout.take().map(Pipe::Out), limits.max_stdout, false);
    let mut err = Stream::new(
        child.stderr.take().map(Pipe::Err),
        limits.max_stderr,
        limits.stderr_tail,
    );
    let mut lines = LineSplitter::new(limits.max_stdout);
    let mut status: Option<ExitStatus> = None;
    let mut read_until = deadline;
    loop {
        let now = Instant::now();
        if now >= read_until {
            break;
        }
        if status.is_none() {
            match child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    // What the child left running in its group goes with it.
                    let _ = kill_process_group(group, Signal::KILL);
                    read_until = read_until.min(now + EXIT_GRACE);
                }
                Ok(None) => {}
                Err(_) => break,
            }
        }
        if out.pipe.is_none() && err.pipe.is_none() {
            if status.is_some() {
                break;
            }
            // Pipes closed, child still running: wait for its exit up to the deadline.
            thread::sleep(
                POLL_SLICE
                    .min(read_until - now)
                    .min(Duration::from_millis(2)),
            );
            continue;
        }
        let slice = POLL_SLICE.min(read_until - now);
        wait_readable(&out, &err, slice);
        let fresh = out.read_available();
        if let Some(f) = on_line.as_deref_mut() {
            lines.feed(&fresh, f);
        }
        err.read_available();
    }
    let ending = match status {
        Some(s) => ending_of(s),
        None => {
            let _ = kill_process_group(group, Signal::KILL);
            let _ = child.kill();
            match reap(child) {
                // It ended on its own between the last check and the kill.
                Some(s) if s.signal() != Some(Signal::KILL.as_raw()) => ending_of(s),
                _ => Ending::TimedOut,
            }
        }
    };
    if let Some(f) = on_line {
        lines.finish(f);
    }
    forget_child(child_id);
    if SUBREAPER.load(std::sync::atomic::Ordering::Relaxed) {
        sweep_orphans();
    }
    wait_if_terminating();
    Finished {
        ending,
        stdout: out.kept.bytes,
        stderr: err.kept.bytes,
        stdout_cut: out.kept.cut,
        stderr_cut: err.kept.cut,
        elapsed: started.elapsed(),
    }
}

#[cfg(not(unix))]
fn ending_of(s: ExitStatus) -> Ending {
    Ending::Exited(s.code().unwrap_or(-1))
}

#[cfg(unix)]
fn ending_of(s: ExitStatus) -> Ending {
    match (s.code(), s.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(sig)) => Ending::Signalled(sig),
        (None, None) => Ending::Exited(-1),
    }
}

/// The runner's children not yet reaped (by process id): never taken for orphans.
static CHILDREN: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());
/// Whether this process is a child subreaper ([`become_subreaper`]).
static SUBREAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a child of the runner is running now (it has its own time limit).
pub fn children_running() -> bool {
    !CHILDREN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_empty()
}

/// Ends cudoctor at once with exit 2 and `message` (a cudoctor error): the running children's
/// groups killed, the scratch directories removed, as when a signal ends it. For a collection
/// that cannot end otherwise ([`crate::watchdog`]).
pub fn abandon(message: &str) -> ! {
    TERMINATING.store(true, std::sync::atomic::Ordering::SeqCst);
    end_children_and_scratch();
    let line = format!(
        "cudoctor: error: {}\n",
        cudoctor_types::inert::message(message)
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    std::process::exit(2)
}

/// Kills the running children with their groups, then removes the scratch directories (a few
/// tries: a child's last write may land between two).
fn end_children_and_scratch() {
    #[cfg(unix)]
    {
        let children: Vec<u32> = CHILDREN.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for pid in children {
            if let Some(pid) = Pid::from_raw(i32::try_from(pid).unwrap_or(0)) {
                let _ = kill_process_group(pid, Signal::KILL);
            }
        }
    }
    let dirs = DOOMED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for _ in 0..3 {
        for d in &dirs {
            let _ = std::fs::remove_dir_all(d);
        }
        if dirs.iter().all(|d| !d.exists()) {
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

fn forget_child(id: u32) {
    let mut children = CHILDREN.lock().unwrap_or_else(|p| p.into_inner());
    children.retain(|&c| c != id);
}

/// Set when a signal ends cudoctor ([`remove_on_termination`]): the thread that removes the
/// scratch directories ends the process; no other goes on (a child killed by it is not a
/// result to act on).
static TERMINATING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits for the end of the process while a signal is ending it.
fn wait_if_terminating() {
    while TERMINATING.load(std::sync::atomic::Ordering::SeqCst) {
        thread::park_timeout(Duration::from_secs(1));
    }
}

/// Directories removed if cudoctor is ended by a signal ([`remove_on_termination`]).
static DOOMED: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// While the returned guard lives, `dir` (a scratch directory of cudoctor's own) is removed if
/// cudoctor is ended by SIGINT, SIGTERM or SIGHUP: the running children's groups are killed
/// first (so none writes into it any more), the directory removed, then cudoctor ends as the
/// signal asks. Dropping the guard forgets the directory (its owner removes it).
pub fn remove_on_termination(dir: &std::path::Path) -> Doomed {
    #[cfg(unix)]
    {
        static WATCHER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        WATCHER.get_or_init(|| {
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            // Registered once for the process and never removed: a signal handler removed
            // would leave the signal ignored, not restored to its default.
            let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            else {
                return false;
            };
            thread::spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    TERMINATING.store(true, std::sync::atomic::Ordering::SeqCst);
                    end_children_and_scratch();
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
            true
        });
    }
    DOOMED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(dir.to_path_buf());
    Doomed(dir.to_path_buf())
}

/// A directory removed if cudoctor is ended by a signal, while this lives.
pub struct Doomed(std::path::PathBuf);

impl Drop for Doomed {
    fn drop(&mut self) {
        wait_if_terminating();
        DOOMED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|d| d != &self.0);
    }
}

/// The child gets SIGKILL when cudoctor dies (Linux's `PR_SET_PDEATHSIG`); a child whose
/// parent died before it could ask for that ends at once.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(crate) fn die_with_parent(cmd: &mut Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec and calls only prctl and
    // getppid, both async-signal-safe system calls; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
            if rustix::process::getppid() != Some(parent) {
                return Err(io::Error::from(io::ErrorKind::BrokenPipe));
            }
            Ok(())
        });
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) fn die_with_parent(_: &mut Command) {}

/// Makes cudoctor a child subreaper (Linux's `PR_SET_CHILD_SUBREAPER`): a descendant of one of
/// its children that outlives its parent (a daemon that called `setsid()`) is re-parented to
/// cudoctor rather than to init, where [`sweep_orphans`] finds it. `--deep` asks for this: its
/// interpreter runs code of the inspected environment.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        let ok = rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok();
        SUBREAPER.store(ok, std::sync::atomic::Ordering::Relaxed);
        ok
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// One process's `/proc/PID/stat` fields that say whose it is: (parent, group, session).
#[cfg(target_os = "linux")]
fn stat_ids(pid: u32) -> Option<(u32, u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp session ...`; comm may hold spaces and parentheses.
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(1);
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    let sid = f.next()?.parse().ok()?;
    Some((ppid, pgrp, sid))
}

/// Kills every process re-parented to cudoctor that it did not start itself (an escapee of a
/// child's group), with its process group and, when it made a session of its own, every
/// process of that session; reaps them. Returns how many were found. Does nothing unless
/// [`become_subreaper`] succeeded.
pub fn sweep_orphans() -> usize {
    #[cfg(target_os = "linux")]
    {
        if !SUBREAPER.load(std::sync::atomic::Ordering::Relaxed) {
            return 0;
        }
        let me = std::process::id();
        let Some((_, my_group, my_session)) = stat_ids(me) else {
            return 0;
        };
        let mut found = 0;
        // An escapee's own children are re-parented to cudoctor once it is killed: a few rounds.
        for _ in 0..5 {
            let children = CHILDREN.lock().unwrap_or_else(|p| p.into_inner());
            let all: Vec<(u32, (u32, u32, u32))> = std::fs::read_dir("/proc")
                .map(|d| {
                    d.flatten()
                        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                        .filter_map(|pid| Some((pid, stat_ids(pid)?)))
                        .collect()
                })
                .unwrap_or_default();
            let orphans: Vec<(u32, u32, u32)> = all
                .iter()
                .filter(|(pid, (ppid, ..))| *ppid == me && !children.contains(pid))
                .map(|&(pid, (_, pgrp, sid))| (pid, pgrp, sid))
                .collect();
            drop(children);
            if orphans.is_empty() {
                break;
            }
            for &(pid, pgrp, sid) in &orphans {
                found += 1;
                let kill = |p: u32| {
                    if let Some(p) = i32::try_from(p).ok().and_then(Pid::from_raw) {
                        let _ = rustix::process::kill_process(p, Signal::KILL);
                    }
                };
                if pgrp != my_group {
                    if let Some(g) = i32::try_from(pgrp).ok().and_then(Pid::from_raw) {
                        let _ = kill_process_group(g, Signal::KILL);
                    }
                }
                if sid != my_session && sid != 0 {
                    for (other, (_, _, s)) in &all {
                        if *s == sid && *other != me {
                            kill(*other);
                        }
                    }
                }
                kill(pid);
            }
            // Reap what was killed (they are cudoctor's children now), briefly.
            let until = Instant::now() + Duration::from_millis(500);
            for &(pid, ..) in &orphans {
                let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
                    continue;
                };
                while Instant::now() < until {
                    match rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG) {
                        Ok(Some(_)) | Err(_) => break,
                        Ok(None) => thread::sleep(Duration::from_millis(2)),
                    }
                }
            }
        }
        found
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Waits for a killed child briefly; one stuck in the kernel is reaped by a thread later.
fn reap(mut child: Child) -> Option<ExitStatus> {
    let until = Instant::now() + REAP_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                thread::spawn(move || {
                    let _ = child.wait();
                });
                return None;
            }
            Err(_) => return None,
        }
    }
}

#[cfg(unix)]
enum Pipe {
    Out(std::process::ChildStdout),
    Err(std::process::ChildStderr),
}

#[cfg(unix)]
impl Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Pipe::Out(p) => p.read(buf),
            Pipe::Err(p) => p.read(buf),
        }
    }

    fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Pipe::Out(p) => p.as_fd(),
            Pipe::Err(p) => p.as_fd(),
        }
    }
}

/// One output stream: its pipe while open, and what is kept of it.
#[cfg(unix)]
struct Stream {
    pipe: Option<Pipe>,
    kept: Kept,
}

/// The bytes kept of one stream, within a limit.
struct Kept {
    bytes: Vec<u8>,
    limit: usize,
    tail: bool,
    cut: bool,
}

#[cfg(unix)]
impl Stream {
    fn new(pipe: Option<Pipe>, limit: usize, tail: bool) -> Stream {
        let pipe = pipe.filter(|p| rustix::io::ioctl_fionbio(p.fd(), true).is_ok());
        Stream {
            pipe,
            kept: Kept {
                bytes: Vec::new(),
                limit,
                tail,
                cut: false,
            },
        }
    }

    /// Reads what the pipe has now, without blocking; returns the bytes read this time (for
    /// line splitting), of which only the first `limit` are ever kept.
    fn read_available(&mut self) -> Vec<u8> {
        let mut fresh = Vec::new();
        let Some(pipe) = self.pipe.as_mut() else {
            return fresh;
        };
        let mut buf = [0u8; 64 << 10];
        // Bounded per call, so one chatty stream cannot starve the deadline check.
        for _ in 0..64 {
            match pipe.read(&mut buf) {
                Ok(0) => {
                    self.pipe = None;
                    break;
                }
                Ok(n) => {
                    let chunk = buf.get(..n).unwrap_or(&[]);
                    fresh.extend_from_slice(chunk);
                    self.kept.keep(chunk);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.pipe = None;
                    break;
                }
            }
        }
        fresh
    }
}

impl Kept {
    fn keep(&mut self, chunk: &[u8]) {
        if self.tail {
            self.bytes.extend_from_slice(chunk);
            if self.bytes.len() > self.limit {
                self.cut = true;
                let excess = self.bytes.len() - self.limit;
                self.bytes.drain(..excess);
            }
        } else {
            let room = self.limit.saturating_sub(self.bytes.len());
            if chunk.len() > room {
                self.cut = true;
            }
            self.bytes
                .extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or(&[]));
        }
    }
}

/// Blocks until one open pipe is readable or `slice` has passed.
#[cfg(unix)]
fn wait_readable(out: &Stream, err: &Stream, slice: Duration) {
    let timeout = Timespec {
        tv_sec: slice.as_secs() as i64,
        tv_nsec: i64::from(slice.subsec_nanos()),
    };
    let fds: Vec<_> = [out, err]
        .into_iter()
        .filter_map(|s| s.pipe.as_ref())
        .map(|p| PollFd::from_borrowed_fd(p.fd(), PollFlags::IN))
        .collect();
    let mut fds = fds;
    let _ = poll(&mut fds, Some(&timeout));
}

/// Splits a byte stream into lines for a callback, each cut at `limit` bytes.
struct LineSplitter {
    pending: Vec<u8>,
    limit: usize,
}

impl LineSplitter {
    fn new(limit: usize) -> LineSplitter {
        LineSplitter {
            pending: Vec::new(),
            limit,
        }
    }

    fn feed(&mut self, mut bytes: &[u8], f: &mut dyn FnMut(&str)) {
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n') {
            self.push(bytes.get(..pos).unwrap_or(&[]));
            f(&String::from_utf8_lossy(&self.pending));
            self.pending.clear();
            bytes = bytes.get(pos + 1..).unwrap_or(&[]);
        }
        self.push(bytes);
    }

    fn push(&mut self, part: &[u8]) {
        let room = self.limit.saturating_sub(self.pending.len());
        self.pending
            .extend_from_slice(part.get(..room.min(part.len())).unwrap_or(&[]));
    }

    fn finish(&mut self, f: &mut dyn FnMut(&str)) {
        if !self.pending.is_empty() {
            f(&String::from_utf8_lossy(&self.pending));
            self.pending.clear();
        }
    }
}

/// Runs `cmd` with stdin from the null device under `limits` (see the Unix version). Windows has
/// no process groups to kill and no poll on pipes: each pipe is read by a thread of its own that
/// hands chunks over a channel, the child alone is killed at the deadline, and a reader still
/// blocked then (a grandchild holds the pipe) is left behind rather than waited for.
#[cfg(not(unix))]
pub fn run(
    mut cmd: Command,
    limits: &Limits,
    mut on_line: Option<&mut dyn FnMut(&str)>,
) -> Finished {
    use std::sync::mpsc;
    let started = Instant::now();
    let deadline = started + limits.timeout;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Finished {
                ending: Ending::NotStarted(e.to_string()),
                stdout: Vec::new(),
                stderr: Vec::new(),
                stdout_cut: false,
                stderr_cut: false,
                elapsed: started.elapsed(),
            }
        }
    };
    let child_id = child.id();
    // (is stderr, a chunk or None at the end of the stream)
    let (tx, rx) = mpsc::channel::<(bool, Option<Vec<u8>>)>();
    fn reader(
        mut pipe: impl Read + Send + 'static,
        is_err: bool,
        tx: mpsc::Sender<(bool, Option<Vec<u8>>)>,
    ) {
        thread::spawn(move || {
            let mut buf = vec![0u8; 64 << 10];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx
                            .send((is_err, Some(buf.get(..n).unwrap_or(&[]).to_vec())))
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send((is_err, None));
        });
    }
    let mut open = 0;
    if let Some(p) = child.stdout.take() {
        reader(p, false, tx.clone());
        open += 1;
    }
    if let Some(p) = child.stderr.take() {
        reader(p, true, tx.clone());
        open += 1;
    }
    drop(tx);
    let kept = |limit, tail| Kept {
        bytes: Vec::new(),
        limit,
        tail,
        cut: false,
    };
    let mut out = kept(limits.max_stdout, false);
    let mut err = kept(limits.max_stderr, limits.stderr_tail);
    let mut lines = LineSplitter::new(limits.max_stdout);
    let mut status: Option<ExitStatus> = None;
    let mut read_until = deadline;
    loop {
        let now = Instant::now();
        if now >= read_until {
            break;
        }
        if status.is_none() {
            match child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    read_until = read_until.min(now + EXIT_GRACE);
                }
                Ok(None) => {}
                Err(_) => break,
            }
        }
        if open == 0 {
            if status.is_some() {
                break;
            }
            thread::sleep(Duration::from_millis(2).min(read_until - now));
            continue;
        }
        match rx.recv_timeout(POLL_SLICE.min(read_until - now)) {
            Ok((false, Some(chunk))) => {
                out.keep(&chunk);
                if let Some(f) = on_line.as_deref_mut() {
                    lines.feed(&chunk, f);
                }
            }
            Ok((true, Some(chunk))) => err.keep(&chunk),
            Ok((_, None)) => open -= 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => open = 0,
        }
    }
    let ending = match status {
        Some(s) => ending_of(s),
        None => match child.try_wait() {
            Ok(Some(s)) => ending_of(s),
            _ => {
                let _ = child.kill();
                let _ = reap(child);
                Ending::TimedOut
            }
        },
    };
    if let Some(f) = on_line {
        lines.finish(f);
    }
    forget_child(child_id);
    if SUBREAPER.load(std::sync::atomic::Ordering::Relaxed) {
        sweep_orphans();
    }
    Finished {
        ending,
        stdout: out.bytes,
        stderr: err.bytes,
        stdout_cut: out.cut,
        stderr_cut: err.cut,
        elapsed: started.elapsed(),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::path::Path;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    fn limits(ms: u64) -> Limits {
        Limits::tool(Duration::from_millis(ms))
    }

    /// Whether a process with this pid is still alive (and not a zombie).
    fn alive(pid: &str) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    fn wait_dead(pid: &str) -> bool {
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until {
            if !alive(pid) {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn output_and_status_of_a_plain_program() {
        let r = run(sh("echo out; echo err >&2; exit 3"), &limits(5000), None);
        assert_eq!(r.ending, Ending::Exited(3));
        assert_eq!(r.stdout, b"out\n");
        assert_eq!(r.stderr, b"err\n");
        assert!(!r.stdout_cut);
    }

    #[test]
    fn a_background_child_holding_stdout_does_not_hold_us() {
        // The reproducer: the tool answers, then leaves `sleep` with our pipe.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 1000 & echo $! > '{}'; echo x", pidfile.display());
        let r = run(sh(&script), &limits(20_000), None);
        assert_eq!(r.ending, Ending::Exited(0));
        assert_eq!(r.stdout, b"x\n");
        assert!(r.elapsed < Duration::from_secs(2), "took {:?}", r.elapsed);
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        assert!(
            wait_dead(pid.trim()),
            "the background sleep was left running"
        );
    }

    #[test]
    fn a_program_that_ignores_sigterm_and_never_exits_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!(
            "trap '' TERM; sleep 1000 & echo $! > '{}'; while :; do sleep 1; done",
            pidfile.display()
        );
        let r = run(sh(&script), &limits(500), None);
        assert_eq!(r.ending, Ending::TimedOut);
        assert!(r.elapsed < Duration::from_secs(3), "took {:?}", r.elapsed);
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        assert!(wait_dead(pid.trim()), "the grandchild survived the timeout");
    }

    #[test]
    fn a_grandchild_that_leaves_the_group_cannot_stretch_the_deadline() {
        if !Path::new("/usr/bin/setsid").exists() {
            eprintln!("skipped: no setsid(1) on this machine");
            return;
        }
        let r = run(sh("setsid sleep 5 & echo started"), &limits(10_000), None);
        assert_eq!(r.ending, Ending::Exited(0));
        assert_eq!(r.stdout, b"started\n");
        assert!(r.elapsed < Duration::from_secs(2), "took {:?}", r.elapsed);
        let r = run(sh("setsid sleep 5 & sleep 30"), &limits(400), None);
        assert_eq!(r.ending, Ending::TimedOut);
        assert!(r.elapsed < Duration::from_secs(3), "took {:?}", r.elapsed);
    }

    #[test]
    fn a_hundred_megabytes_of_output_is_cut_not_kept() {
        let r = run(
            sh("head -c 104857600 /dev/zero; echo done >&2"),
            &limits(60_000),
            None,
        );
        assert_eq!(r.ending, Ending::Exited(0));
        assert_eq!(r.stdout.len(), 8 << 20);
        assert!(r.stdout_cut);
        assert_eq!(r.stderr, b"done\n");
    }

    #[test]
    fn endless_output_is_stopped_at_the_deadline() {
        let r = run(sh("yes"), &limits(500), None);
        assert_eq!(r.ending, Ending::TimedOut);
        assert!(r.elapsed < Duration::from_secs(3), "took {:?}", r.elapsed);
        assert!(r.stdout.len() <= 8 << 20);
    }

    #[test]
    fn the_stderr_tail_is_what_is_kept_when_asked() {
        let l = Limits {
            max_stderr: 4,
            stderr_tail: true,
            ..limits(5000)
        };
        let r = run(sh("printf 'abcdefgh' >&2"), &l, None);
        assert_eq!(r.stderr, b"efgh");
        assert!(r.stderr_cut);
    }

    #[test]
    fn lines_reach_the_callback_as_they_come() {
        let mut seen = Vec::new();
        let mut f = |l: &str| seen.push(l.to_string());
        run(
            sh("echo one; echo two; printf three"),
            &limits(5000),
            Some(&mut f),
        );
        assert_eq!(seen, ["one", "two", "three"]);
    }

    #[test]
    fn a_missing_program_is_not_started() {
        let r = run(Command::new("/no/such/program"), &limits(1000), None);
        assert!(matches!(r.ending, Ending::NotStarted(_)));
    }
}
