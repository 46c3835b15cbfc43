//! Positioned reads over a file or a byte buffer: the one way the ELF readers (the loader's in
//! cudoctor-ldso, the kernel-image scanner's in cudoctor-fatbin) read a library.
//!
//! Libraries inspected by cudoctor can be a gigabyte large (libtorch_cuda.so, cuBLASLt) and only
//! a few kilobytes of headers matter: readers fetch only the byte ranges they ask for, and every
//! range is checked against the source's size before it is read, so a garbage size field in a
//! hostile file is an error, never a huge allocation or a read past the end.

use std::fs::File;
use std::io;
use std::path::Path;

/// Something that can serve exact byte ranges by offset.
pub trait ReadAt {
    /// Total size in bytes.
    fn size(&self) -> u64;
    /// Fills `buf` from `offset`; fails if the range is not wholly inside the source.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

/// A file opened for positioned reads (pread, so threads can share one), its size taken once.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    len: u64,
}

impl FileSource {
    /// Opens `path` for reading: a FIFO or a device of an inspected root is refused, never
    /// waited on ([`crate::regular_file::open`]).
    pub fn open(path: &Path) -> io::Result<Self> {
        Self::new(crate::regular_file::open(path)?)
    }

    /// Wraps a file already open.
    pub fn new(file: File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(FileSource { file, len })
    }
}

impl ReadAt for FileSource {
    fn size(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_range(self.len, offset, buf.len())?;
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
            return Err(out_of_range());
        }
        buf = match buf.get_mut(n..) {
            Some(rest) => rest,
            None => return Err(out_of_range()),
        };
        offset += n as u64;
    }
    Ok(())
}

/// An in-memory source (tests, fuzzing, small files).
impl ReadAt for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_range(self.len() as u64, offset, buf.len())?;
        let start = usize::try_from(offset).map_err(|_| out_of_range())?;
        let end = start.checked_add(buf.len()).ok_or_else(out_of_range)?;
        let src = self.get(start..end).ok_or_else(out_of_range)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl ReadAt for Vec<u8> {
    fn size(&self) -> u64 {
        self.as_slice().size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
}

/// The error of a range outside the source.
pub fn out_of_range() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "range outside the file")
}

fn check_range(size: u64, offset: u64, len: usize) -> io::Result<()> {
    let end = offset.checked_add(len as u64).ok_or_else(out_of_range)?;
    if end > size {
        return Err(out_of_range());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_reads_are_bounds_checked() {
        let data: Vec<u8> = (0u8..10).collect();
        let mut buf = [0u8; 4];
        data.read_exact_at(&mut buf, 6).unwrap();
        assert_eq!(buf, [6, 7, 8, 9]);
        assert!(data.read_exact_at(&mut buf, 7).is_err());
        assert!(data.read_exact_at(&mut buf, u64::MAX).is_err());
        assert_eq!(data[..].size(), 10);
    }

    #[test]
    fn file_reads_at_offsets_and_refuses_past_the_end() {
        let dir = std::env::temp_dir().join(format!("cudoctor-read-at-{}", std::process::id()));
        std::fs::write(&dir, b"hello world").unwrap();
        let src = FileSource::open(&dir).unwrap();
        assert_eq!(src.size(), 11);
        let mut buf = [0u8; 5];
        src.read_exact_at(&mut buf, 6).unwrap();
        assert_eq!(&buf, b"world");
        assert!(src.read_exact_at(&mut buf, 7).is_err());
        assert!(src.read_exact_at(&mut buf, u64::MAX).is_err());
        std::fs::remove_file(&dir).unwrap();
    }
}
