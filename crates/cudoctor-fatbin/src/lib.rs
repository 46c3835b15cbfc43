//! Reads the CUDA kernel images inside ELF libraries — which GPU architectures a library
//! carries machine code (SASS) or PTX for — without NVIDIA tools, a GPU, or unsafe code, and
//! decides which GPUs can run them.
//!
//! A library is never read whole: the ELF header and section table are read with positioned
//! reads, then the fat binary containers of `.nv_fatbin` and `__nv_relfatbin` are walked
//! header by header. Payloads are not decompressed, except a few bytes of the entries of old
//! (CUDA 12) fat binaries whose header does not record the `a` suffix.
//!
//! ```no_run
//! use std::path::Path;
//! use cudoctor_fatbin::{scan_file, compat};
//!
//! let images = scan_file(Path::new("libtorch_cuda.so")).unwrap();
//! println!("SASS {:?}, PTX {:?}", images.sass, images.ptx);
//! let gpu = compat::ComputeCapability::new(9, 0);
//! let v = compat::verdict(&compat::ImageSet::of(&images), gpu, None);
//! println!("{v:?}");
//! ```

pub mod arch;
pub mod compat;
mod elf;
mod error;
pub mod fatbin;
mod le;
pub mod outside;
mod peek;
pub mod report;
mod scan;
pub mod source;
mod walk;

#[cfg(test)]
mod testutil;

pub use arch::{sort_arch_names, Arch, ArchKind, Variant};
pub use error::ScanError;
pub use fatbin::{Compression, EntryInfo, EntryKind, ScanOptions, SuffixSource};
pub use scan::{
    default_threads, scan_bytes, scan_file, scan_file_with, scan_many, scan_many_with, scan_source,
    FileImages,
};
pub use walk::{find_cuda_libraries, find_cuda_libraries_until, WalkStop};
