//! The little of ELF the scanner needs: the section header table and section names.
//!
//! Read with positioned reads: the ELF header (64 bytes), the section header table, and the
//! section-name string table. Nothing else of the host library is touched.

use crate::error::ScanError;
use crate::le::{u16_at, u32_at, u64_at};
use crate::source::ReadAt;

/// Refuse section tables larger than this many entries (real libraries have < 100).
const MAX_SECTIONS: u64 = 200_000;
/// Refuse section-name tables larger than this (libtorch_cuda.so's is 331 bytes).
const MAX_SHSTRTAB: u64 = 16 << 20;

const SHT_NOBITS: u32 = 8;

/// One section of the host ELF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub name: String,
    pub sh_type: u32,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
}

impl Section {
    /// True when the section has bytes in the file (not `SHT_NOBITS`, not empty).
    pub fn has_file_data(&self) -> bool {
        self.sh_type != SHT_NOBITS && self.size > 0
    }
}

/// What the first bytes of a file say.
#[derive(Debug)]
pub(crate) enum Probe {
    /// Not an ELF file (or a flavour that cannot carry CUDA code for a little-endian host).
    NotElf,
    /// An ELF file and its sections (possibly none).
    Elf(Vec<Section>),
}

struct Layout {
    is64: bool,
    shoff: u64,
    shentsize: u64,
    shnum: u64,
    shstrndx: u64,
}

/// Reads the section table of `src`, or says it is not an ELF file.
pub(crate) fn read_sections<S: ReadAt + ?Sized>(src: &S) -> Result<Probe, ScanError> {
    let mut ident = [0u8; 64];
    let head_len = src.size().min(64) as usize;
    let Some(head) = ident.get_mut(..head_len) else {
        return Ok(Probe::NotElf);
    };
    src.read_exact_at(head, 0)
        .map_err(|e| ScanError::read("the ELF header", e))?;
    if head_len < 16 || ident.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Ok(Probe::NotElf);
    }
    // CUDA hosts (x86_64, aarch64, ppc64le) are little-endian; a big-endian ELF carries no
    // fatbin any CUDA driver could load.
    if ident.get(5) != Some(&1) {
        return Ok(Probe::NotElf);
    }
    let is64 = match ident.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Ok(Probe::NotElf),
    };
    let need = if is64 { 64 } else { 52 };
    if head_len < need {
        return Err(ScanError::Truncated(format!(
            "the ELF header needs {need} bytes, the file has {head_len}"
        )));
    }
    let h = &ident[..];
    let mut layout = if is64 {
        Layout {
            is64,
            shoff: u64_at(h, 40),
            shentsize: u64::from(u16_at(h, 58)),
            shnum: u64::from(u16_at(h, 60)),
            shstrndx: u64::from(u16_at(h, 62)),
        }
    } else {
        Layout {
            is64,
            shoff: u64::from(u32_at(h, 32)),
            shentsize: u64::from(u16_at(h, 46)),
            shnum: u64::from(u16_at(h, 48)),
            shstrndx: u64::from(u16_at(h, 50)),
        }
    };
    if layout.shoff == 0 {
        // No section table (e.g. a stripped-of-sections file): nothing to scan.
        return Ok(Probe::Elf(Vec::new()));
    }
    let want_entsize = if is64 { 64 } else { 40 };
    if layout.shentsize != want_entsize {
        return Err(ScanError::Corrupt(format!(
            "section header size {} (expected {want_entsize})",
            layout.shentsize
        )));
    }
    resolve_extended_numbering(src, &mut layout)?;
    if layout.shnum == 0 {
        return Ok(Probe::Elf(Vec::new()));
    }
    if layout.shnum > MAX_SECTIONS {
        return Err(ScanError::TooLarge(format!("{} sections", layout.shnum)));
    }
    let table_len = layout.shnum * layout.shentsize; // both bounded above: no overflow
    let table_end = layout
        .shoff
        .checked_add(table_len)
        .ok_or_else(|| ScanError::Corrupt("section table offset overflows".into()))?;
    if table_end > src.size() {
        return Err(ScanError::Truncated(format!(
            "the section table ends at {table_end:#x}, the file at {:#x}",
            src.size()
        )));
    }
    let mut table = vec![0u8; table_len as usize];
    src.read_exact_at(&mut table, layout.shoff)
        .map_err(|e| ScanError::read("the section table", e))?;

    let raw: Vec<RawSection> = table
        .chunks_exact(layout.shentsize as usize)
        .map(|c| RawSection::parse(c, layout.is64))
        .collect();
    let names = read_names(src, &raw, layout.shstrndx)?;
    let mut sections = Vec::with_capacity(raw.len());
    for s in &raw {
        let name = name_at(&names, s.name);
        if s.sh_type != SHT_NOBITS {
            let end = s.offset.checked_add(s.size);
            if end.is_none_or(|e| e > src.size()) && is_fatbin_related(&name) {
                return Err(ScanError::Truncated(format!(
                    "section {name} ({:#x} bytes at {:#x}) runs past the end of the file ({:#x} bytes)",
                    s.size,
                    s.offset,
                    src.size()
                )));
            }
        }
        sections.push(Section {
            name,
            sh_type: s.sh_type,
            addr: s.addr,
            offset: s.offset,
            size: s.size,
        });
    }
    Ok(Probe::Elf(sections))
}

/// Sections whose contents the scanner reads; only their bounds must be sound.
fn is_fatbin_related(name: &str) -> bool {
    matches!(
        name,
        crate::fatbin::EXEC_SECTION | crate::fatbin::RELOC_SECTION | crate::fatbin::WRAPPER_SECTION
    )
}

