//! The one way cudoctor writes a file (`--save`, `run --out`, `man DIR`, fleet collection's
//! outputs): the bytes go to a fresh temporary file beside the target, created with
//! `O_CREAT|O_EXCL|O_NOFOLLOW` (never an existing file, never through a link), are flushed to
//! disk, and the temporary file is renamed over the target. So
//!
//! - a symbolic link planted at the target (in a shared directory) is refused with a message,
//!   and even one planted between the check and the rename is replaced, never written through;
//! - a reader never sees half a report, and concurrent writers of one file each leave a whole,
//!   valid file (the last rename wins);
//! - a failure leaves the target as it was and no temporary file behind.

use std::fmt;
use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a file was not written.
#[derive(Debug)]
pub enum WriteError {
    /// The target is a symbolic link: cudoctor does not write through one.
    Symlink(PathBuf),
    /// The target exists and is not a regular file (a directory, FIFO, device or socket).
    NotRegular(PathBuf),
    /// The file system refused.
    Io(PathBuf, io::Error),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Symlink(p) => write!(
                f,
                "refusing to write {}: it is a symbolic link (cudoctor never writes through a link; remove it or choose another path)",
                p.display()
            ),
            WriteError::NotRegular(p) => write!(
                f,
                "refusing to write {}: it exists and is not a regular file",
                p.display()
            ),
            WriteError::Io(p, e) => write!(f, "cannot write {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for WriteError {}

/// Writes `bytes` to `path` atomically (see the module's documentation).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let io_err = |e: io::Error| WriteError::Io(path.to_path_buf(), e);
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => return Err(WriteError::Symlink(path.to_path_buf())),
        Ok(m) if !m.is_file() => return Err(WriteError::NotRegular(path.to_path_buf())),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(e)),
    }
    let name = path
        .file_name()
        .ok_or_else(|| io_err(io::Error::new(io::ErrorKind::InvalidInput, "no file name")))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, mut file) = create_temp(&dir, &name.to_string_lossy()).map_err(io_err)?;
    let done = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            std::fs::rename(&tmp, path)
        });
    if let Err(e) = done {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_err(e));
    }
    // The rename itself made durable; a directory that cannot be opened is no failure.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A new file `.<name>.<pid>-<n>.tmp` in `dir`, created exclusively and never through a link.
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..64 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tmp = dir.join(format!(".{name}.{}-{n}-{nanos:x}.tmp", std::process::id()));
        match open_exclusive(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// Linux's O_NOFOLLOW (x86_64 and aarch64 differ).
#[cfg(all(unix, target_arch = "aarch64"))]
const O_NOFOLLOW: i32 = 0o100000;
#[cfg(all(unix, not(target_arch = "aarch64")))]
const O_NOFOLLOW: i32 = 0o400000;

#[cfg(unix)]
fn open_exclusive(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(O_NOFOLLOW)
        .mode(0o644)
        .open(path)
}

#[cfg(not(unix))]
fn open_exclusive(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_link_at_the_target_is_refused_and_its_victim_untouched() {
        let dir = tempfile_dir("link");
        let victim = dir.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let target = dir.join("report.json");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        let err = write(&target, b"{}").unwrap_err();
        assert!(matches!(err, WriteError::Symlink(_)), "{err}");
        assert!(err.to_string().contains("symbolic link"));
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(leftovers(&dir), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn writes_replace_and_leave_no_temporary_file() {
        let dir = tempfile_dir("plain");
        let target = dir.join("out.txt");
        write(&target, b"one").unwrap();
        write(&target, b"two").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        assert_eq!(leftovers(&dir), 0);
        std::fs::create_dir(dir.join("d")).unwrap();
        assert!(matches!(
            write(&dir.join("d"), b"x"),
            Err(WriteError::NotRegular(_))
        ));
        assert!(matches!(
            write(&dir.join("missing/x"), b"x"),
            Err(WriteError::Io(..))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn concurrent_writers_each_leave_a_whole_file() {
        let dir = tempfile_dir("race");
        let target = dir.join("snap.json");
        let bodies: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'a' + i; 200_000]).collect();
        std::thread::scope(|s| {
            for b in &bodies {
                let t = &target;
                s.spawn(move || {
                    for _ in 0..5 {
                        write(t, b).unwrap();
                    }
                });
            }
        });
        let got = std::fs::read(&target).unwrap();
        assert!(bodies.contains(&got), "a torn file");
        assert_eq!(leftovers(&dir), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir(tag: &str) -> PathBuf {
        let n = COUNTER_T.fetch_add(1, Ordering::Relaxed);
        let d =
            std::env::temp_dir().join(format!("cudoctor-atomic-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
    static COUNTER_T: AtomicU64 = AtomicU64::new(0);

    fn leftovers(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .count()
    }
}
