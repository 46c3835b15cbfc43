//! Dynamic symbols with GNU symbol versioning (`.gnu.version`, `.gnu.version_d`,
//! `.gnu.version_r`), and symbol lookup by the object's own hash table, with glibc's rules for
//! matching a versioned or unversioned reference (`check_match` in elf/dl-lookup.c).

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use super::{ElfClass, ElfFile};
use crate::error::ElfError;
use crate::read::{le_u16, le_u32, le_u64, read_vec, ReadAt};
use cudoctor_types::read_at::Bytes;

const SHN_UNDEF: u16 = 0;
const SHN_ABS: u16 = 0xfff1;

const STB_LOCAL: u8 = 0;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const STB_GNU_UNIQUE: u8 = 10;

const STT_NOTYPE: u8 = 0;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;
const STT_COMMON: u8 = 5;
const STT_TLS: u8 = 6;
const STT_GNU_IFUNC: u8 = 10;

/// Version index flags (versym entries).
const VERSYM_HIDDEN: u16 = 0x8000;
const VERSYM_INDEX: u16 = 0x7fff;
/// vd_flags: the version definition naming the file itself.
const VER_FLG_BASE: u16 = 0x1;
/// vna_flags: a weak version requirement (missing is a warning, not an error).
const VER_FLG_WEAK: u16 = 0x2;

/// Hard caps against garbage counts.
const MAX_VERSION_ENTRIES: u64 = 1 << 16;
/// The longest hash chain a lookup walks. Linkers size tables so chains hold a few entries
/// (a few dozen at worst); a table with longer chains, or with chains that merge or loop, is
/// replaced by an index built from the symbols themselves, so lookups stay cheap whatever the
/// table claims (n lookups in one n-long chain would be quadratic). A SysV table is measured
/// when it is read; a GNU table, whose chains can be a megabyte (libtriton), as lookups walk
/// it: the first walk longer than this builds the index, and every later lookup uses it.
const MAX_CHAIN: usize = 4096;

/// Binding of a dynamic symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolBinding {
    Local,
    Global,
    Weak,
    GnuUnique,
    Other(u8),
}

impl SymbolBinding {
    fn from_info(info: u8) -> Self {
        match info >> 4 {
            STB_LOCAL => SymbolBinding::Local,
            STB_GLOBAL => SymbolBinding::Global,
            STB_WEAK => SymbolBinding::Weak,
            STB_GNU_UNIQUE => SymbolBinding::GnuUnique,
            other => SymbolBinding::Other(other),
        }
    }
}

/// One entry of `.dynsym`, with its version resolved.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SymbolInfo {
    pub name: String,
    /// Version name: for a definition, its `.gnu.version_d` entry; for an undefined symbol, the
    /// `.gnu.version_r` requirement. `None` for unversioned symbols.
    pub version: Option<String>,
    /// For a definition: a non-default version (`foo@V`, not `foo@@V`).
    pub version_hidden: bool,
    /// For an undefined symbol: the library the version requirement names.
    pub version_file: Option<String>,
    pub defined: bool,
    pub binding: SymbolBinding,
    /// `STT_*` value.
    pub kind: u8,
}

/// An undefined symbol an object needs from the rest of the process.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct SymbolRequirement {
    pub name: String,
    pub version: Option<String>,
    /// The library the version belongs to (from `.gnu.version_r`).
    pub version_file: Option<String>,
    /// `foo@V` requested as hidden (rare; it then only matches exactly `V`).
    #[serde(skip)]
    pub hidden: bool,
    pub weak: bool,
}

impl fmt::Display for SymbolRequirement {
    /// `name` or `name@VERSION`, the form `nm -D` and `readelf` users know.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}@{}", self.name, v),
            None => f.write_str(&self.name),
        }
    }
}

/// A version definition (`.gnu.version_d`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VersionDefinition {
    pub index: u16,
    pub name: String,
    /// The base definition names the file itself and is not matched by versioned references.
    pub is_base: bool,
}

/// A version requirement (`.gnu.version_r`): versions needed from one library.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VersionNeed {
    pub file: String,
    pub versions: Vec<VersionNeedEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VersionNeedEntry {
    pub index: u16,
    pub name: String,
    pub weak: bool,
    pub hidden: bool,
}

#[derive(Debug, Clone, Copy)]
struct RawSym {
    name: u32,
    info: u8,
    shndx: u16,
    value: u64,
}

impl RawSym {
    fn binding(&self) -> u8 {
        self.info >> 4
    }

    fn kind(&self) -> u8 {
        self.info & 0xf
    }

    /// A definition other objects can bind to (glibc's do_lookup_x filters).
    fn is_exported_definition(&self) -> bool {
        if self.shndx == SHN_UNDEF {
            return false;
        }
        let kind = self.kind();
        if self.value == 0 && self.shndx != SHN_ABS && kind != STT_TLS {
            return false;
        }
        if !matches!(
            kind,
            STT_NOTYPE | STT_OBJECT | STT_FUNC | STT_COMMON | STT_TLS | STT_GNU_IFUNC
        ) {
            return false;
        }
        matches!(self.binding(), STB_GLOBAL | STB_WEAK | STB_GNU_UNIQUE)
    }
}

/// The dynamic symbol table's entries, decoded on access from the file's bytes (a view of its
/// mapping for the large tables): a lookup decodes the few entries its hash chain names.
struct Syms {
    raw: Bytes,
    class: ElfClass,
}

impl Syms {
    fn new(raw: Bytes, class: ElfClass) -> Syms {
        Syms { raw, class }
    }

