//! The PE/COFF reader: what the Windows loader reads of a DLL or an executable before it maps
//! it — the machine, whether it is a DLL, the DLLs it imports (and which of their functions),
//! the DLLs it delay-loads, the functions it exports (forwarders included), and the file version
//! of its version resource.
//!
//! Layout from Microsoft's "PE Format" specification (learn.microsoft.com, Windows / Win32 /
//! Debug / PE Format): the MS-DOS stub's `e_lfanew` at 0x3c, the `PE\0\0` signature, the COFF
//! file header, the optional header (PE32 or PE32+) and its data directories (0 export, 1
//! import, 2 resource, 13 delay-load import), the section table, the import directory table
//! (20-byte entries ended by a zero one), the import lookup tables (ordinal flag in the top
//! bit), the hint/name table, the delay-load directory table (32-byte entries; attribute bit 0
//! clear means the old form holding virtual addresses), the export directory table (forwarders
//! point inside the export range), and the resource directory tree to the version resource
//! (VS_VERSIONINFO: its VS_FIXEDFILEINFO and its StringFileInfo's first string table).
//!
//! Only byte ranges that are asked for are read, each checked against the file's size first; a
//! count, size or address that a hostile file makes up is an error or a bounded loop, never a
//! panic or an allocation out of proportion to the file.

use std::io;

use cudoctor_types::read_at::ReadAt;
use serde::{Deserialize, Serialize};

/// The longest name read (an import or export name, a DLL name): MSVC's mangled C++ names
/// stay well under it.
const MAX_NAME: usize = 4096;
/// The most sections a COFF header may declare (the field is 16 bits; the loader takes 96,
/// linkers write far fewer).
const MAX_SECTIONS: usize = 96;
/// The most import or delay-load descriptors followed.
const MAX_DESCRIPTORS: usize = 16 << 10;
/// Bytes of names one parse may collect beyond the file's own size: names are strings of the
/// file, but many lookup entries may point at one string.
const NAME_BUDGET_SLACK: u64 = 1 << 20;
/// How much of the file one cached page covers (export names are contiguous and sorted).
const PAGE: u64 = 64 << 10;

/// Data directory indexes (PE Format, "Optional Header Data Directories").
const DIR_EXPORT: usize = 0;
const DIR_IMPORT: usize = 1;
const DIR_RESOURCE: usize = 2;
const DIR_DELAY_IMPORT: usize = 13;

/// Why a file is not a readable PE image.
#[derive(Debug, thiserror::Error)]
pub enum PeError {
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("not a PE file: {0}")]
    NotPe(&'static str),
    #[error("truncated PE file: {0} lies outside the file")]
    Truncated(&'static str),
    #[error("malformed PE file: {0}")]
    Malformed(String),
}

fn malformed(msg: impl Into<String>) -> PeError {
    PeError::Malformed(msg.into())
}

/// The COFF header's machine type (PE Format, "Machine Types").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Machine {
    /// IMAGE_FILE_MACHINE_I386, 0x14c.
    X86,
    /// IMAGE_FILE_MACHINE_AMD64, 0x8664.
    X64,
    /// IMAGE_FILE_MACHINE_ARM64, 0xaa64.
    Arm64,
    /// IMAGE_FILE_MACHINE_ARMNT, 0x1c4 (Thumb-2).
    Arm,
    /// Any other value.
    Other(u16),
}

impl Machine {
    pub fn from_raw(raw: u16) -> Machine {
        match raw {
            0x14c => Machine::X86,
            0x8664 => Machine::X64,
            0xaa64 => Machine::Arm64,
            0x1c4 => Machine::Arm,
            other => Machine::Other(other),
        }
    }

    /// The name Windows tools print (`dumpbin /headers`): x86, x64, ARM64, ARM.
    pub fn name(self) -> String {
        match self {
            Machine::X86 => "x86".into(),
            Machine::X64 => "x64".into(),
            Machine::Arm64 => "ARM64".into(),
            Machine::Arm => "ARM".into(),
            Machine::Other(raw) => format!("machine {raw:#x}"),
        }
    }
}

/// One function a module imports from a DLL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportedSymbol {
    /// By name, with the linker's hint (an index into the DLL's export name table).
    Name { hint: u16, name: String },
    /// By ordinal only.
    Ordinal(u16),
}

/// The functions a module takes from one DLL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Import {
    /// The DLL's name as the module spells it (`VCRUNTIME140.dll`): the loader compares names
    /// without regard to case.
    pub dll: String,
    pub symbols: Vec<ImportedSymbol>,
}

/// One exported function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Export {
    /// The ordinal (the export ordinal base plus its index in the address table).
    pub ordinal: u32,
    /// Its name, when it is exported by name.
    pub name: Option<String>,
    /// `OTHER.Function` (or `OTHER.#12`) when the export forwards to another DLL.
    pub forwarder: Option<String>,
}

/// The export directory of a module.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exports {
    /// The name the DLL was linked as (`c10.dll`).
    pub dll_name: Option<String>,
    pub symbols: Vec<Export>,
}

