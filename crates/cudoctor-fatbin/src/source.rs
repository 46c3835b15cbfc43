//! Positioned reads over a file or a byte slice.
//!
//! The scanner never reads a library whole: a `libtorch_cuda.so` is over 400 MB and only a few
//! kilobytes of headers matter. Everything goes through [`ReadAt`], which reads an exact range or
//! fails; it is implemented for files (with `pread`, so several threads could share one) and for
//! byte slices (tests and fuzzing).

use std::fs::File;
use std::io;

/// A byte source that can read an exact range at any offset.
pub trait ReadAt {
    /// Total length in bytes.
    fn len(&self) -> u64;

    /// True when the source holds no byte.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` from `offset`; fails if the range is not wholly inside the source.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

impl ReadAt for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| past_end())?;
        let end = start.checked_add(buf.len()).ok_or_else(past_end)?;
        let src = self.get(start..end).ok_or_else(past_end)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// A file with its length taken once at open time.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    len: u64,
}

impl FileSource {
    /// Wraps an open file.
    pub fn new(file: File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self { file, len })
    }
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset.checked_add(buf.len() as u64).ok_or_else(past_end)?;
        if end > self.len {
            return Err(past_end());
        }
        read_exact_at_file(&self.file, buf, offset)
    }
}

#[cfg(unix)]
fn read_exact_at_file(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at_file(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        let n = file.seek_read(buf, offset)?;
        if n == 0 {
            return Err(past_end());
        }
        buf = match buf.get_mut(n..) {
            Some(rest) => rest,
            None => return Err(past_end()),
        };
        offset += n as u64;
    }
    Ok(())
}

fn past_end() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "read past the end of the data",
    )
}

/// A `std::io::Read` over a window `[pos, end)` of a [`ReadAt`], reading lazily in small pieces,
/// so a decompressor fed from it only pulls the bytes it really consumes.
pub(crate) struct WindowReader<'a, S: ReadAt + ?Sized> {
    src: &'a S,
    pos: u64,
    end: u64,
}

impl<'a, S: ReadAt + ?Sized> WindowReader<'a, S> {
    pub(crate) fn new(src: &'a S, pos: u64, end: u64) -> Self {
        Self { src, pos, end }
    }
}

impl<S: ReadAt + ?Sized> io::Read for WindowReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let Some(dst) = buf.get_mut(..n) else {
            return Ok(0);
        };
        if n == 0 {
            return Ok(0);
        }
        self.src.read_exact_at(dst, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn slice_reads_exact_ranges_and_refuses_past_the_end() {
        let data: &[u8] = &[1, 2, 3, 4, 5];
        let mut buf = [0u8; 2];
        data.read_exact_at(&mut buf, 3).unwrap();
        assert_eq!(buf, [4, 5]);
        assert!(data.read_exact_at(&mut buf, 4).is_err());
        assert!(data.read_exact_at(&mut buf, u64::MAX).is_err());
    }

    #[test]
    fn window_reader_stops_at_its_end() {
        let data: &[u8] = &[1, 2, 3, 4, 5, 6];
        let mut r = WindowReader::new(data, 1, 4);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, vec![2, 3, 4]);
    }

    #[test]
    fn file_source_reads_at_offsets() {
        let dir = std::env::temp_dir().join(format!("cudoctor-fatbin-src-{}", std::process::id()));
        std::fs::write(&dir, b"hello world").unwrap();
        let src = FileSource::new(File::open(&dir).unwrap()).unwrap();
        let mut buf = [0u8; 5];
        src.read_exact_at(&mut buf, 6).unwrap();
        assert_eq!(&buf, b"world");
        assert!(src.read_exact_at(&mut buf, 7).is_err());
        std::fs::remove_file(&dir).unwrap();
    }
}
