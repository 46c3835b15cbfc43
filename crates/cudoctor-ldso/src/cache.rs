//! `/etc/ld.so.cache` reader for the formats glibc's ld.so reads:
//!
//! * the new format (`glibc-ld.so.cache1.1`, the default since glibc 2.32), with its extension
//!   directory (generator string, glibc-hwcaps subdirectory names);
//! * the old libc5 format (`ld.so-1.7.0`), alone or with the new format embedded after its
//!   entries ("compat" format).
//!
//! Layouts follow glibc's `sysdeps/generic/dl-cache.h`; lookup follows `search_cache` in
//! `elf/dl-cache.c` (binary search with `_dl_cache_libcmp`, glibc-hwcaps priorities, ISA-level
//! check); [`LdCache::ldconfig_p_lines`] prints entries exactly like `ldconfig -p` (`elf/cache.c`,
//! `print_entry`), which the tests use to compare with the real tool.

use std::cmp::Ordering;
use std::path::Path;

use crate::error::CacheError;
use crate::read::{le_i32, le_u32, le_u64};

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache";
const NEW_VERSION: &[u8] = b"1.1";
/// sizeof(struct cache_file): 11-byte magic, padding, u32 nlibs.
const OLD_HEADER: usize = 16;
const OLD_ENTRY: usize = 12;
/// sizeof(struct cache_file_new).
const NEW_HEADER: usize = 48;
const NEW_ENTRY: usize = 24;
/// alignof(struct cache_file_new) on 64-bit hosts (it holds u64 hwcap fields).
const NEW_ALIGN: usize = 8;

const EXTENSION_MAGIC: u32 = 0xeaa4_2174;
const EXT_TAG_GENERATOR: u32 = 0;
const EXT_TAG_GLIBC_HWCAPS: u32 = 1;

/// Bit 62 of hwcap: the low 32 bits index the glibc-hwcaps subdirectory table.
pub const HWCAP_EXTENSION: u64 = 1 << 62;
const ISA_LEVEL_MASK: u64 = (1 << 10) - 1;
/// Legacy hwcap bits that are never excluded: TLS and the platform bits.
const HWCAP_TLS_MASK: u64 = 1 << 63;

/// `flags` values (FLAG_* in dl-cache.h / ldconfig.h).
pub mod flags {
    pub const FLAG_TYPE_MASK: i32 = 0x00ff;
    pub const FLAG_ELF_LIBC6: i32 = 0x0003;
    pub const FLAG_REQUIRED_MASK: i32 = 0xff00;
    pub const FLAG_SPARC_LIB64: i32 = 0x0100;
    pub const FLAG_IA64_LIB64: i32 = 0x0200;
    pub const FLAG_X8664_LIB64: i32 = 0x0300;
    pub const FLAG_S390_LIB64: i32 = 0x0400;
    pub const FLAG_POWERPC_LIB64: i32 = 0x0500;
    pub const FLAG_MIPS64_LIBN32: i32 = 0x0600;
    pub const FLAG_MIPS64_LIBN64: i32 = 0x0700;
    pub const FLAG_X8664_LIBX32: i32 = 0x0800;
    pub const FLAG_ARM_LIBHF: i32 = 0x0900;
    pub const FLAG_AARCH64_LIB64: i32 = 0x0a00;
    pub const FLAG_ARM_LIBSF: i32 = 0x0b00;
    pub const FLAG_MIPS_LIB32_NAN2008: i32 = 0x0c00;
    pub const FLAG_MIPS64_LIBN32_NAN2008: i32 = 0x0d00;
    pub const FLAG_MIPS64_LIBN64_NAN2008: i32 = 0x0e00;
    pub const FLAG_RISCV_FLOAT_ABI_SOFT: i32 = 0x0f00;
    pub const FLAG_RISCV_FLOAT_ABI_DOUBLE: i32 = 0x1000;
    pub const FLAG_LARCH_FLOAT_ABI_SOFT: i32 = 0x1100;
    pub const FLAG_LARCH_FLOAT_ABI_DOUBLE: i32 = 0x1200;
}

/// Which layout the file used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheFormat {
    /// `ld.so-1.7.0` only.
    Old,
    /// `glibc-ld.so.cache1.1` only.
    New,
    /// The old format with the new one embedded after its entries (ldconfig `-c compat`).
    Compat,
}