impl Exports {
    /// Whether a function of this name is exported.
    pub fn has_name(&self, name: &str) -> bool {
        self.symbols.iter().any(|e| e.name.as_deref() == Some(name))
    }

    /// Whether this ordinal is exported.
    pub fn has_ordinal(&self, ordinal: u16) -> bool {
        self.symbols.iter().any(|e| e.ordinal == u32::from(ordinal))
    }
}

/// A four-part file version (`14.40.33816.0`) from a version resource's VS_FIXEDFILEINFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FileVersion(pub [u16; 4]);

impl std::fmt::Display for FileVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "{a}.{b}.{c}.{d}")
    }
}

#[derive(Debug, Clone, Copy)]
struct Section {
    virtual_address: u32,
    virtual_size: u32,
    raw_size: u32,
    raw_offset: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct DataDir {
    rva: u32,
    size: u32,
}

/// A parsed PE image over its bytes: headers read at once, tables on request.
pub struct PeFile<R: ReadAt> {
    src: R,
    machine: Machine,
    characteristics: u16,
    pe32_plus: bool,
    image_base: u64,
    size_of_headers: u32,
    sections: Vec<Section>,
    dirs: Vec<DataDir>,
}

impl<R: ReadAt> std::fmt::Debug for PeFile<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeFile")
            .field("machine", &self.machine)
            .field("is_dll", &self.is_dll())
            .field("pe32_plus", &self.pe32_plus)
            .finish_non_exhaustive()
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn read_exact<R: ReadAt + ?Sized>(
    src: &R,
    offset: u64,
    len: usize,
    what: &'static str,
) -> Result<Vec<u8>, PeError> {
    let end = offset
        .checked_add(len as u64)
        .ok_or(PeError::Truncated(what))?;
    if end > src.size() {
        return Err(PeError::Truncated(what));
    }
    let mut buf = vec![0u8; len];
    src.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

impl<R: ReadAt> PeFile<R> {
    /// Reads the headers and the section table. Fails on anything that is not a PE image.
    pub fn parse(src: R) -> Result<PeFile<R>, PeError> {
        let size = src.size();
        if size < 0x40 {
            return Err(PeError::NotPe("shorter than an MS-DOS header"));
        }
        let dos = read_exact(&src, 0, 0x40, "the MS-DOS header")?;
        if dos.get(..2) != Some(b"MZ") {
            return Err(PeError::NotPe("no MZ signature"));
        }
        let pe_at = u64::from(u32_at(&dos, 0x3c).unwrap_or(0));
        // Signature (4), COFF header (20).
        let head = read_exact(&src, pe_at, 24, "the PE signature and COFF header")?;
        if head.get(..4) != Some(b"PE\0\0") {
            return Err(PeError::NotPe("no PE signature at e_lfanew"));
        }
        let machine = Machine::from_raw(u16_at(&head, 4).unwrap_or(0));
        let sections_n = usize::from(u16_at(&head, 6).unwrap_or(0));
        let optional_size = usize::from(u16_at(&head, 20).unwrap_or(0));
        let characteristics = u16_at(&head, 22).unwrap_or(0);
        if sections_n > MAX_SECTIONS {
            return Err(malformed(format!(
                "{sections_n} sections (at most {MAX_SECTIONS})"
            )));
        }
        let opt_at = pe_at + 24;
        let opt = read_exact(&src, opt_at, optional_size, "the optional header")?;
        let magic = u16_at(&opt, 0).ok_or(PeError::NotPe("no optional header (an object file)"))?;
        let (pe32_plus, dirs_at, count_at) = match magic {
            0x10b => (false, 96, 92),
            0x20b => (true, 112, 108),
            other => return Err(malformed(format!("optional header magic {other:#x}"))),
        };
        let image_base = if pe32_plus {
            u64_at(&opt, 24)
        } else {
            u32_at(&opt, 28).map(u64::from)
        }
        .ok_or(PeError::Truncated("the optional header's image base"))?;
        let size_of_headers = u32_at(&opt, 60).ok_or(PeError::Truncated("the optional header"))?;
        let dir_count = u32_at(&opt, count_at).unwrap_or(0).min(16) as usize;
        let dirs = (0..dir_count)
            .map_while(|i| {
                let at = dirs_at + i * 8;
                Some(DataDir {
                    rva: u32_at(&opt, at)?,
                    size: u32_at(&opt, at + 4)?,
                })
            })
            .collect();
        let table = read_exact(
            &src,
            opt_at + optional_size as u64,
            sections_n * 40,
            "the section table",
        )?;
        let sections = table
            .chunks_exact(40)
            .map(|s| Section {
                virtual_size: u32_at(s, 8).unwrap_or(0),
                virtual_address: u32_at(s, 12).unwrap_or(0),
                raw_size: u32_at(s, 16).unwrap_or(0),
                raw_offset: u32_at(s, 20).unwrap_or(0),
            })
            .collect();
        Ok(PeFile {
            src,
            machine,
            characteristics,
            pe32_plus,
            image_base,
            size_of_headers,
            sections,
            dirs,
        })
    }

    pub fn machine(&self) -> Machine {
        self.machine
    }

    /// IMAGE_FILE_DLL in the COFF characteristics.
    pub fn is_dll(&self) -> bool {
        self.characteristics & 0x2000 != 0
    }

    /// A PE32+ (64-bit) image.
    pub fn is_pe32_plus(&self) -> bool {
        self.pe32_plus
    }

    fn dir(&self, index: usize) -> Option<DataDir> {
        self.dirs
            .get(index)
            .copied()
            .filter(|d| d.rva != 0 && d.size != 0)
    }

    /// The file offset of an RVA, and how many bytes of the file follow it inside its section.
    fn offset_of(&self, rva: u32) -> Option<(u64, u64)> {
        if rva < self.size_of_headers {
            let rest = u64::from(self.size_of_headers - rva);
            return Some((u64::from(rva), rest));
        }
        for s in &self.sections {
            let span = s.virtual_size.max(s.raw_size);
            let start = s.virtual_address;
            if rva >= start && u64::from(rva) < u64::from(start) + u64::from(span) {
                let delta = rva - start;
                if delta >= s.raw_size {
                    // In the section's zero-filled tail: no file bytes.
                    return None;
                }
                return Some((
                    u64::from(s.raw_offset) + u64::from(delta),
                    u64::from(s.raw_size - delta),
                ));
            }
        }
        None
    }

    /// The DLLs this module imports at load time, in the import directory's order.
    pub fn imports(&self) -> Result<Vec<Import>, PeError> {
        let Some(dir) = self.dir(DIR_IMPORT) else {
            return Ok(Vec::new());
        };
        let mut reader = Reader::new(self);
        let mut out = Vec::new();
        for i in 0..MAX_DESCRIPTORS {
            let entry = reader.bytes_at(
                dir.rva.wrapping_add(i as u32 * 20),
                20,
                "an import descriptor",
            )?;
            let lookup = u32_at(&entry, 0).unwrap_or(0);
            let name_rva = u32_at(&entry, 12).unwrap_or(0);
            let address_table = u32_at(&entry, 16).unwrap_or(0);
            if entry.iter().all(|&b| b == 0) {
                return Ok(out);
            }
            let dll = reader.name_at(name_rva, "an imported DLL's name")?;
            // An unbound image's lookup table; old bound images only have the address table.
            let table = if lookup != 0 { lookup } else { address_table };
            let symbols = reader.thunks(table)?;
            out.push(Import { dll, symbols });
        }
        Err(malformed(format!(
            "more than {MAX_DESCRIPTORS} import descriptors"
        )))
    }

    /// The DLLs this module delay-loads (on its first call into each), in directory order.
    pub fn delay_imports(&self) -> Result<Vec<Import>, PeError> {
        let Some(dir) = self.dir(DIR_DELAY_IMPORT) else {
            return Ok(Vec::new());
        };
        let mut reader = Reader::new(self);
        let mut out = Vec::new();
        for i in 0..MAX_DESCRIPTORS {
            let entry = reader.bytes_at(
                dir.rva.wrapping_add(i as u32 * 32),
                32,
                "a delay-load descriptor",
            )?;
            let attributes = u32_at(&entry, 0).unwrap_or(0);
            let name = u32_at(&entry, 4).unwrap_or(0);
            let name_table = u32_at(&entry, 16).unwrap_or(0);
            if name == 0 {
                return Ok(out);
            }
            // Attribute bit 0 clear: the old form, whose fields are virtual addresses.
            let to_rva = |va: u32| -> Result<u32, PeError> {
                if attributes & 1 != 0 {
                    return Ok(va);
                }
                u64::from(va)
                    .checked_sub(self.image_base)
                    .and_then(|r| u32::try_from(r).ok())
                    .ok_or_else(|| malformed("a delay-load address below the image base"))
            };
            let dll = reader.name_at(to_rva(name)?, "a delay-loaded DLL's name")?;
            let symbols = if name_table == 0 {
                Vec::new()
            } else {
                reader.thunks(to_rva(name_table)?)?
            };
            out.push(Import { dll, symbols });
        }
        Err(malformed(format!(
            "more than {MAX_DESCRIPTORS} delay-load descriptors"
        )))
    }

    /// The export directory; empty when the module exports nothing.
    pub fn exports(&self) -> Result<Exports, PeError> {
        let Some(dir) = self.dir(DIR_EXPORT) else {
            return Ok(Exports::default());
        };
        let mut reader = Reader::new(self);
        let head = reader.bytes_at(dir.rva, 40, "the export directory")?;
        let name_rva = u32_at(&head, 12).unwrap_or(0);
        let base = u32_at(&head, 16).unwrap_or(0);
        let functions_n = u32_at(&head, 20).unwrap_or(0);
        let names_n = u32_at(&head, 24).unwrap_or(0);
        let functions_at = u32_at(&head, 28).unwrap_or(0);
        let names_at = u32_at(&head, 32).unwrap_or(0);
        let ordinals_at = u32_at(&head, 36).unwrap_or(0);
        // Each table entry is a file byte at least: counts beyond the file are made up.
        let size = self.src.size();
        if u64::from(functions_n) * 4 > size || u64::from(names_n) * 6 > size {
            return Err(malformed(format!(
                "{functions_n} exported functions and {names_n} names in a file of {size} bytes"
            )));
        }
        let dll_name = (name_rva != 0)
            .then(|| reader.name_at(name_rva, "the export directory's DLL name"))
            .transpose()?;
        let functions = reader.bytes_at(
            functions_at,
            functions_n as usize * 4,
            "the export address table",
        )?;
        let names = reader.bytes_at(
            names_at,
            names_n as usize * 4,
            "the export name pointer table",
        )?;
        let ordinals = reader.bytes_at(
            ordinals_at,
            names_n as usize * 2,
            "the export ordinal table",
        )?;
        let mut name_of: Vec<Option<String>> = vec![None; functions_n as usize];
        for k in 0..names_n as usize {
            let index = usize::from(u16_at(&ordinals, k * 2).unwrap_or(u16::MAX));
            let name_rva = u32_at(&names, k * 4).unwrap_or(0);
            let Some(slot) = name_of.get_mut(index) else {
                return Err(malformed(format!(
                    "export name {k} refers to function {index} of {functions_n}"
                )));
            };
            *slot = Some(reader.name_at(name_rva, "an export name")?);
        }
        let range = u64::from(dir.rva)..u64::from(dir.rva) + u64::from(dir.size);
        let mut symbols = Vec::new();
        for (k, name) in name_of.into_iter().enumerate() {
            let address = u32_at(&functions, k * 4).unwrap_or(0);
            if address == 0 && name.is_none() {
                // An unused ordinal.
                continue;
            }
            let forwarder = range
                .contains(&u64::from(address))
                .then(|| reader.name_at(address, "an export forwarder"))
                .transpose()?;
            symbols.push(Export {
                ordinal: base.wrapping_add(k as u32),
                name,
                forwarder,
            });
        }
        Ok(Exports { dll_name, symbols })
    }

    /// The file version of the first version resource (VS_FIXEDFILEINFO's dwFileVersionMS and
    /// dwFileVersionLS), when the module has one and it holds the fixed part.
    pub fn file_version(&self) -> Result<Option<FileVersion>, PeError> {
        Ok(self.version_info()?.and_then(|v| v.file_version))
    }

    /// The first version resource (type RT_VERSION, its first name and language) parsed as a
    /// VS_VERSIONINFO; `None` when the module has no version resource.
    pub fn version_info(&self) -> Result<Option<VersionInfo>, PeError> {
        let Some(dir) = self.dir(DIR_RESOURCE) else {
            return Ok(None);
        };
        let mut reader = Reader::new(self);
        // Level 1: the type RT_VERSION (16); levels 2 and 3: the first name and language.
        let Some(names) = reader.resource_entry(dir.rva, 0, Some(16))? else {
            return Ok(None);
        };
        let Some(languages) = reader.resource_entry(dir.rva, names, None)? else {
            return Ok(None);
        };
        let Some(leaf) = reader.resource_entry(dir.rva, languages, None)? else {
            return Ok(None);
        };
        if leaf & 0x8000_0000 != 0 {
            return Err(malformed("a version resource deeper than three levels"));
        }
        let data_entry =
            reader.bytes_at(dir.rva.wrapping_add(leaf), 16, "a resource data entry")?;
        let data_rva = u32_at(&data_entry, 0).unwrap_or(0);
        let data_size = u32_at(&data_entry, 4).unwrap_or(0);
        // wLength is 16 bits: a VS_VERSIONINFO never exceeds 64 KiB, whatever the entry says.
        let data_size = data_size.min(u32::from(u16::MAX)) as usize;
        let data = reader.bytes_at(data_rva, data_size, "the version resource")?;
        VersionInfo::parse(&data).map(Some)
    }
}

/// What a version resource (VS_VERSIONINFO) says of its file: the fixed part's file and
/// product versions, and the first string table of its StringFileInfo.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// VS_FIXEDFILEINFO's dwFileVersionMS and dwFileVersionLS; `None` when the resource has no
    /// fixed part (wValueLength 0).
    pub file_version: Option<FileVersion>,
    /// VS_FIXEDFILEINFO's dwProductVersionMS and dwProductVersionLS.
    pub product_version: Option<FileVersion>,
    /// (key, value) of each String of the first StringTable (`FileVersion`, `CompanyName`, ...),
    /// in the resource's order.
    pub strings: Vec<(String, String)>,
}

/// VS_FIXEDFILEINFO's dwSignature.
const FIXED_FILE_INFO_SIGNATURE: u32 = 0xFEEF_04BD;
/// The size of VS_FIXEDFILEINFO: thirteen DWORDs.
const FIXED_FILE_INFO_LEN: usize = 52;
/// The longest key or string value read, in UTF-16 units.
const MAX_VERSION_TEXT: usize = 1024;

/// One block of a version resource: VS_VERSIONINFO, StringFileInfo, StringTable, String and
/// VarFileInfo share the header `wLength, wValueLength, wType, szKey` ("Version Information",
/// Win32 Menus and Other Resources, learn.microsoft.com): the key is UTF-16 and NUL-terminated,
/// the value and each child start on a 32-bit boundary, and wLength covers them all.
struct VersionBlock<'a> {
    key: String,
    /// wValueLength as written: bytes for binary values, UTF-16 units for text (wType 1),
    /// though resource compilers differ on the latter.
    value_len: usize,
    /// From the value's aligned start to the block's end: the value, then the children.
    rest: &'a [u8],
    /// Where the value starts, relative to the resource's start (for the alignment of children).
    rest_at: usize,
}

