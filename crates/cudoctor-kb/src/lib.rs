//! cudoctor's knowledge base: the sourced version tables of the CUDA stack, embedded at build
//! time and queried through typed functions.
//!
//! Tables (one TOML file each under `data/`, every row with its source):
//! toolkit -> minimum driver, driver branch -> highest CUDA, minor-version compatibility floors,
//! PyTorch release -> CUDA variants / PyPI default / torchvision / torchaudio / Python,
//! variant -> TORCH_CUDA_ARCH_LIST, GPU name -> compute capability, toolkit -> nvcc arch range.
//! Unknown facts are absent and every query says so with `None` / `Unknown`.

mod data;
mod error;
mod gpu;
mod invariants;
mod platform;
mod support;
mod torch;

use std::path::Path;
use std::sync::OnceLock;

pub use cudoctor_types::{ComputeCapability, CudaVersion, DriverVersion, VersionError};
pub use data::embedded_data_date;
pub use data::{
    ArchListBasis, ArchRange, DriverBranch, GpuModel, JaxPluginReleases, JaxReleases, MinorCompat,
    PlatformIndex, PypiBuild, ToolkitFeature, ToolkitRelease, TorchFloor, XidAction, XidEvent,
    FILE_NAMES, SCHEMA_VERSION,
};
pub use error::KbError;
pub use gpu::{name_words, CcSource, NamedGpu, UnknownGpu};
pub use platform::{Platform, UnknownPlatform};
pub use support::DriverSupport;
pub use torch::{
    coverage, python_series, ArchEntry, Coverage, TorchRelease, TorchVariant, TorchVersion,
};

use data::Texts;

/// The driver branches a GPU works with, from `gpus.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct GpuBranches {
    /// The oldest branch that drives it (R570 for the RTX 50-series); None: no floor known.
    pub first: Option<u32>,
    /// The newest branch that drives it (R470 for Kepler); None: still supported or unknown.
    pub last: Option<u32>,
    pub source: Option<String>,
    pub secondary: bool,
    /// Every row of it is a Jetson module (driver from JetPack).
    pub jetson: bool,
}

/// The loaded tables. Obtain with [`Kb::embedded`] or [`Kb::from_dir`].
#[derive(Debug, Clone)]
pub struct Kb {
    toolkits: Vec<ToolkitRelease>,
    branches: Vec<DriverBranch>,
    minor_compat: Vec<MinorCompat>,
    torch: Vec<TorchRelease>,
    gpus: Vec<GpuModel>,
    nvcc: Vec<ArchRange>,
    toolkit_features: Vec<data::ToolkitFeature>,
    torch_floors: Vec<data::TorchFloor>,
    pypi_builds: Vec<PypiBuild>,
    platform_indexes: Vec<PlatformIndex>,
    jax_releases: Vec<JaxReleases>,
    jax_plugins: Vec<JaxPluginReleases>,
    xids: Vec<XidEvent>,
    /// Arch-list rows that name a release or variant absent from the torch table.
    dangling_arch_lists: Vec<String>,
}

static EMBEDDED: OnceLock<Result<Kb, String>> = OnceLock::new();

