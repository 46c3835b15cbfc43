//! Judging one (release, variant) against the machine: driver, every GPU, Python.

use cudoctor_kb::{
    Coverage, DriverSupport, DriverVersion, Kb, Platform, TorchRelease, TorchVariant,
};

use crate::model::ResolvedGpu;

/// How well a variant's kernels reach one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GpuFit {
    /// The variant's own arch list has code for it. `jit` when only PTX reaches it.
    Yes { how: String, jit: bool },
    /// The variant's list is unknown; the nearest known list of the same CUDA tag has code.
    Likely { how: String, jit: bool },
    /// No list of this tag is known at all.
    Unknown { how: String },
    /// No kernel image (known, or inferred from the nearest known list of the same tag).
    No { why: String },
}

impl GpuFit {
    pub(crate) fn is_no(&self) -> bool {
        matches!(self, GpuFit::No { .. })
    }
    pub(crate) fn is_known_good(&self) -> bool {
        matches!(self, GpuFit::Yes { .. } | GpuFit::Likely { .. })
    }
    pub(crate) fn needs_jit(&self) -> bool {
        matches!(
            self,
            GpuFit::Yes { jit: true, .. } | GpuFit::Likely { jit: true, .. }
        )
    }
    pub(crate) fn text(&self) -> &str {
        match self {
            GpuFit::Yes { how, .. } | GpuFit::Likely { how, .. } | GpuFit::Unknown { how } => how,
            GpuFit::No { why } => why,
        }
    }
}

fn describe(c: Coverage, gpu: &ResolvedGpu) -> (String, bool) {
    let sm = gpu.cc.sm();
    match c {
        Coverage::Native => (format!("has {sm} machine code"), false),
        Coverage::BinaryCompatible { from } => (
            format!("has {} machine code, which runs on {sm}", from.sm()),
            false,
        ),
        Coverage::PtxJit { from } => (
            format!(
                "has only {} PTX for {sm}: the driver JIT-compiles it at first use (slow start)",
                from.compute()
            ),
            true,
        ),
        Coverage::Missing => (format!("has no kernel image for {sm}"), false),
    }
}

/// The same-tag variant with a known arch list in the release nearest to `release`.
fn nearest_known<'k>(
    kb: &'k Kb,
    release: &TorchRelease,
    tag: &str,
) -> Option<(&'k TorchRelease, &'k TorchVariant)> {
    let releases = kb.torch_releases();
    let here = releases.iter().position(|r| r.version == release.version)?;
    releases
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let v = r.variant(tag)?;
            v.arch_list.as_ref()?;
            // Prefer the closer release; on a tie, the newer one.
            Some((here.abs_diff(i), std::cmp::Reverse(i), r, v))
        })
        .min_by_key(|(d, newer, _, _)| (*d, *newer))
        .map(|(_, _, r, v)| (r, v))
}

pub(crate) fn gpu_fit(
    kb: &Kb,
    release: &TorchRelease,
    variant: &TorchVariant,
    gpu: &ResolvedGpu,
) -> GpuFit {
    let label = format!("torch {} {}", release.version, variant.tag);
    if let Some(c) = variant.coverage(gpu.cc) {
        let basis = variant
            .arch_list_basis
            .map(|b| b.describe())
            .unwrap_or("source not recorded");
        let (how, jit) = describe(c, gpu);
        let how = format!("{label} {how}; arch list {basis}");
        return if c.runs() {
            GpuFit::Yes { how, jit }
        } else {
            GpuFit::No { why: how }
        };
    }
    // A GPU older than the lowest architecture the variant's nvcc can compile for has no code
    // in any build with that toolkit (PTX only runs forward, on newer GPUs).
    if let Some(range) = kb.nvcc_arch_range(variant.cuda) {
        if range.lowest.is_some_and(|low| gpu.cc < low) {
            return GpuFit::No {
                why: format!(
                    "{label}: CUDA {}'s nvcc compiles for {} and newer only, so no {} build has code for {}",
                    variant.cuda,
                    range.lowest.map(|l| l.sm()).unwrap_or_default(),
                    variant.tag,
                    gpu.cc.sm()
                ),
            };
        }
    }
    match nearest_known(kb, release, &variant.tag) {
        Some((r, v)) => {
            let Some(c) = v.coverage(gpu.cc) else {
                return GpuFit::Unknown {
                    how: format!("{label}: arch list unknown"),
                };
            };
            let (how, jit) = describe(c, gpu);
            let text = format!(
                "{label}: arch list not confirmed; the nearest known {} list (torch {}) {how}",
                v.tag, r.version
            );
            if c.runs() {
                GpuFit::Likely { how: text, jit }
            } else {
                GpuFit::No { why: text }
            }
        }
        None => GpuFit::Unknown {
            how: format!(
                "{label}: arch list unknown (no {} build's list is known), so {} support is not confirmed",
                variant.tag,
                gpu.cc.sm()
            ),
        },
    }
}