/// Rounds an offset of the resource up to the next 32-bit boundary.
fn align4(at: usize) -> usize {
    at.saturating_add(3) & !3
}

impl<'a> VersionBlock<'a> {
    /// The block at `at` of `data` (the whole resource), ending by `end`.
    fn at(data: &'a [u8], at: usize, end: usize) -> Result<VersionBlock<'a>, PeError> {
        let header = |what| PeError::Truncated(what);
        let len = usize::from(u16_at(data, at).ok_or(header("a version block's header"))?);
        let value_len =
            usize::from(u16_at(data, at + 2).ok_or(header("a version block's header"))?);
        let block_end = at
            .checked_add(len)
            .filter(|&e| e <= end && len >= 6)
            .ok_or_else(|| {
                malformed(format!(
                    "a version block of {len} bytes at {at:#x} (its parent ends at {end:#x})"
                ))
            })?;
        let body = data.get(..block_end).ok_or(header("a version block"))?;
        let (key, after_key) = utf16z(body, at + 6).ok_or_else(|| {
            malformed(format!(
                "a version block's key at {:#x} without an end",
                at + 6
            ))
        })?;
        let rest_at = align4(after_key).min(block_end);
        Ok(VersionBlock {
            key,
            value_len,
            rest: body.get(rest_at..).unwrap_or(&[]),
            rest_at,
        })
    }

    /// The blocks that follow the value (whose size in bytes is `value_bytes`), in order.
    fn children(
        &self,
        data: &'a [u8],
        value_bytes: usize,
    ) -> Result<Vec<VersionBlock<'a>>, PeError> {
        let end = self.rest_at + self.rest.len();
        let mut at = align4(self.rest_at.saturating_add(value_bytes));
        let mut out = Vec::new();
        // Each child is at least 6 bytes long: the loop ends within the block.
        while at.saturating_add(6) <= end {
            let len = usize::from(u16_at(data, at).unwrap_or(0));
            if len == 0 {
                // Zero padding after the last child, as some resource compilers leave it.
                break;
            }
            out.push(VersionBlock::at(data, at, end)?);
            at = align4(at + len);
        }
        Ok(out)
    }
}

