//! Positioned reads over a file or a byte buffer: the one way the ELF readers (the loader's in
//! cudoctor-ldso, the kernel-image scanner's in cudoctor-fatbin) read a library.
//!
//! Libraries inspected by cudoctor can be a gigabyte large (libtorch_cuda.so, cuBLASLt) and only
//! a few kilobytes of headers matter: readers fetch only the byte ranges they ask for, and every
//! range is checked against the source's size before it is read, so a garbage size field in a
//! hostile file is an error, never a huge allocation or a read past the end.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Something that can serve exact byte ranges by offset.
pub trait ReadAt {
    /// Total size in bytes.
    fn size(&self) -> u64;
    /// Fills `buf` from `offset`; fails if the range is not wholly inside the source.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The bytes of `offset..offset+len`: a copy by default; a file serves large ranges as a
    /// view of its read-only mapping, so only the pages looked at are ever read.
    fn read_bytes(&self, offset: u64, len: u64) -> io::Result<Bytes> {
        copy_range(self, offset, len)
    }
}

/// `offset..offset+len` of `src` as a copy, the range checked before anything is allocated.
fn copy_range<R: ReadAt + ?Sized>(src: &R, offset: u64, len: u64) -> io::Result<Bytes> {
    let len = usize::try_from(len).map_err(|_| out_of_range())?;
    check_range(src.size(), offset, len)?;
    let mut buf = vec![0u8; len];
    src.read_exact_at(&mut buf, offset)?;
    Ok(Bytes::Owned(buf))
}

/// A byte range of a source: owned, or a view of a file's mapping (kept alive by the view).
pub enum Bytes {
    Owned(Vec<u8>),
    Mapped {
        map: Arc<memmap2::Mmap>,
        /// The mapped file, for [`Bytes::copy_at`]'s reads.
        file: Arc<File>,
        start: usize,
        len: usize,
    },
}

/// How much of a string [`Bytes::cstr_at`] reads at a time from a mapped range's file.
const CSTR_CHUNK: usize = 256;

impl Bytes {
    pub fn empty() -> Bytes {
        Bytes::Owned(Vec::new())
    }

    /// Fills `buf` from `offset` of the range; false when the range does not hold it. A view
    /// of a mapping is read from its file instead of through the mapping: every page touched
    /// through a mapping maps up to 64 KiB around it (the kernel's fault-around), so lookups
    /// scattered over libtorch_cpu's tables kept megabytes resident for a few hundred symbols.
    pub fn copy_at(&self, offset: usize, buf: &mut [u8]) -> bool {
        let Some(end) = offset.checked_add(buf.len()).filter(|&e| e <= self.len()) else {
            return false;
        };
        match self {
            Bytes::Owned(v) => match v.get(offset..end) {
                Some(src) => {
                    buf.copy_from_slice(src);
                    true
                }
                None => false,
            },
            Bytes::Mapped { file, start, .. } => {
                read_exact_at_file(file, buf, (start + offset) as u64).is_ok()
            }
        }
    }

    /// The NUL-terminated string at `offset` (without its NUL), None when no NUL ends it inside
    /// the range. Borrowed from owned bytes; read from the file for a view of a mapping (see
    /// [`Bytes::copy_at`]).
    pub fn cstr_at(&self, offset: usize) -> Option<std::borrow::Cow<'_, [u8]>> {
        match self {
            Bytes::Owned(v) => {
                let rest = v.get(offset..)?;
                let n = rest.iter().position(|&b| b == 0)?;
                rest.get(..n).map(std::borrow::Cow::Borrowed)
            }
            Bytes::Mapped { .. } => {
                let mut out = Vec::new();
                let mut at = offset;
                loop {
                    let take = CSTR_CHUNK.min(self.len().checked_sub(at)?);
                    if take == 0 {
                        return None;
                    }
                    let mut chunk = [0u8; CSTR_CHUNK];
                    let chunk = chunk.get_mut(..take)?;
                    if !self.copy_at(at, chunk) {
                        return None;
                    }
                    match chunk.iter().position(|&b| b == 0) {
                        Some(n) => {
                            out.extend_from_slice(chunk.get(..n)?);
                            return Some(std::borrow::Cow::Owned(out));
                        }
                        None => out.extend_from_slice(chunk),
                    }
                    at += take;
                }
            }
        }
    }

    /// Whether the NUL-terminated string at `offset` is `name`: one read of `name`'s length
    /// and its NUL for a view of a mapping.
    pub fn cstr_eq(&self, offset: usize, name: &[u8]) -> bool {
        match self {
            Bytes::Owned(v) => {
                let Some(end) = offset.checked_add(name.len()) else {
                    return false;
                };
                v.get(offset..end) == Some(name) && v.get(end) == Some(&0)
            }
            Bytes::Mapped { .. } => {
                let mut buf = vec![0u8; name.len() + 1];
                self.copy_at(offset, &mut buf)
                    && buf.last() == Some(&0)
                    && buf.get(..name.len()) == Some(name)
            }
        }
    }

    /// `len` bytes from `offset` as owned bytes (one read for a view of a mapping); None when
    /// the range does not hold them.
    pub fn copy_range(&self, offset: usize, len: usize) -> Option<Bytes> {
        let mut buf = vec![0u8; len];
        self.copy_at(offset, &mut buf).then_some(Bytes::Owned(buf))
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            // The range was checked against the mapping's length when the view was made.
            Bytes::Mapped {
                map, start, len, ..
            } => map.get(*start..start + len).unwrap_or_default(),
        }
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bytes::Owned(v) => write!(f, "Bytes::Owned({} bytes)", v.len()),
            Bytes::Mapped { len, .. } => write!(f, "Bytes::Mapped({len} bytes)"),
        }
    }
}