    /// The size of one entry in an object of `class` (what DT_SYMENT must say).
    fn entry_size_of(class: ElfClass) -> u64 {
        match class {
            ElfClass::Elf64 => 24,
            ElfClass::Elf32 => 16,
        }
    }

    fn entry_size(&self) -> usize {
        Syms::entry_size_of(self.class) as usize
    }

    fn len(&self) -> usize {
        self.raw.len() / self.entry_size()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entry `i`, read on its own (a lookup's: from the file where the table is a view of its
    /// mapping, so no page is mapped for it).
    fn get(&self, i: usize) -> Option<RawSym> {
        let n = self.entry_size();
        let mut e = [0u8; 24];
        let e = e.get_mut(..n)?;
        if !self.raw.copy_at(i.checked_mul(n)?, e) {
            return None;
        }
        Some(self.decode(e))
    }

    /// The first `n` entries as a table of their own (one read).
    fn prefix(&self, n: usize) -> Option<Syms> {
        let n = n.min(self.len());
        Some(Syms::new(
            self.raw.copy_range(0, n * self.entry_size())?,
            self.class,
        ))
    }

    fn decode(&self, e: &[u8]) -> RawSym {
        match self.class {
            ElfClass::Elf64 => RawSym {
                name: le_u32(e, 0).unwrap_or(0),
                info: e.get(4).copied().unwrap_or(0),
                shndx: le_u16(e, 6).unwrap_or(0),
                value: le_u64(e, 8).unwrap_or(0),
            },
            ElfClass::Elf32 => RawSym {
                name: le_u32(e, 0).unwrap_or(0),
                value: u64::from(le_u32(e, 4).unwrap_or(0)),
                info: e.get(12).copied().unwrap_or(0),
                shndx: le_u16(e, 14).unwrap_or(0),
            },
        }
    }

    /// Every entry in order, through the bytes themselves (a walk over the whole table).
    fn iter(&self) -> impl Iterator<Item = RawSym> + '_ {
        self.raw
            .chunks_exact(self.entry_size())
            .map(|e| self.decode(e))
    }
}

/// Little-endian 32-bit words of the file (a hash table's buckets or chains), decoded on
/// access: a view of the mapping for the large tables, so a lookup reads only the pages it
/// touches.
struct Words(Bytes);

impl Words {
    fn len(&self) -> usize {
        self.0.len() / 4
    }

    fn get(&self, i: usize) -> Option<u32> {
        le_u32(self.0.get(i.checked_mul(4)?..)?, 0)
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.chunks_exact(4).map(|c| le_u32(c, 0).unwrap_or(0))
    }
}

/// `.gnu.version`: one little-endian 16-bit index per symbol, decoded on access (read on its
/// own, as [`Syms::get`]).
struct Versym(Bytes);

impl Versym {
    fn get(&self, i: usize) -> Option<u16> {
        let mut b = [0u8; 2];
        self.0
            .copy_at(i.checked_mul(2)?, &mut b)
            .then(|| u16::from_le_bytes(b))
    }

    /// The first `n` entries (one read).
    fn prefix(&self, n: usize) -> Option<Versym> {
        let n = n.min(self.0.len() / 2);
        self.0.copy_range(0, n * 2).map(Versym)
    }
}

/// A GNU hash table's Bloom filter: ld.so asks it before the buckets, so a name the object
/// does not define costs one word, not a bucket and a chain (elf/dl-lookup.c, do_lookup_x).
struct Bloom {
    words: Bytes,
    /// The ELF class's word, in bytes (4 or 8).
    word: usize,
    shift: u32,
}

impl Bloom {
    /// False when the object surely does not define a name of GNU hash `h`.
    fn may_contain(&self, h: u32) -> bool {
        let nwords = self.words.len() / self.word;
        if nwords == 0 {
            return true;
        }
        let bits = (self.word * 8) as u32;
        // glibc masks with `nwords - 1` (linkers write a power of two).
        let i = ((h / bits) as usize) & (nwords - 1);
        let Some(w) = self.words.get(i * self.word..(i + 1) * self.word) else {
            return true;
        };
        let w = if self.word == 8 {
            le_u64(w, 0).unwrap_or(u64::MAX)
        } else {
            u64::from(le_u32(w, 0).unwrap_or(u32::MAX))
        };
        let b1 = u64::from(h % bits);
        let b2 = u64::from((h >> self.shift.min(31)) % bits);
        (w >> b1) & (w >> b2) & 1 == 1
    }
}

enum HashIndex {
    Gnu {
        symoffset: u32,
        bloom: Bloom,
        buckets: Words,
        chains: Words,
    },
    Sysv {
        buckets: Words,
        chains: Words,
    },
    /// Neither table present, or one that fails [`MAX_CHAIN`]'s checks: an index we build
    /// ourselves, keyed by the whole name (no name collides with another, whatever the file).
    Own(HashMap<Box<[u8]>, Vec<u32>>),
}

impl HashIndex {
    /// The longest walk a lookup makes through the file's table, computed in time linear in
    /// the table; None when chains merge or loop (no linker writes that).
    fn longest_chain(&self, nsyms: usize) -> Option<usize> {
        match self {
            HashIndex::Own(_) => Some(0),
            HashIndex::Gnu {
                symoffset,
                buckets,
                chains,
                ..
            } => {
                // A lookup from entry j walks to the next terminator (low bit set) or the end:
                // the run lengths, from the back, in one pass.
                let n = chains.len().min(nsyms.saturating_sub(*symoffset as usize));
                let mut run = vec![0u32; n];
                for j in (0..n).rev() {
                    run[j] = if chains.get(j).unwrap_or(1) & 1 == 1 || j + 1 == n {
                        1
                    } else {
                        run[j + 1] + 1
                    };
                }
                let longest = buckets
                    .iter()
                    .filter(|&b| b != 0 && b >= *symoffset)
                    .filter_map(|b| run.get((b - symoffset) as usize))
                    .max()
                    .copied()
                    .unwrap_or(0);
                Some(longest as usize)
            }
            HashIndex::Sysv { buckets, chains } => {
                // Valid chains are disjoint paths: every symbol is reached from at most one
                // bucket or one other symbol. Then walking every bucket is linear in total.
                let n = chains.len().min(nsyms);
                let mut reached = vec![false; n];
                let mark = |i: u32| -> bool {
                    match reached.get_mut(i as usize) {
                        Some(_) if i == 0 => true,
                        Some(r) if *r => false,
                        Some(r) => {
                            *r = true;
                            true
                        }
                        None => true,
                    }
                };
                if !buckets.iter().chain(chains.iter().take(n)).all(mark) {
                    return None;
                }
                let mut longest = 0;
                for start in buckets.iter() {
                    let mut len = 0;
                    let mut i = start as usize;
                    while i != 0 && i < n {
                        len += 1;
                        i = chains.get(i).unwrap_or(0) as usize;
                    }
                    longest = longest.max(len);
                }
                Some(longest)
            }
        }
    }

