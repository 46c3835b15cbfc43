//! Walking the fat binary containers of a section and their entries, touching headers only.
//!
//! Layout (see `shared/research/formats-and-crates.md` §1.3–1.7 for fields and sources: ZLUDA's
//! `cuda_types/src/dark_api.rs`, jiegec/fatbinary, n-eiling/cuda-fatbin-decompression, and our
//! own checks against `cuobjdump` on CUDA 13.5 output):
//!
//! * a section holds containers back to back, each at an 8-byte boundary: a 16-byte header
//!   (magic `0xBA55ED50`, version 1, header size, size of the entries) and then entries;
//! * an entry is a variable-size header (64 fixed bytes, `header_size` in all) and a payload;
//!   the fixed part gives the kind, the SM number, the flags (`a`/`f`, compression) and sizes.
//!
//! We do not follow the wrapper records of `.nvFatBinSegment`: their pointers are fixed up by
//! dynamic relocations and may be zero on disk. Scanning the data sections works for stripped
//! libraries and relocatable objects alike (the research's recommendation).

use serde::{Deserialize, Serialize};

use crate::arch::{Arch, ArchKind, Variant};
use crate::error::ScanError;
use crate::le::{u16_at, u32_at, u64_at};
use crate::peek;
use crate::source::ReadAt;

/// Executable device code (and the device-linked image of relocatable code).
pub const EXEC_SECTION: &str = ".nv_fatbin";
/// Relocatable device code from `nvcc -rdc=true`, kept for later device linking.
pub const RELOC_SECTION: &str = "__nv_relfatbin";
/// Wrapper (registration) records, one per registered fat binary.
pub const WRAPPER_SECTION: &str = ".nvFatBinSegment";

pub(crate) const CONTAINER_MAGIC: u32 = 0xBA55_ED50;
pub(crate) const WRAPPER_MAGIC: u32 = 0x4662_43B1;

const CONTAINER_HEADER: u64 = 16;
const ENTRY_FIXED: u64 = 64;
/// One read per entry covers the fixed header, its extension area and the concat table of
/// small groups (largest header seen: 264 bytes).
const ENTRY_READ: u64 = 1024;
/// Gaps between containers are searched for the magic in chunks of this size.
const GAP_CHUNK: u64 = 64 << 10;
/// Guard against hostile files: more entries than this in one file is refused
/// (cuBLASLt 13, the largest library seen, has about 5,700).
const MAX_ENTRIES: usize = 200_000;
/// Sub-entries of one concatenated group (CUDA 13 `-concat`); a build has one per target.
const MAX_CONCAT: u64 = 4096;
/// Identifier strings longer than this are not kept.
const MAX_IDENTIFIER: u32 = 4096;

const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
const KIND_LTO: u16 = 8;
const KIND_CONCAT: u16 = 0x100;

/// Entry flag bits (offset 40). Sources per bit in the research, table 1.5.
pub(crate) mod flags {
    pub const COMPRESSED_LZ4: u64 = 0x2000;
    pub const COMPRESSED_ZSTD: u64 = 0x8000;
    pub const OPAQUE: u64 = 0x1_0000;
    pub const ARCH_SPECIFIC: u64 = 0x10_0000;
    pub const FAMILY_SPECIFIC: u64 = 0x20_0000;
    pub const COMPAT_BLOCK: u64 = 0x100_0000;
}

/// What an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A cubin (ELF with SASS machine code).
    Sass,
    /// PTX text for the driver's JIT.
    Ptx,
    /// LTO intermediate code (`-gencode code=lto_XX`), for nvJitLink only.
    Lto,
    /// A kind this reader does not know, by number.
    Other(u16),
}

/// How an entry's payload is stored, from its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    None,
    /// Raw LZ4 block (flag 0x2000; older toolkits, and `-compress-mode=speed`).
    Lz4,
    /// Zstandard frame (flag 0x8000; the CUDA 13 default).
    Zstd,
    /// Opaque encoding (flag 0x10000, seen on LTO entries): not decoded.
    Opaque,
    /// A compressed size is set but no known codec flag.
    Unknown,
}

