//! Scanning one file, or many in parallel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cudoctor_types::ThreadBudget;
use serde::{Deserialize, Serialize};

use crate::arch::{names_of, Arch, ArchKind, Variant};
use crate::elf::{read_sections, Probe};
use crate::error::ScanError;
use crate::fatbin::{
    count_wrappers, walk_section, DataSection, EntryInfo, EntryKind, ScanOptions, Walk,
    EXEC_SECTION, RELOC_SECTION, WRAPPER_SECTION,
};
use crate::source::{FileSource, ReadAt};

/// The kernel images of one file.
///
/// `sass`, `ptx` and `lto` describe the images the CUDA runtime loads: those of the executable
/// fat binaries (`.nv_fatbin`) when the file has any, else those of the relocatable ones
/// (`__nv_relfatbin`) — the same default view as `cuobjdump`. `entries` lists every image of
/// both kinds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileImages {
    /// Machine-code architectures, sorted numerically, de-duplicated: `sm_80`, `sm_90a`,
    /// `sm_100f` (cuobjdump shows family-specific cubins without the `f`; see
    /// [`FileImages::cuobjdump_sass`]).
    pub sass: Vec<String>,
    /// PTX architectures, same order: `compute_90`, `compute_100f`.
    pub ptx: Vec<String>,
    /// LTO IR architectures (`lto_80`), loadable only through nvJitLink.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lto: Vec<String>,
    /// For each PTX architecture, the newest PTX ISA version among its entries (`"9.0"`): the
    /// driver must accept it for every kernel of that architecture to JIT.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ptx_isa: BTreeMap<String, String>,
    /// Executable fat binary containers.
    pub containers: u32,
    /// Relocatable fat binary containers (`-rdc`).
    #[serde(default)]
    pub relocatable_containers: u32,
    /// Registration records in `.nvFatBinSegment`.
    #[serde(default)]
    pub wrappers: u32,
    /// Every image, both executable and relocatable.
    #[serde(default)]
    pub entries: Vec<EntryInfo>,
    /// Oddities that did not stop the scan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl FileImages {
    /// True when the file holds at least one fat binary container.
    pub fn has_fatbin(&self) -> bool {
        self.containers > 0 || self.relocatable_containers > 0
    }

    /// The entries behind `sass`/`ptx`/`lto`: executable ones when there are any, else the
    /// relocatable ones.
    pub fn loadable_entries(&self) -> impl Iterator<Item = &EntryInfo> {
        let relocatable = self.containers == 0;
        self.entries
            .iter()
            .filter(move |e| e.relocatable == relocatable)
    }

    /// The SASS list as `cuobjdump --list-elf` names it: family-specific cubins lose their
    /// `f` (the cubins are identical to the plain ones; research §1.9).
    pub fn cuobjdump_sass(&self) -> Vec<String> {
        names_of(
            self.sass
                .iter()
                .filter_map(|n| Arch::parse(n))
                .map(|a| match a.variant {
                    Variant::FamilySpecific => Arch::new(a.kind, a.number, Variant::Plain),
                    _ => a,
                }),
        )
    }
}

/// Scans one file. A file that is not ELF, or has no CUDA sections, gives an empty result.
pub fn scan_file(path: &Path) -> Result<FileImages, ScanError> {
    scan_file_with(path, &ScanOptions::default())
}

/// [`scan_file`] with options.
pub fn scan_file_with(path: &Path, opts: &ScanOptions) -> Result<FileImages, ScanError> {
    let file =
        cudoctor_types::regular_file::open(path).map_err(|e| ScanError::io("the file", e))?;
    refuse_mostly_holes(&file)?;
    let src = FileSource::new(file).map_err(|e| ScanError::io("the file's size", e))?;
    scan_source(&src, opts)
}

/// How many times its allocated bytes a file may claim before it is taken for holes: a
/// library is never sparse, and even a compressing file system stores code at a few times
/// less, not this.
#[cfg(unix)]
const MOST_HOLES_RATIO: u64 = 64;

