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
    open_sized(path).map(|(file, _)| file)
}

/// [`open`], with the size the file had when it was opened.
fn open_sized(path: &Path) -> io::Result<(File, u64)> {
    let file = open_without_waiting(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok((file, meta.len()))
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

/// The last `limit` bytes at most of the regular file at `path` ([`open`]): a log's newest
/// records, whatever its size. The second value says whether the file was longer (the first
/// bytes returned may then be the end of a cut line).
pub fn read_tail(path: &Path, limit: u64) -> io::Result<(Vec<u8>, bool)> {
    use std::io::{Seek as _, SeekFrom};
    let (mut file, size) = open_sized(path)?;
    let start = size.saturating_sub(limit);
    if start > 0 {
        file.seek(SeekFrom::Start(start))?;
    }
    let mut out = Vec::with_capacity(usize::try_from(size - start).unwrap_or(0));
    // A log that grows while it is read is read up to the limit, not on.
    file.take(limit).read_to_end(&mut out)?;
    Ok((out, start > 0))
}

/// At most `limit` bytes of the regular file at `path` ([`open`]).
/// The buffer is made the file's size at the start (one read for the whole, and one that
/// finds the end), not grown from a few bytes; a file whose size says nothing (`/proc`) or
/// that grows is read on as before.
pub fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (file, size) = open_sized(path)?;
    let expected = usize::try_from(size.min(limit)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Why an input file named on the command line (a snapshot, a baseline, a knowledge-base
/// file, a log, a record) was not read.
#[derive(Debug)]
pub enum InputError {
    /// It is not a regular file: a FIFO (that would block), a device (`/dev/zero` never ends),
    /// a socket or a directory. The text names the kind.
    NotRegular(&'static str),
    /// It is larger than the most this input may be.
    TooLarge { size: u64, limit: u64 },
    /// The file system refused.
    Io(io::Error),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::NotRegular(kind) => {
                write!(
                    f,
                    "it is {kind}, not a regular file (nothing is read from it)"
                )
            }
            InputError::TooLarge { size, limit } => write!(
                f,
                "it is {} bytes; at most {} bytes are read from such a file",
                size, limit
            ),
            InputError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for InputError {}

/// What a file that is not a regular one is, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// The one opener of every input path a command is given: a regular file of at most `limit`
/// bytes, opened without ever waiting (a FIFO is refused at once, never opened for reading),
/// read whole. A file larger than `limit` is refused, not cut.
pub fn read_input(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let file = open_input(path, limit)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(InputError::Io)?;
    if bytes.len() as u64 > limit {
        // It grew after it was opened.
        return Err(InputError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// As [`read_input`], but the file is handed back open (for a reader that streams it); its
/// size at opening is at most `limit`.
pub fn open_input(path: &Path, limit: u64) -> Result<File, InputError> {
    let file = open_without_waiting(path).map_err(InputError::Io)?;
    let meta = file.metadata().map_err(InputError::Io)?;
    if !meta.is_file() {
        return Err(InputError::NotRegular(kind_of(&meta)));
    }
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    Ok(file)
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

    #[test]
    fn read_tail_keeps_the_end_and_says_when_it_cut() {
        let dir = std::env::temp_dir().join(format!("cudoctor-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("log");
        std::fs::write(&file, b"one\ntwo\nthree\n").unwrap();
        let (cut, whole, fifo) = (
            read_tail(&file, 8),
            read_tail(&file, 100),
            read_tail(Path::new("/dev/zero"), 8),
        );
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(cut.unwrap(), (b"o\nthree\n".to_vec(), true));
        assert_eq!(whole.unwrap(), (b"one\ntwo\nthree\n".to_vec(), false));
        assert_eq!(fifo.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn read_input_refuses_a_fifo_a_device_and_a_file_too_large() {
        let dir = std::env::temp_dir().join(format!("cudoctor-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
        let started = Instant::now();
        let e = read_input(&fifo, 100).unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
        let e = read_input(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        assert!(read_input(&dir, 100)
            .unwrap_err()
            .to_string()
            .contains("directory"));
        assert!(started.elapsed() < Duration::from_secs(2));
        let file = dir.join("f");
        std::fs::write(&file, b"0123456789").unwrap();
        let big = read_input(&file, 4).unwrap_err();
        assert!(
            matches!(big, InputError::TooLarge { size: 10, limit: 4 }),
            "{big}"
        );
        assert_eq!(read_input(&file, 10).unwrap(), b"0123456789");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
