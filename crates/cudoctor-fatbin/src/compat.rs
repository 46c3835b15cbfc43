//! Can a GPU run a library's kernels? Pure functions over architecture lists.
//!
//! The rules, from NVIDIA's documentation:
//!
//! * **SASS (cubin) binary compatibility** — "a cubin generated for compute capability X.y will
//!   only execute on devices of compute capability X.z where z ≥ y" (CUDA C++ Programming
//!   Guide, "Binary Compatibility"). So `sm_80` runs on 8.0 and 8.6, never on 9.0.
//! * **`a`, architecture-specific targets** (sm_90a, sm_100a; since CUDA 12.0): code using the
//!   architecture-specific feature set "runs only on exactly that compute capability" — no
//!   forward compatibility at all, neither to later minors nor later majors (Programming Guide,
//!   "Feature Availability": architecture-specific features; NVIDIA technical blog "NVIDIA
//!   Blackwell and NVIDIA CUDA 12.9 Introduce Family-Specific Architecture Features").
//! * **`f`, family-specific targets** (sm_100f, sm_120f; since CUDA 12.9): code runs on devices
//!   of the same family — the same major with an equal or higher minor (`sm_100f` on 10.0 and
//!   10.3; `sm_103f` on 10.3 only) — and not on other majors (same blog post).
//! * **PTX** — "PTX code produced for some specific compute capability can always be compiled to
//!   binary code of greater or equal compute capability" (Programming Guide, "Application
//!   Compatibility"); the driver JIT-compiles it at first launch. `compute_XXa` PTX only for
//!   exactly XX, `compute_XXf` only within the family, by the same rules as above.
//! * **PTX newer than the driver** — the driver can only JIT PTX whose ISA version is not newer
//!   than its own CUDA version; minor-version compatibility does not cover it (NVIDIA "CUDA
//!   Compatibility", minor version compatibility limitations). The ISA → CUDA table below is
//!   NVIDIA's "PTX ISA release history" as transcribed in `cuda-python`
//!   (`cuda/bindings/utils/_ptx_utils.py`, `get_minimal_required_cuda_ver_from_ptx_ver`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::arch::{Arch, ArchKind, Variant};
use crate::scan::FileImages;
/// The one compute capability and CUDA version of the workspace (cudoctor-types).
pub use cudoctor_types::{ComputeCapability, CudaVersion};

/// `(PTX ISA (major, minor), CUDA (major, minor))`.
type IsaRow = ((u32, u32), (u32, u32));

/// PTX ISA version → first CUDA release (toolkit and driver) that handles it.
///
/// Source: NVIDIA's PTX ISA release history, as transcribed by NVIDIA in `cuda-python`
/// (`cuda/bindings/utils/_ptx_utils.py`, rows 6.0 … 9.1); 9.5 ↔ 13.5 from our own build with
/// `nvidia-cuda-nvcc` 13.5.37, whose PTX says `.version 9.5` (tests/nvcc.rs checks it). ISA
/// versions between rows are not guessed: see [`min_cuda_for_ptx_isa`].
const PTX_ISA_TO_CUDA: &[IsaRow] = &[
    ((6, 0), (9, 0)),
    ((6, 1), (9, 1)),
    ((6, 2), (9, 2)),
    ((6, 3), (10, 0)),
    ((6, 4), (10, 1)),
    ((6, 5), (10, 2)),
    ((7, 0), (11, 0)),
    ((7, 1), (11, 1)),
    ((7, 2), (11, 2)),
    ((7, 3), (11, 3)),
    ((7, 4), (11, 4)),
    ((7, 5), (11, 5)),
    ((7, 6), (11, 6)),
    ((7, 7), (11, 7)),
    ((7, 8), (11, 8)),
    ((8, 0), (12, 0)),
    ((8, 1), (12, 1)),
    ((8, 2), (12, 2)),
    ((8, 3), (12, 3)),
    ((8, 4), (12, 4)),
    ((8, 5), (12, 5)),
    ((8, 6), (12, 7)),
    ((8, 7), (12, 8)),
    ((8, 8), (12, 9)),
    ((9, 0), (13, 0)),
    ((9, 1), (13, 1)),
    ((9, 5), (13, 5)),
];