/// Where the `a`/`f` suffix of an entry's architecture was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuffixSource {
    /// The entry header's flags (CUDA 13 fat binaries carry it there).
    Header,
    /// The payload: the cubin's ELF `e_flags` or the PTX `.target` line (older fat binaries).
    Payload,
    /// Not looked for or not found: the name carries no suffix.
    None,
}

/// One image in a fat binary, described from its header alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryInfo {
    pub kind: EntryKind,
    /// `sm_90a`, `compute_90`, `lto_80`; absent for unknown kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<Arch>,
    /// The raw SM number field (90 for sm_90a).
    pub sm: u32,
    /// True when it came from `__nv_relfatbin` (relocatable, `-rdc`).
    pub relocatable: bool,
    /// Index of its container within the file (executable and relocatable counted together).
    pub container: u32,
    /// File offset of the entry header.
    pub offset: u64,
    /// True for a cubin packed in a CUDA 13 concatenated group (kind 0x100).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_concat_group: bool,
    pub compression: Compression,
    pub header_size: u32,
    /// Bytes after the header (padded); for a concatenated sub-entry, its size inside the group.
    pub payload_size: u64,
    /// Bytes of compressed data at the start of the payload; 0 when not compressed.
    pub compressed_size: u64,
    /// Size after decompression; 0 when not compressed.
    pub uncompressed_size: u64,
    /// `major.minor`: the PTX ISA version for PTX, the code version for cubins (1.7 from
    /// CUDA 12 tools, 1.8 from CUDA 13).
    pub version: String,
    /// The raw flag word.
    pub flags: u64,
    pub suffix_source: SuffixSource,
    /// Name string some builds store in the header (often the source file name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identifier: Option<String>,
}

impl EntryInfo {
    /// PTX ISA version `(major, minor)` of a PTX entry.
    pub fn ptx_isa(&self) -> Option<(u32, u32)> {
        if self.kind != EntryKind::Ptx {
            return None;
        }
        let (a, b) = self.version.split_once('.')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    }
}

/// Options of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanOptions {
    /// Read the start of a payload when the header cannot say whether a target is an `a`
    /// variant (fat binaries from CUDA 12 tools): decompresses at most a few kilobytes of
    /// those entries only. CUDA 13 fat binaries never need it.
    pub peek_payloads: bool,
    /// When the scan must end: a section of many gigabytes is walked a container (or a gap
    /// chunk) at a time, and past this moment the file's scan ends with
    /// [`ScanError::Stopped`] instead of running on.
    pub deadline: cudoctor_types::Deadline,
}

impl Default for ScanOptions {
    fn default() -> Self {
        Self {
            peek_payloads: true,
            deadline: cudoctor_types::Deadline::NONE,
        }
    }
}

/// What walking the sections produced.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    pub entries: Vec<EntryInfo>,
    pub exec_containers: u32,
    pub reloc_containers: u32,
    pub warnings: Vec<String>,
}

impl Walk {
    fn containers(&self) -> u32 {
        self.exec_containers.saturating_add(self.reloc_containers)
    }
}

/// A fat binary data section to walk: `[start, end)` in the file.
pub(crate) struct DataSection<'n> {
    pub name: &'n str,
    pub start: u64,
    pub end: u64,
    pub relocatable: bool,
}

/// Sections with fewer containers than this are walked on the calling thread.
const PARALLEL_CONTAINERS: usize = 256;
/// Most threads one section's walk uses (libtorch_cuda.so holds thousands of containers).
const MAX_WALK_THREADS: usize = 8;