/// A NUL-terminated UTF-16 string at `at` of `b` (at most [`MAX_VERSION_TEXT`] units), and
/// the offset after its NUL; `None` when it has no end within `b`.
fn utf16z(b: &[u8], at: usize) -> Option<(String, usize)> {
    let mut units = Vec::new();
    let mut k = at;
    loop {
        let u = u16_at(b, k)?;
        k += 2;
        if u == 0 {
            return Some((String::from_utf16_lossy(&units), k));
        }
        if units.len() == MAX_VERSION_TEXT {
            return None;
        }
        units.push(u);
    }
}

impl VersionInfo {
    /// Parses a VS_VERSIONINFO (the bytes of an RT_VERSION resource).
    pub fn parse(data: &[u8]) -> Result<VersionInfo, PeError> {
        let root = VersionBlock::at(data, 0, data.len())?;
        if root.key != "VS_VERSION_INFO" {
            return Err(malformed(format!(
                "a version resource keyed {:?}, not VS_VERSION_INFO",
                root.key
            )));
        }
        let mut info = VersionInfo::default();
        match root.value_len {
            0 => {}
            FIXED_FILE_INFO_LEN => {
                let fixed = root
                    .rest
                    .get(..FIXED_FILE_INFO_LEN)
                    .ok_or(PeError::Truncated("VS_FIXEDFILEINFO"))?;
                let word = |i: usize| u32_at(fixed, i * 4).unwrap_or(0);
                if word(0) != FIXED_FILE_INFO_SIGNATURE {
                    return Err(malformed(format!(
                        "VS_FIXEDFILEINFO's signature is {:#x}, not {FIXED_FILE_INFO_SIGNATURE:#x}",
                        word(0)
                    )));
                }
                let version = |ms: u32, ls: u32| {
                    FileVersion([(ms >> 16) as u16, ms as u16, (ls >> 16) as u16, ls as u16])
                };
                info.file_version = Some(version(word(2), word(3)));
                info.product_version = Some(version(word(4), word(5)));
            }
            other => {
                return Err(malformed(format!(
                    "VS_VERSION_INFO's value is {other} bytes, not VS_FIXEDFILEINFO's {FIXED_FILE_INFO_LEN}"
                )))
            }
        }
        // StringFileInfo holds StringTables (no value of its own), each holding Strings.
        let children = root.children(data, root.value_len)?;
        let Some(table) = children
            .iter()
            .find(|c| c.key == "StringFileInfo")
            .map(|s| s.children(data, 0))
            .transpose()?
            .and_then(|tables| tables.into_iter().next())
        else {
            return Ok(info);
        };
        for string in table.children(data, 0)? {
            // The value is the rest of the block, to its NUL: resource compilers disagree on
            // whether wValueLength counts bytes or UTF-16 units, so it is not relied on.
            let value = utf16z(string.rest, 0).map(|(v, _)| v).unwrap_or_else(|| {
                let units: Vec<u16> = string
                    .rest
                    .chunks_exact(2)
                    .take(MAX_VERSION_TEXT)
                    .filter_map(|c| u16_at(c, 0))
                    .collect();
                String::from_utf16_lossy(&units)
            });
            info.strings.push((string.key, value));
        }
        Ok(info)
    }

