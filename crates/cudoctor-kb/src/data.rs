//! The data files: their names, the embedded copies, and the rows as they are written in TOML.
//! Typed tables are built from these rows in `lib.rs`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::KbError;
use cudoctor_types::version::{ComputeCapability, CudaVersion, DriverVersion};

/// The schema version every data file must declare.
pub const SCHEMA_VERSION: u32 = 1;

/// Largest knowledge-base file read from a user's `--kb` directory (the embedded ones are tens
/// of KB).
const MAX_KB_FILE: u64 = 16 << 20;

pub const TOOLKITS: &str = "toolkits.toml";
pub const DRIVERS: &str = "drivers.toml";
pub const MINOR_COMPAT: &str = "minor_compat.toml";
pub const TORCH: &str = "torch.toml";
pub const ARCH_LISTS: &str = "arch_lists.toml";
pub const GPUS: &str = "gpus.toml";
pub const NVCC: &str = "nvcc.toml";
pub const TOOLKIT_FEATURES: &str = "toolkit_features.toml";
pub const TORCH_FLOORS: &str = "torch_floors.toml";
pub const PLATFORMS: &str = "platforms.toml";
pub const JAX: &str = "jax.toml";
pub const XID: &str = "xid.toml";

/// Every data file a knowledge-base directory may hold.
pub const FILE_NAMES: [&str; 12] = [
    TOOLKITS,
    DRIVERS,
    MINOR_COMPAT,
    TORCH,
    ARCH_LISTS,
    GPUS,
    NVCC,
    TOOLKIT_FEATURES,
    TORCH_FLOORS,
    PLATFORMS,
    JAX,
    XID,
];

fn embedded_text(name: &str) -> Option<&'static str> {
    Some(match name {
        TOOLKITS => include_str!("../data/toolkits.toml"),
        DRIVERS => include_str!("../data/drivers.toml"),
        MINOR_COMPAT => include_str!("../data/minor_compat.toml"),
        TORCH => include_str!("../data/torch.toml"),
        ARCH_LISTS => include_str!("../data/arch_lists.toml"),
        GPUS => include_str!("../data/gpus.toml"),
        NVCC => include_str!("../data/nvcc.toml"),
        TOOLKIT_FEATURES => include_str!("../data/toolkit_features.toml"),
        TORCH_FLOORS => include_str!("../data/torch_floors.toml"),
        PLATFORMS => include_str!("../data/platforms.toml"),
        JAX => include_str!("../data/jax.toml"),
        XID => include_str!("../data/xid.toml"),
        _ => return None,
    })
}

/// The knowledge base's date: the newest date (`YYYY-MM-DD`) its embedded data files name, the
/// day their sources were last read. A report that names it says which tables judged.
pub fn embedded_data_date() -> Option<String> {
    FILE_NAMES
        .iter()
        .filter_map(|n| embedded_text(n))
        .filter_map(newest_date)
        .max()
}

/// The newest plausible `YYYY-MM-DD` date in `text` (month 01-12, day 01-31).
fn newest_date(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    (0..b.len().saturating_sub(9))
        .filter(|&i| {
            digits(i..i + 4)
                && b[i + 4] == b'-'
                && digits(i + 5..i + 7)
                && b[i + 7] == b'-'
                && digits(i + 8..i + 10)
                && (i == 0 || !b[i - 1].is_ascii_digit())
                && b.get(i + 10).is_none_or(|c| !c.is_ascii_digit())
        })
        .map(|i| &text[i..i + 10])
        .filter(|d| {
            let month: u32 = d[5..7].parse().unwrap_or(0);
            let day: u32 = d[8..10].parse().unwrap_or(0);
            (1..=12).contains(&month) && (1..=31).contains(&day)
        })
        .max()
        .map(str::to_string)
}

/// The text of every data file, keyed by file name, with where each came from.
pub(crate) struct Texts {
    files: Vec<(&'static str, String)>,
}

impl Texts {
    pub(crate) fn embedded() -> Texts {
        Texts {
            files: FILE_NAMES
                .iter()
                .filter_map(|name| embedded_text(name).map(|t| (*name, t.to_string())))
                .collect(),
        }
    }

