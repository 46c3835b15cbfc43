//! The last bound on reading a machine: a read the kernel blocks in (a hung NFS mount, a FUSE
//! file system that never answers) is not interruptible by the deadline checks between steps,
//! so a watchdog thread counts cudoctor's own time (the time no child process of the runner is
//! running: each child has its own limit) and, past [`limit`], ends cudoctor with exit 2 and a
//! message naming the blocked reads, instead of hanging. Children are killed with their groups
//! and scratch directories removed first, as on a signal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// How long the collection of a command whose budget is `timeout` may work on its own: every
/// loop ends at `timeout`, and what comes after it (judging what was read) is bounded by caps,
/// so twice the budget and 20 s more is far past any collection that is not blocked.
pub fn limit(timeout: Duration) -> Duration {
    timeout
        .saturating_mul(2)
        .saturating_add(Duration::from_secs(20))
}

/// While this lives, the watchdog counts; dropped, it stops.
pub struct Armed(Arc<AtomicBool>);

impl Drop for Armed {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(100);

/// Starts the watchdog of a collection whose budget is `timeout`.
pub fn arm(timeout: Duration) -> Armed {
    arm_for(
        "reading this machine".into(),
        limit(timeout),
        format!(" (--timeout {} s)", timeout.as_secs_f64()),
    )
}

/// How long reading one input file named on the command line (a snapshot, a baseline, a
/// knowledge-base file) may take: 64 MiB from the slowest disk take far less.
pub const INPUT_LIMIT: Duration = Duration::from_secs(30);

/// Starts the watchdog of reading the input file described by `what` ([`INPUT_LIMIT`]).
pub fn arm_input(what: String) -> Armed {
    arm_for(what, INPUT_LIMIT, String::new())
}

fn arm_for(what: String, limit: Duration, budget: String) -> Armed {
    let done = Arc::new(AtomicBool::new(false));
    let seen = done.clone();
    let spawned = thread::Builder::new()
        .name("cudoctor-watchdog".into())
        .spawn(move || {
            let mut own = Duration::ZERO;
            while !seen.load(Ordering::SeqCst) {
                thread::sleep(TICK);
                if !crate::runner::children_running() {
                    own += TICK;
                }
                if own >= limit && !seen.load(Ordering::SeqCst) {
                    let blocked = blocked_reads();
                    let at = if blocked.is_empty() {
                        String::new()
                    } else {
                        format!("blocked at {}; ", blocked.join(", "))
                    };
                    crate::runner::abandon(&format!(
                        "{what} did not end: {at}cudoctor's own reading ran past {} s{budget}. \
                         A read the system does not answer (a hung network mount, a FUSE file \
                         system) cannot be interrupted otherwise",
                        limit.as_secs(),
                    ));
                }
            }
        });
    if spawned.is_err() {
        // No watchdog thread: the reading goes on without this last bound.
        done.store(true, Ordering::SeqCst);
    }
    Armed(done)
}

/// The files cudoctor's threads are in the middle of reading, as far as Linux says: the path an
/// `open`/`stat` was given (read from cudoctor's own memory), the file a `read`/`getdents`
/// reads (not a pipe or a socket). Empty elsewhere.
pub fn blocked_reads() -> Vec<String> {
    #[cfg(target_os = "linux")]
    {
        let mut out = Vec::new();
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return out;
        };
        for task in tasks.flatten().take(4096) {
            let dir = task.path();
            // A FUSE request waits interruptibly at first, NFS not: the state is not looked
            // at; what the thread is in the middle of says it.
            let Ok(call) = std::fs::read_to_string(dir.join("syscall")) else {
                continue;
            };
            if let Some(p) = linux::blocked_on(&call) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out.truncate(8);
        out
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::unix::fs::FileExt as _;

    /// Where a system call takes what it reads.
    enum Takes {
        /// A path in argument `n`, relative to the directory descriptor in argument 0 when
        /// `at` (the `*at` calls).
        Path { n: usize, at: bool },
        /// A file descriptor in argument 0.
        Fd,
    }

    #[cfg(target_arch = "x86_64")]
    fn takes(nr: u64) -> Option<Takes> {
        Some(match nr {
            2 | 4 | 6 | 21 | 89 => Takes::Path { n: 0, at: false },
            257 | 262 | 267 | 269 | 332 | 437 | 439 => Takes::Path { n: 1, at: true },
            0 | 5 | 17 | 19 | 217 => Takes::Fd,
            _ => return None,
        })
    }

    #[cfg(target_arch = "aarch64")]
    fn takes(nr: u64) -> Option<Takes> {
        Some(match nr {
            48 | 56 | 78 | 79 | 291 | 437 | 439 => Takes::Path { n: 1, at: true },
            61 | 63 | 65 | 67 | 80 => Takes::Fd,
            _ => return None,
        })
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn takes(_nr: u64) -> Option<Takes> {
        None
    }

    /// `AT_FDCWD` (-100) as the kernel shows it: an int, so in the register's low 32 bits
    /// (`0xffffff9c`), the upper ones as the caller left them.
    fn is_cwd(fd: u64) -> bool {
        fd & 0xffff_ffff == 0xffff_ff9c
    }

    /// The file of descriptor `fd`; `None` for a pipe, a socket or the like (`pipe:[…]`).
    fn fd_path(fd: u64) -> Option<String> {
        std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
            .filter(|p| p.starts_with('/'))
    }

    /// The NUL-terminated string at `addr` of this process's memory (at most 4 KiB).
    fn string_at(addr: u64) -> Option<String> {
        let mem = std::fs::File::open("/proc/self/mem").ok()?;
        let mut buf = vec![0u8; 4096];
        let n = mem.read_at(&mut buf, addr).ok()?;
        let end = buf[..n].iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    /// What a task blocked in the system call `/proc/self/task/TID/syscall` shows is reading.
    pub(super) fn blocked_on(call: &str) -> Option<String> {
        let mut fields = call.split_whitespace();
        let nr: u64 = fields.next()?.parse().ok()?;
        let args: Vec<u64> = fields
            .take(6)
            .filter_map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
            .collect();
        match takes(nr)? {
            Takes::Fd => fd_path(*args.first()?),
            Takes::Path { n, at } => {
                let path = string_at(*args.get(n)?)?;
                if !at || path.starts_with('/') || is_cwd(args[0]) {
                    return Some(path);
                }
                Some(match fd_path(args[0]) {
                    Some(dir) => format!("{dir}/{path}"),
                    None => path,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_leaves_room_past_the_budget() {
        assert_eq!(limit(Duration::from_secs(5)), Duration::from_secs(30));
        assert_eq!(limit(Duration::from_secs(3600)), Duration::from_secs(7220));
    }

    /// What a blocked thread is reading, as `/proc/self/task/TID/syscall` shows it: the file of
    /// a descriptor, the path of an `openat` (read from this process's memory).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn a_blocked_system_call_names_its_file() {
        use std::os::fd::AsRawFd as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("log");
        std::fs::write(&file, "x").unwrap();
        let open = std::fs::File::open(&file).unwrap();
        let read = format!(
            "0 0x{:x} 0x7ffd0000 0x1000 0x0 0x0 0x0 0x7ffd 0x7ffd",
            open.as_raw_fd()
        );
        let named = linux::blocked_on(&read).unwrap();
        assert_eq!(std::path::Path::new(&named), file.canonicalize().unwrap());
        let path = std::ffi::CString::new("/mnt/hung/lib/libcuda.so.1").unwrap();
        let openat = format!(
            "257 0xffffff9c 0x{:x} 0x80000 0x0 0x0 0x0 0x7ffd 0x7ffd",
            path.as_ptr() as usize
        );
        assert_eq!(
            linux::blocked_on(&openat).as_deref(),
            Some("/mnt/hung/lib/libcuda.so.1")
        );
        // Relative to an open directory (a `statx` of a name in it).
        let dir_fd = std::fs::File::open(dir.path()).unwrap();
        let name = std::ffi::CString::new("log").unwrap();
        let statx = format!(
            "332 0x{:x} 0x{:x} 0x100 0xfff 0x0 0x0 0x7ffd 0x7ffd",
            dir_fd.as_raw_fd(),
            name.as_ptr() as usize
        );
        let named = linux::blocked_on(&statx).unwrap();
        assert_eq!(std::path::Path::new(&named), file.canonicalize().unwrap());
        assert_eq!(linux::blocked_on("running"), None);
        assert_eq!(
            linux::blocked_on("230 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0"),
            None
        );
    }
}
