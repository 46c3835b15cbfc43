//! ELF reader for what the dynamic loader looks at: the file header, the program headers, the
//! dynamic segment (SONAME, DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_FLAGS, DT_FLAGS_1) and, on
//! request, the dynamic symbol table with GNU symbol versions (see [`symbols`]).
//!
//! Like ld.so, it works from the program headers and the dynamic segment, not from section
//! headers (which may be stripped); section headers are only consulted to size the dynamic
//! symbol table when they are present and agree with the dynamic segment.
//!
//! 32- and 64-bit little-endian files are read; big-endian files are rejected with
//! [`ElfError::BigEndian`]. All reads are positioned reads of the needed ranges.

pub mod sections;
pub mod symbols;

use std::path::Path;

use crate::error::ElfError;
use crate::read::{le_u16, le_u32, le_u64, range_fits, read_cstr, read_vec, FileSource, ReadAt};

/// `e_ident[EI_CLASS]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElfClass {
    Elf32,
    Elf64,
}

/// Well-known `e_machine` values.
pub mod machine {
    pub const EM_386: u16 = 3;
    pub const EM_ARM: u16 = 40;
    pub const EM_X86_64: u16 = 62;
    pub const EM_AARCH64: u16 = 183;
    pub const EM_CUDA: u16 = 190;
}

/// `e_type` values.
pub mod elf_type {
    pub const ET_REL: u16 = 1;
    pub const ET_EXEC: u16 = 2;
    pub const ET_DYN: u16 = 3;
    pub const ET_CORE: u16 = 4;
}

/// Bits of DT_FLAGS.
pub mod dt_flags {
    pub const DF_ORIGIN: u64 = 0x1;
    pub const DF_SYMBOLIC: u64 = 0x2;
    pub const DF_BIND_NOW: u64 = 0x8;
    pub const DF_STATIC_TLS: u64 = 0x10;
}

/// Bits of DT_FLAGS_1.
pub mod dt_flags_1 {
    pub const DF_1_NOW: u64 = 0x1;
    pub const DF_1_GLOBAL: u64 = 0x2;
    pub const DF_1_NODELETE: u64 = 0x8;
    /// Do not search the default directories (nor take ld.so.cache entries from them).
    pub const DF_1_NODEFLIB: u64 = 0x800;
    pub const DF_1_PIE: u64 = 0x0800_0000;
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;

const DT_NULL: i64 = 0;
const DT_NEEDED: i64 = 1;
const DT_HASH: i64 = 4;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_STRSZ: i64 = 10;
const DT_SYMENT: i64 = 11;
const DT_SONAME: i64 = 14;
const DT_RPATH: i64 = 15;
const DT_RUNPATH: i64 = 29;
const DT_FLAGS: i64 = 30;
const DT_GNU_HASH: i64 = 0x6fff_fef5;
const DT_VERSYM: i64 = 0x6fff_fff0;
const DT_FLAGS_1: i64 = 0x6fff_fffb;
const DT_VERDEF: i64 = 0x6fff_fffc;
const DT_VERDEFNUM: i64 = 0x6fff_fffd;
const DT_VERNEED: i64 = 0x6fff_fffe;
const DT_VERNEEDNUM: i64 = 0x6fff_ffff;

/// Longest interpreter path or dynamic string we accept (ld.so has no limit; this only guards
/// against reading megabytes of garbage looking for a NUL).
const MAX_NAME_LEN: u64 = 64 * 1024;
/// Longest DT_RPATH / DT_RUNPATH string read: ld.so reads a path list of any length (a valid
/// gcc-built library can carry a 98 KB RPATH), so the limit is far above any real one.
const MAX_PATH_LIST_LEN: u64 = 16 << 20;
/// DT_NEEDED entries judged per object (real libraries name tens); past it the object is
/// judged partially, and [`DynamicInfo::partial`] says so.
pub const MAX_NEEDED: usize = 256;
/// Upper bound on program headers (PN_XNUM, 0xffff, means "look in section 0"; we refuse it).
const MAX_PHNUM: u16 = 0xfffe;

/// The ELF file header fields the loader cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfHeader {
    pub ident: [u8; 16],
    pub class: ElfClass,
    pub osabi: u8,
    pub abiversion: u8,
    pub e_type: u16,
    pub machine: u16,
    pub version: u32,
    pub phoff: u64,
    pub phentsize: u16,
    pub phnum: u16,
    pub shoff: u64,
    pub shentsize: u16,
    pub shnum: u16,
    /// Index of the section-name table (`SHN_XINDEX`, 0xffff: in section 0's `sh_link`).
    pub shstrndx: u16,
    pub flags: u32,
}

