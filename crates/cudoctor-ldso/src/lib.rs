//! Emulation of glibc's dynamic loader, for answering "which copy of libcudart / cuDNN / NCCL
//! does each component of a process really load, and will its symbols resolve?" without
//! running the inspected binaries.
//!
//! * [`elf`]: ELF dynamic section reader (SONAME, DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_FLAGS_1)
//!   and dynamic symbols with GNU versions; positioned reads only.
//! * [`cache`]: `/etc/ld.so.cache` parser (new, old and compat formats, glibc-hwcaps entries)
//!   and ld.so's lookup.
//! * [`process`]: one emulated process: [`Process::load`] objects in the order a program
//!   loads them; each needed library is resolved as ld.so does and reported with the step
//!   that found it ([`Via`]); undefined symbols can be checked against everything loaded.
//! * [`analysis`] and [`families`]: pure helpers for the diagnosis rules.
//!
//! ```no_run
//! use cudoctor_ldso::{LoadOptions, Process, ProcessEnv, SymbolCheck};
//! let env = ProcessEnv::new(std::path::Path::new("/")).with_vars(std::env::vars());
//! let mut p = Process::new(env);
//! p.load("/venv/lib/python3.12/site-packages/torch/_C.cpython-312-x86_64-linux-gnu.so",
//!        LoadOptions::check_symbols(SymbolCheck::Requested)).unwrap();
//! println!("{}", serde_json::to_string_pretty(&p.report_without_loader()).unwrap());
//! ```

pub mod analysis;
pub mod cache;
pub mod config;
pub mod dst;
pub mod elf;
pub mod error;
pub mod families;
pub mod process;
pub mod provenance;
pub mod read;
pub mod report;
pub mod rootfs;

pub use analysis::{cache_entries_of_family, find_ld_library_path_shadowing, Shadowing};
pub use cache::{CacheEntry, CacheFormat, CacheSelection, LdCache};
pub use config::LoaderConfig;
pub use elf::symbols::{SymbolBinding, SymbolInfo, SymbolRequirement, SymbolTable};
pub use elf::{ElfClass, ElfFile, Target};
pub use error::{CacheError, ElfError, LoadError};
pub use families::{cuda_library, is_vendored_copy, CudaFamily, CudaLibrary};
pub use process::{LoadOptions, Process, ProcessEnv, SymbolCheck};
pub use provenance::SymbolProvider;
pub use report::{LibsReport, MissingVersion, NeededReport, ObjectReport, Via};