/// The arch lists were read from the Linux x86_64 wheels: on another platform a list that
/// reaches the GPU makes coverage likely, not confirmed.
fn on_platform(platform: Platform, fit: GpuFit) -> GpuFit {
    if platform == Platform::LinuxX86_64 {
        return fit;
    }
    match fit {
        GpuFit::Yes { how, jit } => GpuFit::Likely {
            how: format!(
                "{how} (read for the Linux x86_64 wheel; the {} build's own list is not in the knowledge base)",
                platform.describe()
            ),
            jit,
        },
        other => other,
    }
}

/// One (release, variant) judged against the machine.
#[derive(Debug, Clone)]
pub(crate) struct Fit<'k> {
    pub release: &'k TorchRelease,
    pub variant: &'k TorchVariant,
    /// None when no driver is known.
    pub driver: Option<DriverSupport>,
    pub gpus: Vec<GpuFit>,
}

impl<'k> Fit<'k> {
    pub(crate) fn new(
        kb: &Kb,
        platform: Platform,
        release: &'k TorchRelease,
        variant: &'k TorchVariant,
        driver: Option<&DriverVersion>,
        gpus: &[ResolvedGpu],
    ) -> Fit<'k> {
        Fit {
            release,
            variant,
            driver: driver.map(|d| kb.driver_support_on(platform, d, variant.cuda)),
            gpus: gpus
                .iter()
                .map(|g| on_platform(platform, gpu_fit(kb, release, variant, g)))
                .collect(),
        }
    }

    /// Why this build cannot work here, if it cannot.
    pub(crate) fn rejection(&self, driver: Option<&DriverVersion>) -> Option<String> {
        let label = format!("torch {} {}", self.release.version, self.variant.tag);
        if let (Some(support), Some(d)) = (&self.driver, driver) {
            match support {
                DriverSupport::TooOld {
                    needed_native,
                    needed_floor,
                } => {
                    let need = needed_floor
                        .as_ref()
                        .or(needed_native.as_ref())
                        .map(|n| format!("driver >= {n}"))
                        .unwrap_or_else(|| "a newer driver".into());
                    return Some(format!(
                        "{label} needs {need} for CUDA {}; this driver is {d}",
                        self.variant.cuda
                    ));
                }
                DriverSupport::Unknown => {
                    return Some(format!(
                        "{label}: whether driver {d} runs CUDA {} is not known",
                        self.variant.cuda
                    ))
                }
                DriverSupport::MinorVersionCompat { .. } => {
                    if self.gpus.iter().any(GpuFit::needs_jit) {
                        return Some(format!(
                            "{label} reaches a GPU only through PTX JIT, which NVIDIA's minor-version compatibility (driver {d} below CUDA {}'s own minimum) does not support",
                            self.variant.cuda
                        ));
                    }
                }
                DriverSupport::Native => {}
            }
        }
        self.gpus
            .iter()
            .find(|g| g.is_no())
            .map(|g| g.text().to_string())
    }

    pub(crate) fn all_gpus_known_good(&self) -> bool {
        self.gpus.iter().all(GpuFit::is_known_good)
    }

    pub(crate) fn native_driver(&self) -> bool {
        matches!(self.driver, None | Some(DriverSupport::Native))
    }

    /// Sort key among acceptable variants of one release: larger is better.
    pub(crate) fn preference(&self) -> (bool, bool, bool, cudoctor_kb::CudaVersion) {
        (
            self.all_gpus_known_good(),
            !self.gpus.iter().any(GpuFit::needs_jit),
            self.native_driver(),
            self.variant.cuda,
        )
    }
}