impl Kb {
    /// The tables built into this binary, parsed once.
    ///
    /// # Panics
    /// Only if the embedded data is broken, which the crate's tests rule out before release.
    pub fn embedded() -> &'static Kb {
        match Kb::try_embedded() {
            Ok(kb) => kb,
            Err(e) => panic!("cudoctor's embedded knowledge base is invalid: {e}"),
        }
    }

    /// The embedded tables, or why they failed to load (for callers that must never panic).
    pub fn try_embedded() -> Result<&'static Kb, &'static str> {
        EMBEDDED
            // The embedded tables cannot change after the build, and their invariants are a test
            // (tests/known_rows.rs: embedded_data_is_consistent); checking them again on every
            // run would cost a release binary a fifth of a check's time. Debug builds still do.
            .get_or_init(|| {
                Kb::build(&Texts::embedded(), cfg!(debug_assertions)).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Embedded tables with files of the same names from `dir` (a user's newer data) replacing
    /// them. The result must pass the same consistency checks as the embedded data.
    pub fn from_dir(dir: &Path) -> Result<Kb, KbError> {
        Kb::build(&Texts::overlay_dir(dir)?, true)
    }

    /// The tables assembled; `verify` checks their invariants too (always for a user's data).
    fn build(texts: &Texts, verify: bool) -> Result<Kb, KbError> {
        let toolkits: data::ToolkitsFile = texts.parse(data::TOOLKITS)?;
        let drivers: data::DriversFile = texts.parse(data::DRIVERS)?;
        let minor: data::MinorCompatFile = texts.parse(data::MINOR_COMPAT)?;
        let torch_file: data::TorchFile = texts.parse(data::TORCH)?;
        let arch_lists: data::ArchListsFile = texts.parse(data::ARCH_LISTS)?;
        let gpus: data::GpusFile = texts.parse(data::GPUS)?;
        let nvcc: data::NvccFile = texts.parse(data::NVCC)?;
        let features: data::ToolkitFeaturesFile = texts.parse(data::TOOLKIT_FEATURES)?;
        let floors: data::TorchFloorsFile = texts.parse(data::TORCH_FLOORS)?;
        let platforms: data::PlatformsFile = texts.parse(data::PLATFORMS)?;
        let jax: data::JaxFile = texts.parse(data::JAX)?;
        let xid: data::XidFile = texts.parse(data::XID)?;

        let (torch, dangling_arch_lists) =
            invariants::assemble_torch(torch_file.release, &arch_lists.arch_list)?;

        let mut toolkits = toolkits.toolkit;
        toolkits.sort_by(|a, b| {
            a.version
                .cmp(&b.version)
                .then(a.linux_min_driver.cmp(&b.linux_min_driver))
        });
        let mut branches = drivers.branch;
        branches.sort_by_key(|b| b.branch);
        let mut nvcc = nvcc.range;
        nvcc.sort_by_key(|r| r.from);

        let kb = Kb {
            toolkits,
            branches,
            minor_compat: minor.major,
            torch,
            gpus: gpus.gpu,
            nvcc,
            toolkit_features: features.feature,
            torch_floors: floors.floor,
            pypi_builds: platforms.pypi_build,
            platform_indexes: platforms.index,
            jax_releases: jax.jax,
            jax_plugins: jax.plugin,
            xids: xid.xid,
            dangling_arch_lists,
        };
        let problems = if verify {
            kb.check_invariants()
        } else {
            Vec::new()
        };
        if problems.is_empty() {
            Ok(kb)
        } else {
            Err(KbError::Invariants(problems))
        }
    }

    /// Every inconsistency in the tables (empty when sound). See `invariants.rs` for the list.
    pub fn check_invariants(&self) -> Vec<String> {
        invariants::check(self)
    }

    // ---- Xid events ----------------------------------------------------------------------------

    /// NVIDIA's catalogue row of Xid `xid`, from `xid.toml`; `None` for an Xid it does not hold.
    pub fn xid(&self, xid: u32) -> Option<&XidEvent> {
        self.xids.iter().find(|x| x.xid == xid)
    }

    /// Every Xid row.
    pub fn xids(&self) -> &[XidEvent] {
        &self.xids
    }

    // ---- JAX ---------------------------------------------------------------------------------

    /// Whether `jax[cuda<major>]==<jax>` has its CUDA plugin (`jax-cuda<major>-plugin==<jax>`)
    /// for CPython `python` (`3.11`) on Linux x86_64, from `jax.toml`: `Some(true)` served,
    /// `Some(false)` the table knows that jax release for that Python and no such plugin,
    /// `None` unknown (a release or Python the table does not list).
    pub fn jax_cuda_plugin_exists(&self, major: u32, jax: &str, python: &str) -> Option<bool> {
        let known = self
            .jax_releases
            .iter()
            .any(|r| r.python == python && r.releases.iter().any(|v| v == jax));
        if !known {
            return None;
        }
        Some(self.jax_plugins.iter().any(|p| {
            p.cuda_major == major && p.python == python && p.releases.iter().any(|v| v == jax)
        }))
    }

    /// The row that says `jax_cuda_plugin_exists`: its source.
    pub fn jax_plugin_source(&self, major: u32, python: &str) -> Option<&str> {
        self.jax_plugins
            .iter()
            .find(|p| p.cuda_major == major && p.python == python)
            .map(|p| p.source.as_str())
    }

    // ---- toolkit features and torch floors ---------------------------------------------------

    /// Every toolkit feature with its first release (`toolkit_features.toml`).
    pub fn toolkit_features(&self) -> &[data::ToolkitFeature] {
        &self.toolkit_features
    }

    /// The feature an nvcc flag belongs to (`--apply-controls`, or `--apply-controls=f.acf`).
    pub fn nvcc_flag(&self, flag: &str) -> Option<&data::ToolkitFeature> {
        let name = flag.split('=').next().unwrap_or(flag);
        self.toolkit_features
            .iter()
            .find(|f| f.flags.iter().any(|x| x == name))
    }

    /// The floors of torch features (`torch_floors.toml`).
    pub fn torch_floors(&self) -> &[data::TorchFloor] {
        &self.torch_floors
    }

    // ---- driver and toolkit ------------------------------------------------------------------

    /// The highest CUDA the driver's branch runs natively (nvidia-smi's "CUDA Version");
    /// None when the branch is unknown or its value unconfirmed (R565, R615).
    pub fn driver_max_cuda(&self, d: &DriverVersion) -> Option<CudaVersion> {
        self.driver_branch(d.branch())?.max_cuda
    }

    /// The table row of a driver branch.
    pub fn driver_branch(&self, branch: u32) -> Option<&DriverBranch> {
        self.branches.iter().find(|b| b.branch == branch)
    }

    /// The minimum Linux x86_64 driver of the toolkit's GA release (release candidates ignored).
    pub fn toolkit_min_driver(&self, c: CudaVersion) -> Option<DriverVersion> {
        self.toolkit_ga(c).map(|t| t.linux_min_driver.clone())
    }

    /// The minimum Windows x86_64 driver of the toolkit's GA release, where NVIDIA lists one.
    pub fn toolkit_min_driver_windows(&self, c: CudaVersion) -> Option<DriverVersion> {
        self.toolkit_ga(c)?.windows_min_driver.clone()
    }

    /// The GA row of a toolkit version (the lowest-driver non-RC row).
    pub fn toolkit_ga(&self, c: CudaVersion) -> Option<&ToolkitRelease> {
        self.toolkits
            .iter()
            .filter(|t| t.version == c && !t.is_release_candidate())
            .min_by(|a, b| a.linux_min_driver.cmp(&b.linux_min_driver))
    }

    /// NVIDIA's minor-version compatibility floor (Linux) for a CUDA major:
    /// 11 -> 450.80.02, 12 -> 525.60.13, 13 -> 580 (NVIDIA states the branch only).
    pub fn minor_compat_floor(&self, cuda_major: u32) -> Option<DriverVersion> {
        self.minor_compat_row(cuda_major)
            .map(|m| m.linux_floor.clone())
    }

    /// The full minor-version compatibility row of a CUDA major.
    pub fn minor_compat_row(&self, cuda_major: u32) -> Option<&MinorCompat> {
        self.minor_compat
            .iter()
            .find(|m| m.cuda_major == cuda_major)
    }

    /// Whether a (Linux) driver runs code built for CUDA `c`, and in which mode.
    pub fn driver_support(&self, d: &DriverVersion, c: CudaVersion) -> DriverSupport {
        support::driver_support(self, Platform::LinuxX86_64, d, c)
    }

    /// The same on `platform`: Windows drivers against the toolkits' Windows minimums and the
    /// Windows minor-version floors; every Linux platform against the Linux values.
    pub fn driver_support_on(
        &self,
        platform: Platform,
        d: &DriverVersion,
        c: CudaVersion,
    ) -> DriverSupport {
        support::driver_support(self, platform, d, c)
    }

    /// The least driver that runs CUDA `c` on `platform` at all: the minor-version floor of its
    /// major where that applies (11.1 and later), else the toolkit's own minimum.
    pub fn least_driver_for(&self, platform: Platform, c: CudaVersion) -> Option<DriverVersion> {
        let windows = platform == Platform::Windows;
        let floor = (c >= CudaVersion::new(11, 1))
            .then(|| self.minor_compat_row(c.major))
            .flatten()
            .and_then(|m| {
                if windows {
                    m.windows_floor.clone()
                } else {
                    Some(m.linux_floor.clone())
                }
            });
        floor.or_else(|| {
            if windows {
                self.toolkit_min_driver_windows(c)
            } else {
                self.toolkit_min_driver(c)
            }
        })
    }

    // ---- platforms ---------------------------------------------------------------------------

    /// The build a plain install from PyPI gets for `torch` on `platform` ("cpu", "cu130").
    /// Linux x86_64 answers from the torch table's `pypi_default`; None: not known.
    pub fn pypi_build(&self, platform: Platform, torch: &str) -> Option<&str> {
        if platform == Platform::LinuxX86_64 {
            return self.torch(torch)?.pypi_default.as_deref();
        }
        self.pypi_build_row(platform, torch)
            .map(|b| b.build.as_str())
    }

    /// The row behind [`Kb::pypi_build`] for a platform other than Linux x86_64.
    pub fn pypi_build_row(&self, platform: Platform, torch: &str) -> Option<&PypiBuild> {
        self.pypi_builds
            .iter()
            .find(|b| b.platform == platform && b.torch.iter().any(|t| t == torch))
    }

    /// The CUDA variants of `release` on PyTorch's index for `platform`, with the source of
    /// the list; None when this knowledge base has no list for the platform.
    pub fn platform_variants<'a, 'k>(
        &'a self,
        platform: Platform,
        release: &'k TorchRelease,
    ) -> Option<(Vec<&'k TorchVariant>, Option<&'a str>)> {
        if platform == Platform::LinuxX86_64 {
            return Some((release.variants.iter().collect(), None));
        }
        let row = self
            .platform_indexes
            .iter()
            .find(|r| r.platform == platform && r.same_as == Platform::LinuxX86_64)?;
        let absent = |tag: &str| {
            row.absent
                .iter()
                .any(|a| a.split_once(' ') == Some((release.version.as_str(), tag)))
        };
        Some((
            release
                .variants
                .iter()
                .filter(|v| !absent(&v.tag))
                .collect(),
            Some(row.source.as_str()),
        ))
    }

    pub fn pypi_builds(&self) -> &[PypiBuild] {
        &self.pypi_builds
    }
    pub fn platform_indexes(&self) -> &[PlatformIndex] {
        &self.platform_indexes
    }

    // ---- GPUs and driver branches ------------------------------------------------------------

    /// The driver branches that drive a GPU: from its product row when named, else from every
    /// (non-Jetson) row of its capability when they agree.
    pub fn gpu_branches(&self, cc: ComputeCapability, model: Option<&GpuModel>) -> GpuBranches {
        let of_cc: Vec<&GpuModel> = self.gpus.iter().filter(|g| g.cc == cc).collect();
        let jetson = match model {
            Some(m) => m.jetson,
            None => !of_cc.is_empty() && of_cc.iter().all(|g| g.jetson),
        };
        let rows: Vec<&GpuModel> = match model {
            Some(m) => vec![m],
            None => of_cc.into_iter().filter(|g| !g.jetson).collect(),
        };
        let agree = |f: fn(&GpuModel) -> Option<u32>| -> Option<u32> {
            let first = f(rows.first()?)?;
            rows.iter().all(|g| f(g) == Some(first)).then_some(first)
        };
        let first = agree(|g| g.first_branch);
        let last = agree(|g| g.last_branch);
        let row = rows
            .iter()
            .find(|g| g.first_branch.is_some() || g.last_branch.is_some());
        GpuBranches {
            first,
            last,
            source: (first.is_some() || last.is_some())
                .then(|| row.and_then(|g| g.branch_source.clone()))
                .flatten(),
            secondary: row.is_some_and(|g| g.branch_secondary),
            jetson,
        }
    }

    // ---- PyTorch -----------------------------------------------------------------------------

    /// A release by version: "2.11.0", "2.11.0+cu130" (local part ignored) or a series "2.11"
    /// (its newest patch release in the table).
    pub fn torch(&self, version: &str) -> Option<&TorchRelease> {
        let wanted: TorchVersion = version.parse().ok()?;
        if wanted.parts.len() == 2 {
            let series = wanted.series();
            return self
                .torch
                .iter()
                .rfind(|r| r.parsed_version().is_some_and(|v| v.series() == series));
        }
        self.torch
            .iter()
            .find(|r| r.parsed_version().is_some_and(|v| v.parts == wanted.parts))
    }

    /// Every release, oldest first.
    pub fn torch_releases(&self) -> &[TorchRelease] {
        &self.torch
    }

    /// The newest release in the table.
    pub fn newest_torch(&self) -> Option<&TorchRelease> {
        self.torch.last()
    }

    /// Every (release, variant) whose CUDA this driver runs (natively or through minor-version
    /// compatibility), newest release first, newest CUDA first within a release.
    pub fn variants_for_driver(
        &self,
        d: &DriverVersion,
    ) -> Vec<(&TorchRelease, &TorchVariant, DriverSupport)> {
        let mut out = Vec::new();
        for release in self.torch.iter().rev() {
            for variant in release.variants.iter().rev() {
                let s = self.driver_support(d, variant.cuda);
                if s.runs() == Some(true) {
                    out.push((release, variant, s));
                }
            }
        }
        out
    }

    // ---- GPUs and nvcc -----------------------------------------------------------------------

    /// The product a reported GPU name stands for ("NVIDIA H200" -> H200, 9.0).
    pub fn gpu(&self, name: &str) -> Option<&GpuModel> {
        gpu::find(&self.gpus, name)
    }

    /// A GeForce generation named by its series and first digits ("RTX 50 series": `("rtx",
    /// 50)`), when its models share one capability ([`gpu::find_generation`]).
    pub fn gpu_generation(&self, series: &str, generation: u32) -> Option<&GpuModel> {
        gpu::find_generation(&self.gpus, series, generation)
    }

    /// The one reading of a GPU a person names (`--gpu`, a plan input): a compute capability
    /// in any spelling [`ComputeCapability`] parses ("sm_90", "SM_90", "9.0", "90"), else a
    /// product name this table knows ("RTX 4090", "NVIDIA H200").
    pub fn resolve_gpu(&self, given: &str) -> Result<NamedGpu<'_>, UnknownGpu> {
        if let Ok(cc) = given.parse::<ComputeCapability>() {
            let known = self.known_capabilities();
            if !known.contains(&cc) {
                return Err(UnknownGpu::Capability {
                    given: given.to_string(),
                    cc,
                    known: known
                        .iter()
                        .map(ComputeCapability::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            return Ok(NamedGpu {
                given: given.to_string(),
                cc,
                model: None,
            });
        }
        let model = self
            .gpu(given)
            .ok_or_else(|| UnknownGpu::Name(given.to_string()))?;
        Ok(NamedGpu {
            given: given.to_string(),
            cc: model.cc,
            model: Some(model),
        })
    }

    /// The compute capabilities of real GPUs, as far as the knowledge base knows them: those of
    /// its GPU rows and the ends of nvcc's architecture ranges. Sorted.
    pub fn known_capabilities(&self) -> Vec<ComputeCapability> {
        let mut ccs: Vec<ComputeCapability> = self
            .gpus
            .iter()
            .map(|g| g.cc)
            .chain(
                self.nvcc
                    .iter()
                    .flat_map(|r| r.lowest.into_iter().chain(r.highest)),
            )
            .collect();
        ccs.sort();
        ccs.dedup();
        ccs
    }

    /// The compute capability of a GPU a driver reported: the driver's own value when it gave
    /// one that parses, else the product's row found by the reported name.
    pub fn reported_gpu_cc(
        &self,
        reported: Option<&str>,
        name: &str,
    ) -> Option<(ComputeCapability, CcSource)> {
        match reported.and_then(|c| c.parse().ok()) {
            Some(cc) => Some((cc, CcSource::Reported)),
            None => self.gpu(name).map(|m| (m.cc, CcSource::ByName)),
        }
    }

    /// Every GPU row.
    pub fn gpus(&self) -> &[GpuModel] {
        &self.gpus
    }

    /// The arch range nvcc of toolkit `c` can compile for.
    pub fn nvcc_arch_range(&self, c: CudaVersion) -> Option<&ArchRange> {
        self.nvcc.iter().find(|r| r.contains_toolkit(c))
    }

    // ---- raw tables --------------------------------------------------------------------------

    pub fn toolkits(&self) -> &[ToolkitRelease] {
        &self.toolkits
    }
    pub fn driver_branches(&self) -> &[DriverBranch] {
        &self.branches
    }
    pub fn minor_compat(&self) -> &[MinorCompat] {
        &self.minor_compat
    }
    pub fn nvcc_ranges(&self) -> &[ArchRange] {
        &self.nvcc
    }
    /// The newest toolkit version in the table.
    pub fn newest_toolkit(&self) -> Option<CudaVersion> {
        self.toolkits.iter().map(|t| t.version).max()
    }
}

#[cfg(test)]
mod feature_tests {
    use super::*;

    #[test]
    fn toolkit_features_and_floors_are_sourced_and_found_by_flag() {
        let kb = Kb::embedded();
        assert!(!kb.toolkit_features().is_empty());
        for f in kb.toolkit_features() {
            assert!(!f.source.is_empty(), "{}", f.name);
            for flag in &f.flags {
                assert!(flag.starts_with('-'), "{flag}");
            }
        }
        let ac = kb.nvcc_flag("--apply-controls=my.acf").unwrap();
        assert_eq!(ac.since, CudaVersion::new(13, 3));
        assert_eq!(
            kb.nvcc_flag("-enable-tile").unwrap().since,
            CudaVersion::new(13, 3)
        );
        assert!(
            kb.nvcc_flag("--use_fast_math").is_none(),
            "unknown stays unknown"
        );
        for f in kb.torch_floors() {
            assert!(!f.source.is_empty());
            assert!(f.min_cc.is_some() || f.min_torch.is_some() || f.min_cuda.is_some());
        }
        assert!(kb.torch_floors().iter().any(
            |f| f.feature == "torch.compile" && f.min_cc == Some(ComputeCapability::new(7, 0))
        ));
    }
}
