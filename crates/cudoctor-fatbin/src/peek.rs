//! Reading the first bytes of a payload, for fat binaries whose header does not record the `a`
//! suffix (those written by CUDA 12 tools; research §1.9–1.10).
//!
//! Only a prefix is ever produced: 64 bytes of a cubin (its ELF header) or a few kilobytes of
//! PTX (up to the `.target` line). Decoding is bounded in input, output and memory, and any
//! failure just means "suffix unknown".

use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::arch::{Arch, ArchKind, Variant};
use crate::fatbin::{Compression, EntryKind};
use crate::le::{u16_at, u32_at};
use crate::source::{ReadAt, WindowReader};

/// Bytes of a cubin needed: its ELF64 header.
const ELF_PREFIX: usize = 64;
/// Bytes of PTX searched for `.target` (it follows a short comment banner and `.version`).
const PTX_PREFIX: usize = 4096;
/// LZ4 input read for a prefix; LZ4 expands at most ~255x, so this covers any sane prefix.
const LZ4_INPUT: u64 = 64 << 10;
/// zstd frames asking for a larger window are not decoded (nvcc's frames declare the content
/// size, a few MB at most for one cubin).
const MAX_ZSTD_WINDOW: u64 = 32 << 20;

/// `EM_CUDA`, the ELF machine of cubins.
const EM_CUDA: u16 = 190;

pub(crate) struct Payload {
    pub start: u64,
    pub size: u64,
    pub compressed_size: u64,
    pub compression: Compression,
}

/// The suffix a payload's own bytes give, or `None` when they cannot be read.
pub(crate) fn variant_from_payload<S: ReadAt + ?Sized>(
    src: &S,
    kind: EntryKind,
    p: &Payload,
) -> Option<Variant> {
    let want = match kind {
        EntryKind::Sass => ELF_PREFIX,
        EntryKind::Ptx => PTX_PREFIX,
        _ => return None,
    };
    let prefix = payload_prefix(src, p, want)?;
    match kind {
        EntryKind::Sass => cubin_variant(&prefix),
        EntryKind::Ptx => ptx_target(&prefix).map(|a| a.variant),
        _ => None,
    }
}

/// Up to `want` bytes of the decoded payload.
fn payload_prefix<S: ReadAt + ?Sized>(src: &S, p: &Payload, want: usize) -> Option<Vec<u8>> {
    match p.compression {
        Compression::None => {
            let n = p.size.min(want as u64) as usize;
            let mut buf = vec![0u8; n];
            src.read_exact_at(&mut buf, p.start).ok()?;
            Some(buf)
        }
        Compression::Lz4 => {
            let n = p.compressed_size.min(p.size).min(LZ4_INPUT) as usize;
            let mut input = vec![0u8; n];
            src.read_exact_at(&mut input, p.start).ok()?;
            lz4_block_prefix(&input, want)
        }
        Compression::Zstd => {
            let end = p.start.checked_add(p.compressed_size.min(p.size))?;
            let mut frame_head = [0u8; 18];
            let head_len = (end - p.start).min(18) as usize;
            let head = frame_head.get_mut(..head_len)?;
            src.read_exact_at(head, p.start).ok()?;
            if zstd_window_size(head)? > MAX_ZSTD_WINDOW {
                return None;
            }
            // The decoder is third-party code fed hostile bytes: a panic in it must not take
            // the scan down.
            catch_unwind(AssertUnwindSafe(|| zstd_prefix(src, p.start, end, want)))
                .ok()
                .flatten()
        }
        Compression::Opaque | Compression::Unknown => None,
    }
}

fn zstd_prefix<S: ReadAt + ?Sized>(src: &S, start: u64, end: u64, want: usize) -> Option<Vec<u8>> {
    let reader = WindowReader::new(src, start, end);
    let decoder = ruzstd::decoding::StreamingDecoder::new(reader).ok()?;
    let mut out = Vec::with_capacity(want);
    decoder.take(want as u64).read_to_end(&mut out).ok()?;
    Some(out)
}