/// ELF "extended section numbering": when there are ≥ 0xff00 sections, e_shnum is 0 and the
/// real count is in section 0's sh_size; e_shstrndx = SHN_XINDEX (0xffff) puts the index in
/// section 0's sh_link.
fn resolve_extended_numbering<S: ReadAt + ?Sized>(
    src: &S,
    layout: &mut Layout,
) -> Result<(), ScanError> {
    if layout.shnum != 0 && layout.shstrndx != 0xffff {
        return Ok(());
    }
    let mut first = vec![0u8; layout.shentsize as usize];
    src.read_exact_at(&mut first, layout.shoff)
        .map_err(|e| ScanError::read("section header 0", e))?;
    let s0 = RawSection::parse(&first, layout.is64);
    if layout.shnum == 0 {
        layout.shnum = s0.size;
    }
    if layout.shstrndx == 0xffff {
        layout.shstrndx = u64::from(s0.link);
    }
    Ok(())
}

struct RawSection {
    name: u32,
    sh_type: u32,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
}

impl RawSection {
    fn parse(b: &[u8], is64: bool) -> Self {
        if is64 {
            RawSection {
                name: u32_at(b, 0),
                sh_type: u32_at(b, 4),
                addr: u64_at(b, 16),
                offset: u64_at(b, 24),
                size: u64_at(b, 32),
                link: u32_at(b, 40),
            }
        } else {
            RawSection {
                name: u32_at(b, 0),
                sh_type: u32_at(b, 4),
                addr: u64::from(u32_at(b, 12)),
                offset: u64::from(u32_at(b, 16)),
                size: u64::from(u32_at(b, 20)),
                link: u32_at(b, 24),
            }
        }
    }
}

fn read_names<S: ReadAt + ?Sized>(
    src: &S,
    raw: &[RawSection],
    shstrndx: u64,
) -> Result<Vec<u8>, ScanError> {
    let Some(strtab) = usize::try_from(shstrndx).ok().and_then(|i| raw.get(i)) else {
        // No name table: sections exist but none can be recognised by name.
        return Ok(Vec::new());
    };
    if strtab.sh_type == SHT_NOBITS || strtab.size == 0 {
        return Ok(Vec::new());
    }
    if strtab.size > MAX_SHSTRTAB {
        return Err(ScanError::TooLarge(format!(
            "section name table of {} bytes",
            strtab.size
        )));
    }
    let end = strtab.offset.checked_add(strtab.size);
    if end.is_none_or(|e| e > src.size()) {
        return Err(ScanError::Truncated(
            "the section name table runs past the end of the file".into(),
        ));
    }
    let mut names = vec![0u8; strtab.size as usize];
    src.read_exact_at(&mut names, strtab.offset)
        .map_err(|e| ScanError::read("the section name table", e))?;
    Ok(names)
}

/// The NUL-terminated name at `offset`; empty when out of range (a nameless section is harmless).
fn name_at(names: &[u8], offset: u32) -> String {
    let Some(rest) = names.get(offset as usize..) else {
        return String::new();
    };
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(rest.get(..end).unwrap_or_default()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::ElfBuilder;

    #[test]
    fn non_elf_and_tiny_files_are_not_elf() {
        for data in [&b""[..], b"\x7fEL", b"#!/bin/sh\necho hi\n", &[0u8; 100]] {
            assert!(matches!(read_sections(data).unwrap(), Probe::NotElf));
        }
    }

    #[test]
    fn big_endian_elf_is_not_scanned() {
        let mut img = ElfBuilder::new().section(".nv_fatbin", &[0; 8]).build();
        img[5] = 2;
        assert!(matches!(read_sections(&img[..]).unwrap(), Probe::NotElf));
    }

    #[test]
    fn lists_named_sections_with_offsets() {
        let img = ElfBuilder::new()
            .section(".text", &[0x90; 10])
            .section(".nv_fatbin", &[1, 2, 3, 4, 5, 6, 7, 8])
            .build();
        let Probe::Elf(secs) = read_sections(&img[..]).unwrap() else {
            panic!("not elf")
        };
        let fb = secs.iter().find(|s| s.name == ".nv_fatbin").unwrap();
        assert_eq!(fb.size, 8);
        assert_eq!(
            &img[fb.offset as usize..fb.offset as usize + 8],
            &[1, 2, 3, 4, 5, 6, 7, 8]
        );
    }

    #[test]
    fn elf32_is_read_too() {
        let img = ElfBuilder::new()
            .elf32()
            .section(".nv_fatbin", &[9; 16])
            .build();
        let Probe::Elf(secs) = read_sections(&img[..]).unwrap() else {
            panic!("not elf")
        };
        assert!(secs.iter().any(|s| s.name == ".nv_fatbin" && s.size == 16));
    }

    #[test]
    fn section_table_past_the_end_is_truncation() {
        let img = ElfBuilder::new().section(".nv_fatbin", &[0; 8]).build();
        let cut = &img[..img.len() - 10];
        assert!(matches!(read_sections(cut), Err(ScanError::Truncated(_))));
    }

    #[test]
    fn no_section_table_means_no_sections() {
        let mut img = ElfBuilder::new().section(".nv_fatbin", &[0; 8]).build();
        img[40..48].fill(0);
        let Probe::Elf(secs) = read_sections(&img[..]).unwrap() else {
            panic!("not elf")
        };
        assert!(secs.is_empty());
    }
}