impl ElfHeader {
    /// Size of the header for this class.
    pub fn size(&self) -> u64 {
        header_size(self.class)
    }

    /// Parse the header from the first bytes of a file (at least 52 or 64 bytes).
    pub fn parse(bytes: &[u8]) -> Result<Self, ElfError> {
        let ident: [u8; 16] =
            bytes
                .get(..16)
                .and_then(|s| s.try_into().ok())
                .ok_or(ElfError::TooShort {
                    size: bytes.len() as u64,
                })?;
        if ident.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err(ElfError::NotElf);
        }
        let class = match ident[4] {
            1 => ElfClass::Elf32,
            2 => ElfClass::Elf64,
            other => return Err(ElfError::BadClass(other)),
        };
        match ident[5] {
            1 => {}
            2 => return Err(ElfError::BigEndian),
            other => return Err(ElfError::BadEncoding(other)),
        }
        let short = || ElfError::TooShort {
            size: bytes.len() as u64,
        };
        if (bytes.len() as u64) < header_size(class) {
            return Err(short());
        }
        let h = match class {
            ElfClass::Elf64 => ElfHeader {
                ident,
                class,
                osabi: ident[7],
                abiversion: ident[8],
                e_type: le_u16(bytes, 16).ok_or_else(short)?,
                machine: le_u16(bytes, 18).ok_or_else(short)?,
                version: le_u32(bytes, 20).ok_or_else(short)?,
                phoff: le_u64(bytes, 32).ok_or_else(short)?,
                shoff: le_u64(bytes, 40).ok_or_else(short)?,
                flags: le_u32(bytes, 48).ok_or_else(short)?,
                phentsize: le_u16(bytes, 54).ok_or_else(short)?,
                phnum: le_u16(bytes, 56).ok_or_else(short)?,
                shentsize: le_u16(bytes, 58).ok_or_else(short)?,
                shnum: le_u16(bytes, 60).ok_or_else(short)?,
                shstrndx: le_u16(bytes, 62).ok_or_else(short)?,
            },
            ElfClass::Elf32 => ElfHeader {
                ident,
                class,
                osabi: ident[7],
                abiversion: ident[8],
                e_type: le_u16(bytes, 16).ok_or_else(short)?,
                machine: le_u16(bytes, 18).ok_or_else(short)?,
                version: le_u32(bytes, 20).ok_or_else(short)?,
                phoff: u64::from(le_u32(bytes, 28).ok_or_else(short)?),
                shoff: u64::from(le_u32(bytes, 32).ok_or_else(short)?),
                flags: le_u32(bytes, 36).ok_or_else(short)?,
                phentsize: le_u16(bytes, 42).ok_or_else(short)?,
                phnum: le_u16(bytes, 44).ok_or_else(short)?,
                shentsize: le_u16(bytes, 46).ok_or_else(short)?,
                shnum: le_u16(bytes, 48).ok_or_else(short)?,
                shstrndx: le_u16(bytes, 50).ok_or_else(short)?,
            },
        };
        Ok(h)
    }
}

fn header_size(class: ElfClass) -> u64 {
    match class {
        ElfClass::Elf32 => 52,
        ElfClass::Elf64 => 64,
    }
}

fn phdr_size(class: ElfClass) -> u16 {
    match class {
        ElfClass::Elf32 => 32,
        ElfClass::Elf64 => 56,
    }
}

/// A PT_LOAD segment: how virtual addresses in the dynamic segment map to file offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