    /// Whether no lookup walks more than [`MAX_CHAIN`] entries ([`HashIndex::longest_chain`]
    /// within the limit).
    fn walks_within_limit(&self, nsyms: usize) -> bool {
        self.longest_chain(nsyms).is_some_and(|l| l <= MAX_CHAIN)
    }
}

/// The dynamic symbol table of one object, held in memory for lookups.
pub struct SymbolTable {
    /// `.dynsym`, decoded entry by entry as lookups reach it.
    syms: Syms,
    /// A view of the file's mapping for the large tables: only the names looked at are read.
    strtab: Bytes,
    versym: Option<Versym>,
    /// Version definitions by index (base included).
    verdefs: Vec<VersionDefinition>,
    verneeds: Vec<VersionNeed>,
    index: HashIndex,
    /// Symbols from this index on are defined ones: a GNU hash table holds only definitions,
    /// and linkers (GNU ld, gold, lld, mold) put every undefined symbol before the first hashed
    /// one, so the object's requirements are read without touching the rest of a table that
    /// can be megabytes (libtriton's). The whole table where there is no GNU table.
    requirements_end: usize,
    /// The index built from the symbols once a GNU chain proved longer than [`MAX_CHAIN`].
    fallback: OnceLock<HashMap<Box<[u8]>, Vec<u32>>>,
}

impl fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymbolTable")
            .field("symbols", &self.syms.len())
            .field("strtab_bytes", &self.strtab.len())
            .field("verdefs", &self.verdefs)
            .field("verneeds", &self.verneeds)
            .finish()
    }
}

/// ELF SysV hash (DT_HASH, also vd_hash/vna_hash).
pub fn elf_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        h = (h << 4).wrapping_add(u32::from(c));
        let g = h & 0xf000_0000;
        if g != 0 {
            h ^= g >> 24;
        }
        h &= !g;
    }
    h
}

/// GNU hash (DT_GNU_HASH), djb2.
pub fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |h, &c| {
        h.wrapping_mul(33).wrapping_add(u32::from(c))
    })
}

