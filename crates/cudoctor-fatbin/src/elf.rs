//! The host library's sections, read by the one ELF reader (`cudoctor_ldso::elf`, also the
//! loader's): its file header and section table with names. The scanner adds what it alone
//! needs: a file that is no little-endian ELF is not an error but nothing to scan, and the
//! sections it reads must lie inside the file.

use cudoctor_ldso::elf::sections;
use cudoctor_ldso::elf::ElfHeader;
use cudoctor_ldso::ElfError;

use crate::error::ScanError;
use crate::source::ReadAt;

pub(crate) use sections::Section;

/// What the first bytes of a file say.
#[derive(Debug)]
pub(crate) enum Probe {
    /// Not an ELF file (or a flavour that cannot carry CUDA code for a little-endian host).
    NotElf,
    /// An ELF file and its sections (possibly none).
    Elf(Vec<Section>),
}

/// Reads the section table of `src`, or says it is not an ELF file.
pub(crate) fn read_sections<S: ReadAt + ?Sized>(src: &S) -> Result<Probe, ScanError> {
    let mut head = [0u8; 64];
    let head_len = src.size().min(64) as usize;
    let Some(head) = head.get_mut(..head_len) else {
        return Ok(Probe::NotElf);
    };
    src.read_exact_at(head, 0)
        .map_err(|e| ScanError::read("the ELF header", e))?;
    let header = match ElfHeader::parse(head) {
        Ok(h) => h,
        // The identification said ELF, little-endian, 32- or 64-bit; the header is cut short.
        Err(ElfError::TooShort { size }) if size >= 16 => {
            return Err(ScanError::Truncated(format!(
                "the ELF header is cut short: the file has {size} bytes"
            )))
        }
        // CUDA hosts (x86_64, aarch64, ppc64le) are little-endian; a big-endian ELF, or no ELF
        // at all, carries no fatbin any CUDA driver could load.
        Err(_) => return Ok(Probe::NotElf),
    };
    let sections = sections::read_sections(src, &header).map_err(scan_error)?;
    for s in &sections {
        if s.sh_type != sections::SHT_NOBITS && is_fatbin_related(&s.name) {
            let end = s.offset.checked_add(s.size);
            if end.is_none_or(|e| e > src.size()) {
                return Err(ScanError::Truncated(format!(
                    "section {} ({:#x} bytes at {:#x}) runs past the end of the file ({:#x} bytes)",
                    s.name,
                    s.size,
                    s.offset,
                    src.size()
                )));
            }
        }
    }
    Ok(Probe::Elf(sections))
}

fn scan_error(e: ElfError) -> ScanError {
    match e {
        ElfError::Io(e) => ScanError::read("the section headers", e),
        ElfError::TooLarge(what) => ScanError::TooLarge(what),
        ElfError::Truncated {
            what,
            offset,
            len,
            size,
        } => ScanError::Truncated(format!(
            "{what} ({len:#x} bytes at {offset:#x}) runs past the end of the file ({size:#x} bytes)"
        )),
        other => ScanError::Corrupt(other.to_string()),
    }
}

/// Sections whose contents the scanner reads; only their bounds must be sound.
fn is_fatbin_related(name: &str) -> bool {
    matches!(
        name,
        crate::fatbin::EXEC_SECTION | crate::fatbin::RELOC_SECTION | crate::fatbin::WRAPPER_SECTION
    )
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