/// What the dynamic segment says, with strings resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicInfo {
    pub soname: Option<String>,
    pub needed: Vec<String>,
    /// DT_RPATH as written (glibc ignores it when DT_RUNPATH is also present).
    pub rpath: Option<String>,
    pub runpath: Option<String>,
    pub flags: u64,
    pub flags_1: u64,
    pub(crate) tables: DynTables,
    /// What was left out because a count passed its budget ([`MAX_NEEDED`]): the object is
    /// judged on the rest, and this says so.
    pub partial: Vec<String>,
}

impl DynamicInfo {
    /// The DT_RPATH that ld.so uses: none when the object also has DT_RUNPATH.
    pub fn effective_rpath(&self) -> Option<&str> {
        if self.runpath.is_some() {
            None
        } else {
            self.rpath.as_deref()
        }
    }

    /// DF_1_NODEFLIB: no default directories, no ld.so.cache entries from them.
    pub fn nodeflib(&self) -> bool {
        self.flags_1 & dt_flags_1::DF_1_NODEFLIB != 0
    }
}

/// Raw addresses of the dynamic tables (virtual addresses, as in the file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DynTables {
    pub strtab: Option<u64>,
    pub strsz: Option<u64>,
    pub symtab: Option<u64>,
    pub syment: Option<u64>,
    pub hash: Option<u64>,
    pub gnu_hash: Option<u64>,
    pub versym: Option<u64>,
    pub verdef: Option<u64>,
    pub verdefnum: Option<u64>,
    pub verneed: Option<u64>,
    pub verneednum: Option<u64>,
}

/// An opened ELF file: header, load segments, interpreter and dynamic information.
#[derive(Debug)]
pub struct ElfFile<R: ReadAt = FileSource> {
    src: R,
    header: ElfHeader,
    loads: Vec<LoadSegment>,
    interp: Option<String>,
    dynamic: Option<DynamicInfo>,
}

impl ElfFile<FileSource> {
    /// Open and parse a file from disk (positioned reads only).
    pub fn open(path: &Path) -> Result<Self, ElfError> {
        let src = FileSource::open(path)?;
        ElfFile::parse(src)
    }
}

impl<R: ReadAt> ElfFile<R> {
    /// Parse the header, the program headers and the dynamic segment of `src`.
    pub fn parse(src: R) -> Result<Self, ElfError> {
        let size = src.size();
        let head_len = size.min(64);
        let head = read_vec(&src, 0, head_len)?;
        let header = ElfHeader::parse(&head)?;
        let (loads, dynamic_seg, interp_seg) = read_program_headers(&src, &header)?;
        let interp = match interp_seg {
            Some((off, len)) => {
                if !range_fits(size, off, len) {
                    return Err(ElfError::Truncated {
                        what: "PT_INTERP",
                        offset: off,
                        len,
                        size,
                    });
                }
                read_cstr(&src, off, len.min(MAX_NAME_LEN))?
                    .map(|b| cudoctor_types::os_text::from_bytes(&b).into_owned())
            }
            None => None,
        };
        let mut file = ElfFile {
            src,
            header,
            loads,
            interp,
            dynamic: None,
        };
        if let Some((off, len)) = dynamic_seg {
            file.dynamic = Some(file.read_dynamic(off, len)?);
        }
        Ok(file)
    }

    pub fn header(&self) -> &ElfHeader {
        &self.header
    }

    pub fn class(&self) -> ElfClass {
        self.header.class
    }

    pub fn machine(&self) -> u16 {
        self.header.machine
    }

    pub fn load_segments(&self) -> &[LoadSegment] {
        &self.loads
    }

    /// The PT_INTERP path (executables only).
    pub fn interpreter(&self) -> Option<&str> {
        self.interp.as_deref()
    }

    /// The dynamic segment, if the object has one (a static executable has none).
    pub fn dynamic(&self) -> Option<&DynamicInfo> {
        self.dynamic.as_ref()
    }

    pub fn soname(&self) -> Option<&str> {
        self.dynamic.as_ref().and_then(|d| d.soname.as_deref())
    }

    pub fn needed(&self) -> &[String] {
        self.dynamic
            .as_ref()
            .map(|d| d.needed.as_slice())
            .unwrap_or(&[])
    }

    pub fn source(&self) -> &R {
        &self.src
    }

