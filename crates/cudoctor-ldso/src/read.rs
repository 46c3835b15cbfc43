//! Range reads over a [`ReadAt`] (cudoctor-types' one positioned reader): whole ranges,
//! NUL-terminated strings, little-endian fields.
//!
//! Libraries inspected by cudoctor can be a gigabyte large (libtorch_cuda.so, cuBLASLt); the
//! readers here only ever fetch the byte ranges they are asked for, and every range is checked
//! against the source's size before any buffer is allocated, so a garbage size field in a
//! hostile file produces an error rather than a huge allocation.

use std::io;

use cudoctor_types::read_at::out_of_range;
pub use cudoctor_types::read_at::{FileSource, ReadAt};

/// True when `offset..offset+len` lies inside a source of `size` bytes.
pub fn range_fits(size: u64, offset: u64, len: u64) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= size)
}

/// Read `len` bytes at `offset` into a new vector, refusing ranges outside the source.
pub fn read_vec<R: ReadAt + ?Sized>(src: &R, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    if !range_fits(src.size(), offset, len) {
        return Err(out_of_range());
    }
    let len = usize::try_from(len).map_err(|_| out_of_range())?;
    let mut buf = vec![0u8; len];
    src.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// Read a NUL-terminated string starting at `offset`, looking at no more than `max_len` bytes
/// (the end of its string table). Reads in small chunks so a name in a 40 MB `.dynstr` costs one
/// or two small reads. Returns `None` when no NUL is found inside the limit.
pub fn read_cstr<R: ReadAt + ?Sized>(
    src: &R,
    offset: u64,
    max_len: u64,
) -> io::Result<Option<Vec<u8>>> {
    const CHUNK: u64 = 256;
    let size = src.size();
    let limit_end = offset.saturating_add(max_len).min(size);
    if offset >= limit_end {
        return Ok(None);
    }
    let mut out = Vec::new();
    let mut pos = offset;
    while pos < limit_end {
        let take = CHUNK.min(limit_end - pos);
        let chunk = read_vec(src, pos, take)?;
        if let Some(nul) = chunk.iter().position(|&b| b == 0) {
            out.extend_from_slice(chunk.get(..nul).unwrap_or_default());
            return Ok(Some(out));
        }
        out.extend_from_slice(&chunk);
        pos += take;
    }
    Ok(None)
}

/// Little-endian field decoding from a byte slice; `None` when the slice is too short.
pub(crate) fn le_u16(b: &[u8], off: usize) -> Option<u16> {
    let s: [u8; 2] = b.get(off..off.checked_add(2)?)?.try_into().ok()?;
    Some(u16::from_le_bytes(s))
}

pub(crate) fn le_u32(b: &[u8], off: usize) -> Option<u32> {
    let s: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(s))
}

pub(crate) fn le_i32(b: &[u8], off: usize) -> Option<i32> {
    le_u32(b, off).map(|v| v as i32)
}

pub(crate) fn le_u64(b: &[u8], off: usize) -> Option<u64> {
    let s: [u8; 8] = b.get(off..off.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_reads_are_bounds_checked() {
        let data: Vec<u8> = (0u8..10).collect();
        assert_eq!(read_vec(&data, 6, 4).unwrap(), vec![6, 7, 8, 9]);
        assert!(read_vec(&data, 0, 11).is_err());
        assert!(read_vec(&data, u64::MAX, 2).is_err());
    }

    #[test]
    fn cstr_reads_stop_at_nul_or_limit() {
        let mut data = b"abc\0".to_vec();
        data.extend(std::iter::repeat_n(b'x', 600));
        data.push(0);
        assert_eq!(read_cstr(&data, 0, 100).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(
            read_cstr(&data, 4, 1000).unwrap().map(|v| v.len()),
            Some(600)
        );
        assert_eq!(read_cstr(&data, 4, 10).unwrap(), None);
        assert_eq!(read_cstr(&data, 9999, 10).unwrap(), None);
    }

    #[test]
    fn le_helpers_refuse_short_input() {
        let b = [1u8, 0, 0];
        assert_eq!(le_u16(&b, 0), Some(1));
        assert_eq!(le_u32(&b, 0), None);
        assert_eq!(le_u64(&b, usize::MAX), None);
    }
}