/// A file whose size is mostly holes (a 4 KB file that claims gigabytes, so a section header
/// can name 8 GB that are all zeros) is refused before any of it is read: its sections are
/// not kernels, and walking gigabytes of zeros would take minutes.
fn refuse_mostly_holes(file: &std::fs::File) -> Result<(), ScanError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let meta = file
            .metadata()
            .map_err(|e| ScanError::io("the file's size", e))?;
        let allocated = meta.blocks().saturating_mul(512);
        if meta.len() > (64 << 20) && meta.len() / MOST_HOLES_RATIO > allocated {
            return Err(ScanError::Corrupt(format!(
                "the file claims {} bytes but holds {} on disk: the rest is holes, not kernel images (not read)",
                meta.len(),
                allocated
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Scans an image held in memory (tests, fuzzing, data from elsewhere).
pub fn scan_bytes(data: &[u8]) -> Result<FileImages, ScanError> {
    scan_source(data, &ScanOptions::default())
}

/// Scans any positioned-read source.
pub fn scan_source<S: ReadAt + Sync + ?Sized>(
    src: &S,
    opts: &ScanOptions,
) -> Result<FileImages, ScanError> {
    let sections = match read_sections(src)? {
        Probe::NotElf => return Ok(FileImages::default()),
        Probe::Elf(s) => s,
    };
    let mut walk = Walk::default();
    let mut wrappers = 0u32;
    let mut data_sections = 0;
    // Executable sections first, so container indices follow the file's main images.
    for (name, relocatable) in [(EXEC_SECTION, false), (RELOC_SECTION, true)] {
        for s in sections
            .iter()
            .filter(|s| s.name == name && s.has_file_data())
        {
            data_sections += 1;
            let sec = DataSection {
                name,
                start: s.offset,
                end: s.offset.saturating_add(s.size),
                relocatable,
            };
            walk_section(src, &sec, opts, &mut walk)?;
        }
    }
    for s in sections
        .iter()
        .filter(|s| s.name == WRAPPER_SECTION && s.has_file_data())
    {
        wrappers = wrappers.saturating_add(count_wrappers(src, s.offset, s.size)?);
    }
    if wrappers > 0 && data_sections == 0 {
        walk.warnings.push(format!(
            "{wrappers} fat binary registration records but no {EXEC_SECTION} or {RELOC_SECTION} section"
        ));
    }
    Ok(summarise(walk, wrappers))
}

fn summarise(walk: Walk, wrappers: u32) -> FileImages {
    let mut images = FileImages {
        containers: walk.exec_containers,
        relocatable_containers: walk.reloc_containers,
        wrappers,
        entries: walk.entries,
        warnings: walk.warnings,
        ..FileImages::default()
    };
    let archs_of = |images: &FileImages, kind: ArchKind| {
        names_of(
            images
                .loadable_entries()
                .filter_map(|e| e.arch)
                .filter(|a| a.kind == kind),
        )
    };
    images.sass = archs_of(&images, ArchKind::Sass);
    images.ptx = archs_of(&images, ArchKind::Ptx);
    images.lto = archs_of(&images, ArchKind::Lto);
    let mut isa: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for e in images.loadable_entries() {
        if let (EntryKind::Ptx, Some(arch), Some(v)) = (e.kind, e.arch, e.ptx_isa()) {
            let slot = isa.entry(arch.name()).or_insert(v);
            *slot = (*slot).max(v);
        }
    }
    images.ptx_isa = isa
        .into_iter()
        .map(|(k, (a, b))| (k, format!("{a}.{b}")))
        .collect();
    images
}

/// Scans many files on up to `threads` threads, as many as the process's [`ThreadBudget`] has
/// free (at least the calling thread). Results keep the order of `paths`.
pub fn scan_many(
    paths: &[PathBuf],
    threads: usize,
) -> Vec<(PathBuf, Result<FileImages, ScanError>)> {
    scan_many_with(paths, threads, &ScanOptions::default())
}

/// [`scan_many`] with options.
pub fn scan_many_with(
    paths: &[PathBuf],
    threads: usize,
    opts: &ScanOptions,
) -> Vec<(PathBuf, Result<FileImages, ScanError>)> {
    // Each file is taken by the next free worker of the process's budget (the scans nest in
    // a check's other pools, which draw from the same threads).
    let results = ThreadBudget::process().map(paths, threads.max(1), |path| {
        // A panic would be a bug in this crate; it costs that file, not the batch.
        std::panic::catch_unwind(|| scan_file_with(path, opts))
            .unwrap_or_else(|_| Err(ScanError::Corrupt("the scanner failed on this file".into())))
    });
    paths
        .iter()
        .zip(results)
        .map(|(path, r)| {
            let r = r.unwrap_or_else(|_| {
                Err(ScanError::Corrupt("the scanner failed on this file".into()))
            });
            (path.clone(), r)
        })
        .collect()
}

/// A sensible thread count for [`scan_many`]: the process's thread budget
/// ([`ThreadBudget::process`]), which no pool passes anyway.
pub fn default_threads() -> usize {
    ThreadBudget::process().limit().max(1)
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
