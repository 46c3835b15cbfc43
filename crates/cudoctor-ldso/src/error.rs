//! Typed errors. Bad input (a truncated library, a garbage cache file) is reported through
//! these, never through a panic.

use std::io;

/// Errors reading an ELF file.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("file too short to be an ELF object ({size} bytes)")]
    TooShort { size: u64 },
    #[error("not an ELF file (bad magic)")]
    NotElf,
    #[error("unknown ELF class {0}")]
    BadClass(u8),
    #[error("big-endian ELF files are not supported")]
    BigEndian,
    #[error("unknown ELF data encoding {0}")]
    BadEncoding(u8),
    #[error("truncated ELF file: {what} (offset {offset}, {len} bytes) lies outside the file ({size} bytes)")]
    Truncated {
        what: &'static str,
        offset: u64,
        len: u64,
        size: u64,
    },
    #[error("malformed ELF file: {0}")]
    Malformed(String),
    /// A table larger than any real library has (a hostile or garbage size field).
    #[error("ELF table too large: {0}")]
    TooLarge(String),
}

impl ElfError {
    pub(crate) fn malformed(msg: impl Into<String>) -> Self {
        ElfError::Malformed(msg.into())
    }
}

/// Errors parsing an `ld.so.cache` file.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("not an ld.so.cache file (unknown magic)")]
    BadMagic,
    #[error("ld.so.cache truncated: {0}")]
    Truncated(String),
    #[error("ld.so.cache has the wrong byte order for this reader")]
    WrongEndian,
    #[error("malformed ld.so.cache: {0}")]
    Malformed(String),
}

/// Errors loading an object into an emulated process.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot open {path}: {source}")]
    Open { path: String, source: io::Error },
    #[error("{path}: {message}")]
    NotLoadable { path: String, message: String },
    #[error("{path}: {source}")]
    Elf { path: String, source: ElfError },
}