impl<R: ReadAt> ElfFile<R> {
    /// Read the dynamic symbol table, its versions and hash table into memory. Only the
    /// tables are read (for libtorch_cpu.so that is tens of MB of a 500 MB file).
    pub fn symbol_table(&self) -> Result<SymbolTable, ElfError> {
        let Some(dynamic) = self.dynamic() else {
            return Ok(SymbolTable::empty());
        };
        let t = dynamic.tables;
        let Some(symtab_addr) = t.symtab else {
            return Ok(SymbolTable::empty());
        };
        let strtab_addr = t
            .strtab
            .ok_or_else(|| ElfError::malformed("DT_SYMTAB without DT_STRTAB"))?;
        let (str_off, str_len) = self.strtab_span(strtab_addr, t.strsz)?;
        let strtab = self.source().read_bytes(str_off, str_len)?;

        let class = self.class();
        let syment = Syms::entry_size_of(class);
        if let Some(declared) = t.syment {
            if declared != syment {
                return Err(ElfError::malformed(format!(
                    "DT_SYMENT {declared}, expected {syment}"
                )));
            }
        }
        let word = match class {
            ElfClass::Elf32 => 4u64,
            ElfClass::Elf64 => 8u64,
        };
        let (sym_off, sym_avail) = self
            .vaddr_span(symtab_addr)
            .ok_or_else(|| ElfError::malformed("DT_SYMTAB is not in any loaded segment"))?;
        // The count: the SHT_DYNSYM section's where it exists (what readelf shows), else what
        // the hash tables imply, never past the next table placed after the symbols nor past
        // the segment. The hash tables are read only as far as that count: a garbage count or
        // bucket cannot make them allocate the rest of a 500 MB library.
        let from_sections = self.dynsym_count_from_sections(symtab_addr, syment)?;
        let next_table = [t.strtab, t.hash, t.gnu_hash, t.versym, t.verdef, t.verneed]
            .into_iter()
            .flatten()
            .filter(|&a| a > symtab_addr)
            .min();
        let room = next_table.map_or(sym_avail, |end| (end - symtab_addr).min(sym_avail));
        let cap = from_sections.unwrap_or(room / syment);
        let mut index = None;
        let mut from_hash = None;
        let mut first_hashed = None;
        if let Some(addr) = t.gnu_hash {
            let (idx, n, first) = self.read_gnu_hash(addr, word, cap, from_sections.is_some())?;
            index = Some(idx);
            from_hash = Some(n);
            first_hashed = Some(first);
        } else if let Some(addr) = t.hash {
            // ld.so asks the SysV table only where there is no GNU one.
            let (buckets, chains) = self.read_sysv_hash(addr, cap)?;
            from_hash = Some(chains.len() as u64);
            index = Some(HashIndex::Sysv { buckets, chains });
        }
        let nsyms = match from_sections {
            Some(n) => n,
            None => from_hash.ok_or_else(|| {
                ElfError::malformed(
                    "cannot size the dynamic symbol table (no hash table, no section headers)",
                )
            })?,
        };
        let sym_bytes_len = nsyms
            .checked_mul(syment)
            .filter(|&l| l <= sym_avail)
            .ok_or(ElfError::Truncated {
                what: "dynamic symbol table",
                offset: sym_off,
                len: nsyms.saturating_mul(syment),
                size: self.source().size(),
            })?;
        let raw = self.source().read_bytes(sym_off, sym_bytes_len)?;
        let syms = Syms::new(raw, class);

        let versym = match t.versym {
            Some(addr) => {
                let (off, avail) = self
                    .vaddr_span(addr)
                    .ok_or_else(|| ElfError::malformed("DT_VERSYM is not in any loaded segment"))?;
                let len = (syms.len() as u64) * 2;
                if len > avail {
                    return Err(ElfError::Truncated {
                        what: ".gnu.version",
                        offset: off,
                        len,
                        size: self.source().size(),
                    });
                }
                Some(Versym(self.source().read_bytes(off, len)?))
            }
            None => None,
        };
        let verdefs = match t.verdef {
            Some(addr) => self.read_verdefs(addr, t.verdefnum.unwrap_or(0), &strtab)?,
            None => Vec::new(),
        };
        let verneeds = match t.verneed {
            Some(addr) => self.read_verneeds(addr, t.verneednum.unwrap_or(0), &strtab)?,
            None => Vec::new(),
        };
        let requirements_end = match first_hashed {
            Some(Some(first)) => (first as usize).min(syms.len()),
            // No GNU table, or one that hashes nothing: any symbol may be undefined.
            _ => syms.len(),
        };
        let mut table = SymbolTable {
            syms,
            strtab,
            versym,
            verdefs,
            verneeds,
            index: HashIndex::Own(HashMap::new()),
            requirements_end,
            fallback: OnceLock::new(),
        };
        table.index = match index {
            Some(i @ HashIndex::Gnu { .. }) => i,
            Some(i) if i.walks_within_limit(table.syms.len()) => i,
            _ => HashIndex::Own(table.build_own_index()),
        };
        Ok(table)
    }

