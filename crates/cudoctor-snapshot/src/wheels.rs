use serde::{Deserialize, Serialize};

/// The files of torch's and the nvidia-* wheels checked against their `RECORD`: every file's
/// presence, the sizes of libraries and of paths two installed distributions both list (every
/// file's size and SHA-256 with the full check), and those shared paths.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WheelCheck {
    /// Whether every recorded hash was checked (`--verify-wheels`) or a budget applied.
    #[serde(default)]
    pub full: bool,
    /// Bytes the hash budget allowed (absent with the full check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_budget_bytes: Option<u64>,
    /// Distributions whose RECORD was read.
    #[serde(default)]
    pub packages: Vec<String>,
    #[serde(default)]
    pub files_checked: u64,
    /// Files whose size was read (the others were checked for presence only).
    #[serde(default)]
    pub sizes_checked: u64,
    #[serde(default)]
    pub files_hashed: u64,
    #[serde(default)]
    pub bytes_hashed: u64,
    /// Files the check would have hashed that the byte budget left unchecked.
    #[serde(default)]
    pub hashes_skipped: u64,
    /// Files that do not match their distribution's RECORD.
    #[serde(default)]
    pub damaged: Vec<DamagedFile>,
    /// Paths listed by the RECORDs of more than one distribution (one overwrote the other).
    #[serde(default)]
    pub shared_paths: Vec<SharedPath>,
    /// RECORDs that could not be read.
    #[serde(default)]
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct DamagedFile {
    /// Normalised distribution name and its version.
    pub package: String,
    pub version: String,
    /// Machine path of the file.
    pub path: String,
    pub problem: FileProblem,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_size: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FileProblem {
    /// RECORD lists it; it is not there.
    #[default]
    Missing,
    /// Its size differs from RECORD's.
    SizeDiffers,
    /// Same size, different SHA-256.
    HashDiffers,
}

/// A file two or more distributions install at the same path.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SharedPath {
    /// Machine path of the file.
    pub path: String,
    pub owners: Vec<PathOwner>,
}

impl SharedPath {
    /// The owner whose recorded content is the file on disk, when exactly one is known to match.
    pub fn winner(&self) -> Option<&PathOwner> {
        let mut m = self.owners.iter().filter(|o| o.matches == Some(true));
        let first = m.next()?;
        m.next().is_none().then_some(first)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PathOwner {
    pub package: String,
    pub version: String,
    /// Whether the file on disk is this distribution's (size, then hash); `None` when the
    /// budget left it undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<bool>,
}