    /// Files present in `dir` replace the embedded ones of the same name.
    pub(crate) fn overlay_dir(dir: &Path) -> Result<Texts, KbError> {
        let mut texts = Texts::embedded();
        let mut found = 0;
        for (name, text) in &mut texts.files {
            let path = dir.join(name);
            // Through the one opener of input files: a FIFO, a device or a file past the limit
            // is refused at once, never waited on.
            use cudoctor_types::regular_file::{read_input, InputError};
            match read_input(&path, MAX_KB_FILE).map(String::from_utf8) {
                Ok(Ok(t)) => {
                    *text = t;
                    found += 1;
                }
                Ok(Err(e)) => {
                    let source = std::io::Error::new(std::io::ErrorKind::InvalidData, e);
                    return Err(KbError::Read { path, source });
                }
                Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(InputError::Io(source)) => return Err(KbError::Read { path, source }),
                Err(e) => {
                    let source = std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
                    return Err(KbError::Read { path, source });
                }
            }
        }
        if found == 0 {
            // Also covers a directory that does not exist: reading it is an error worth naming.
            if let Err(source) = std::fs::read_dir(dir) {
                return Err(KbError::Read {
                    path: dir.to_path_buf(),
                    source,
                });
            }
            return Err(KbError::NoDataFiles(dir.to_path_buf()));
        }
        Ok(texts)
    }

    pub(crate) fn parse<T: serde::de::DeserializeOwned + HasSchema>(
        &self,
        name: &'static str,
    ) -> Result<T, KbError> {
        let text = self
            .files
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.as_str())
            .unwrap_or_default();
        let parsed: T = toml::from_str(text).map_err(|e| KbError::Parse {
            file: name.to_string(),
            message: e.to_string(),
        })?;
        if parsed.schema_version() != SCHEMA_VERSION {
            return Err(KbError::Schema {
                file: name.to_string(),
                found: parsed.schema_version(),
                supported: SCHEMA_VERSION,
            });
        }
        Ok(parsed)
    }
}

pub(crate) trait HasSchema {
    fn schema_version(&self) -> u32;
}

macro_rules! file_struct {
    ($name:ident, $field:ident, $row:ty) => {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct $name {
            pub schema_version: u32,
            #[serde(default)]
            pub $field: Vec<$row>,
        }
        impl HasSchema for $name {
            fn schema_version(&self) -> u32 {
                self.schema_version
            }
        }
    };
}

file_struct!(ToolkitsFile, toolkit, ToolkitRelease);
file_struct!(DriversFile, branch, DriverBranch);
file_struct!(MinorCompatFile, major, MinorCompat);
file_struct!(TorchFile, release, TorchReleaseRow);
file_struct!(ArchListsFile, arch_list, ArchListRow);
file_struct!(GpusFile, gpu, GpuModel);
file_struct!(NvccFile, range, ArchRange);
file_struct!(ToolkitFeaturesFile, feature, ToolkitFeature);
file_struct!(TorchFloorsFile, floor, TorchFloor);

/// `jax.toml`: JAX releases and the CUDA plugins served for them, per CPython version.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JaxFile {
    pub schema_version: u32,
    #[serde(default)]
    pub jax: Vec<JaxReleases>,
    #[serde(default)]
    pub plugin: Vec<JaxPluginReleases>,
}
impl HasSchema for JaxFile {
    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}

/// The jax releases the package index serves for one CPython version (Linux x86_64).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JaxReleases {
    /// `3.11`.
    pub python: String,
    pub releases: Vec<String>,
    pub source: String,
}

/// The releases of one JAX CUDA plugin (`jax-cuda13-plugin`) for one CPython version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JaxPluginReleases {
    pub name: String,
    pub cuda_major: u32,
    pub python: String,
    pub releases: Vec<String>,
    pub source: String,
}

/// `platforms.toml`: builds on platforms other than Linux x86_64.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlatformsFile {
    pub schema_version: u32,
    #[serde(default)]
    pub pypi_build: Vec<PypiBuild>,
    #[serde(default)]
    pub index: Vec<PlatformIndex>,
}
impl HasSchema for PlatformsFile {
    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}

/// The build a plain install from PyPI gets for these releases on one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PypiBuild {
    pub platform: crate::Platform,
    pub torch: Vec<String>,
    /// "cpu" or a CUDA variant tag ("cu130").
    pub build: String,
    pub source: String,
}

/// Which CUDA variants PyTorch's own index carries on one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformIndex {
    pub platform: crate::Platform,
    /// The platform whose variant lists this one's equal (`linux-x86_64`).
    pub same_as: crate::Platform,
    /// Exceptions: "2.14.1 cu134" is absent on this platform.
    #[serde(default)]
    pub absent: Vec<String>,
    pub source: String,
}