    /// The value of a String of the StringFileInfo (`FileVersion`, `CompanyName`).
    pub fn string(&self, key: &str) -> Option<&str> {
        self.strings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads by RVA through a one-page cache, and keeps the parse's name budget.
struct Reader<'a, R: ReadAt> {
    pe: &'a PeFile<R>,
    page: Option<(u64, Vec<u8>)>,
    names_left: u64,
}

impl<'a, R: ReadAt> Reader<'a, R> {
    fn new(pe: &'a PeFile<R>) -> Self {
        Reader {
            pe,
            page: None,
            names_left: pe.src.size().saturating_add(NAME_BUDGET_SLACK),
        }
    }

    /// `len` bytes at an RVA, all inside one section's file bytes.
    fn bytes_at(&mut self, rva: u32, len: usize, what: &'static str) -> Result<Vec<u8>, PeError> {
        let (offset, room) = self.pe.offset_of(rva).ok_or(PeError::Truncated(what))?;
        if len as u64 > room {
            return Err(PeError::Truncated(what));
        }
        self.file_bytes(offset, len, what)
    }

    fn file_bytes(
        &mut self,
        offset: u64,
        len: usize,
        what: &'static str,
    ) -> Result<Vec<u8>, PeError> {
        let size = self.pe.src.size();
        let end = offset
            .checked_add(len as u64)
            .ok_or(PeError::Truncated(what))?;
        if end > size {
            return Err(PeError::Truncated(what));
        }
        if len as u64 > PAGE {
            return read_exact(&self.pe.src, offset, len, what);
        }
        let page_start = offset - offset % PAGE;
        let fits = |p: &(u64, Vec<u8>)| p.0 <= offset && end <= p.0 + p.1.len() as u64;
        if !self.page.as_ref().is_some_and(fits) {
            let page_len = (size - page_start).min(2 * PAGE);
            let bytes = read_exact(&self.pe.src, page_start, page_len as usize, what)?;
            self.page = Some((page_start, bytes));
        }
        let (start, bytes) = self.page.as_ref().ok_or(PeError::Truncated(what))?;
        let from = (offset - start) as usize;
        bytes
            .get(from..from + len)
            .map(<[u8]>::to_vec)
            .ok_or(PeError::Truncated(what))
    }