/// One library entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheEntry {
    /// The soname (the key ld.so looks up).
    pub name: String,
    /// Full path of the library.
    pub path: String,
    pub flags: i32,
    /// Raw hwcap word (0 for old-format entries).
    pub hwcap: u64,
    /// The glibc-hwcaps subdirectory (e.g. `x86-64-v3`) for extension entries.
    pub hwcaps_subdir: Option<String>,
}

impl CacheEntry {
    /// Entry selected by a glibc-hwcaps subdirectory (bit 62 set, only ISA-level bits besides).
    pub fn is_hwcaps_extension(&self) -> bool {
        ((self.hwcap >> 32) & !ISA_LEVEL_MASK) == (HWCAP_EXTENSION >> 32)
    }

    /// The x86 ISA level recorded for extension entries (bits 32..42).
    pub fn isa_level(&self) -> u32 {
        ((self.hwcap >> 32) & ISA_LEVEL_MASK) as u32
    }
}

/// A parsed cache.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LdCache {
    pub format: CacheFormat,
    /// Entries in file order (ldconfig sorts them for ld.so's binary search).
    pub entries: Vec<CacheEntry>,
    /// "ldconfig (GNU libc) stable release version 2.36", when recorded.
    pub generator: Option<String>,
    /// glibc-hwcaps subdirectory names, in the file's (sorted) order; `None` where the
    /// recorded string offset is unusable. (glibc reads these offsets from the start of the
    /// file, which ldconfig's "compat" format gets wrong; ld.so then never matches them.)
    pub hwcaps_subdirs: Vec<Option<String>>,
    /// True when the entries carry hwcap words (new format): ld.so then applies hwcap rules.
    has_hwcap_fields: bool,
}

/// How one ld.so instance selects cache entries.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheSelection {
    /// `_DL_CACHE_DEFAULT_ID`: 0x0303 (libc6, x86-64) on x86_64, 0x0a03 on aarch64.
    pub default_id: i32,
    /// When true, flags value 1 (plain "ELF") is also accepted (generic
    /// `_dl_cache_check_flags`); x86_64 and aarch64 accept only `default_id`.
    pub accept_plain_elf: bool,
    /// Active glibc-hwcaps subdirectories in priority order, best first.
    pub hwcaps_priority: Vec<String>,
    /// x86 ISA levels the CPU supports as a bit mask (bit n = level n, baseline is bit 1);
    /// `None` on architectures without the check.
    pub isa_levels: Option<u32>,
    /// Legacy hwcap bits the loader supports (`dl_hwcap & hwcap_mask`); entries needing other
    /// bits are skipped.
    pub legacy_hwcap: u64,
    /// Mask of the platform bits in legacy hwcap words and the bit of this platform.
    pub platform_mask: u64,
    pub platform_bit: u64,
}

/// Largest `ld.so.cache` read (a machine with thousands of libraries has one of a few MB).
pub const MAX_CACHE_FILE: u64 = 64 << 20;

impl LdCache {
    /// Read and parse a cache file.
    pub fn load(path: &Path) -> Result<Self, CacheError> {
        let data = cudoctor_types::regular_file::read(path, MAX_CACHE_FILE)?;
        Self::parse(&data)
    }