/// Ranges from this size up are served from the file's mapping: the symbol and string tables
/// of libtorch and libtriton (megabytes, of which a lookup needs a few entries, read on their
/// own through [`Bytes::copy_at`]; walks over a whole table go through the mapping). Smaller
/// ones are read, which costs less than faulting their pages in.
const MAP_FROM: u64 = 256 << 10;

/// A file opened for positioned reads (pread, so threads can share one), its size taken once.
#[derive(Debug)]
pub struct FileSource {
    file: Arc<File>,
    len: u64,
    /// Its read-only mapping, made on the first large range asked for; None where it cannot be
    /// mapped (the reads then copy).
    map: OnceLock<Option<Arc<memmap2::Mmap>>>,
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
        Ok(FileSource {
            file: Arc::new(file),
            len,
            map: OnceLock::new(),
        })
    }

    /// The file's mapping, when it can be made and still has the size taken at open.
    fn mapping(&self) -> Option<&Arc<memmap2::Mmap>> {
        self.map
            .get_or_init(|| {
                // SAFETY: the mapping is read-only and private, and only ever read through
                // bounds-checked slices. A file truncated by another process while mapped would
                // fault on the pages past its new end: the binary turns that SIGBUS into a
                // message and an exit (cudoctor_collect::mapped_reads), never a wrong answer.
                #[allow(unsafe_code)]
                let map = unsafe { memmap2::Mmap::map(&*self.file) }.ok()?;
                (map.len() as u64 == self.len).then(|| Arc::new(map))
            })
            .as_ref()
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

    fn read_bytes(&self, offset: u64, len: u64) -> io::Result<Bytes> {
        if len >= MAP_FROM {
            if let Some(map) = self.mapping() {
                let n = usize::try_from(len).map_err(|_| out_of_range())?;
                check_range(self.len, offset, n)?;
                let start = usize::try_from(offset).map_err(|_| out_of_range())?;
                return Ok(Bytes::Mapped {
                    map: Arc::clone(map),
                    file: Arc::clone(&self.file),
                    start,
                    len: n,
                });
            }
        }
        copy_range(self, offset, len)
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

    fn read_bytes(&self, offset: u64, len: u64) -> io::Result<Bytes> {
        (**self).read_bytes(offset, len)
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

    #[test]
    fn large_ranges_of_a_file_are_views_of_its_mapping_and_checked_like_reads() {
        let path = std::env::temp_dir().join(format!("cudoctor-read-map-{}", std::process::id()));
        let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let src = FileSource::open(&path).unwrap();
        let big = src.read_bytes(4096, 512 << 10).unwrap();
        assert!(matches!(big, Bytes::Mapped { .. }), "{big:?}");
        assert_eq!(&big[..], &data[4096..4096 + (512 << 10)]);
        let small = src.read_bytes(10, 16).unwrap();
        assert!(matches!(small, Bytes::Owned(_)));
        assert_eq!(&small[..], &data[10..26]);
        assert!(src.read_bytes(1 << 20, 1).is_err());
        assert!(src.read_bytes(1, 1 << 20).is_err());
        assert!(src.read_bytes(u64::MAX, MAP_FROM).is_err());
        // Small reads of a view come from the file and are bounds-checked like the view.
        let mut four = [0u8; 4];
        assert!(big.copy_at(100, &mut four));
        assert_eq!(&four[..], &data[4196..4200]);
        assert!(!big.copy_at((512 << 10) - 3, &mut four));
        assert!(!big.copy_at(usize::MAX, &mut four));
        assert!(
            matches!(big.copy_range(8, 16), Some(Bytes::Owned(v)) if v[..] == data[4104..4120])
        );
        // `data` has a 0 every 251 bytes: the string at 4096 (4096 % 251 = 80) ends at 4267.
        let s = big.cstr_at(0).unwrap();
        assert_eq!(&s[..], &data[4096..4267]);
        assert!(big.cstr_eq(0, &data[4096..4267]));
        assert!(!big.cstr_eq(0, &data[4096..4266]));
        assert!(!big.cstr_eq((512 << 10) - 2, &data[0..8]));
        // A string that runs past the view's end has no NUL inside it.
        let tail = (512 << 10) - 10;
        assert!(data[4096 + tail..4096 + (512 << 10)]
            .iter()
            .all(|&b| b != 0));
        assert_eq!(big.cstr_at(tail), None);
        // Owned bytes answer the same way.
        let owned = Bytes::Owned(data[4096..4096 + 1000].to_vec());
        assert_eq!(owned.cstr_at(0).unwrap(), s);
        assert!(owned.cstr_eq(0, &data[4096..4267]));
        assert!(!owned.cstr_eq(0, &data[4096..4266]));
        // Through a reference, the file's own way is used.
        assert!(matches!(
            <&FileSource as ReadAt>::read_bytes(&&src, 0, MAP_FROM).unwrap(),
            Bytes::Mapped { .. }
        ));
        std::fs::remove_file(&path).unwrap();
    }
}
