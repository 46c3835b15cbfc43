//! Section headers and their names: what ld.so never reads, but readers of a library's
//! contents need (the kernel-image scanner finds `.nv_fatbin` by name; the symbol table is sized
//! by its SHT_DYNSYM section). Read with positioned reads of the table and the name table only.

use crate::error::ElfError;
use crate::read::{le_u32, le_u64, range_fits, read_vec, ReadAt};

use super::{ElfClass, ElfHeader};

pub const SHT_NOBITS: u32 = 8;
pub const SHT_DYNSYM: u32 = 11;

/// Refuse section tables larger than this many entries (real libraries have < 100).
const MAX_SECTIONS: u64 = 200_000;
/// Refuse section-name tables larger than this (libtorch_cuda.so's is 331 bytes).
const MAX_SHSTRTAB: u64 = 16 << 20;
/// `e_shstrndx` saying the index is in section 0's `sh_link`.
const SHN_XINDEX: u64 = 0xffff;

/// One section header, with its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub sh_type: u32,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
}

impl Section {
    /// True when the section has bytes in the file (not `SHT_NOBITS`, not empty).
    pub fn has_file_data(&self) -> bool {
        self.sh_type != SHT_NOBITS && self.size > 0
    }
}

/// Every section header of `src` (whose file header is `header`), named from the section-name
/// table: empty when the file has no section table. Extended numbering (≥ 0xff00 sections:
/// the count in section 0's `sh_size`, the name table's index in its `sh_link`) is followed.
/// Sections themselves are not bounds-checked: a reader checks the ones it reads.
pub fn read_sections<R: ReadAt + ?Sized>(
    src: &R,
    header: &ElfHeader,
) -> Result<Vec<Section>, ElfError> {
    if header.shoff == 0 {
        return Ok(Vec::new());
    }
    let entsize: u16 = match header.class {
        ElfClass::Elf32 => 40,
        ElfClass::Elf64 => 64,
    };
    if header.shentsize != entsize {
        return Err(ElfError::malformed(format!(
            "section header size {} (expected {entsize})",
            header.shentsize
        )));
    }
    let entsize = u64::from(entsize);
    let mut count = u64::from(header.shnum);
    let mut names_index = u64::from(header.shstrndx);
    if count == 0 || names_index == SHN_XINDEX {
        let first = read_table(src, header.shoff, entsize, "section header 0")?;
        let (_, s0) = raw_section(&first, header.class);
        if count == 0 {
            count = s0.size;
        }
        if names_index == SHN_XINDEX {
            names_index = u64::from(s0.link);
        }
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    if count > MAX_SECTIONS {
        return Err(ElfError::TooLarge(format!("{count} sections")));
    }
    let table = read_table(src, header.shoff, count * entsize, "the section table")?;
    let raw: Vec<(u32, Section)> = table
        .chunks_exact(entsize as usize)
        .map(|c| raw_section(c, header.class))
        .collect();
    let names = read_names(src, &raw, names_index)?;
    Ok(raw
        .into_iter()
        .map(|(name, s)| Section {
            name: name_at(&names, name),
            ..s
        })
        .collect())
}

fn read_table<R: ReadAt + ?Sized>(
    src: &R,
    offset: u64,
    len: u64,
    what: &'static str,
) -> Result<Vec<u8>, ElfError> {
    if !range_fits(src.size(), offset, len) {
        return Err(ElfError::Truncated {
            what,
            offset,
            len,
            size: src.size(),
        });
    }
    Ok(read_vec(src, offset, len)?)
}

/// A header as read: its name's offset in the name table, and the section still unnamed.
fn raw_section(b: &[u8], class: ElfClass) -> (u32, Section) {
    let u32_at = |at: usize| le_u32(b, at).unwrap_or(0);
    let (name, sh_type, addr, offset, size, link) = match class {
        ElfClass::Elf64 => (
            u32_at(0),
            u32_at(4),
            le_u64(b, 16).unwrap_or(0),
            le_u64(b, 24).unwrap_or(0),
            le_u64(b, 32).unwrap_or(0),
            u32_at(40),
        ),
        ElfClass::Elf32 => (
            u32_at(0),
            u32_at(4),
            u64::from(u32_at(12)),
            u64::from(u32_at(16)),
            u64::from(u32_at(20)),
            u32_at(24),
        ),
    };
    let section = Section {
        name: String::new(),
        sh_type,
        addr,
        offset,
        size,
        link,
    };
    (name, section)
}

fn read_names<R: ReadAt + ?Sized>(
    src: &R,
    raw: &[(u32, Section)],
    index: u64,
) -> Result<Vec<u8>, ElfError> {
    let Some((_, strtab)) = usize::try_from(index).ok().and_then(|i| raw.get(i)) else {
        // No name table: sections exist but none can be recognised by name.
        return Ok(Vec::new());
    };
    if !strtab.has_file_data() {
        return Ok(Vec::new());
    }
    if strtab.size > MAX_SHSTRTAB {
        return Err(ElfError::TooLarge(format!(
            "section name table of {} bytes",
            strtab.size
        )));
    }
    read_table(src, strtab.offset, strtab.size, "the section name table")
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
    use crate::read::FileSource;

    /// The section table of a real library, against readelf's (binutils) listing of it.
    #[test]
    fn sections_of_a_real_library_match_readelf() {
        let lib = std::env::current_exe().unwrap();
        let out = match std::process::Command::new("readelf")
            .args(["-W", "-S"])
            .arg(&lib)
            .output()
        {
            Ok(out) if out.status.success() => out,
            _ => panic!("readelf (binutils) is needed for this test"),
        };
        // "  [ 1] .interp  PROGBITS  0000000000000318 000318 00001c ..."
        let listed: Vec<(String, u64, u64)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let rest = l.trim_start().strip_prefix('[')?;
                let (_, rest) = rest.split_once(']')?;
                let f: Vec<&str> = rest.split_whitespace().collect();
                // Section 0 has no name: readelf shows its type (NULL) first.
                if f.len() < 5 || f[0] == "Name" || f[0] == "NULL" {
                    return None;
                }
                let hex = |s: &str| u64::from_str_radix(s, 16).ok();
                Some((f[0].to_string(), hex(f[3])?, hex(f[4])?))
            })
            .collect();
        assert!(listed.len() > 10, "{listed:?}");
        let src = FileSource::open(&lib).unwrap();
        let mut head = vec![0u8; 64];
        src.read_exact_at(&mut head, 0).unwrap();
        let header = ElfHeader::parse(&head).unwrap();
        let read: Vec<(String, u64, u64)> = read_sections(&src, &header)
            .unwrap()
            .into_iter()
            .filter(|s| !s.name.is_empty())
            .map(|s| (s.name, s.offset, s.size))
            .collect();
        assert_eq!(read, listed);
    }
}