/// The CUDA version a driver needs to JIT PTX of ISA `isa`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxRequirement {
    pub cuda: CudaVersion,
    /// True when `isa` is in the table; false when it is between or after rows, and `cuda` is
    /// only a lower bound (the newest known ISA at or below it). ISA versions only grow with
    /// CUDA releases, so the bound is safe: a driver below it certainly cannot JIT the PTX.
    pub exact: bool,
}

/// See [`PtxRequirement`]. `None` for ISA versions older than the table (CUDA < 9).
pub fn min_cuda_for_ptx_isa(isa: (u32, u32)) -> Option<PtxRequirement> {
    let (row_isa, cuda) = PTX_ISA_TO_CUDA.iter().rev().find(|(i, _)| *i <= isa)?;
    Some(PtxRequirement {
        cuda: CudaVersion::new(cuda.0, cuda.1),
        exact: *row_isa == isa,
    })
}

/// Does a SASS (cubin) image for `arch` run on a GPU of compute capability `gpu`?
pub fn sass_runs_on(arch: &Arch, gpu: ComputeCapability) -> bool {
    let same_major = arch.major() == gpu.major;
    match arch.variant {
        Variant::ArchSpecific => same_major && arch.minor() == gpu.minor,
        Variant::Plain | Variant::FamilySpecific => same_major && gpu.minor >= arch.minor(),
    }
}

/// Can the driver JIT PTX for `arch` to a GPU of compute capability `gpu`?
pub fn ptx_jits_for(arch: &Arch, gpu: ComputeCapability) -> bool {
    match arch.variant {
        Variant::Plain => gpu.number() >= arch.number,
        Variant::ArchSpecific => gpu.number() == arch.number,
        Variant::FamilySpecific => arch.major() == gpu.major && gpu.minor >= arch.minor(),
    }
}

/// A PTX image with its ISA version when known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxImage {
    pub arch: Arch,
    pub isa: Option<(u32, u32)>,
}

/// The images of one library, as the compatibility rules need them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageSet {
    pub sass: Vec<Arch>,
    pub ptx: Vec<PtxImage>,
}

impl ImageSet {
    /// From a scan result.
    pub fn of(images: &FileImages) -> Self {
        Self::from_names(&images.sass, &images.ptx, &images.ptx_isa)
    }

    /// From name lists (e.g. a saved snapshot); `ptx_isa` maps `compute_90` to `"9.0"` and may
    /// be empty. Names that do not parse are ignored.
    pub fn from_names(sass: &[String], ptx: &[String], ptx_isa: &BTreeMap<String, String>) -> Self {
        let parse_isa = |s: &String| {
            let (a, b) = s.split_once('.')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        };
        ImageSet {
            sass: sass
                .iter()
                .filter_map(|n| Arch::parse(n))
                .filter(|a| a.kind == ArchKind::Sass)
                .collect(),
            ptx: ptx
                .iter()
                .filter_map(|n| Arch::parse(n))
                .filter(|a| a.kind == ArchKind::Ptx)
                .map(|arch| PtxImage {
                    arch,
                    isa: ptx_isa.get(&arch.name()).and_then(parse_isa),
                })
                .collect(),
        }
    }
}

/// How (whether) a GPU can run a library's kernels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Machine code runs as is; `via` is the best matching SASS (`sm_86` on an 8.6 GPU, or
    /// `sm_80` there).
    Native { via: String },
    /// No matching SASS; the driver JIT-compiles PTX `via` at first launch (slow start, and
    /// the result is cached).
    PtxJit { via: String },
    /// Only PTX could serve this GPU, and its ISA is newer than the driver can JIT.
    PtxTooNewForDriver {
        via: String,
        ptx_isa: String,
        /// The CUDA version the PTX needs (a lower bound when `exact` is false).
        needs_cuda: String,
        exact: bool,
        driver_cuda: String,
    },
    /// Neither SASS nor PTX for this GPU: "no kernel image is available for execution on the
    /// device".
    NoImage,
}