/// A toolkit feature or nvcc flag and the first toolkit release that has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolkitFeature {
    pub name: String,
    /// nvcc spellings of the flag, when the feature is one (`--apply-controls`, `-apply-controls`).
    #[serde(default)]
    pub flags: Vec<String>,
    pub since: CudaVersion,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
}

/// A version or GPU floor of a torch feature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TorchFloor {
    /// `torch.compile`, `autocast bfloat16`.
    pub feature: String,
    pub what: String,
    #[serde(default)]
    pub min_torch: Option<String>,
    #[serde(default)]
    pub min_cuda: Option<CudaVersion>,
    #[serde(default)]
    pub min_cc: Option<ComputeCapability>,
    pub source: String,
}

/// One CUDA Toolkit release and the minimum driver NVIDIA lists for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolkitRelease {
    /// major.minor of the toolkit.
    pub version: CudaVersion,
    /// "GA", "Update 1", "RC (11.0.1)" ... as NVIDIA's table names the release.
    pub release: String,
    pub linux_min_driver: DriverVersion,
    #[serde(default)]
    pub windows_min_driver: Option<DriverVersion>,
    pub source: String,
    /// True where the value was read from a third-party copy only.
    #[serde(default)]
    pub secondary: bool,
}

impl ToolkitRelease {
    pub fn is_release_candidate(&self) -> bool {
        self.release.starts_with("RC")
    }
}

/// One NVIDIA driver branch (R580 ...) and the highest CUDA it runs natively.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverBranch {
    pub branch: u32,
    /// None: not confirmed (R565, R615 ...).
    #[serde(default)]
    pub max_cuda: Option<CudaVersion>,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    #[serde(default)]
    pub secondary: bool,
}

/// NVIDIA's minor-version compatibility floor for one CUDA major version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinorCompat {
    pub cuda_major: u32,
    pub linux_floor: DriverVersion,
    #[serde(default)]
    pub windows_floor: Option<DriverVersion>,
    /// NVIDIA's wording of the driver range, for reports.
    pub driver_range: String,
    pub source: String,
}

/// A GPU product family with one compute capability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuModel {
    /// Product names as NVIDIA writes them ("H200", "RTX 4090", "Quadro RTX 6000").
    pub names: Vec<String>,
    pub cc: ComputeCapability,
    pub architecture: String,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    #[serde(default)]
    pub secondary: bool,
    /// The oldest driver branch that drives the product (570 for the RTX 50-series); None: no
    /// floor known beyond what its CUDA needs.
    #[serde(default)]
    pub first_branch: Option<u32>,
    /// The newest driver branch that drives it (470 for Kepler, 580 for Maxwell/Pascal/Volta);
    /// None: still supported or not known.
    #[serde(default)]
    pub last_branch: Option<u32>,
    #[serde(default)]
    pub branch_source: Option<String>,
    #[serde(default)]
    pub branch_secondary: bool,
    /// A Jetson module: its driver and CUDA come with JetPack, not a desktop driver branch.
    #[serde(default)]
    pub jetson: bool,
}

/// The range of real architectures nvcc of the toolkits `from..=to` can compile for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchRange {
    pub from: CudaVersion,
    pub to: CudaVersion,
    #[serde(default)]
    pub lowest: Option<ComputeCapability>,
    #[serde(default)]
    pub highest: Option<ComputeCapability>,
    #[serde(default)]
    pub note: Option<String>,
    pub source: String,
    #[serde(default)]
    pub secondary: bool,
}

impl ArchRange {
    pub fn contains_toolkit(&self, c: CudaVersion) -> bool {
        self.from <= c && c <= self.to
    }

    /// Whether nvcc can target `cc`: None when the relevant end of the range is unknown.
    pub fn can_target(&self, cc: ComputeCapability) -> Option<bool> {
        if let Some(low) = self.lowest {
            if cc < low {
                return Some(false);
            }
        }
        if let Some(high) = self.highest {
            if cc > high {
                return Some(false);
            }
        }
        match (self.lowest, self.highest) {
            (Some(_), Some(_)) => Some(true),
            _ => None,
        }
    }
}

/// How sure an arch-list row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArchListBasis {
    /// Read from the build script on the release branch.
    Release,
    /// Read from a real installed wheel.
    Observed,
    /// Read from a main-branch build script of that era; the release may differ.
    Snapshot,
}