    /// Returns the index, the number of symbols implied by the table, at most `cap` (`exact`:
    /// the count is `cap`, known from the section headers), and the first symbol a bucket
    /// names (None: the table hashes no symbol).
    fn read_gnu_hash(
        &self,
        addr: u64,
        word: u64,
        cap: u64,
        exact: bool,
    ) -> Result<(HashIndex, u64, Option<u32>), ElfError> {
        let (off, avail) = self
            .vaddr_span(addr)
            .ok_or_else(|| ElfError::malformed("DT_GNU_HASH is not in any loaded segment"))?;
        let size = self.source().size();
        let head = read_vec(self.source(), off, 16.min(avail))?;
        let bad = || ElfError::malformed("truncated DT_GNU_HASH header");
        let nbuckets = le_u32(&head, 0).ok_or_else(bad)?;
        let symoffset = le_u32(&head, 4).ok_or_else(bad)?;
        let bloom_size = le_u32(&head, 8).ok_or_else(bad)?;
        let bloom_shift = le_u32(&head, 12).ok_or_else(bad)?;
        let buckets_off = 16u64 + u64::from(bloom_size) * word;
        let buckets_len = u64::from(nbuckets) * 4;
        if nbuckets == 0 || buckets_off + buckets_len > avail {
            return Err(ElfError::Truncated {
                what: "DT_GNU_HASH buckets",
                offset: off,
                len: buckets_off + buckets_len,
                size,
            });
        }
        let buckets = Words(self.source().read_bytes(off + buckets_off, buckets_len)?);
        let bloom = Bloom {
            words: self.source().read_bytes(off + 16, buckets_off - 16)?,
            word: word as usize,
            shift: bloom_shift,
        };
        let first_hashed = buckets.iter().filter(|&b| b != 0 && b >= symoffset).min();
        let chains_off = off + buckets_off + buckets_len;
        let chains_avail = avail - buckets_off - buckets_len;
        // The symbol count is the end of the chain that starts at the highest bucket.
        let max_bucket = buckets.iter().max().unwrap_or(0);
        let nsyms = if exact {
            cap
        } else if max_bucket < symoffset {
            u64::from(symoffset)
        } else if u64::from(max_bucket) >= cap {
            return Err(ElfError::malformed(format!(
                "DT_GNU_HASH names symbol {max_bucket}, past the {cap} the table can hold"
            )));
        } else {
            // Walk the last chain in 4 KiB reads until its terminating entry (low bit set), no
            // further than `cap` symbols.
            let mut i = u64::from(max_bucket - symoffset);
            let limit = cap - u64::from(symoffset);
            'walk: loop {
                let start = i * 4;
                if i >= limit {
                    break 'walk;
                }
                if start + 4 > chains_avail {
                    return Err(ElfError::malformed(
                        "DT_GNU_HASH chain runs off its segment",
                    ));
                }
                let take = (chains_avail - start).min(4096) & !3;
                let block = read_vec(self.source(), chains_off + start, take)?;
                for w in block.chunks_exact(4) {
                    if le_u32(w, 0).ok_or_else(bad)? & 1 == 1 {
                        break 'walk;
                    }
                    i += 1;
                }
            }
            u64::from(symoffset) + i + 1
        };
        let nsyms = nsyms.min(cap);
        let chain_count = nsyms
            .saturating_sub(u64::from(symoffset))
            .min(chains_avail / 4);
        let chains = Words(if chain_count == 0 {
            Bytes::empty()
        } else {
            self.source().read_bytes(chains_off, chain_count * 4)?
        });
        Ok((
            HashIndex::Gnu {
                symoffset,
                bloom,
                buckets,
                chains,
            },
            nsyms,
            first_hashed,
        ))
    }

    /// Buckets and chains, the chains only as far as `cap` symbols.
    fn read_sysv_hash(&self, addr: u64, cap: u64) -> Result<(Words, Words), ElfError> {
        let (off, avail) = self
            .vaddr_span(addr)
            .ok_or_else(|| ElfError::malformed("DT_HASH is not in any loaded segment"))?;
        let head = read_vec(self.source(), off, 8.min(avail))?;
        let bad = || ElfError::malformed("truncated DT_HASH header");
        let nbucket = u64::from(le_u32(&head, 0).ok_or_else(bad)?);
        let nchain = u64::from(le_u32(&head, 4).ok_or_else(bad)?);
        if nbucket > avail / 4 {
            return Err(ElfError::malformed(format!(
                "DT_HASH claims {nbucket} buckets, more than its segment holds"
            )));
        }
        let nchain = nchain.min(cap);
        let len = (nbucket + nchain) * 4;
        if nbucket == 0 || 8 + len > avail {
            return Err(ElfError::Truncated {
                what: "DT_HASH",
                offset: off,
                len: 8 + len,
                size: self.source().size(),
            });
        }
        let buckets = self.source().read_bytes(off + 8, nbucket * 4)?;
        let chains = self
            .source()
            .read_bytes(off + 8 + nbucket * 4, nchain * 4)?;
        Ok((Words(buckets), Words(chains)))
    }

    /// The SHT_DYNSYM section's entry count, when section headers exist and agree with
    /// DT_SYMTAB. Garbage section headers are ignored (ld.so never reads them).
    fn dynsym_count_from_sections(
        &self,
        symtab_addr: u64,
        syment: u64,
    ) -> Result<Option<u64>, ElfError> {
        // Any error in the section headers only means they cannot size the table.
        let Ok(sections) = super::sections::read_sections(self.source(), self.header()) else {
            return Ok(None);
        };
        Ok(sections
            .iter()
            .find(|s| s.sh_type == super::sections::SHT_DYNSYM && s.addr == symtab_addr)
            .map(|s| s.size / syment))
    }

    fn read_verdefs(
        &self,
        addr: u64,
        count: u64,
        strtab: &[u8],
    ) -> Result<Vec<VersionDefinition>, ElfError> {
        let (mut off, _) = self
            .vaddr_span(addr)
            .ok_or_else(|| ElfError::malformed("DT_VERDEF is not in any loaded segment"))?;
        let mut out = Vec::new();
        for _ in 0..count.min(MAX_VERSION_ENTRIES) {
            let e = read_vec(self.source(), off, 20)?;
            let bad = || ElfError::malformed("short Verdef");
            let flags = le_u16(&e, 2).ok_or_else(bad)?;
            let ndx = le_u16(&e, 4).ok_or_else(bad)?;
            let cnt = le_u16(&e, 6).ok_or_else(bad)?;
            let aux = u64::from(le_u32(&e, 12).ok_or_else(bad)?);
            let next = u64::from(le_u32(&e, 16).ok_or_else(bad)?);
            if cnt > 0 {
                let a = read_vec(self.source(), off + aux, 8)?;
                let name_off = le_u32(&a, 0).ok_or_else(bad)?;
                out.push(VersionDefinition {
                    index: ndx & VERSYM_INDEX,
                    name: str_at(strtab, name_off)?,
                    is_base: flags & VER_FLG_BASE != 0,
                });
            }
            if next == 0 {
                break;
            }
            off = off
                .checked_add(next)
                .ok_or_else(|| ElfError::malformed("Verdef chain overflows"))?;
        }
        Ok(out)
    }

    fn read_verneeds(
        &self,
        addr: u64,
        count: u64,
        strtab: &[u8],
    ) -> Result<Vec<VersionNeed>, ElfError> {
        let (mut off, _) = self
            .vaddr_span(addr)
            .ok_or_else(|| ElfError::malformed("DT_VERNEED is not in any loaded segment"))?;
        let mut out = Vec::new();
        // One budget for all Vernaux records, against garbage counts.
        let mut budget = MAX_VERSION_ENTRIES;
        for _ in 0..count.min(MAX_VERSION_ENTRIES) {
            let e = read_vec(self.source(), off, 16)?;
            let bad = || ElfError::malformed("short Verneed");
            let cnt = le_u16(&e, 2).ok_or_else(bad)?;
            let file = le_u32(&e, 4).ok_or_else(bad)?;
            let aux = u64::from(le_u32(&e, 8).ok_or_else(bad)?);
            let next = u64::from(le_u32(&e, 12).ok_or_else(bad)?);
            let mut versions = Vec::new();
            let mut aoff = off
                .checked_add(aux)
                .ok_or_else(|| ElfError::malformed("Vernaux offset overflows"))?;
            for _ in 0..cnt {
                budget = budget
                    .checked_sub(1)
                    .ok_or_else(|| ElfError::malformed("too many version requirements"))?;
                let a = read_vec(self.source(), aoff, 16)?;
                let flags = le_u16(&a, 4).ok_or_else(bad)?;
                let other = le_u16(&a, 6).ok_or_else(bad)?;
                let name = le_u32(&a, 8).ok_or_else(bad)?;
                let anext = u64::from(le_u32(&a, 12).ok_or_else(bad)?);
                versions.push(VersionNeedEntry {
                    index: other & VERSYM_INDEX,
                    name: str_at(strtab, name)?,
                    weak: flags & VER_FLG_WEAK != 0,
                    hidden: other & VERSYM_HIDDEN != 0,
                });
                if anext == 0 {
                    break;
                }
                aoff = aoff
                    .checked_add(anext)
                    .ok_or_else(|| ElfError::malformed("Vernaux chain overflows"))?;
            }
            out.push(VersionNeed {
                file: str_at(strtab, file)?,
                versions,
            });
            if next == 0 {
                break;
            }
            off = off
                .checked_add(next)
                .ok_or_else(|| ElfError::malformed("Verneed chain overflows"))?;
        }
        Ok(out)
    }
}