    /// A NUL-terminated ASCII name at an RVA (at most [`MAX_NAME`] bytes).
    fn name_at(&mut self, rva: u32, what: &'static str) -> Result<String, PeError> {
        let (offset, room) = self.pe.offset_of(rva).ok_or(PeError::Truncated(what))?;
        let limit = room
            .min(MAX_NAME as u64 + 1)
            .min(self.pe.src.size().saturating_sub(offset));
        let mut name = Vec::new();
        let mut at = offset;
        while (name.len() as u64) < limit {
            let chunk = (limit - name.len() as u64).min(256) as usize;
            let bytes = self.file_bytes(at, chunk, what)?;
            match bytes.iter().position(|&b| b == 0) {
                Some(end) => {
                    name.extend_from_slice(bytes.get(..end).unwrap_or(&[]));
                    let cost = name.len() as u64 + 1;
                    self.names_left = self
                        .names_left
                        .checked_sub(cost)
                        .ok_or_else(|| malformed("more name bytes than the file could hold"))?;
                    return Ok(String::from_utf8_lossy(&name).into_owned());
                }
                None => name.extend_from_slice(&bytes),
            }
            at += chunk as u64;
        }
        Err(malformed(format!(
            "{what} without an end within {MAX_NAME} bytes"
        )))
    }