impl Verdict {
    /// True when kernels can run (natively or through JIT).
    pub fn runs(&self) -> bool {
        matches!(self, Verdict::Native { .. } | Verdict::PtxJit { .. })
    }
}

/// The verdict for one library on one GPU. `driver_cuda` is the driver's highest CUDA version
/// when known; without it (or without the PTX ISA version) PTX is never called too new.
pub fn verdict(
    images: &ImageSet,
    gpu: ComputeCapability,
    driver_cuda: Option<CudaVersion>,
) -> Verdict {
    if let Some(best) = images.sass.iter().filter(|a| sass_runs_on(a, gpu)).max() {
        return Verdict::Native { via: best.name() };
    }
    let usable: Vec<&PtxImage> = images
        .ptx
        .iter()
        .filter(|p| ptx_jits_for(&p.arch, gpu))
        .collect();
    let too_new = |p: &PtxImage| -> Option<(PtxRequirement, CudaVersion)> {
        let driver = driver_cuda?;
        let need = min_cuda_for_ptx_isa(p.isa?)?;
        (need.cuda > driver).then_some((need, driver))
    };
    // The highest PTX the driver can take; the driver itself also prefers the closest one.
    if let Some(best) = usable
        .iter()
        .filter(|p| too_new(p).is_none())
        .max_by_key(|p| p.arch)
    {
        return Verdict::PtxJit {
            via: best.arch.name(),
        };
    }
    // Every usable PTX is too new: report the one needing the least.
    let worst = usable
        .iter()
        .filter_map(|p| too_new(p).map(|(need, drv)| (p, need, drv)))
        .min_by_key(|(_, need, _)| need.cuda);
    match worst {
        Some((p, need, drv)) => Verdict::PtxTooNewForDriver {
            via: p.arch.name(),
            ptx_isa: p.isa.map(|(a, b)| format!("{a}.{b}")).unwrap_or_default(),
            needs_cuda: need.cuda.to_string(),
            exact: need.exact,
            driver_cuda: drv.to_string(),
        },
        None => Verdict::NoImage,
    }
}

/// For each GPU, the verdict on one library — the base of the "present GPU has no kernel image
/// in library X" rules. GPUs are taken in the order given.
pub fn verdicts_for_gpus(
    images: &ImageSet,
    gpus: &[ComputeCapability],
    driver_cuda: Option<CudaVersion>,
) -> Vec<(ComputeCapability, Verdict)> {
    gpus.iter()
        .map(|&g| (g, verdict(images, g, driver_cuda)))
        .collect()
}

/// The GPUs among `gpus` that cannot run the library at all (no image, or PTX too new for the
/// driver): the error case of the kernels layer.
pub fn gpus_that_cannot_run(
    images: &ImageSet,
    gpus: &[ComputeCapability],
    driver_cuda: Option<CudaVersion>,
) -> Vec<(ComputeCapability, Verdict)> {
    verdicts_for_gpus(images, gpus, driver_cuda)
        .into_iter()
        .filter(|(_, v)| !v.runs())
        .collect()
}

/// The GPUs served only through PTX JIT (warning: slow first launch, breaks with an older
/// driver).
pub fn gpus_only_via_ptx(
    images: &ImageSet,
    gpus: &[ComputeCapability],
    driver_cuda: Option<CudaVersion>,
) -> Vec<ComputeCapability> {
    verdicts_for_gpus(images, gpus, driver_cuda)
        .into_iter()
        .filter(|(_, v)| matches!(v, Verdict::PtxJit { .. }))
        .map(|(g, _)| g)
        .collect()
}