    /// Parse cache bytes. Any inconsistency is an error; garbage never panics.
    pub fn parse(data: &[u8]) -> Result<Self, CacheError> {
        if data.starts_with(NEW_MAGIC) {
            if data.get(NEW_MAGIC.len()..NEW_MAGIC.len() + 3) != Some(NEW_VERSION) {
                return Err(CacheError::BadMagic);
            }
            let mut c = parse_new(data, 0)?;
            c.format = CacheFormat::New;
            return Ok(c);
        }
        if !data.starts_with(OLD_MAGIC) {
            return Err(CacheError::BadMagic);
        }
        let nlibs =
            le_u32(data, 12).ok_or_else(|| CacheError::Truncated("old header".into()))? as usize;
        let entries_len = nlibs
            .checked_mul(OLD_ENTRY)
            .and_then(|l| l.checked_add(OLD_HEADER))
            .filter(|&end| end <= data.len())
            .ok_or_else(|| CacheError::Truncated(format!("{nlibs} old-format entries")))?;
        let new_off = align_up(entries_len, NEW_ALIGN);
        let embedded = data
            .get(new_off..)
            .is_some_and(|rest| rest.starts_with(NEW_MAGIC) && rest.len() > NEW_HEADER);
        if embedded {
            let mut c = parse_new(data, new_off)?;
            c.format = CacheFormat::Compat;
            return Ok(c);
        }
        // Old format: string offsets count from the end of the entry array.
        let strings = data.get(entries_len..).unwrap_or_default();
        let mut entries = Vec::with_capacity(nlibs);
        for i in 0..nlibs {
            let base = OLD_HEADER + i * OLD_ENTRY;
            let bad = || CacheError::Truncated(format!("old entry {i}"));
            let flags = le_i32(data, base).ok_or_else(bad)?;
            let key = le_u32(data, base + 4).ok_or_else(bad)?;
            let value = le_u32(data, base + 8).ok_or_else(bad)?;
            entries.push(CacheEntry {
                name: string_at(strings, key, "library name")?,
                path: string_at(strings, value, "library path")?,
                flags,
                hwcap: 0,
                hwcaps_subdir: None,
            });
        }
        Ok(LdCache {
            format: CacheFormat::Old,
            entries,
            generator: None,
            hwcaps_subdirs: Vec::new(),
            has_hwcap_fields: false,
        })
    }

    /// Look `name` up as ld.so does (`search_cache`): binary search over the sorted entries,
    /// first acceptable entry, glibc-hwcaps entries by priority. Returns the library path.
    pub fn lookup(&self, name: &str, sel: &CacheSelection) -> Option<&str> {
        let n = self.entries.len();
        if n == 0 {
            return None;
        }
        let key = name.as_bytes();
        // ldconfig sorts in descending _dl_cache_libcmp order; ld.so searches accordingly.
        let (mut left, mut right) = (0i64, n as i64 - 1);
        while left <= right {
            let mut middle = (left + right) / 2;
            let cmp = libcmp(key, self.entry(middle)?.name.as_bytes());
            if cmp == Ordering::Equal {
                left = middle;
                while middle > 0
                    && libcmp(key, self.entry(middle - 1)?.name.as_bytes()) == Ordering::Equal
                {
                    middle -= 1;
                }
                return self.pick(key, middle, left, right, sel);
            }
            if cmp == Ordering::Less {
                left = middle + 1;
            } else {
                right = middle - 1;
            }
        }
        None
    }

    fn entry(&self, i: i64) -> Option<&CacheEntry> {
        usize::try_from(i).ok().and_then(|i| self.entries.get(i))
    }

    /// The do-while loop of `search_cache` over the run of equal names.
    fn pick(
        &self,
        key: &[u8],
        start: i64,
        known_equal_until: i64,
        right: i64,
        sel: &CacheSelection,
    ) -> Option<&str> {
        let mut best: Option<&str> = None;
        let mut best_priority = 0usize;
        let mut middle = start;
        while middle <= right {
            let e = self.entry(middle)?;
            middle += 1;
            if middle - 1 > known_equal_until && libcmp(key, e.name.as_bytes()) != Ordering::Equal {
                break;
            }
            let flags_ok = e.flags == sel.default_id || (sel.accept_plain_elf && e.flags == 1);
            if !flags_ok {
                continue;
            }
            let mut named = false;
            if self.has_hwcap_fields {
                named = e.is_hwcaps_extension();
                if named {
                    if let Some(levels) = sel.isa_levels {
                        let need = 1u64.checked_shl(e.isa_level()).unwrap_or(0);
                        if need == 0 || u64::from(levels) & need != need {
                            continue;
                        }
                    }
                }
                if !named && best.is_some() {
                    break;
                }
                let exclude = !(sel.legacy_hwcap | sel.platform_mask | HWCAP_TLS_MASK);
                if !named && e.hwcap & exclude != 0 {
                    continue;
                }
                let platform = e.hwcap & sel.platform_mask;
                if sel.platform_mask != 0 && platform != 0 && platform != sel.platform_bit {
                    continue;
                }
                if named {
                    let priority = e
                        .hwcaps_subdir
                        .as_ref()
                        .and_then(|d| sel.hwcaps_priority.iter().position(|p| p == d))
                        .map(|p| p + 1);
                    match priority {
                        None => continue,
                        Some(p) if best.is_none() || p < best_priority => best_priority = p,
                        Some(_) => continue,
                    }
                }
            }
            best = Some(e.path.as_str());
            if !named && e.flags == sel.default_id {
                break;
            }
        }
        best
    }