    /// Map a virtual address to a file offset through the PT_LOAD segments.
    pub fn vaddr_to_offset(&self, vaddr: u64) -> Option<u64> {
        self.loads.iter().find_map(|seg| {
            let rel = vaddr.checked_sub(seg.vaddr)?;
            if rel < seg.filesz {
                seg.offset.checked_add(rel)
            } else {
                None
            }
        })
    }

    /// Bytes available in the file from `vaddr` to the end of its load segment's file image.
    pub(crate) fn vaddr_span(&self, vaddr: u64) -> Option<(u64, u64)> {
        self.loads.iter().find_map(|seg| {
            let rel = vaddr.checked_sub(seg.vaddr)?;
            if rel < seg.filesz {
                Some((seg.offset.checked_add(rel)?, seg.filesz - rel))
            } else {
                None
            }
        })
    }

    fn read_dynamic(&self, off: u64, len: u64) -> Result<DynamicInfo, ElfError> {
        let size = self.src.size();
        if !range_fits(size, off, len) {
            return Err(ElfError::Truncated {
                what: "PT_DYNAMIC",
                offset: off,
                len,
                size,
            });
        }
        let raw = read_vec(&self.src, off, len)?;
        let entsize: usize = match self.header.class {
            ElfClass::Elf32 => 8,
            ElfClass::Elf64 => 16,
        };
        let mut t = DynTables::default();
        let mut needed_offs = Vec::new();
        let mut needed_cut = 0usize;
        let (mut soname_off, mut rpath_off, mut runpath_off) = (None, None, None);
        let (mut flags, mut flags_1) = (0u64, 0u64);
        for chunk in raw.chunks_exact(entsize) {
            let (tag, val) = match self.header.class {
                ElfClass::Elf32 => (
                    i64::from(le_u32(chunk, 0).unwrap_or(0) as i32),
                    u64::from(le_u32(chunk, 4).unwrap_or(0)),
                ),
                ElfClass::Elf64 => (
                    le_u64(chunk, 0).unwrap_or(0) as i64,
                    le_u64(chunk, 8).unwrap_or(0),
                ),
            };
            // Like glibc's get-dynamic-info: a later entry of a single-valued tag wins.
            match tag {
                DT_NULL => break,
                DT_NEEDED if needed_offs.len() < MAX_NEEDED => needed_offs.push(val),
                DT_NEEDED => needed_cut += 1,
                DT_SONAME => soname_off = Some(val),
                DT_RPATH => rpath_off = Some(val),
                DT_RUNPATH => runpath_off = Some(val),
                DT_FLAGS => flags = val,
                DT_FLAGS_1 => flags_1 = val,
                DT_STRTAB => t.strtab = Some(val),
                DT_STRSZ => t.strsz = Some(val),
                DT_SYMTAB => t.symtab = Some(val),
                DT_SYMENT => t.syment = Some(val),
                DT_HASH => t.hash = Some(val),
                DT_GNU_HASH => t.gnu_hash = Some(val),
                DT_VERSYM => t.versym = Some(val),
                DT_VERDEF => t.verdef = Some(val),
                DT_VERDEFNUM => t.verdefnum = Some(val),
                DT_VERNEED => t.verneed = Some(val),
                DT_VERNEEDNUM => t.verneednum = Some(val),
                _ => {}
            }
        }
        let any_string = !needed_offs.is_empty()
            || soname_off.is_some()
            || rpath_off.is_some()
            || runpath_off.is_some();
        let strtab = match (t.strtab, any_string) {
            (Some(addr), _) => Some(self.strtab_span(addr, t.strsz)?),
            (None, true) => {
                return Err(ElfError::malformed(
                    "dynamic segment names strings but has no DT_STRTAB",
                ))
            }
            (None, false) => None,
        };
        let get_up_to = |o: u64, max: u64| -> Result<String, ElfError> {
            let (base, len) = strtab.ok_or_else(|| ElfError::malformed("no string table"))?;
            if o >= len {
                return Err(ElfError::malformed(format!(
                    "dynamic string offset {o} outside the string table ({len} bytes)"
                )));
            }
            let bytes = read_cstr(&self.src, base + o, (len - o).min(max))?
                .ok_or_else(|| ElfError::malformed("unterminated dynamic string"))?;
            // Names and paths are bytes: kept whole, so a library named in bytes that are not
            // UTF-8 is still found (cudoctor_types::os_text).
            Ok(cudoctor_types::os_text::from_bytes(&bytes).into_owned())
        };
        let get = |o: u64| get_up_to(o, MAX_NAME_LEN);
        // A path list is read as ld.so reads it: to its NUL, however long.
        let get_list = |o: u64| get_up_to(o, MAX_PATH_LIST_LEN);
        let mut needed = Vec::with_capacity(needed_offs.len());
        for o in needed_offs {
            needed.push(get(o)?);
        }
        let mut partial = Vec::new();
        if needed_cut > 0 {
            partial.push(format!(
                "{} DT_NEEDED entries; judged on the first {MAX_NEEDED}",
                MAX_NEEDED + needed_cut
            ));
        }
        Ok(DynamicInfo {
            soname: soname_off.map(get).transpose()?,
            needed,
            rpath: rpath_off.map(get_list).transpose()?,
            runpath: runpath_off.map(get_list).transpose()?,
            flags,
            flags_1,
            tables: t,
            partial,
        })
    }