/// What a `TORCH_CUDA_ARCH_LIST` asks nvcc to build.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchListRequest {
    /// SASS targets (`8.6` → `sm_86`, `9.0a` → `sm_90a`).
    pub sass: Vec<Arch>,
    /// PTX targets (`+PTX` entries).
    pub ptx: Vec<Arch>,
    /// Items that are neither a named architecture nor `X.Y[a|f][+PTX]`.
    pub invalid: Vec<String>,
}

impl ArchListRequest {
    /// The images such a build would produce, for [`verdict`].
    pub fn as_image_set(&self) -> ImageSet {
        ImageSet {
            sass: self.sass.clone(),
            ptx: self
                .ptx
                .iter()
                .map(|&arch| PtxImage { arch, isa: None })
                .collect(),
        }
    }
}

/// Named architectures of `TORCH_CUDA_ARCH_LIST`, combined names first (they are replaced as
/// text, in this order). Source: PyTorch `torch/utils/cpp_extension.py`,
/// `_get_cuda_arch_flags`, `named_arches` (current main, with the Blackwell rows).
const TORCH_NAMED_ARCHES: &[(&str, &str)] = &[
    ("Kepler+Tesla", "3.7"),
    ("Kepler", "3.5+PTX"),
    ("Maxwell+Tegra", "5.3"),
    ("Maxwell", "5.0;5.2+PTX"),
    ("Pascal", "6.0;6.1+PTX"),
    ("Volta+Tegra", "7.2"),
    ("Volta", "7.0+PTX"),
    ("Turing", "7.5+PTX"),
    ("Ampere+Tegra", "8.7"),
    ("Ampere", "8.0;8.6+PTX"),
    ("Ada", "8.9+PTX"),
    ("Hopper", "9.0+PTX"),
    ("Blackwell+Tegra", "11.0"),
    ("Blackwell", "10.0;10.3;12.0;12.1+PTX"),
];