/// The window size a zstd frame header asks for (RFC 8878 §3.1.1.1), `None` if not a frame.
fn zstd_window_size(h: &[u8]) -> Option<u64> {
    if u32_at(h, 0) != 0xFD2F_B528 {
        return None;
    }
    let fhd = *h.get(4)?;
    let single_segment = fhd & 0x20 != 0;
    if !single_segment {
        let wd = *h.get(5)?;
        let log = 10 + u64::from(wd >> 3);
        let base = 1u64.checked_shl(u32::try_from(log).ok()?)?;
        return Some(base + (base / 8) * u64::from(wd & 7));
    }
    // Single segment: the window is the frame content size.
    let dict_len = [0usize, 1, 2, 4][usize::from(fhd & 3)];
    let fcs_at = 5 + dict_len;
    let size = match fhd >> 6 {
        0 => u64::from(*h.get(fcs_at)?),
        1 => u64::from(u16_at(h, fcs_at)) + 256,
        2 => u64::from(u32_at(h, fcs_at)),
        _ => {
            let b: [u8; 8] = h.get(fcs_at..fcs_at + 8)?.try_into().ok()?;
            u64::from_le_bytes(b)
        }
    };
    Some(size)
}

/// Decodes up to `want` bytes of a raw LZ4 block (the LZ4 block format: sequences of a token,
/// literals, a 2-byte offset and a match length). Stops early at the end of the input.
fn lz4_block_prefix(input: &[u8], want: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(want);
    let mut i = 0usize;
    while out.len() < want && i < input.len() {
        let token = *input.get(i)?;
        i += 1;
        let lit_len = lz4_length(input, &mut i, usize::from(token >> 4))?;
        let lit_end = i.checked_add(lit_len)?;
        let literals = input.get(i..lit_end)?;
        i = lit_end;
        let take = literals.len().min(want - out.len());
        out.extend_from_slice(literals.get(..take)?);
        if out.len() >= want || i >= input.len() {
            break; // the last sequence of a block has literals only
        }
        let offset = usize::from(u16_at(input, i));
        i += 2;
        if offset == 0 || offset > out.len() {
            return None;
        }
        let match_len = lz4_length(input, &mut i, usize::from(token & 0x0f))?.checked_add(4)?;
        let from = out.len() - offset;
        for k in 0..match_len.min(want - out.len()) {
            // Byte by byte: a match may overlap the bytes it produces.
            let b = *out.get(from + k)?;
            out.push(b);
        }
    }
    Some(out)
}

/// An LZ4 length: the 4-bit nibble, extended by bytes while they are 255.
fn lz4_length(input: &[u8], i: &mut usize, nibble: usize) -> Option<usize> {
    let mut len = nibble;
    if nibble == 15 {
        loop {
            let b = *input.get(*i)?;
            *i += 1;
            len = len.checked_add(usize::from(b))?;
            if b != 255 {
                break;
            }
        }
    }
    Some(len)
}

/// The `a` suffix from a cubin's ELF header (research §1.9, after LLVM's
/// `ELFObjectFile.cpp`): ABI version 7 puts it at `e_flags & 0x800`, version 8 at `& 0x8`.
/// `f` cannot be told from a cubin.
fn cubin_variant(h: &[u8]) -> Option<Variant> {
    if h.get(..4) != Some(b"\x7fELF".as_slice()) || h.get(4) != Some(&2) {
        return None;
    }
    if u16_at(h, 18) != EM_CUDA {
        return None;
    }
    let e_flags = u32_at(h, 48);
    let a_bit = match h.get(8) {
        Some(7) => 0x800,
        Some(8) => 0x8,
        _ => return None,
    };
    Some(if e_flags & a_bit != 0 {
        Variant::ArchSpecific
    } else {
        Variant::Plain
    })
}

