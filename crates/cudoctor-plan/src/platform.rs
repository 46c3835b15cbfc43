//! What the platform and the GPUs' driver branches allow: which variants exist for the
//! platform, the commands that install one there, and the driver branches every GPU works with.

use cudoctor_kb::{DriverVersion, Kb, Platform, TorchRelease, TorchVariant};

use crate::choose::gpu_label;
use crate::commands as cmds;
use crate::model::{Commands, ResolvedGpu};

/// Where NVIDIA publishes PyTorch for Jetson: its JetPack builds, one per JetPack release.
pub(crate) const JETSON_SOURCE: &str = "NVIDIA 'PyTorch for Jetson' (forums.developer.nvidia.com/t/pytorch-for-jetson/72048) and 'Installing PyTorch for Jetson Platform' (docs.nvidia.com/deeplearning/frameworks/install-pytorch-jetson-platform/): pip wheels built for each JetPack release, to be installed on the Jetson itself";

/// The driver branch of a driver version on a platform. Linux versions name their branch
/// (580.65.06 is R580); Windows numbers run past it (581.42 is R580), so a Windows driver
/// belongs to the newest known branch at or below its major number.
pub fn branch_of(kb: &Kb, platform: Platform, d: &DriverVersion) -> u32 {
    if platform != Platform::Windows {
        return d.branch();
    }
    kb.driver_branches()
        .iter()
        .map(|b| b.branch)
        .filter(|b| *b <= d.branch())
        .max()
        .unwrap_or(d.branch())
}

/// The driver branches every GPU works with: the highest first branch and the lowest last one,
/// each with the GPU that sets it.
#[derive(Debug, Clone, Default)]
pub(crate) struct DriverRange {
    pub first: Option<(u32, String)>,
    pub last: Option<(u32, String)>,
    pub sources: Vec<String>,
}

pub(crate) fn driver_range(gpus: &[ResolvedGpu]) -> DriverRange {
    let mut r = DriverRange::default();
    for g in gpus {
        let b = &g.branches;
        if let Some(f) = b.first {
            if r.first.as_ref().is_none_or(|(x, _)| f > *x) {
                r.first = Some((f, gpu_label(g)));
            }
        }
        if let Some(l) = b.last {
            if r.last.as_ref().is_none_or(|(x, _)| l < *x) {
                r.last = Some((l, gpu_label(g)));
            }
        }
        if let Some(s) = &b.source {
            if !r.sources.contains(s) {
                r.sources.push(s.clone());
            }
        }
    }
    r
}

impl DriverRange {
    /// Why driver `d` does not drive these GPUs, when it does not.
    pub(crate) fn rejects(&self, kb: &Kb, platform: Platform, d: &DriverVersion) -> Option<String> {
        let branch = branch_of(kb, platform, d);
        if let Some((last, who)) = &self.last {
            if branch > *last {
                return Some(format!(
                    "driver {d} (R{branch}) does not drive {who}: R{last} is the last driver branch for it"
                ));
            }
        }
        if let Some((first, who)) = &self.first {
            if branch < *first {
                return Some(format!(
                    "driver {d} (R{branch}) does not drive {who}: it needs R{first} or newer"
                ));
            }
        }
        None
    }

    /// Why a build cannot run on any driver these GPUs work with (the least driver its CUDA
    /// needs is past the last branch), when it cannot.
    pub(crate) fn caps(
        &self,
        kb: &Kb,
        platform: Platform,
        release: &TorchRelease,
        variant: &TorchVariant,
    ) -> Option<String> {
        let (last, who) = self.last.as_ref()?;
        let label = format!("torch {} {}", release.version, variant.tag);
        match kb.least_driver_for(platform, variant.cuda) {
            Some(least) if branch_of(kb, platform, &least) <= *last => None,
            Some(least) => Some(format!(
                "{label} needs driver >= {least} for CUDA {}, past R{last}, the last driver branch for {who}",
                variant.cuda
            )),
            None => Some(format!(
                "{label}: the least driver for CUDA {} is not in the knowledge base, so whether R{last} (the last branch for {who}) runs it is not known",
                variant.cuda
            )),
        }
    }