/// Parses a `TORCH_CUDA_ARCH_LIST` as PyTorch's extension builder reads it: names replaced,
/// items split on `;` and spaces, each `X.Y` (optionally `a`/`f`) building `sm_XY`, and
/// `+PTX` adding `compute_XY`.
pub fn parse_torch_arch_list(list: &str) -> ArchListRequest {
    let mut text = list.to_string();
    for (name, archs) in TORCH_NAMED_ARCHES {
        text = text.replace(name, archs);
    }
    let mut req = ArchListRequest::default();
    for item in text
        .split([';', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (base, with_ptx) = match item.strip_suffix("+PTX") {
            Some(b) => (b, true),
            None => (item, false),
        };
        let (digits, variant) = if let Some(d) = base.strip_suffix('a') {
            (d, Variant::ArchSpecific)
        } else if let Some(d) = base.strip_suffix('f') {
            (d, Variant::FamilySpecific)
        } else {
            (base, Variant::Plain)
        };
        let Some(cc) = digits
            .contains('.')
            .then(|| digits.parse::<ComputeCapability>().ok())
            .flatten()
            // No architecture name has a major of three digits; such an item names none.
            .filter(|cc| cc.major < 100)
        else {
            req.invalid.push(item.to_string());
            continue;
        };
        req.sass
            .push(Arch::new(ArchKind::Sass, cc.number(), variant));
        if with_ptx {
            req.ptx.push(Arch::new(ArchKind::Ptx, cc.number(), variant));
        }
    }
    req.sass.sort();
    req.sass.dedup();
    req.ptx.sort();
    req.ptx.dedup();
    req
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(n: &str) -> Arch {
        Arch::parse(n).unwrap()
    }
    fn cc(s: &str) -> ComputeCapability {
        s.parse().unwrap()
    }
    fn set(sass: &[&str], ptx: &[(&str, Option<(u32, u32)>)]) -> ImageSet {
        ImageSet {
            sass: sass.iter().map(|n| a(n)).collect(),
            ptx: ptx
                .iter()
                .map(|(n, isa)| PtxImage {
                    arch: a(n),
                    isa: *isa,
                })
                .collect(),
        }
    }

    #[test]
    fn sass_binary_compatibility() {
        assert!(sass_runs_on(&a("sm_80"), cc("8.6")));
        assert!(sass_runs_on(&a("sm_86"), cc("8.6")));
        assert!(!sass_runs_on(&a("sm_86"), cc("8.0")));
        assert!(
            !sass_runs_on(&a("sm_80"), cc("9.0")),
            "no SASS across majors"
        );
        assert!(sass_runs_on(&a("sm_90a"), cc("9.0")));
        assert!(!sass_runs_on(&a("sm_100a"), cc("10.3")), "`a` is exact");
        assert!(
            sass_runs_on(&a("sm_100f"), cc("10.3")),
            "`f` covers the family"
        );
        assert!(!sass_runs_on(&a("sm_103f"), cc("10.0")));
        assert!(!sass_runs_on(&a("sm_100f"), cc("12.0")));
        assert!(sass_runs_on(&a("sm_120"), cc("12.1")));
    }

    #[test]
    fn ptx_jit_rules() {
        assert!(ptx_jits_for(&a("compute_80"), cc("9.0")));
        assert!(ptx_jits_for(&a("compute_80"), cc("12.0")));
        assert!(!ptx_jits_for(&a("compute_90"), cc("8.6")));
        assert!(ptx_jits_for(&a("compute_90a"), cc("9.0")));
        assert!(!ptx_jits_for(&a("compute_90a"), cc("10.0")));
        assert!(ptx_jits_for(&a("compute_100f"), cc("10.3")));
        assert!(!ptx_jits_for(&a("compute_100f"), cc("12.0")));
    }

    #[test]
    fn verdicts() {
        // torch 2.11+cu130's list (fixtures torch_info.txt): no PTX.
        let torch = set(
            &["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
            &[],
        );
        assert_eq!(
            verdict(&torch, cc("9.0"), None),
            Verdict::Native {
                via: "sm_90".into()
            }
        );
        assert_eq!(
            verdict(&torch, cc("8.9"), None),
            Verdict::Native {
                via: "sm_86".into()
            }
        );
        assert_eq!(
            verdict(&torch, cc("10.3"), None),
            Verdict::Native {
                via: "sm_100".into()
            }
        );
        assert_eq!(verdict(&torch, cc("11.0"), None), Verdict::NoImage);
        assert_eq!(verdict(&torch, cc("7.0"), None), Verdict::NoImage);

        let hopper_only = set(&["sm_90a"], &[("compute_80", Some((9, 0)))]);
        assert_eq!(
            verdict(&hopper_only, cc("9.0"), None),
            Verdict::Native {
                via: "sm_90a".into()
            }
        );
        assert_eq!(
            verdict(&hopper_only, cc("12.0"), None),
            Verdict::PtxJit {
                via: "compute_80".into()
            }
        );
        assert_eq!(verdict(&hopper_only, cc("7.5"), None), Verdict::NoImage);
    }

    #[test]
    fn ptx_too_new_only_when_both_versions_are_known() {
        let lib = set(&[], &[("compute_90", Some((9, 1)))]);
        let old = Some(CudaVersion::new(13, 0));
        match verdict(&lib, cc("12.0"), old) {
            Verdict::PtxTooNewForDriver {
                via,
                ptx_isa,
                needs_cuda,
                exact,
                driver_cuda,
            } => {
                assert_eq!(
                    (
                        via.as_str(),
                        ptx_isa.as_str(),
                        needs_cuda.as_str(),
                        exact,
                        driver_cuda.as_str()
                    ),
                    ("compute_90", "9.1", "13.1", true, "13.0")
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            verdict(&lib, cc("12.0"), Some(CudaVersion::new(13, 1))),
            Verdict::PtxJit {
                via: "compute_90".into()
            }
        );
        assert_eq!(
            verdict(&lib, cc("12.0"), None),
            Verdict::PtxJit {
                via: "compute_90".into()
            }
        );
        let unknown_isa = set(&[], &[("compute_90", None)]);
        assert_eq!(
            verdict(&unknown_isa, cc("12.0"), old),
            Verdict::PtxJit {
                via: "compute_90".into()
            }
        );
        // An older PTX the driver takes wins over a newer one it cannot.
        let two = set(
            &[],
            &[("compute_80", Some((8, 8))), ("compute_90", Some((9, 5)))],
        );
        assert_eq!(
            verdict(&two, cc("9.0"), old),
            Verdict::PtxJit {
                via: "compute_80".into()
            }
        );
    }

    #[test]
    fn ptx_isa_table_is_monotonic_and_bounds_unknown_rows() {
        for w in PTX_ISA_TO_CUDA.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1, "{w:?}");
        }
        assert_eq!(
            min_cuda_for_ptx_isa((8, 8)),
            Some(PtxRequirement {
                cuda: CudaVersion::new(12, 9),
                exact: true
            })
        );
        // 9.3 is not in the table: at least 13.1, not claimed exactly.
        assert_eq!(
            min_cuda_for_ptx_isa((9, 3)),
            Some(PtxRequirement {
                cuda: CudaVersion::new(13, 1),
                exact: false
            })
        );
        assert_eq!(min_cuda_for_ptx_isa((5, 0)), None);
        // A driver at 13.1 with PTX 9.3: the bound says nothing; no claim.
        let lib = set(&[], &[("compute_90", Some((9, 3)))]);
        assert_eq!(
            verdict(&lib, cc("9.0"), Some(CudaVersion::new(13, 1))),
            Verdict::PtxJit {
                via: "compute_90".into()
            }
        );
        assert!(matches!(
            verdict(&lib, cc("9.0"), Some(CudaVersion::new(13, 0))),
            Verdict::PtxTooNewForDriver { exact: false, .. }
        ));
    }

    #[test]
    fn gpu_lists() {
        let lib = set(&["sm_80", "sm_90"], &[("compute_90", None)]);
        let gpus = [cc("9.0"), cc("7.5"), cc("12.0")];
        let bad = gpus_that_cannot_run(&lib, &gpus, None);
        assert_eq!(bad, vec![(cc("7.5"), Verdict::NoImage)]);
        assert_eq!(gpus_only_via_ptx(&lib, &gpus, None), vec![cc("12.0")]);
    }

    #[test]
    fn torch_arch_lists() {
        let r = parse_torch_arch_list("7.5;8.0;8.6;9.0;10.0;12.0+PTX");
        let names: Vec<String> = r.sass.iter().map(Arch::name).collect();
        assert_eq!(
            names,
            ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
        );
        assert_eq!(r.ptx, vec![a("compute_120")]);
        assert!(r.invalid.is_empty());

        let r = parse_torch_arch_list("99999999999.0;4294967295.9+PTX;100.0");
        assert_eq!(r.invalid, ["99999999999.0", "4294967295.9+PTX", "100.0"]);
        assert!(r.sass.is_empty() && r.ptx.is_empty());
        let r = parse_torch_arch_list("Ampere 9.0a+PTX sm_90 Hopper");
        let names: Vec<String> = r.sass.iter().map(Arch::name).collect();
        assert_eq!(names, ["sm_80", "sm_86", "sm_90", "sm_90a"]);
        assert_eq!(
            r.ptx,
            vec![a("compute_86"), a("compute_90"), a("compute_90a")]
        );
        assert_eq!(r.invalid, vec!["sm_90".to_string()]);

        let r = parse_torch_arch_list("Blackwell");
        assert_eq!(r.sass.len(), 4);
        assert_eq!(
            verdict(&r.as_image_set(), cc("12.1"), None),
            Verdict::Native {
                via: "sm_121".into()
            }
        );
    }

    #[test]
    fn verdict_json_shape() {
        let v = Verdict::Native {
            via: "sm_86".into(),
        };
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"verdict":"native","via":"sm_86"}"#
        );
        assert_eq!(
            serde_json::to_string(&Verdict::NoImage).unwrap(),
            r#"{"verdict":"no_image"}"#
        );
    }
}
