//! Why one file could not be scanned.

use std::io;

/// A file that could not be scanned. Other files of a batch are not affected.
///
/// A file that is not ELF, or an ELF file without CUDA sections, is *not* an error: it scans to
/// an empty [`crate::FileImages`].
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The file could not be opened or read.
    #[error("cannot read {what}: {source}")]
    Io {
        /// What was being read (e.g. "the file", "the section header table").
        what: String,
        #[source]
        source: io::Error,
    },
    /// A structure points past the end of the file or of its section.
    #[error("truncated: {0}")]
    Truncated(String),
    /// A structure has values no valid producer writes.
    #[error("corrupt: {0}")]
    Corrupt(String),
    /// The file declares more structures than the scanner accepts (a guard against hostile input).
    #[error("too large: {0}")]
    TooLarge(String),
    /// The scan's deadline passed before the file was read to its end: nothing is known of it.
    #[error("stopped: {0}")]
    Stopped(String),
}

impl ScanError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        ScanError::Io {
            what: what.into(),
            source,
        }
    }

    /// Reading a range that is past the end is truncation, not an I/O failure.
    pub(crate) fn read(what: impl Into<String>, source: io::Error) -> Self {
        if source.kind() == io::ErrorKind::UnexpectedEof {
            ScanError::Truncated(format!("{} lies past the end of the file", what.into()))
        } else {
            ScanError::io(what, source)
        }
    }
}