    /// The entries as `ldconfig -p` prints them, header line first, "Cache generated by" last
    /// (new format only). `cache_name` is the path printed in the header.
    pub fn ldconfig_p_lines(&self, cache_name: &str) -> Vec<String> {
        let mut out = Vec::with_capacity(self.entries.len() + 2);
        out.push(format!(
            "{} libs found in cache `{}'",
            self.entries.len(),
            cache_name
        ));
        for e in &self.entries {
            out.push(ldconfig_p_entry(e));
        }
        if let Some(g) = &self.generator {
            out.push(format!("Cache generated by: {g}"));
        }
        out
    }
}

/// One entry as `ldconfig -p` prints it (without the trailing newline).
pub fn ldconfig_p_entry(e: &CacheEntry) -> String {
    use flags::*;
    let mut s = format!("\t{} (", e.name);
    if e.flags & FLAG_TYPE_MASK == FLAG_ELF_LIBC6 {
        s.push_str("libc6");
    } else {
        s.push_str("unknown or unsupported flag");
    }
    let req = e.flags & FLAG_REQUIRED_MASK;
    let arch = match req {
        FLAG_SPARC_LIB64 | FLAG_S390_LIB64 | FLAG_POWERPC_LIB64 | FLAG_MIPS64_LIBN64 => ",64bit",
        FLAG_IA64_LIB64 => ",IA-64",
        FLAG_X8664_LIB64 => ",x86-64",
        FLAG_MIPS64_LIBN32 => ",N32",
        FLAG_X8664_LIBX32 => ",x32",
        FLAG_ARM_LIBHF => ",hard-float",
        FLAG_AARCH64_LIB64 => ",AArch64",
        FLAG_ARM_LIBSF | FLAG_RISCV_FLOAT_ABI_SOFT | FLAG_LARCH_FLOAT_ABI_SOFT => ",soft-float",
        FLAG_MIPS_LIB32_NAN2008 => ",nan2008",
        FLAG_MIPS64_LIBN32_NAN2008 => ",N32,nan2008",
        FLAG_MIPS64_LIBN64_NAN2008 => ",64bit,nan2008",
        FLAG_RISCV_FLOAT_ABI_DOUBLE | FLAG_LARCH_FLOAT_ABI_DOUBLE => ",double-float",
        0 => "",
        _ => "",
    };
    if arch.is_empty() && req != 0 {
        s.push_str(&format!(",{req}"));
    } else {
        s.push_str(arch);
    }
    match (&e.hwcaps_subdir, e.hwcap) {
        (Some(d), _) => s.push_str(&format!(", hwcap: \"{d}\"")),
        (None, 0) => {}
        (None, h) => s.push_str(&format!(", hwcap: {h:#018x}")),
    }
    s.push_str(&format!(") => {}", e.path));
    s
}

fn align_up(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

/// NUL-terminated string at `off` of `table`.
fn string_at(table: &[u8], off: u32, what: &str) -> Result<String, CacheError> {
    let rest = table
        .get(off as usize..)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| CacheError::Malformed(format!("{what} offset {off} outside the file")))?;
    let end = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| CacheError::Malformed(format!("unterminated {what} at {off}")))?;
    Ok(cudoctor_types::os_text::from_bytes(rest.get(..end).unwrap_or_default()).into_owned())
}

