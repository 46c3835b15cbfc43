//! Little-endian field reads from header buffers.
//!
//! Callers read headers into buffers of known size first; a field outside the buffer reads as 0
//! rather than panicking, so a logic slip can never turn hostile input into a crash.

pub(crate) fn u16_at(b: &[u8], off: usize) -> u16 {
    b.get(off..off.saturating_add(2))
        .and_then(|s| s.try_into().ok())
        .map_or(0, u16::from_le_bytes)
}

pub(crate) fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off.saturating_add(4))
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

pub(crate) fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off.saturating_add(8))
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_zero_outside() {
        let b = [0x50, 0xed, 0x55, 0xba, 1, 0, 0, 0, 2];
        assert_eq!(u32_at(&b, 0), 0xBA55_ED50);
        assert_eq!(u16_at(&b, 4), 1);
        assert_eq!(u64_at(&b, 1), 0x0200_0000_01ba_55ed);
        assert_eq!(u64_at(&b, 2), 0);
        assert_eq!(u32_at(&b, usize::MAX), 0);
    }
}