    /// File offset and usable length of the dynamic string table.
    pub(crate) fn strtab_span(
        &self,
        addr: u64,
        strsz: Option<u64>,
    ) -> Result<(u64, u64), ElfError> {
        let (off, avail) = self.vaddr_span(addr).ok_or_else(|| {
            ElfError::malformed(format!(
                "DT_STRTAB address {addr:#x} is not in any loaded segment"
            ))
        })?;
        let len = match strsz {
            Some(sz) => sz.min(avail),
            None => avail,
        };
        Ok((off, len))
    }
}

type SegmentRange = Option<(u64, u64)>;

fn read_program_headers<R: ReadAt>(
    src: &R,
    h: &ElfHeader,
) -> Result<(Vec<LoadSegment>, SegmentRange, SegmentRange), ElfError> {
    if h.phnum == 0 {
        return Ok((Vec::new(), None, None));
    }
    if h.phnum > MAX_PHNUM {
        return Err(ElfError::malformed(
            "PN_XNUM program header count is not supported",
        ));
    }
    let want = phdr_size(h.class);
    if h.phentsize != want {
        return Err(ElfError::malformed(format!(
            "program header entry size {} (expected {want})",
            h.phentsize
        )));
    }
    let total = u64::from(h.phnum) * u64::from(want);
    let size = src.size();
    if !range_fits(size, h.phoff, total) {
        return Err(ElfError::Truncated {
            what: "program headers",
            offset: h.phoff,
            len: total,
            size,
        });
    }
    let raw = read_vec(src, h.phoff, total)?;
    let mut loads = Vec::new();
    let (mut dynamic, mut interp) = (None, None);
    for ph in raw.chunks_exact(usize::from(want)) {
        let bad = || ElfError::malformed("short program header");
        let (p_type, offset, vaddr, filesz, memsz) = match h.class {
            ElfClass::Elf64 => (
                le_u32(ph, 0).ok_or_else(bad)?,
                le_u64(ph, 8).ok_or_else(bad)?,
                le_u64(ph, 16).ok_or_else(bad)?,
                le_u64(ph, 32).ok_or_else(bad)?,
                le_u64(ph, 40).ok_or_else(bad)?,
            ),
            ElfClass::Elf32 => (
                le_u32(ph, 0).ok_or_else(bad)?,
                u64::from(le_u32(ph, 4).ok_or_else(bad)?),
                u64::from(le_u32(ph, 8).ok_or_else(bad)?),
                u64::from(le_u32(ph, 16).ok_or_else(bad)?),
                u64::from(le_u32(ph, 20).ok_or_else(bad)?),
            ),
        };
        match p_type {
            PT_LOAD => loads.push(LoadSegment {
                offset,
                vaddr,
                // A segment claiming bytes past the end of the file only maps what exists.
                filesz: filesz.min(size.saturating_sub(offset)),
                memsz,
            }),
            PT_DYNAMIC => dynamic = Some((offset, filesz)),
            PT_INTERP => interp = Some((offset, filesz)),
            _ => {}
        }
    }
    Ok((loads, dynamic, interp))
}