    /// The import lookup table at an RVA, to its zero entry.
    fn thunks(&mut self, rva: u32) -> Result<Vec<ImportedSymbol>, PeError> {
        let width: u32 = if self.pe.pe32_plus { 8 } else { 4 };
        let (_, room) = self
            .pe
            .offset_of(rva)
            .ok_or(PeError::Truncated("an import lookup table"))?;
        let mut out = Vec::new();
        let mut k: u32 = 0;
        loop {
            if u64::from(k + 1) * u64::from(width) > room {
                return Err(PeError::Truncated("an import lookup table"));
            }
            let at = rva
                .checked_add(k * width)
                .ok_or(PeError::Truncated("an import lookup table"))?;
            let raw = self.bytes_at(at, width as usize, "an import lookup entry")?;
            let (value, by_ordinal) = if width == 8 {
                let v = u64_at(&raw, 0).unwrap_or(0);
                (v, v & (1 << 63) != 0)
            } else {
                let v = u64::from(u32_at(&raw, 0).unwrap_or(0));
                (v, v & (1 << 31) != 0)
            };
            if value == 0 {
                return Ok(out);
            }
            if by_ordinal {
                out.push(ImportedSymbol::Ordinal(value as u16));
            } else {
                let hint_rva = (value & 0x7fff_ffff) as u32;
                let hint = self.bytes_at(hint_rva, 2, "an import hint")?;
                let name = self.name_at(hint_rva.wrapping_add(2), "an import name")?;
                out.push(ImportedSymbol::Name {
                    hint: u16_at(&hint, 0).unwrap_or(0),
                    name,
                });
            }
            k += 1;
        }
    }