impl ArchListBasis {
    pub fn describe(&self) -> &'static str {
        match self {
            ArchListBasis::Release => "from the release branch's build script",
            ArchListBasis::Observed => "observed in an installed wheel",
            ArchListBasis::Snapshot => {
                "from a main-branch build script of that era; the release may differ"
            }
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArchListRow {
    pub torch: Vec<String>,
    pub variant: String,
    pub archs: Vec<String>,
    pub basis: ArchListBasis,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TorchReleaseRow {
    pub version: String,
    #[serde(default)]
    pub variants: Vec<String>,
    #[serde(default)]
    pub variants_incomplete: bool,
    #[serde(default)]
    pub pypi_default: Option<String>,
    #[serde(default)]
    pub torchvision: Option<String>,
    #[serde(default)]
    pub torchaudio: Option<String>,
    #[serde(default)]
    pub torchaudio_absent: Option<String>,
    #[serde(default)]
    pub python: Vec<String>,
    #[serde(default)]
    pub torchvision_python: Vec<String>,
    #[serde(default)]
    pub torchaudio_python: Vec<String>,
    #[serde(default)]
    pub notes: Vec<String>,
    pub sources: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_name_has_embedded_text() {
        for name in FILE_NAMES {
            assert!(embedded_text(name).is_some(), "{name} not embedded");
        }
        assert!(embedded_text("nope.toml").is_none());
    }

    #[test]
    fn arch_range_can_target() {
        let r = ArchRange {
            from: CudaVersion::new(12, 0),
            to: CudaVersion::new(12, 6),
            lowest: Some(ComputeCapability::new(5, 0)),
            highest: Some(ComputeCapability::new(9, 0)),
            note: None,
            source: "test".into(),
            secondary: false,
        };
        assert_eq!(r.can_target(ComputeCapability::new(8, 6)), Some(true));
        assert_eq!(r.can_target(ComputeCapability::new(3, 7)), Some(false));
        assert_eq!(r.can_target(ComputeCapability::new(12, 0)), Some(false));
        let open = ArchRange { highest: None, ..r };
        assert_eq!(open.can_target(ComputeCapability::new(12, 0)), None);
        assert_eq!(open.can_target(ComputeCapability::new(3, 7)), Some(false));
    }
}

/// `xid.toml`: NVIDIA's Xid events, what each means and the next action.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct XidFile {
    pub schema_version: u32,
    #[serde(default)]
    pub xid: Vec<XidEvent>,
}
impl HasSchema for XidFile {
    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}

/// What the catalogue says to do first after an Xid event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum XidAction {
    /// Restart the application; the GPU stays usable.
    RestartApp,
    /// Reset the GPU (drain its jobs first).
    Reset,
    /// Restart the machine.
    Reboot,
    /// Take the GPU out of service and have it replaced.
    DrainAndReplace,
    /// Check the application.
    CheckApp,
    /// Nothing of its own: follow the Xid it accompanies.
    None,
    /// Collect a bug report and contact NVIDIA support.
    ContactSupport,
}

impl XidAction {
    /// How urgent the action is (higher first): a GPU's most urgent event names its next step.
    pub fn urgency(action: Option<XidAction>) -> u8 {
        match action {
            Some(XidAction::DrainAndReplace) => 6,
            Some(XidAction::Reboot) => 5,
            Some(XidAction::Reset) => 4,
            Some(XidAction::ContactSupport) => 3,
            Some(XidAction::CheckApp | XidAction::RestartApp) => 2,
            Some(XidAction::None) | None => 1,
        }
    }

    /// Whether the catalogue takes the GPU out of service for it (reset, reboot, replace,
    /// support): a fault of the GPU rather than of the application.
    pub fn is_fault(action: Option<XidAction>) -> bool {
        XidAction::urgency(action) >= 3
    }
}

/// One Xid event of NVIDIA's catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidEvent {
    pub xid: u32,
    pub name: String,
    pub meaning: String,
    #[serde(default)]
    pub causes: Vec<String>,
    #[serde(default)]
    pub action: Option<XidAction>,
    pub action_text: String,
    #[serde(default)]
    pub dcgm_fr: Option<String>,
    pub sources: Vec<String>,
    #[serde(default)]
    pub secondary: bool,
}

#[cfg(test)]
mod date_tests {
    use super::*;

    #[test]
    fn the_data_date_is_the_newest_date_the_files_name() {
        assert_eq!(
            newest_date("read 2026-11-30, 2026-12-01; id 12026-13-01 2026-13-40 x"),
            Some("2026-12-01".into())
        );
        assert_eq!(newest_date("no date"), None);
        let date = embedded_data_date().expect("the data files name dates");
        assert!(date.as_str() >= "2026-11-30", "{date}");
    }
}