/// What ld.so's `open_verify` decides about a candidate file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loadability {
    /// Usable: the search stops here.
    Loadable,
    /// Silently skipped, the search goes on (a 32-bit library in a 64-bit process, another
    /// machine's library).
    WrongClass,
    WrongMachine,
    /// ld.so stops with this error (its own wording): "invalid ELF header", "file too short"...
    Fatal(String),
}

/// The process's own ELF identity: only candidates of this class and machine are loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub class: ElfClass,
    pub machine: u16,
}

impl Target {
    pub const X86_64: Target = Target {
        class: ElfClass::Elf64,
        machine: machine::EM_X86_64,
    };
    pub const AARCH64: Target = Target {
        class: ElfClass::Elf64,
        machine: machine::EM_AARCH64,
    };
}

/// Highest EI_ABIVERSION glibc accepts for ELFOSABI_GNU objects (LIBC_ABI_MAX - 1; glibc 2.36
/// defines LIBC_ABI_MAX as 4: unique symbols, IFUNC, absolute symbols).
const GNU_ABI_VERSION_MAX: u8 = 3;

/// Emulate glibc's `open_verify` on the first bytes of a candidate (`head` holds at least the
/// file's first 64 bytes when the file has them).
pub fn verify_loadable(head: &[u8], target: &Target) -> Loadability {
    let fatal = |m: &str| Loadability::Fatal(m.to_string());
    // glibc reads the header first and refuses anything shorter than its own Ehdr.
    if (head.len() as u64) < header_size(target.class) {
        return fatal("file too short");
    }
    let Some(ident) = head.get(..16) else {
        return fatal("file too short");
    };
    if ident.get(..4) != Some(b"\x7fELF".as_slice()) {
        return fatal("invalid ELF header");
    }
    let want_class = match target.class {
        ElfClass::Elf32 => 1,
        ElfClass::Elf64 => 2,
    };
    let osabi = ident.get(7).copied().unwrap_or(0);
    let abiversion = ident.get(8).copied().unwrap_or(0);
    let valid_osabi = osabi == 0 || osabi == 3;
    let valid_abiversion = abiversion == 0 || (osabi == 3 && abiversion <= GNU_ABI_VERSION_MAX);
    let pad_zero = ident.get(9..16).is_some_and(|p| p.iter().all(|&b| b == 0));
    let class_ok = ident.get(4) == Some(&want_class);
    let data_ok = ident.get(5) == Some(&1);
    let version_ok = ident.get(6) == Some(&1);
    if !(class_ok && data_ok && version_ok && valid_osabi && valid_abiversion && pad_zero) {
        return if !class_ok {
            Loadability::WrongClass
        } else if !data_ok {
            fatal("ELF file data encoding not little-endian")
        } else if !version_ok {
            fatal("ELF file version ident does not match current one")
        } else if !valid_osabi {
            fatal("ELF file OS ABI invalid")
        } else if !valid_abiversion {
            fatal("ELF file ABI version invalid")
        } else {
            fatal("nonzero padding in e_ident")
        };
    }
    let header = match ElfHeader::parse(head) {
        Ok(h) => h,
        Err(_) => return fatal("file too short"),
    };
    if header.version != 1 {
        return fatal("ELF file version does not match current one");
    }
    if header.machine != target.machine {
        return Loadability::WrongMachine;
    }
    if header.e_type != elf_type::ET_DYN && header.e_type != elf_type::ET_EXEC {
        return fatal("only ET_DYN and ET_EXEC can be loaded");
    }
    if header.phentsize != phdr_size(header.class) {
        return fatal("ELF file's phentsize not the expected size");
    }
    Loadability::Loadable
}

#[cfg(test)]
pub(crate) mod test_util {
    //! A tiny ELF64 shared-object writer for unit tests of the parser (the integration tests
    //! use real gcc-built libraries).

    pub struct MiniDso {
        pub needed: Vec<&'static str>,
        pub soname: Option<&'static str>,
        pub rpath: Option<&'static str>,
        pub runpath: Option<&'static str>,
        pub flags_1: u64,
    }