/// Parse the new-format header at `start` (0, or after the old entries in compat files).
fn parse_new(data: &[u8], start: usize) -> Result<LdCache, CacheError> {
    let hdr = data
        .get(start..)
        .filter(|h| h.len() >= NEW_HEADER)
        .ok_or_else(|| CacheError::Truncated("new-format header".into()))?;
    if !hdr.starts_with(NEW_MAGIC) || hdr.get(17..20) != Some(NEW_VERSION) {
        return Err(CacheError::BadMagic);
    }
    let bad = || CacheError::Truncated("new-format header".into());
    let nlibs = le_u32(hdr, 20).ok_or_else(bad)? as usize;
    let endian = hdr.get(28).copied().ok_or_else(bad)?;
    let extension_offset = le_u32(hdr, 32).ok_or_else(bad)? as usize;
    // flags 0: written by an ldconfig without endianness marking; otherwise must be little.
    if endian != 0 && (endian & 3) != 2 {
        return Err(CacheError::WrongEndian);
    }
    let entries_end = nlibs
        .checked_mul(NEW_ENTRY)
        .and_then(|l| l.checked_add(NEW_HEADER))
        .filter(|&end| end <= hdr.len())
        .ok_or_else(|| CacheError::Truncated(format!("{nlibs} new-format entries")))?;
    let _ = entries_end;

    let (generator, hwcaps_offsets) = parse_extensions(data, extension_offset)?;
    // glibc-hwcaps string offsets count from the start of the file.
    let hwcaps_subdirs: Vec<Option<String>> = hwcaps_offsets
        .iter()
        .map(|off| string_at(data, *off, "glibc-hwcaps name").ok())
        .collect();
    let mut entries = Vec::with_capacity(nlibs);
    for i in 0..nlibs {
        let base = NEW_HEADER + i * NEW_ENTRY;
        let bad = || CacheError::Truncated(format!("new entry {i}"));
        let flags = le_i32(hdr, base).ok_or_else(bad)?;
        let key = le_u32(hdr, base + 4).ok_or_else(bad)?;
        let value = le_u32(hdr, base + 8).ok_or_else(bad)?;
        let hwcap = le_u64(hdr, base + 16).ok_or_else(bad)?;
        let mut entry = CacheEntry {
            // Strings count from the start of the new header.
            name: string_at(hdr, key, "library name")?,
            path: string_at(hdr, value, "library path")?,
            flags,
            hwcap,
            hwcaps_subdir: None,
        };
        if entry.is_hwcaps_extension() {
            entry.hwcaps_subdir = hwcaps_subdirs
                .get((hwcap & 0xffff_ffff) as usize)
                .cloned()
                .flatten();
        }
        entries.push(entry);
    }
    Ok(LdCache {
        format: CacheFormat::New,
        entries,
        generator,
        hwcaps_subdirs,
        has_hwcap_fields: true,
    })
}

/// Returns the generator string and the glibc-hwcaps string offsets.
fn parse_extensions(data: &[u8], offset: usize) -> Result<(Option<String>, Vec<u32>), CacheError> {
    if offset == 0 {
        return Ok((None, Vec::new()));
    }
    let malformed = |m: &str| CacheError::Malformed(format!("extension directory: {m}"));
    if offset % 4 != 0 {
        return Err(malformed("misaligned"));
    }
    let magic = le_u32(data, offset).ok_or_else(|| malformed("outside the file"))?;
    if magic != EXTENSION_MAGIC {
        return Err(malformed("bad magic"));
    }
    let count = le_u32(data, offset + 4).ok_or_else(|| malformed("outside the file"))? as usize;
    let dir_end = count
        .checked_mul(16)
        .and_then(|l| l.checked_add(offset + 8))
        .filter(|&e| e <= data.len())
        .ok_or_else(|| malformed("section table outside the file"))?;
    let _ = dir_end;
    let (mut generator, mut hwcaps) = (None, Vec::new());
    for i in 0..count {
        let s = offset + 8 + i * 16;
        let tag = le_u32(data, s).ok_or_else(|| malformed("short section"))?;
        let sec_off = le_u32(data, s + 8).ok_or_else(|| malformed("short section"))? as usize;
        let sec_len = le_u32(data, s + 12).ok_or_else(|| malformed("short section"))? as usize;
        let bytes = sec_off
            .checked_add(sec_len)
            .and_then(|end| data.get(sec_off..end))
            .ok_or_else(|| malformed("section data outside the file"))?;
        match tag {
            EXT_TAG_GENERATOR => generator = Some(String::from_utf8_lossy(bytes).into_owned()),
            // glibc drops a hwcaps section that is empty, misaligned or not a multiple of 4.
            EXT_TAG_GLIBC_HWCAPS if !bytes.is_empty() && sec_off % 4 == 0 && sec_len % 4 == 0 => {
                hwcaps = bytes.chunks_exact(4).filter_map(|c| le_u32(c, 0)).collect();
            }
            _ => {}
        }
    }
    Ok((generator, hwcaps))
}

