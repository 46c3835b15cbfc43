//! Errors from loading knowledge-base data.

use std::path::PathBuf;

use cudoctor_types::version::VersionError;

#[derive(Debug, thiserror::Error)]
pub enum KbError {
    #[error("cannot read knowledge-base file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("knowledge-base directory {0} holds none of the known data files ({files})", files = crate::data::FILE_NAMES.join(", "))]
    NoDataFiles(PathBuf),
    #[error("knowledge-base file {file}: {message}")]
    Parse { file: String, message: String },
    #[error("knowledge-base file {file}: schema_version {found} is not supported (this cudoctor reads {supported})")]
    Schema {
        file: String,
        found: u32,
        supported: u32,
    },
    #[error("knowledge-base file {file}, {row}: {source}")]
    Version {
        file: String,
        row: String,
        #[source]
        source: VersionError,
    },
    #[error("knowledge base is inconsistent:\n  {}", .0.join("\n  "))]
    Invariants(Vec<String>),
}
