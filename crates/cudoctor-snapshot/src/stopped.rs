//! Where collection stopped a loop early: a deadline or a cap on files, bytes or depth ended a
//! hash, a walk, a listing or a scan before it saw everything, so the report can say what it
//! did not look at instead of claiming a whole tree was judged.

use serde::{Deserialize, Serialize};

/// Which loop stopped.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ScanKind {
    /// Checking installed wheel files against their RECORD (sizes, hashes).
    WheelFiles,
    /// Reading a site directory's packages and `.pth` files.
    SitePackages,
    /// Looking for CUDA binaries (extension cache, editable installs, PYTHONPATH, the project).
    BinarySearch,
    /// Reading the kernel images of CUDA libraries.
    KernelImages,
    /// Emulating the dynamic loader over an environment's libraries.
    Loader,
    /// Finding CUDA toolkits on disk.
    Toolkits,
    /// Listing one directory's names.
    Listing,
}

impl ScanKind {
    pub fn describe(self) -> &'static str {
        match self {
            ScanKind::WheelFiles => "the check of wheel files against their RECORD",
            ScanKind::SitePackages => "the reading of installed packages and .pth files",
            ScanKind::BinarySearch => "the search for CUDA binaries",
            ScanKind::KernelImages => "the reading of kernel images",
            ScanKind::Loader => "the dynamic loader's emulation",
            ScanKind::Toolkits => "the search for CUDA toolkits",
            ScanKind::Listing => "the listing of a directory",
        }
    }
}

/// Why it stopped.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopReason {
    /// The command's time budget (`--timeout`) was spent.
    Deadline { budget_s: f64 },
    /// More files or entries than the cap.
    Files { limit: u64 },
    /// More bytes than the cap.
    Bytes { limit: u64 },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Deadline { budget_s } => {
                write!(f, "the time budget of {budget_s} s (--timeout) was spent")
            }
            StopReason::Files { limit } => write!(f, "more than {limit} files or entries"),
            StopReason::Bytes { limit } => write!(f, "more than {limit} bytes"),
        }
    }
}

/// One loop that stopped before the end of its input.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StoppedEarly {
    pub scan: ScanKind,
    /// The machine path it was working in.
    pub place: String,
    pub why: StopReason,
}