/// Walks every container of one section, appending to `walk`. Container headers are found in
/// order first (each gives the next one's offset); their entries are then read on several
/// threads when there are many, and merged in file order, so the result (and the first error,
/// by file position) is the same as a walk on one thread.
pub(crate) fn walk_section<S: ReadAt + Sync + ?Sized>(
    src: &S,
    sec: &DataSection<'_>,
    opts: &ScanOptions,
    walk: &mut Walk,
) -> Result<(), ScanError> {
    let mut containers: Vec<(u64, u64, u64)> = Vec::new();
    let mut p = sec.start;
    let mut gap_bytes: u64 = 0;
    let mut first_error = None;
    while p.saturating_add(CONTAINER_HEADER) <= sec.end {
        stop_at_deadline(opts)?;
        let mut head = [0u8; CONTAINER_HEADER as usize];
        src.read_exact_at(&mut head, p)
            .map_err(|e| ScanError::read(format!("a container header in {}", sec.name), e))?;
        if u32_at(&head, 0) != CONTAINER_MAGIC {
            let (next, nonzero) = find_next_magic(src, sec, p, opts)?;
            if nonzero {
                gap_bytes = gap_bytes.saturating_add(next - p);
            }
            p = next;
            continue;
        }
        match container_bounds(sec, p, &head) {
            Ok((entries_start, cend)) => {
                containers.push((p, entries_start, cend));
                // The next container starts at the next 8-byte boundary (relative to the section).
                let rel = cend - sec.start;
                p = sec.start.saturating_add(rel.saturating_add(7) & !7);
            }
            Err(e) => {
                // Entries of the containers before it are still read, as a walk in order would.
                first_error = Some(e);
                break;
            }
        }
    }
    let base = walk.containers();
    let chunks = walk_containers(src, sec, &containers, base, opts)?;
    let count = u32::try_from(containers.len()).unwrap_or(u32::MAX);
    if sec.relocatable {
        walk.reloc_containers = walk.reloc_containers.saturating_add(count);
    } else {
        walk.exec_containers = walk.exec_containers.saturating_add(count);
    }
    for chunk in chunks {
        walk.warnings.extend(chunk.warnings);
        for e in chunk.entries {
            push(walk, e)?;
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    if p < sec.end {
        // Fewer than 16 bytes left: padding, or the start of a cut-off container.
        let mut tail = vec![0u8; (sec.end - p) as usize];
        src.read_exact_at(&mut tail, p)
            .map_err(|e| ScanError::read(format!("section {}", sec.name), e))?;
        if tail.iter().any(|&b| b != 0) {
            gap_bytes = gap_bytes.saturating_add(sec.end - p);
        }
    }
    if gap_bytes > 0 {
        walk.warnings.push(format!(
            "{gap_bytes} bytes of {} hold no fat binary container",
            sec.name
        ));
    }
    Ok(())
}

/// Reads the entries of `containers` (start, entries start, end), split into contiguous runs
/// over threads; returns one partial walk per run, in order.
fn walk_containers<S: ReadAt + Sync + ?Sized>(
    src: &S,
    sec: &DataSection<'_>,
    containers: &[(u64, u64, u64)],
    base: u32,
    opts: &ScanOptions,
) -> Result<Vec<Walk>, ScanError> {
    let walk_run = |first: usize, run: &[(u64, u64, u64)]| -> Result<Walk, ScanError> {
        let mut w = Walk::default();
        for (i, &(_, mut q, cend)) in run.iter().enumerate() {
            let index = base.saturating_add(u32::try_from(first + i).unwrap_or(u32::MAX));
            stop_at_deadline(opts)?;
            while q.saturating_add(ENTRY_FIXED) <= cend {
                q = walk_entry(src, sec, q, cend, index, opts, &mut w)?;
            }
        }
        Ok(w)
    };
    let budget = cudoctor_types::ThreadBudget::process();
    let threads = budget.limit().min(MAX_WALK_THREADS);
    if containers.len() < PARALLEL_CONTAINERS || threads < 2 {
        return walk_run(0, containers).map(|w| vec![w]);
    }
    let per = containers.len().div_ceil(threads);
    let runs: Vec<_> = containers.chunks(per).enumerate().collect();
    // Each run goes to the next free worker of the process's budget.
    let results: Vec<Result<Walk, ScanError>> = budget
        .map(&runs, runs.len(), |&(i, run)| walk_run(i * per, run))
        .into_iter()
        .map(|r| r.unwrap_or_else(|_| Err(ScanError::Corrupt("a walker thread failed".into()))))
        .collect();
    // The earliest run's error is the first error in file order.
    results.into_iter().collect()
}

/// Ends a scan whose deadline has passed.
fn stop_at_deadline(opts: &ScanOptions) -> Result<(), ScanError> {
    if opts.deadline.passed() {
        return Err(ScanError::Stopped(format!(
            "the time budget of {} s was spent before the file was read to its end",
            opts.deadline.budget_s().unwrap_or(0.0)
        )));
    }
    Ok(())
}

/// From `from` (which does not hold the magic), finds the next 8-aligned offset that does, or the
/// section end. Also says whether the skipped bytes held anything but zero padding.
fn find_next_magic<S: ReadAt + ?Sized>(
    src: &S,
    sec: &DataSection<'_>,
    from: u64,
    opts: &ScanOptions,
) -> Result<(u64, bool), ScanError> {
    let mut p = from;
    let mut nonzero = false;
    let mut buf = Vec::new();
    while p < sec.end {
        stop_at_deadline(opts)?;
        let len = (sec.end - p).min(GAP_CHUNK);
        buf.resize(len as usize, 0);
        src.read_exact_at(&mut buf, p)
            .map_err(|e| ScanError::read(format!("section {}", sec.name), e))?;
        let mut i = if p == from { 8 } else { 0 };
        let mut found = None;
        while i + 4 <= buf.len() {
            if u32_at(&buf, i) == CONTAINER_MAGIC {
                found = Some(i);
                break;
            }
            i += 8;
        }
        let scanned = buf.get(..found.unwrap_or(buf.len())).unwrap_or_default();
        nonzero |= scanned.iter().any(|&b| b != 0);
        if let Some(i) = found {
            return Ok((p + i as u64, nonzero));
        }
        // GAP_CHUNK is a multiple of 8, so chunks keep the 8-byte steps; the last one ends the
        // section.
        p = p.saturating_add(len);
    }
    Ok((sec.end, nonzero))
}

/// Checks one container whose 16-byte header is `head`, returning where its entries start and
/// where it ends.
fn container_bounds(sec: &DataSection<'_>, p: u64, head: &[u8]) -> Result<(u64, u64), ScanError> {
    let version = u16_at(head, 4);
    let header_size = u64::from(u16_at(head, 6));
    let fat_size = u64_at(head, 8);
    if version != 1 {
        return Err(ScanError::Corrupt(format!(
            "container at {p:#x} in {} has version {version} (expected 1)",
            sec.name
        )));
    }
    if header_size < CONTAINER_HEADER {
        return Err(ScanError::Corrupt(format!(
            "container at {p:#x} in {} has a {header_size}-byte header",
            sec.name
        )));
    }
    let cend = p
        .checked_add(header_size)
        .and_then(|x| x.checked_add(fat_size))
        .filter(|&e| e <= sec.end)
        .ok_or_else(|| {
            ScanError::Truncated(format!(
                "container at {p:#x} declares {fat_size} bytes of entries; section {} ends at {:#x}",
                sec.name, sec.end
            ))
        })?;
    Ok((p + header_size, cend))
}

/// Reads one entry at `q` (inside a container ending at `cend`), returns the next entry offset.
fn walk_entry<S: ReadAt + Sync + ?Sized>(
    src: &S,
    sec: &DataSection<'_>,
    q: u64,
    cend: u64,
    container: u32,
    opts: &ScanOptions,
    walk: &mut Walk,
) -> Result<u64, ScanError> {
    let read_len = (cend - q).min(ENTRY_READ) as usize;
    let mut h = vec![0u8; read_len];
    src.read_exact_at(&mut h, q)
        .map_err(|e| ScanError::read(format!("an entry header in {}", sec.name), e))?;
    let fixed = Fixed::parse(&h);
    if u64::from(fixed.header_size) < ENTRY_FIXED {
        return Err(ScanError::Corrupt(format!(
            "entry at {q:#x} in {} has a {}-byte header (at least 64 expected)",
            sec.name, fixed.header_size
        )));
    }
    let payload_start = q + u64::from(fixed.header_size);
    let next = payload_start
        .checked_add(fixed.payload_size)
        .filter(|&e| e <= cend)
        .ok_or_else(|| {
            ScanError::Truncated(format!(
                "entry at {q:#x} in {} ({} + {} bytes) runs past its container's end at {cend:#x}",
                sec.name, fixed.header_size, fixed.payload_size
            ))
        })?;

    let identifier = identifier(&h, &fixed);
    let base = EntryInfo {
        kind: EntryKind::Other(fixed.kind),
        arch: None,
        sm: fixed.arch,
        relocatable: sec.relocatable,
        container,
        offset: q,
        in_concat_group: false,
        compression: fixed.compression(),
        header_size: fixed.header_size,
        payload_size: fixed.payload_size,
        compressed_size: u64::from(fixed.compressed_size),
        uncompressed_size: fixed.uncompressed_size,
        version: format!("{}.{}", fixed.major, fixed.minor),
        flags: fixed.flags,
        suffix_source: SuffixSource::None,
        identifier,
    };

    if fixed.kind == KIND_CONCAT {
        return concat_group(src, sec, q, &h, &fixed, base, walk).map(|()| next);
    }
    let mut entry = base;
    let kind = entry_kind(fixed.kind);
    entry.kind = kind;
    if let Some(arch_kind) = arch_kind(kind) {
        let from_header = variant_from_flags(fixed.flags).or_else(|| {
            (kind == EntryKind::Sass)
                .then(|| compat_arch_specific(&h, &fixed))
                .flatten()
        });
        let (variant, source) = match from_header {
            Some(v) => (v, SuffixSource::Header),
            None if opts.peek_payloads && needs_peek(kind, &fixed) => {
                let payload = peek::Payload {
                    start: payload_start,
                    size: fixed.payload_size,
                    compressed_size: u64::from(fixed.compressed_size),
                    compression: entry.compression,
                };
                match peek::variant_from_payload(src, kind, &payload) {
                    Some(Variant::Plain) | None => (Variant::Plain, SuffixSource::None),
                    Some(v) => (v, SuffixSource::Payload),
                }
            }
            None => (Variant::Plain, SuffixSource::None),
        };
        entry.arch = Some(Arch::new(arch_kind, fixed.arch, variant));
        entry.suffix_source = source;
    }
    push(walk, entry)?;
    Ok(next)
}

/// A CUDA 13 concatenated group (kind 0x100): a table of sub-entry headers after the fixed
/// header, and one compressed blob holding the cubins (research §1.7). Listed from the table.
fn concat_group<S: ReadAt + Sync + ?Sized>(
    src: &S,
    sec: &DataSection<'_>,
    q: u64,
    h: &[u8],
    fixed: &Fixed,
    base: EntryInfo,
    walk: &mut Walk,
) -> Result<(), ScanError> {
    let header_size = u64::from(fixed.header_size);
    let count = u64::from(u32_at(h, 64));
    if h.len() < 72 || count > MAX_CONCAT {
        return Err(ScanError::Corrupt(format!(
            "concatenated entry at {q:#x} in {} declares {count} sub-entries",
            sec.name
        )));
    }
    let table_end = 72 + count * ENTRY_FIXED;
    if table_end > header_size {
        return Err(ScanError::Corrupt(format!(
            "concatenated entry at {q:#x} in {}: its table of {count} sub-entries does not fit its {header_size}-byte header",
            sec.name
        )));
    }
    let owned;
    let table: &[u8] = if let Some(t) = h.get(72..table_end as usize) {
        t
    } else {
        let mut t = vec![0u8; (count * ENTRY_FIXED) as usize];
        src.read_exact_at(&mut t, q + 72)
            .map_err(|e| ScanError::read("a concatenated entry table", e))?;
        owned = t;
        &owned
    };
    for sub in table.chunks_exact(ENTRY_FIXED as usize) {
        let kind = entry_kind(u16_at(sub, 0));
        let sm = u32_at(sub, 28);
        let sub_flags = u64_at(sub, 40);
        let mut e = base.clone();
        e.kind = kind;
        e.sm = sm;
        e.in_concat_group = true;
        // In the table, offset 4 is the image's offset inside the decompressed blob and
        // offset 8 its size.
        e.payload_size = u64_at(sub, 8);
        e.version = format!("{}.{}", u16_at(sub, 26), u16_at(sub, 24));
        e.flags = sub_flags;
        // The `a`/`f` bits may sit on the sub-entry or on the group.
        let variant = variant_from_flags(sub_flags).or_else(|| variant_from_flags(fixed.flags));
        e.suffix_source = if variant.is_some() {
            SuffixSource::Header
        } else {
            SuffixSource::None
        };
        e.arch = arch_kind(kind).map(|k| Arch::new(k, sm, variant.unwrap_or(Variant::Plain)));
        push(walk, e)?;
    }
    Ok(())
}

fn push(walk: &mut Walk, e: EntryInfo) -> Result<(), ScanError> {
    if walk.entries.len() >= MAX_ENTRIES {
        return Err(ScanError::TooLarge(format!(
            "more than {MAX_ENTRIES} fat binary entries"
        )));
    }
    walk.entries.push(e);
    Ok(())
}

/// The fixed 64-byte entry header (research §1.4).
struct Fixed {
    kind: u16,
    header_size: u32,
    payload_size: u64,
    compressed_size: u32,
    options_offset: u32,
    minor: u16,
    major: u16,
    arch: u32,
    identifier_offset: u32,
    identifier_len: u32,
    flags: u64,
    uncompressed_size: u64,
}

impl Fixed {
    fn parse(h: &[u8]) -> Self {
        Fixed {
            kind: u16_at(h, 0),
            header_size: u32_at(h, 4),
            payload_size: u64_at(h, 8),
            compressed_size: u32_at(h, 16),
            options_offset: u32_at(h, 20),
            minor: u16_at(h, 24),
            major: u16_at(h, 26),
            arch: u32_at(h, 28),
            identifier_offset: u32_at(h, 32),
            identifier_len: u32_at(h, 36),
            flags: u64_at(h, 40),
            uncompressed_size: u64_at(h, 56),
        }
    }

    fn compression(&self) -> Compression {
        if self.flags & flags::OPAQUE != 0 {
            Compression::Opaque
        } else if self.flags & flags::COMPRESSED_ZSTD != 0 {
            Compression::Zstd
        } else if self.flags & flags::COMPRESSED_LZ4 != 0 {
            Compression::Lz4
        } else if self.compressed_size != 0 {
            Compression::Unknown
        } else {
            Compression::None
        }
    }
}

fn entry_kind(raw: u16) -> EntryKind {
    match raw {
        KIND_PTX => EntryKind::Ptx,
        KIND_ELF => EntryKind::Sass,
        KIND_LTO => EntryKind::Lto,
        other => EntryKind::Other(other),
    }
}

fn arch_kind(kind: EntryKind) -> Option<ArchKind> {
    match kind {
        EntryKind::Sass => Some(ArchKind::Sass),
        EntryKind::Ptx => Some(ArchKind::Ptx),
        EntryKind::Lto => Some(ArchKind::Lto),
        EntryKind::Other(_) => None,
    }
}

/// The `a`/`f` suffix from the flags; `None` when neither bit is set (plain, or an older fat
/// binary that does not record it).
fn variant_from_flags(f: u64) -> Option<Variant> {
    if f & flags::ARCH_SPECIFIC != 0 {
        Some(Variant::ArchSpecific)
    } else if f & flags::FAMILY_SPECIFIC != 0 {
        Some(Variant::FamilySpecific)
    } else {
        None
    }
}

/// Whether the header leaves the suffix open, so that only the payload can tell: targets
/// that have `a` forms (sm_90, and sm_100 on) whose header has neither the flag bits nor a
/// compat block saying "not `a`" — fat binaries written by CUDA 12 tools. Exception: a cubin
/// for sm_90 or older with code version 1.8 comes from a CUDA 13 ptxas, which never sets the
/// `a` bit in `e_flags` (research §1.9), so its payload cannot say more than the header.
fn needs_peek(kind: EntryKind, f: &Fixed) -> bool {
    let may_have_suffix = f.arch == 90 || f.arch >= 100;
    let payload_can_tell = match kind {
        EntryKind::Sass => f.arch >= 100 || (f.major, f.minor) < (1, 8),
        EntryKind::Ptx => f.major < 9,
        _ => false,
    };
    may_have_suffix && payload_can_tell
}

/// The `a` marker from the copy of the cubin's `.nv.compat` section that CUDA 13 fat binaries
/// keep in the entry header (flag 0x1000000; research §1.5–1.6): 4-byte records
/// `[_, format, attribute, value]`, format 4 followed by `value` bytes of data; attribute 0x09
/// (format 2) is 1 for `a` targets and 0 otherwise. `None` when the block or the attribute is
/// absent (ptxas 12.9 writes the block without attribute 0x09).
fn compat_arch_specific(h: &[u8], f: &Fixed) -> Option<Variant> {
    const MAX_BLOCK: usize = 1024;
    if f.flags & flags::COMPAT_BLOCK == 0 || f.options_offset == 0 {
        return None;
    }
    let header = f.header_size as usize;
    let at = f.options_offset as usize;
    if at.checked_add(8)? > header {
        return None;
    }
    let off = u32_at(h, at) as usize;
    let len = u32_at(h, at + 4) as usize;
    if len > MAX_BLOCK || off.checked_add(len)? > header {
        return None;
    }
    let block = h.get(off..off + len)?;
    let mut i = 0usize;
    while let Some(&[_, format, attribute, value]) = block.get(i..i + 4) {
        if format == 2 && attribute == 0x09 {
            return Some(if value != 0 {
                Variant::ArchSpecific
            } else {
                Variant::Plain
            });
        }
        i += 4 + if format == 4 { usize::from(value) } else { 0 };
    }
    None
}

/// The identifier string when it lies inside the header bytes already read.
fn identifier(h: &[u8], f: &Fixed) -> Option<String> {
    if f.identifier_offset == 0 || f.identifier_len == 0 || f.identifier_len > MAX_IDENTIFIER {
        return None;
    }
    let start = f.identifier_offset as usize;
    let end = start.checked_add(f.identifier_len as usize)?;
    if end as u64 > u64::from(f.header_size) {
        return None;
    }
    let raw = h.get(start..end)?;
    let text = raw.split(|&b| b == 0).next().unwrap_or_default();
    if text.is_empty() {
        return None;
    }
    Some(String::from_utf8_lossy(text).into_owned())
}

/// Counts the wrapper records of `.nvFatBinSegment` (24 bytes each on 64-bit hosts).
pub(crate) fn count_wrappers<S: ReadAt + ?Sized>(
    src: &S,
    start: u64,
    size: u64,
) -> Result<u32, ScanError> {
    // The section is small (one record per registered fat binary: 10,656 bytes in
    // libtorch_cuda.so); refuse to read an absurd one.
    const MAX: u64 = 16 << 20;
    if size > MAX {
        return Err(ScanError::TooLarge(format!(
            "{WRAPPER_SECTION} of {size} bytes"
        )));
    }
    let mut buf = vec![0u8; size as usize];
    src.read_exact_at(&mut buf, start)
        .map_err(|e| ScanError::read(WRAPPER_SECTION, e))?;
    let n = buf
        .chunks_exact(8)
        .filter(|c| u32_at(c, 0) == WRAPPER_MAGIC)
        .count();
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}
