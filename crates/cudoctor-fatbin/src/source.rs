//! The scanner never reads a library whole: a `libtorch_cuda.so` is over 400 MB and only a few
//! kilobytes of headers matter. Everything goes through [`ReadAt`] (cudoctor-types' one
//! positioned reader, also the loader's), which reads an exact range or fails; a decompressor
//! reads through a [`WindowReader`].

use std::io;

pub use cudoctor_types::read_at::{FileSource, ReadAt};

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
    fn window_reader_stops_at_its_end() {
        let data: &[u8] = &[1, 2, 3, 4, 5, 6];
        let mut r = WindowReader::new(data, 1, 4);
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, vec![2, 3, 4]);
    }
}