/// The architecture of a PTX `.target sm_90a` directive.
fn ptx_target(text: &[u8]) -> Option<Arch> {
    let text = String::from_utf8_lossy(text);
    let line = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".target"))?;
    let first = line
        .split(|c: char| c == ',' || c.is_whitespace())
        .find(|t| !t.is_empty())?;
    let arch = Arch::parse(first)?;
    (arch.kind == ArchKind::Sass).then_some(arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cubin_header(abi: u8, e_flags: u32) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        h[7] = if abi == 7 { 51 } else { 65 };
        h[8] = abi;
        h[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        h[48..52].copy_from_slice(&e_flags.to_le_bytes());
        h
    }

    #[test]
    fn cubin_a_bit_by_abi_version() {
        // Values produced by ptxas 12.9 (research §1.9).
        assert_eq!(
            cubin_variant(&cubin_header(7, 0x005a_0d5a)),
            Some(Variant::ArchSpecific)
        );
        assert_eq!(
            cubin_variant(&cubin_header(7, 0x005a_055a)),
            Some(Variant::Plain)
        );
        assert_eq!(
            cubin_variant(&cubin_header(8, 0x0600_640a)),
            Some(Variant::ArchSpecific)
        );
        assert_eq!(
            cubin_variant(&cubin_header(8, 0x0600_6402)),
            Some(Variant::Plain)
        );
        assert_eq!(cubin_variant(&cubin_header(9, 0)), None);
        assert_eq!(cubin_variant(b"\x7fELF"), None);
    }

    #[test]
    fn ptx_target_line() {
        let ptx = b"//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 8.8\n.target sm_90a\n.address_size 64\n";
        assert_eq!(ptx_target(ptx).unwrap().name(), "sm_90a");
        assert_eq!(
            ptx_target(b".target sm_100f, debug\n").unwrap().name(),
            "sm_100f"
        );
        assert_eq!(ptx_target(b".version 8.0\n"), None);
        assert_eq!(ptx_target(b".target compute_90\n"), None);
    }

    #[test]
    fn lz4_prefix_matches_a_reference_encoder() {
        let mut data = Vec::new();
        for i in 0..5000u32 {
            data.extend_from_slice(format!("line {} {}\n", i % 17, i % 3).as_bytes());
        }
        let compressed = lz4_flex::block::compress(&data);
        for want in [0, 1, 64, 4096, data.len(), data.len() + 10] {
            let out = lz4_block_prefix(&compressed, want).unwrap();
            let n = want.min(data.len());
            assert_eq!(out, data[..n], "want {want}");
        }
    }

    #[test]
    fn lz4_prefix_survives_garbage() {
        let mut x = 0x1234_5678u32;
        for len in 0..300 {
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            if let Some(out) = lz4_block_prefix(&buf, 4096) {
                assert!(out.len() <= 4096);
            }
        }
        // A match reaching before the start is refused.
        assert_eq!(lz4_block_prefix(&[0x10, b'a', 5, 0], 64), None);
    }

    #[test]
    fn zstd_window_from_frame_header() {
        // The first bytes of a real zstd payload in libtorch_cuda.so (fixtures/fatbin_head.txt):
        // single segment, 4-byte content size 0x1f580.
        let head = [0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0x80, 0xf5, 0x01, 0x00, 0x3c];
        assert_eq!(zstd_window_size(&head), Some(0x1f580));
        // Window descriptor form: exponent 0, mantissa 0 -> 1 KiB.
        assert_eq!(
            zstd_window_size(&[0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00]),
            Some(1024)
        );
        assert_eq!(zstd_window_size(&[0, 0, 0, 0, 0, 0]), None);
    }

    #[test]
    fn zstd_prefix_decodes_only_what_is_asked() {
        let mut data = cubin_header(7, 0x005a_0d5a);
        data.extend(std::iter::repeat_n(7u8, 100_000));
        let compressed = ruzstd::encoding::compress_to_vec(
            &data[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let src: &[u8] = &compressed;
        let p = Payload {
            start: 0,
            size: compressed.len() as u64,
            compressed_size: compressed.len() as u64,
            compression: Compression::Zstd,
        };
        assert_eq!(
            variant_from_payload(src, EntryKind::Sass, &p),
            Some(Variant::ArchSpecific)
        );
        // Garbage after a valid magic: no panic, no answer.
        let mut bad = compressed.clone();
        for b in bad.iter_mut().skip(6) {
            *b = 0xff;
        }
        let src: &[u8] = &bad;
        assert_eq!(variant_from_payload(src, EntryKind::Sass, &p), None);
    }
}