fn str_at(strtab: &[u8], off: u32) -> Result<String, ElfError> {
    let bytes = cstr_bytes(strtab, off)
        .ok_or_else(|| ElfError::malformed(format!("string offset {off} outside .dynstr")))?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn cstr_bytes(strtab: &[u8], off: u32) -> Option<&[u8]> {
    let rest = strtab.get(off as usize..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    rest.get(..end)
}

/// A version a reference asks for.
#[derive(Debug, Clone, Copy)]
pub struct VersionRequest<'a> {
    pub name: &'a str,
    pub hidden: bool,
}

/// A symbol name with both hashes a table may be searched by, computed once.
#[derive(Debug, Clone, Copy)]
pub struct LookupName<'a> {
    name: &'a [u8],
    gnu: u32,
    sysv: u32,
}

impl<'a> LookupName<'a> {
    pub fn new(name: &'a str) -> Self {
        let name = name.as_bytes();
        LookupName {
            name,
            gnu: gnu_hash(name),
            sysv: elf_hash(name),
        }
    }
}

/// An undefined symbol an object needs, borrowed from its table ([`SymbolRequirement`]).
#[derive(Debug, Clone)]
pub struct RequirementRef<'a> {
    pub name: std::borrow::Cow<'a, str>,
    pub version: Option<&'a str>,
    pub version_file: Option<&'a str>,
    pub hidden: bool,
    pub weak: bool,
}

impl fmt::Display for RequirementRef<'_> {
    /// As [`SymbolRequirement`] shows itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.version {
            Some(v) => write!(f, "{}@{}", self.name, v),
            None => f.write_str(&self.name),
        }
    }
}

