//! Opening a file of an inspected machine without ever waiting on it: a FIFO nobody writes to
//! (a hostile root's `torch/version.py`, `/proc/version` or `libcuda.so.1`) blocks a plain
//! `open` forever, and a device (`/dev/zero`) never ends. Every reader of machine files opens
//! through [`open`], which refuses anything but a regular file.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Linux's O_NONBLOCK (the same on x86_64 and aarch64).
pub const O_NONBLOCK: i32 = 0o4000;

/// Opens `path` (symlinks followed) for reading if it is a regular file. The open itself does
/// not block (O_NONBLOCK: a FIFO without a writer opens at once and is then refused); anything
/// that is not a regular file is an `InvalidInput` error saying so.
pub fn open(path: &Path) -> io::Result<File> {
    let file = open_without_waiting(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

#[cfg(unix)]
fn open_without_waiting(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
}

/// Windows has no FIFOs in a directory tree (its pipes live under `\\.\pipe\`), and its
/// devices are not files of a tree either: the kind is checked before opening as well as after.
#[cfg(not(unix))]
fn open_without_waiting(path: &Path) -> io::Result<File> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    File::open(path)
}

/// At most `limit` bytes of the regular file at `path` ([`open`]).
pub fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_at_once() {
        let dir = std::env::temp_dir().join(format!("cudoctor-regular-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
        let started = Instant::now();
        for p in [fifo.as_path(), Path::new("/dev/zero"), dir.as_path()] {
            let err = open(p).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{}", p.display());
            assert_eq!(err.to_string(), "not a regular file");
        }
        assert!(started.elapsed() < Duration::from_secs(2));
        let file = dir.join("f");
        std::fs::write(&file, b"0123456789").unwrap();
        let (short, whole) = (read(&file, 4), read(&file, 100));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(short.unwrap(), b"0123");
        assert_eq!(whole.unwrap(), b"0123456789");
    }
}