/// glibc's `_dl_cache_libcmp`: compares runs of digits by value, so `libfoo.so.10` sorts
/// after `libfoo.so.9`, and `libfoo.so.01` equals `libfoo.so.1`.
pub fn libcmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0usize, 0usize);
    let at = |s: &[u8], k: usize| s.get(k).copied().unwrap_or(0);
    while at(a, i) != 0 {
        let (c1, c2) = (at(a, i), at(b, j));
        if c1.is_ascii_digit() {
            if !c2.is_ascii_digit() {
                return Ordering::Greater;
            }
            // C int arithmetic; wrapping mirrors its (undefined but real) overflow.
            let (mut v1, mut v2) = (0i32, 0i32);
            while at(a, i).is_ascii_digit() {
                v1 = v1.wrapping_mul(10).wrapping_add(i32::from(at(a, i) - b'0'));
                i += 1;
            }
            while at(b, j).is_ascii_digit() {
                v2 = v2.wrapping_mul(10).wrapping_add(i32::from(at(b, j) - b'0'));
                j += 1;
            }
            if v1 != v2 {
                return v1.wrapping_sub(v2).cmp(&0);
            }
        } else if c2.is_ascii_digit() {
            return Ordering::Less;
        } else if c1 != c2 {
            return (i32::from(c1) - i32::from(c2)).cmp(&0);
        } else {
            i += 1;
            j += 1;
        }
    }
    (0i32 - i32::from(at(b, j))).cmp(&0)
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Writers for synthetic caches (old, new, compat), used by unit tests.
    use super::*;

    pub struct Spec<'a> {
        pub entries: Vec<(&'a str, &'a str, i32, Option<&'a str>)>,
        pub generator: Option<&'a str>,
    }

    /// Entries must be given in the order ldconfig would write them.
    pub fn new_format(spec: &Spec<'_>) -> Vec<u8> {
        let mut subdirs: Vec<&str> = spec.entries.iter().filter_map(|e| e.3).collect();
        subdirs.sort();
        subdirs.dedup();
        let n = spec.entries.len();
        let strings_base = NEW_HEADER + n * NEW_ENTRY;
        let mut strings = Vec::new();
        let mut add = |s: &str| {
            let off = strings_base + strings.len();
            strings.extend_from_slice(s.as_bytes());
            strings.push(0);
            off as u32
        };
        let mut ents = Vec::new();
        for (name, path, flags, sub) in &spec.entries {
            let k = add(name);
            let v = add(path);
            let hwcap = match sub {
                Some(d) => {
                    HWCAP_EXTENSION | subdirs.iter().position(|s| s == d).unwrap_or(0) as u64
                }
                None => 0,
            };
            ents.push((*flags, k, v, hwcap));
        }
        let sub_offs: Vec<u32> = subdirs.iter().map(|s| add(s)).collect();
        let ext_off = align_up(strings_base + strings.len(), 4);
        let mut out = Vec::new();
        out.extend_from_slice(NEW_MAGIC);
        out.extend_from_slice(NEW_VERSION);
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        out.extend_from_slice(&[2, 0, 0, 0]);
        out.extend_from_slice(&(ext_off as u32).to_le_bytes());
        out.extend_from_slice(&[0u8; 12]);
        for (f, k, v, h) in ents {
            out.extend_from_slice(&f.to_le_bytes());
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&v.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&h.to_le_bytes());
        }
        out.extend_from_slice(&strings);
        out.resize(ext_off, 0);
        let gen = spec.generator.unwrap_or("");
        let nsec = if sub_offs.is_empty() { 1u32 } else { 2 };
        let data_start = ext_off + 8 + 16 * nsec as usize;
        out.extend_from_slice(&EXTENSION_MAGIC.to_le_bytes());
        out.extend_from_slice(&nsec.to_le_bytes());
        let hw_len = sub_offs.len() * 4;
        out.extend_from_slice(&EXT_TAG_GENERATOR.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&((data_start + hw_len) as u32).to_le_bytes());
        out.extend_from_slice(&(gen.len() as u32).to_le_bytes());
        if !sub_offs.is_empty() {
            out.extend_from_slice(&EXT_TAG_GLIBC_HWCAPS.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&(data_start as u32).to_le_bytes());
            out.extend_from_slice(&(hw_len as u32).to_le_bytes());
        }
        for o in sub_offs {
            out.extend_from_slice(&o.to_le_bytes());
        }
        out.extend_from_slice(gen.as_bytes());
        out
    }

    pub fn old_format(entries: &[(&str, &str, i32)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let mut ents = Vec::new();
        for (name, path, flags) in entries {
            let k = strings.len() as u32;
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
            let v = strings.len() as u32;
            strings.extend_from_slice(path.as_bytes());
            strings.push(0);
            ents.push((*flags, k, v));
        }
        let mut out = Vec::new();
        out.extend_from_slice(OLD_MAGIC);
        out.push(0);
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (f, k, v) in ents {
            out.extend_from_slice(&f.to_le_bytes());
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&strings);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    fn x86_sel(hwcaps: &[&str]) -> CacheSelection {
        CacheSelection {
            default_id: 0x0303,
            accept_plain_elf: false,
            hwcaps_priority: hwcaps.iter().map(|s| s.to_string()).collect(),
            isa_levels: Some(0b0111),
            legacy_hwcap: 0,
            platform_mask: 0,
            platform_bit: 0,
        }
    }

    fn sample() -> Vec<u8> {
        new_format(&Spec {
            entries: vec![
                ("libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1", 0x303, None),
                ("libfoo.so.10", "/usr/lib/libfoo.so.10", 0x303, None),
                ("libfoo.so.9", "/usr/lib/libfoo.so.9", 0x303, None),
                (
                    "libcudart.so.12",
                    "/opt/v3/libcudart.so.12",
                    0x303,
                    Some("x86-64-v3"),
                ),
                (
                    "libcudart.so.12",
                    "/opt/v4/libcudart.so.12",
                    0x303,
                    Some("x86-64-v4"),
                ),
                (
                    "libcudart.so.12",
                    "/usr/lib32/libcudart.so.12",
                    0x0003,
                    None,
                ),
                (
                    "libcudart.so.12",
                    "/usr/local/cuda/lib64/libcudart.so.12",
                    0x303,
                    None,
                ),
                ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0x303, None),
            ],
            generator: Some("ldconfig (test)"),
        })
    }

    #[test]
    fn libcmp_matches_glibc_ordering() {
        assert_eq!(libcmp(b"libfoo.so.10", b"libfoo.so.9"), Ordering::Greater);
        assert_eq!(libcmp(b"libfoo.so.01", b"libfoo.so.1"), Ordering::Equal);
        assert_eq!(libcmp(b"liba.so", b"libb.so"), Ordering::Less);
        assert_eq!(libcmp(b"lib1", b"liba"), Ordering::Greater);
        assert_eq!(libcmp(b"liba", b"lib1"), Ordering::Less);
        assert_eq!(libcmp(b"lib", b"libc"), Ordering::Less);
    }

    #[test]
    fn parses_new_format_with_hwcaps() {
        let c = LdCache::parse(&sample()).unwrap();
        assert_eq!(c.format, CacheFormat::New);
        assert_eq!(c.entries.len(), 8);
        assert_eq!(c.generator.as_deref(), Some("ldconfig (test)"));
        assert_eq!(
            c.hwcaps_subdirs,
            [Some("x86-64-v3".to_string()), Some("x86-64-v4".to_string())]
        );
        assert_eq!(c.entries[3].hwcaps_subdir.as_deref(), Some("x86-64-v3"));
        let lines = c.ldconfig_p_lines("/etc/ld.so.cache");
        assert_eq!(lines[0], "8 libs found in cache `/etc/ld.so.cache'");
        assert_eq!(
            lines[4],
            "\tlibcudart.so.12 (libc6,x86-64, hwcap: \"x86-64-v3\") => /opt/v3/libcudart.so.12"
        );
        assert_eq!(
            lines[6],
            "\tlibcudart.so.12 (libc6) => /usr/lib32/libcudart.so.12"
        );
        assert_eq!(lines.last().unwrap(), "Cache generated by: ldconfig (test)");
    }

    #[test]
    fn lookup_follows_search_cache() {
        let c = LdCache::parse(&sample()).unwrap();
        // Best supported hwcaps subdirectory wins.
        assert_eq!(
            c.lookup("libcudart.so.12", &x86_sel(&["x86-64-v4", "x86-64-v3"])),
            Some("/opt/v4/libcudart.so.12")
        );
        assert_eq!(
            c.lookup("libcudart.so.12", &x86_sel(&["x86-64-v3", "x86-64-v2"])),
            Some("/opt/v3/libcudart.so.12")
        );
        // No usable hwcaps entry: the 32-bit entry is skipped (wrong flags), the plain one used.
        assert_eq!(
            c.lookup("libcudart.so.12", &x86_sel(&[])),
            Some("/usr/local/cuda/lib64/libcudart.so.12")
        );
        assert_eq!(
            c.lookup("libfoo.so.9", &x86_sel(&[])),
            Some("/usr/lib/libfoo.so.9")
        );
        assert_eq!(
            c.lookup("libfoo.so.10", &x86_sel(&[])),
            Some("/usr/lib/libfoo.so.10")
        );
        // Numeric comparison: "libfoo.so.010" is the same key as "libfoo.so.10".
        assert_eq!(
            c.lookup("libfoo.so.010", &x86_sel(&[])),
            Some("/usr/lib/libfoo.so.10")
        );
        assert_eq!(
            c.lookup("libz.so.1", &x86_sel(&[])),
            Some("/lib/x86_64-linux-gnu/libz.so.1")
        );
        assert_eq!(
            c.lookup("libc.so.6", &x86_sel(&[])),
            Some("/lib/x86_64-linux-gnu/libc.so.6")
        );
        assert_eq!(c.lookup("libnope.so", &x86_sel(&[])), None);
    }

    #[test]
    fn isa_level_gates_hwcaps_entries() {
        let mut data = sample();
        let c = LdCache::parse(&data).unwrap();
        assert!(c.entries[4].is_hwcaps_extension());
        // Give the v4 entry ISA level 3 (x86-64-v4), which the selection does not support.
        let hwcap_off = NEW_HEADER + 4 * NEW_ENTRY + 16;
        let v = HWCAP_EXTENSION | (3u64 << 32) | 1;
        data[hwcap_off..hwcap_off + 8].copy_from_slice(&v.to_le_bytes());
        let c = LdCache::parse(&data).unwrap();
        assert_eq!(c.entries[4].isa_level(), 3);
        assert_eq!(
            c.lookup("libcudart.so.12", &x86_sel(&["x86-64-v4", "x86-64-v3"])),
            Some("/opt/v3/libcudart.so.12")
        );
    }

    #[test]
    fn parses_old_format() {
        let data = old_format(&[
            ("libz.so.1", "/lib/libz.so.1", 0x303),
            ("libc.so.6", "/lib/libc.so.6", 0x303),
        ]);
        let c = LdCache::parse(&data).unwrap();
        assert_eq!(c.format, CacheFormat::Old);
        assert_eq!(c.entries.len(), 2);
        assert_eq!(c.lookup("libc.so.6", &x86_sel(&[])), Some("/lib/libc.so.6"));
        assert_eq!(c.generator, None);
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        assert!(matches!(LdCache::parse(b""), Err(CacheError::BadMagic)));
        assert!(matches!(
            LdCache::parse(b"hello"),
            Err(CacheError::BadMagic)
        ));
        let full = sample();
        for len in 0..full.len() {
            let r = LdCache::parse(&full[..len]);
            // The generator string is the file's tail; cutting into it still fails (the
            // section then extends past the end), so every proper prefix is an error.
            assert!(r.is_err(), "prefix of {len} bytes parsed");
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for pos in 0..full.len() {
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let mut m = full.clone();
                m[pos] = (seed & 0xff) as u8;
                if let Ok(c) = LdCache::parse(&m) {
                    let _ = c.lookup("libcudart.so.12", &x86_sel(&["x86-64-v3"]));
                    let _ = c.ldconfig_p_lines("x");
                }
            }
        }
        let old = old_format(&[("libz.so.1", "/lib/libz.so.1", 0x303)]);
        for len in 0..old.len() {
            assert!(
                LdCache::parse(&old[..len]).is_err(),
                "old prefix {len} parsed"
            );
        }
    }

    #[test]
    fn wrong_endianness_is_refused() {
        let mut data = sample();
        data[28] = 3; // big endian
        assert!(matches!(
            LdCache::parse(&data),
            Err(CacheError::WrongEndian)
        ));
    }
}