impl SymbolTable {
    fn empty() -> Self {
        SymbolTable {
            syms: Syms::new(Bytes::empty(), ElfClass::Elf64),
            strtab: Bytes::empty(),
            versym: None,
            verdefs: Vec::new(),
            verneeds: Vec::new(),
            index: HashIndex::Own(HashMap::new()),
            requirements_end: 0,
            fallback: OnceLock::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    pub fn version_definitions(&self) -> &[VersionDefinition] {
        &self.verdefs
    }

    pub fn version_needs(&self) -> &[VersionNeed] {
        &self.verneeds
    }

    /// True when the object defines at least one version (has `.gnu.version_d`).
    pub fn has_version_definitions(&self) -> bool {
        !self.verdefs.is_empty()
    }

    /// A symbol's name through the string table's bytes (for walks over the whole table).
    fn name_bytes(&self, sym: &RawSym) -> &[u8] {
        cstr_bytes(&self.strtab, sym.name).unwrap_or_default()
    }

    /// A symbol's name read on its own ([`Bytes::cstr_at`]).
    fn name_of(&self, sym: &RawSym) -> std::borrow::Cow<'_, [u8]> {
        self.strtab.cstr_at(sym.name as usize).unwrap_or_default()
    }

    fn verdef_name(&self, index: u16) -> Option<&VersionDefinition> {
        self.verdefs.iter().find(|d| d.index == index)
    }

    fn verneed_entry(&self, index: u16) -> Option<(&VersionNeed, &VersionNeedEntry)> {
        self.verneeds
            .iter()
            .find_map(|n| n.versions.iter().find(|v| v.index == index).map(|v| (n, v)))
    }

    /// glibc's `l_versions[ndx].hash != 0`: the index names a real (non-base) version of this
    /// object, either defined or required.
    fn index_names_version(&self, index: u16) -> Option<&str> {
        if let Some(d) = self.verdef_name(index) {
            return if d.is_base {
                None
            } else {
                Some(d.name.as_str())
            };
        }
        self.verneed_entry(index).map(|(_, v)| v.name.as_str())
    }

    /// All symbols, decoded (allocates one `String` per symbol: meant for listing, not lookup).
    pub fn symbols(&self) -> Vec<SymbolInfo> {
        self.syms
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, s)| {
                let vs = self.versym.as_ref().and_then(|v| v.get(i));
                let defined = s.shndx != SHN_UNDEF;
                let (version, version_file, hidden) = match vs {
                    Some(v) if v & VERSYM_INDEX >= 2 => {
                        let idx = v & VERSYM_INDEX;
                        if defined {
                            (
                                self.verdef_name(idx).map(|d| d.name.clone()),
                                None,
                                v & VERSYM_HIDDEN != 0,
                            )
                        } else {
                            match self.verneed_entry(idx) {
                                Some((n, e)) => {
                                    (Some(e.name.clone()), Some(n.file.clone()), e.hidden)
                                }
                                None => {
                                    (self.verdef_name(idx).map(|d| d.name.clone()), None, false)
                                }
                            }
                        }
                    }
                    _ => (None, None, false),
                };
                SymbolInfo {
                    name: String::from_utf8_lossy(self.name_bytes(&s)).into_owned(),
                    version,
                    version_hidden: hidden,
                    version_file,
                    defined,
                    binding: SymbolBinding::from_info(s.info),
                    kind: s.kind(),
                }
            })
            .collect()
    }

    /// Names (with versions) this object exports to the rest of the process.
    pub fn exported(&self) -> Vec<SymbolInfo> {
        self.symbols_where(|s| s.is_exported_definition())
    }

    fn symbols_where(&self, keep: impl Fn(&RawSym) -> bool) -> Vec<SymbolInfo> {
        let all = self.symbols();
        self.syms
            .iter()
            .skip(1)
            .zip(all)
            .filter(|(raw, _)| keep(raw))
            .map(|(_, info)| info)
            .collect()
    }

    /// Undefined dynamic symbols (the object's imports), weak ones flagged.
    pub fn requirements(&self) -> Vec<SymbolRequirement> {
        self.requirement_refs()
            .map(|r| SymbolRequirement {
                name: r.name.into_owned(),
                version: r.version.map(str::to_string),
                version_file: r.version_file.map(str::to_string),
                hidden: r.hidden,
                weak: r.weak,
            })
            .collect()
    }

    /// [`SymbolTable::requirements`] borrowed from the table: nothing is copied (a name that
    /// is not UTF-8 is the one exception, made valid as `requirements` makes it).
    pub fn requirement_refs(&self) -> impl Iterator<Item = RequirementRef<'_>> + '_ {
        // The symbols and versions before the hashed ones, in one read each.
        let end = self.requirements_end.min(self.syms.len());
        let syms = self.syms.prefix(end);
        let versym = self.versym.as_ref().and_then(|v| v.prefix(end));
        let entries: Vec<(RawSym, u16)> = syms
            .iter()
            .flat_map(|s| s.iter().enumerate())
            .skip(1)
            .map(|(i, s)| (s, versym.as_ref().and_then(|v| v.get(i)).unwrap_or(0)))
            .collect();
        entries.into_iter().filter_map(move |(s, vs)| {
            if s.shndx != SHN_UNDEF {
                return None;
            }
            let bind = s.binding();
            if bind != STB_GLOBAL && bind != STB_WEAK {
                return None;
            }
            let name = match self.name_of(&s) {
                std::borrow::Cow::Borrowed(b) => String::from_utf8_lossy(b),
                std::borrow::Cow::Owned(v) => match String::from_utf8(v) {
                    Ok(s) => std::borrow::Cow::Owned(s),
                    Err(e) => {
                        std::borrow::Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned())
                    }
                },
            };
            if name.is_empty() {
                return None;
            }
            let idx = vs & VERSYM_INDEX;
            let (version, version_file, hidden) = if idx >= 2 {
                match self.verneed_entry(idx) {
                    Some((n, e)) => (Some(e.name.as_str()), Some(n.file.as_str()), e.hidden),
                    None => match self.verdef_name(idx) {
                        Some(d) if !d.is_base => (Some(d.name.as_str()), None, false),
                        _ => (None, None, false),
                    },
                }
            } else {
                (None, None, false)
            };
            Some(RequirementRef {
                name,
                version,
                version_file,
                hidden,
                weak: bind == STB_WEAK,
            })
        })
    }

    /// Indices of every symbol named `name`, found through the object's hash table.
    fn candidates(&self, lookup: &LookupName<'_>) -> Vec<u32> {
        let name = lookup.name;
        let mut out = Vec::new();
        if let Some(map) = self.fallback.get() {
            return map.get(name).cloned().unwrap_or_default();
        }
        match &self.index {
            HashIndex::Gnu {
                symoffset,
                bloom,
                buckets,
                chains,
            } => {
                let h = lookup.gnu;
                if !bloom.may_contain(h) {
                    return out;
                }
                let Some(start) = buckets.get((h as usize) % buckets.len().max(1)) else {
                    return out;
                };
                if start == 0 || start < *symoffset {
                    return out;
                }
                let mut i = start;
                let mut walked = 0;
                while let Some(c) = chains.get((i - symoffset) as usize) {
                    walked += 1;
                    if walked > MAX_CHAIN {
                        let map = self.fallback.get_or_init(|| self.build_own_index());
                        return map.get(name).cloned().unwrap_or_default();
                    }
                    if (c | 1) == (h | 1) && self.name_is(i, name) {
                        out.push(i);
                    }
                    if c & 1 == 1 {
                        break;
                    }
                    i += 1;
                }
            }
            HashIndex::Sysv { buckets, chains } => {
                let h = lookup.sysv;
                let Some(start) = buckets.get((h as usize) % buckets.len().max(1)) else {
                    return out;
                };
                let mut i = start;
                // A cyclic chain in a garbage file must not loop forever.
                for _ in 0..=chains.len() {
                    if i == 0 {
                        break;
                    }
                    if self.name_is(i, name) {
                        out.push(i);
                    }
                    match chains.get(i as usize) {
                        Some(n) => i = n,
                        None => break,
                    }
                }
            }
            HashIndex::Own(map) => {
                if let Some(v) = map.get(name) {
                    out.extend(v.iter().copied());
                }
            }
        }
        out
    }

    /// Whether symbol `i` is named `name` (its entry and name read on their own).
    fn name_is(&self, i: u32, name: &[u8]) -> bool {
        self.syms
            .get(i as usize)
            .is_some_and(|s| self.strtab.cstr_eq(s.name as usize, name))
    }

    fn build_own_index(&self) -> HashMap<Box<[u8]>, Vec<u32>> {
        let mut map: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        for (i, s) in self.syms.iter().enumerate().skip(1) {
            if s.is_exported_definition() {
                map.entry(self.name_bytes(&s).into())
                    .or_default()
                    .push(i as u32);
            }
        }
        map
    }

    /// The most entries one lookup can visit: the longest hash chain, or the most definitions
    /// sharing one name in our own index.
    pub fn longest_lookup(&self) -> usize {
        let own = |map: &HashMap<Box<[u8]>, Vec<u32>>| map.values().map(Vec::len).max();
        match (&self.index, self.fallback.get()) {
            (HashIndex::Own(map), _) | (_, Some(map)) => own(map).unwrap_or(0),
            // A GNU walk stops at MAX_CHAIN entries (the index answers past that).
            (gnu @ HashIndex::Gnu { .. }, None) => gnu
                .longest_chain(self.syms.len())
                .map_or(MAX_CHAIN, |l| l.min(MAX_CHAIN)),
            (sysv, None) => sysv.longest_chain(self.syms.len()).unwrap_or(usize::MAX),
        }
    }

    /// Whether lookups go through the object's own hash table (false: through an index built
    /// from the symbols, because the table is missing, or malformed: a SysV table when it is
    /// read, a GNU one once a lookup walks a chain past [`MAX_CHAIN`]).
    pub fn uses_file_hash_table(&self) -> bool {
        !matches!(self.index, HashIndex::Own(_)) && self.fallback.get().is_none()
    }

    /// Does this object provide a definition that glibc would bind `name` (with `version`)
    /// to? Mirrors `check_match` and the single-versioned-symbol rule of `do_lookup_x`.
    pub fn defines(&self, name: &str, version: Option<VersionRequest<'_>>) -> bool {
        self.defines_name(&LookupName::new(name), version)
    }

    /// [`SymbolTable::defines`] for a name whose hashes are computed once for every table it
    /// is looked up in.
    pub fn defines_name(&self, name: &LookupName<'_>, version: Option<VersionRequest<'_>>) -> bool {
        let mut versioned_candidates = 0u32;
        for i in self.candidates(name) {
            let Some(sym) = self.syms.get(i as usize) else {
                continue;
            };
            if !sym.is_exported_definition() {
                continue;
            }
            let Some(versym) = &self.versym else {
                // No version information in the definer: any reference matches.
                return true;
            };
            let vs = versym.get(i as usize).unwrap_or(0);
            let ndx = vs & VERSYM_INDEX;
            let def_hidden = vs & VERSYM_HIDDEN != 0;
            match version {
                Some(req) => {
                    let def_version = self.index_names_version(ndx);
                    if def_version == Some(req.name) {
                        return true;
                    }
                    // An unversioned, non-hidden definition satisfies a versioned reference.
                    if !(req.hidden || def_version.is_some() || def_hidden) {
                        return true;
                    }
                }
                None => {
                    if ndx < 3 {
                        return true;
                    }
                    if !def_hidden {
                        versioned_candidates += 1;
                    }
                }
            }
        }
        // An unversioned reference binds to the only default-versioned definition.
        versioned_candidates == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_functions_match_the_reference_values() {
        // Values from the ELF gABI and the GNU hash description.
        assert_eq!(elf_hash(b""), 0);
        assert_eq!(elf_hash(b"printf"), 0x077905a6);
        assert_eq!(elf_hash(b"exit"), 0x0006cf04);
        assert_eq!(gnu_hash(b""), 0x00001505);
        assert_eq!(gnu_hash(b"printf"), 0x156b2bb8);
        assert_eq!(gnu_hash(b"exit"), 0x7c967e3f);
    }

    #[test]
    fn requirement_display_includes_version() {
        let r = SymbolRequirement {
            name: "_ZSt4cout".into(),
            version: Some("GLIBCXX_3.4".into()),
            version_file: Some("libstdc++.so.6".into()),
            hidden: false,
            weak: false,
        };
        assert_eq!(r.to_string(), "_ZSt4cout@GLIBCXX_3.4");
    }

    #[test]
    fn cstr_bytes_is_bounds_checked() {
        let tab = b"\0abc\0de";
        assert_eq!(cstr_bytes(tab, 1), Some(b"abc".as_slice()));
        assert_eq!(cstr_bytes(tab, 5), None); // unterminated
        assert_eq!(cstr_bytes(tab, 99), None);
    }
}