    /// The branch to install for a build of CUDA `least` needs: at least the GPUs' first branch,
    /// at most their last.
    pub(crate) fn branch_for(
        &self,
        kb: &Kb,
        platform: Platform,
        least: Option<&DriverVersion>,
    ) -> Option<String> {
        let need = least.map(|l| branch_of(kb, platform, l));
        let low = match (need, self.first.as_ref().map(|(f, _)| *f)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        match (low, &self.last) {
            (Some(l), Some((last, _))) if l == *last => Some(format!("R{last}")),
            (Some(l), Some((last, _))) => Some(format!("R{l} - R{last}")),
            (None, Some((last, _))) => Some(format!("R{last} or older")),
            (Some(l), None) => Some(format!("R{l} or newer")),
            (None, None) => None,
        }
    }
}

/// The CUDA variants of `release` that exist for `platform`, or why this knowledge base offers
/// none there.
pub(crate) fn variants<'k>(
    kb: &Kb,
    platform: Platform,
    release: &'k TorchRelease,
) -> Result<Vec<&'k TorchVariant>, String> {
    match platform {
        Platform::LinuxX86_64 | Platform::Windows => kb
            .platform_variants(platform, release)
            .map(|(v, _)| v)
            .ok_or_else(|| {
                format!(
                    "the {} variants of torch {} are not in the knowledge base",
                    platform.describe(),
                    release.version
                )
            }),
        Platform::LinuxAarch64 => match kb.pypi_build(platform, &release.version) {
            Some("cpu") => Err(format!(
                "torch {}'s aarch64 wheel on PyPI is the CPU build, and its aarch64 CUDA builds on PyTorch's index are not in the knowledge base",
                release.version
            )),
            Some(tag) => release
                .variant(tag)
                .map(|v| vec![v])
                .ok_or_else(|| format!("torch {} has no {tag} variant in the knowledge base", release.version)),
            None => Err(format!(
                "torch {}'s aarch64 builds are not in the knowledge base",
                release.version
            )),
        },
        Platform::Jetson => Err(format!(
            "torch {} from PyPI or PyTorch's index is not built for Jetson: Jetson runs NVIDIA's JetPack builds",
            release.version
        )),
    }
}

/// The install commands for `release` in variant `tag` on `platform`.
pub(crate) fn commands(kb: &Kb, platform: Platform, release: &TorchRelease, tag: &str) -> Commands {
    let mut c = cmds::commands(release, tag);
    match platform {
        Platform::LinuxX86_64 => {}
        Platform::Windows => {
            // PyPI's Windows wheel is the CPU build: only PyTorch's index serves CUDA ones.
            if tag != "cpu" {
                c.pip_pypi = None;
            }
            c.conda = None;
            c.notes.retain(|n| !n.starts_with("no conda command"));
            c.notes.push(
                "Windows: the commands take the build from PyTorch's index; a plain `pip install torch` from PyPI gets the CPU build there"
                    .into(),
            );
        }
        Platform::LinuxAarch64 => {
            // The one aarch64 CUDA build this knowledge base knows is PyPI's own.
            let plain = cmds::plain_pins(release).join(" ");
            c.pip = Some(format!("pip install {plain}"));
            c.uv = Some(format!("uv pip install {plain}"));
            c.pip_pypi = c.pip.clone();
            c.conda = None;
            c.notes.retain(|n| !n.starts_with("no conda command"));
            if let Some(row) = kb.pypi_build_row(platform, &release.version) {
                c.notes.push(format!(
                    "aarch64: PyPI's wheel of torch {} is the {tag} build ({})",
                    release.version, row.source
                ));
            }
        }
        Platform::Jetson => {
            c = Commands {
                notes: vec![format!("Jetson: {JETSON_SOURCE}")],
                ..Commands::default()
            };
        }
    }
    c
}

/// The driver a CUDA runtime needs on these GPUs: the branches to install, or why no driver
/// that drives them runs it (their last branch is older than the least driver for that CUDA).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverFor {
    /// Upgrade to `least` or newer, on `branches` ("R580 or newer", "R525 - R580").
    Upgrade {
        least: DriverVersion,
        branches: String,
        /// Sources of the GPUs' branch limits, when any applies.
        sources: Vec<String>,
    },
    /// No driver that drives `gpu` runs it: R`last` is its last branch.
    PastLastBranch {
        least: DriverVersion,
        last: u32,
        gpu: String,
        sources: Vec<String>,
    },
}

/// What driver the CUDA runtime `cuda` needs on `gpus` (names or sm_XY, as `plan --gpu`
/// takes them), by the GPUs' driver branches; None when the least driver for that CUDA is not
/// in the knowledge base.
pub fn driver_for_cuda(
    kb: &Kb,
    platform: Platform,
    gpus: &[String],
    cuda: cudoctor_kb::CudaVersion,
) -> Result<Option<DriverFor>, crate::PlanError> {
    let resolved = crate::resolve_gpus(kb, gpus)?;
    let range = driver_range(&resolved);
    let Some(least) = kb.least_driver_for(platform, cuda) else {
        return Ok(None);
    };
    if let Some((last, who)) = &range.last {
        if branch_of(kb, platform, &least) > *last {
            return Ok(Some(DriverFor::PastLastBranch {
                least,
                last: *last,
                gpu: who.clone(),
                sources: range.sources,
            }));
        }
    }
    let branches = range
        .branch_for(kb, platform, Some(&least))
        .unwrap_or_else(|| format!("R{} or newer", branch_of(kb, platform, &least)));
    Ok(Some(DriverFor::Upgrade {
        least,
        branches,
        sources: range.sources,
    }))
}