    /// In the resource directory at `dir_offset` (relative to the resource section's start),
    /// the first entry whose integer ID is `id` (or the first entry at all); the offset it
    /// points to, with its subdirectory bit.
    fn resource_entry(
        &mut self,
        base: u32,
        dir_offset: u32,
        id: Option<u32>,
    ) -> Result<Option<u32>, PeError> {
        let dir_offset = dir_offset & 0x7fff_ffff;
        let head = self.bytes_at(base.wrapping_add(dir_offset), 16, "a resource directory")?;
        let named = u32::from(u16_at(&head, 12).unwrap_or(0));
        let ids = u32::from(u16_at(&head, 14).unwrap_or(0));
        let total = named + ids;
        let entries = self.bytes_at(
            base.wrapping_add(dir_offset).wrapping_add(16),
            total as usize * 8,
            "resource directory entries",
        )?;
        for (k, e) in entries.chunks_exact(8).enumerate() {
            let name = u32_at(e, 0).unwrap_or(0);
            let target = u32_at(e, 4).unwrap_or(0);
            let is_id = (k as u32) >= named;
            match id {
                Some(want) if !(is_id && name == want) => continue,
                _ => return Ok(Some(target)),
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version block as Microsoft lays it out: wLength, wValueLength, wType, the key in
    /// UTF-16 with its NUL, padding to 32 bits, the value, padding, the children each aligned.
    fn block(key: &str, value: &[u8], value_len: u16, text: bool, children: &[Vec<u8>]) -> Vec<u8> {
        let mut b = vec![0u8; 6];
        b[2..4].copy_from_slice(&value_len.to_le_bytes());
        b[4..6].copy_from_slice(&u16::from(text).to_le_bytes());
        for u in key.encode_utf16().chain([0]) {
            b.extend_from_slice(&u.to_le_bytes());
        }
        let pad = |b: &mut Vec<u8>| b.resize(align4(b.len()), 0);
        pad(&mut b);
        b.extend_from_slice(value);
        for child in children {
            pad(&mut b);
            b.extend_from_slice(child);
        }
        let len = b.len() as u16;
        b[0..2].copy_from_slice(&len.to_le_bytes());
        b
    }

    fn utf16(text: &str) -> Vec<u8> {
        text.encode_utf16()
            .chain([0])
            .flat_map(u16::to_le_bytes)
            .collect()
    }

    fn string(key: &str, value: &str) -> Vec<u8> {
        let units = value.encode_utf16().count() as u16 + 1;
        block(key, &utf16(value), units, true, &[])
    }

    fn fixed(file: [u16; 4], product: [u16; 4]) -> Vec<u8> {
        let dword = |hi: u16, lo: u16| (u32::from(hi) << 16 | u32::from(lo)).to_le_bytes();
        let mut f = Vec::new();
        f.extend_from_slice(&FIXED_FILE_INFO_SIGNATURE.to_le_bytes());
        f.extend_from_slice(&0x0001_0000u32.to_le_bytes());
        f.extend_from_slice(&dword(file[0], file[1]));
        f.extend_from_slice(&dword(file[2], file[3]));
        f.extend_from_slice(&dword(product[0], product[1]));
        f.extend_from_slice(&dword(product[2], product[3]));
        f.resize(FIXED_FILE_INFO_LEN, 0);
        f
    }

    /// NVIDIA's shape: FILEVERSION 32,0,15,6094 with its strings, and a VarFileInfo.
    fn nvidia_resource() -> Vec<u8> {
        let table = block(
            "040904b0",
            &[],
            0,
            true,
            &[
                string("CompanyName", "NVIDIA Corporation"),
                string("FileVersion", "32.0.15.6094"),
            ],
        );
        let strings = block("StringFileInfo", &[], 0, true, &[table]);
        let translation = block("Translation", &[0x09, 0x04, 0xb0, 0x04], 4, false, &[]);
        let vars = block("VarFileInfo", &[], 0, true, &[translation]);
        block(
            "VS_VERSION_INFO",
            &fixed([32, 0, 15, 6094], [32, 0, 15, 6094]),
            52,
            false,
            &[strings, vars],
        )
    }

    #[test]
    fn a_version_resource_gives_its_fixed_versions_and_strings() {
        let info = VersionInfo::parse(&nvidia_resource()).unwrap();
        assert_eq!(info.file_version, Some(FileVersion([32, 0, 15, 6094])));
        assert_eq!(info.product_version, Some(FileVersion([32, 0, 15, 6094])));
        assert_eq!(info.string("FileVersion"), Some("32.0.15.6094"));
        assert_eq!(info.string("CompanyName"), Some("NVIDIA Corporation"));
        assert_eq!(info.string("ProductName"), None);
    }

    #[test]
    fn a_version_resource_without_a_fixed_part_has_no_file_version() {
        let table = block("040904b0", &[], 0, true, &[string("FileVersion", "1.2")]);
        let strings = block("StringFileInfo", &[], 0, true, &[table]);
        let data = block("VS_VERSION_INFO", &[], 0, false, &[strings]);
        let info = VersionInfo::parse(&data).unwrap();
        assert_eq!(info.file_version, None);
        assert_eq!(info.string("FileVersion"), Some("1.2"));
    }

    #[test]
    fn a_string_value_counted_in_bytes_reads_as_one_counted_in_units() {
        // Some resource compilers write wValueLength in bytes for text: the value still ends at
        // its NUL.
        let value = utf16("32.0.15.6094");
        let s = block("FileVersion", &value, value.len() as u16, true, &[]);
        let table = block("040904b0", &[], 0, true, &[s]);
        let strings = block("StringFileInfo", &[], 0, true, &[table]);
        let data = block(
            "VS_VERSION_INFO",
            &fixed([1, 2, 3, 4], [1, 2, 3, 4]),
            52,
            false,
            &[strings],
        );
        let info = VersionInfo::parse(&data).unwrap();
        assert_eq!(info.string("FileVersion"), Some("32.0.15.6094"));
    }

    #[test]
    fn zero_padding_after_the_last_child_ends_the_children() {
        let mut data = nvidia_resource();
        data.extend_from_slice(&[0; 8]);
        let len = data.len() as u16;
        data[0..2].copy_from_slice(&len.to_le_bytes());
        let info = VersionInfo::parse(&data).unwrap();
        assert_eq!(info.file_version, Some(FileVersion([32, 0, 15, 6094])));
    }

    fn malformed_text(data: &[u8]) -> String {
        match VersionInfo::parse(data) {
            Err(e) => e.to_string(),
            Ok(info) => panic!("parsed {info:?}"),
        }
    }

    #[test]
    fn another_key_signature_or_value_length_is_malformed() {
        let other_key = block(
            "VS_VERSION_INF0",
            &fixed([1, 0, 0, 0], [1, 0, 0, 0]),
            52,
            false,
            &[],
        );
        assert!(malformed_text(&other_key).contains("not VS_VERSION_INFO"));
        let mut bad_signature = fixed([1, 0, 0, 0], [1, 0, 0, 0]);
        bad_signature[0] = 0xbe;
        let data = block("VS_VERSION_INFO", &bad_signature, 52, false, &[]);
        assert!(malformed_text(&data).contains("signature is 0xfeef04be"));
        let data = block(
            "VS_VERSION_INFO",
            &fixed([1, 0, 0, 0], [1, 0, 0, 0]),
            40,
            false,
            &[],
        );
        assert!(malformed_text(&data).contains("value is 40 bytes"));
    }

    #[test]
    fn every_truncation_of_a_version_resource_is_an_error() {
        let data = nvidia_resource();
        for len in 0..data.len() {
            assert!(
                VersionInfo::parse(&data[..len]).is_err(),
                "parsed {len} bytes"
            );
        }
    }

    #[test]
    fn blocks_whose_lengths_lie_are_errors() {
        let data = nvidia_resource();
        // The StringFileInfo child starts after the fixed part: 6 + 32 (key) + 2 (pad) + 52.
        let child = 92;
        assert_eq!(u16_at(&data, child + 6), Some(u16::from(b'S')));
        // Longer than its parent.
        let mut longer = data.clone();
        longer[child..child + 2].copy_from_slice(&0xfff0u16.to_le_bytes());
        assert!(malformed_text(&longer).contains("its parent ends at"));
        // Shorter than a header.
        let mut shorter = data.clone();
        shorter[child..child + 2].copy_from_slice(&3u16.to_le_bytes());
        assert!(malformed_text(&shorter).contains("a version block of 3 bytes"));
        // A key without its NUL inside its block: a block that ends inside its key.
        let mut endless = data.clone();
        endless[child..child + 2].copy_from_slice(&10u16.to_le_bytes());
        assert!(malformed_text(&endless).contains("without an end"));
    }

    #[test]
    fn no_byte_of_a_version_resource_made_hostile_panics() {
        let data = nvidia_resource();
        for at in 0..data.len() {
            for value in [0x00, 0x01, 0x7f, 0xff] {
                let mut hostile = data.clone();
                hostile[at] = value;
                let _ = VersionInfo::parse(&hostile);
            }
        }
    }
}