    /// Layout: ehdr(64) | phdrs(2*56) | strtab | dynamic. One PT_LOAD maps the whole file at
    /// vaddr 0x1000 so addresses differ from offsets.
    pub fn build(d: &MiniDso) -> Vec<u8> {
        const BASE: u64 = 0x1000;
        let mut strtab = vec![0u8];
        let mut add = |s: &str| {
            let off = strtab.len() as u64;
            strtab.extend_from_slice(s.as_bytes());
            strtab.push(0);
            off
        };
        let mut dyns: Vec<(i64, u64)> = Vec::new();
        for n in &d.needed {
            dyns.push((1, add(n)));
        }
        if let Some(s) = d.soname {
            dyns.push((14, add(s)));
        }
        if let Some(s) = d.rpath {
            dyns.push((15, add(s)));
        }
        if let Some(s) = d.runpath {
            dyns.push((29, add(s)));
        }
        if d.flags_1 != 0 {
            dyns.push((0x6fff_fffb, d.flags_1));
        }
        let strtab_off = 64 + 2 * 56;
        let dyn_off = strtab_off + strtab.len() as u64;
        dyns.push((5, BASE + strtab_off));
        dyns.push((10, strtab.len() as u64));
        dyns.push((0, 0));
        let dyn_len = dyns.len() as u64 * 16;
        let total = dyn_off + dyn_len;

        let mut out = Vec::new();
        out.extend_from_slice(b"\x7fELF\x02\x01\x01\x00");
        out.extend_from_slice(&[0u8; 8]);
        out.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
        out.extend_from_slice(&62u16.to_le_bytes()); // x86-64
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // entry
        out.extend_from_slice(&64u64.to_le_bytes()); // phoff
        out.extend_from_slice(&0u64.to_le_bytes()); // shoff
        out.extend_from_slice(&0u32.to_le_bytes()); // flags
        out.extend_from_slice(&64u16.to_le_bytes());
        out.extend_from_slice(&56u16.to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&64u16.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        let ph = |out: &mut Vec<u8>, ty: u32, off: u64, vaddr: u64, sz: u64| {
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&6u32.to_le_bytes());
            out.extend_from_slice(&off.to_le_bytes());
            out.extend_from_slice(&vaddr.to_le_bytes());
            out.extend_from_slice(&vaddr.to_le_bytes());
            out.extend_from_slice(&sz.to_le_bytes());
            out.extend_from_slice(&sz.to_le_bytes());
            out.extend_from_slice(&8u64.to_le_bytes());
        };
        ph(&mut out, 1, 0, BASE, total);
        ph(&mut out, 2, dyn_off, BASE + dyn_off, dyn_len);
        out.extend_from_slice(&strtab);
        for (tag, val) in dyns {
            out.extend_from_slice(&tag.to_le_bytes());
            out.extend_from_slice(&val.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::{build, MiniDso};
    use super::*;

    fn sample() -> Vec<u8> {
        build(&MiniDso {
            needed: vec!["libc.so.6", "libcudart.so.12"],
            soname: Some("libfoo.so.1"),
            rpath: Some("/opt/x"),
            runpath: Some("$ORIGIN/../lib"),
            flags_1: dt_flags_1::DF_1_NODEFLIB,
        })
    }

    #[test]
    fn parses_dynamic_segment() {
        let f = ElfFile::parse(sample()).unwrap();
        assert_eq!(f.class(), ElfClass::Elf64);
        assert_eq!(f.machine(), machine::EM_X86_64);
        assert_eq!(f.soname(), Some("libfoo.so.1"));
        assert_eq!(f.needed(), ["libc.so.6", "libcudart.so.12"]);
        let d = f.dynamic().unwrap();
        assert_eq!(d.rpath.as_deref(), Some("/opt/x"));
        assert_eq!(d.runpath.as_deref(), Some("$ORIGIN/../lib"));
        // RUNPATH present: RPATH is ignored, as glibc does.
        assert_eq!(d.effective_rpath(), None);
        assert!(d.nodeflib());
        assert_eq!(
            verify_loadable(&sample(), &Target::X86_64),
            Loadability::Loadable
        );
    }

    /// A valid library with a 98 KB RPATH (gcc builds one, glibc loads it): read whole, as
    /// ld.so reads it.
    #[test]
    fn a_98_kb_rpath_is_read_whole() {
        let long: String = (0..4500)
            .map(|i| format!("/opt/d{i:016}"))
            .collect::<Vec<_>>()
            .join(":");
        assert!(long.len() > 98_000);
        let long: &'static str = Box::leak(long.into_boxed_str());
        let f = ElfFile::parse(build(&MiniDso {
            needed: vec!["libc.so.6"],
            soname: None,
            rpath: Some(long),
            runpath: Some(long),
            flags_1: 0,
        }))
        .unwrap();
        let d = f.dynamic().unwrap();
        assert_eq!(d.rpath.as_deref(), Some(long));
        assert_eq!(d.runpath.as_deref(), Some(long));
        assert!(d.partial.is_empty());
    }

    /// More DT_NEEDED entries than the budget: the first ones are kept and the cut is said.
    #[test]
    fn needed_entries_past_the_budget_are_cut_and_said() {
        let names: Vec<&'static str> = (0..MAX_NEEDED + 500)
            .map(|i| &*Box::leak(format!("libx{i}.so").into_boxed_str()))
            .collect();
        let f = ElfFile::parse(build(&MiniDso {
            needed: names,
            soname: None,
            rpath: None,
            runpath: None,
            flags_1: 0,
        }))
        .unwrap();
        let d = f.dynamic().unwrap();
        assert_eq!(d.needed.len(), MAX_NEEDED);
        assert_eq!(d.needed[0], "libx0.so");
        assert_eq!(d.partial.len(), 1, "{:?}", d.partial);
        assert!(d.partial[0].contains(&format!("{} DT_NEEDED", MAX_NEEDED + 500)));
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let full = sample();
        for len in 0..full.len() {
            let cut = full.get(..len).unwrap().to_vec();
            assert!(ElfFile::parse(cut).is_err(), "prefix of {len} bytes parsed");
        }
    }

    #[test]
    fn corrupted_bytes_never_panic() {
        let full = sample();
        // Deterministic pseudo-random corruption of every byte position.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for pos in 0..full.len() {
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let mut m = full.clone();
                if let Some(b) = m.get_mut(pos) {
                    *b = (seed & 0xff) as u8;
                }
                let _ = ElfFile::parse(m.clone());
                let _ = verify_loadable(&m, &Target::X86_64);
            }
        }
    }

    #[test]
    fn rejects_big_endian_and_garbage() {
        let mut be = sample();
        be[5] = 2;
        assert!(matches!(
            ElfFile::parse(be.clone()),
            Err(ElfError::BigEndian)
        ));
        assert_eq!(
            verify_loadable(&be, &Target::X86_64),
            Loadability::Fatal("ELF file data encoding not little-endian".into())
        );
        assert!(matches!(
            ElfFile::parse(b"hello world, not elf".to_vec()),
            Err(ElfError::NotElf)
        ));
        // A linker script (libc.so style) long enough to hold a header.
        let script = b"/* GNU ld script */\nOUTPUT_FORMAT(elf64-x86-64)\nGROUP ( /lib/x86_64-linux-gnu/libc.so.6 )\n";
        assert_eq!(
            verify_loadable(script, &Target::X86_64),
            Loadability::Fatal("invalid ELF header".into())
        );
        assert_eq!(
            verify_loadable(b"INPUT(-lfoo)\n", &Target::X86_64),
            Loadability::Fatal("file too short".into())
        );
        assert_eq!(
            verify_loadable(b"", &Target::X86_64),
            Loadability::Fatal("file too short".into())
        );
    }

    #[test]
    fn other_class_and_machine_are_skipped_not_fatal() {
        let mut m = sample();
        m[4] = 1;
        assert_eq!(
            verify_loadable(&m, &Target::X86_64),
            Loadability::WrongClass
        );
        assert_eq!(
            verify_loadable(&sample(), &Target::AARCH64),
            Loadability::WrongMachine
        );
        let mut rel = sample();
        rel[16] = 1; // ET_REL
        assert_eq!(
            verify_loadable(&rel, &Target::X86_64),
            Loadability::Fatal("only ET_DYN and ET_EXEC can be loaded".into())
        );
    }
}
