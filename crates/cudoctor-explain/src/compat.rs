//! The questions the cross-check asks of the knowledge base (`cudoctor-kb`), answered from its
//! tables: driver minimums by platform, whether a driver runs a CUDA version, the PyTorch
//! release a version string belongs to, the arch list of a PyTorch build and which builds have
//! kernels for a set of GPUs. No facts live here; only the rules that combine the kb's facts.

use crate::facts::Platform;
use cudoctor_kb::{
    coverage, ArchEntry, ArchListBasis, ComputeCapability, Coverage, CudaVersion, DriverVersion,
    Kb, TorchRelease, TorchVersion,
};

/// Leading numeric components of a version as tools and messages print it:
/// "580.159.04" -> [580, 159, 4]; "2.5.0a0+e000cf0" -> [2, 5]; "13.0 " -> [13, 0].
fn numeric_parts(v: &str) -> Vec<u32> {
    v.trim()
        .split(['+', '-', ' '])
        .next()
        .unwrap_or_default()
        .split('.')
        .map_while(|p| p.parse().ok())
        .collect()
}

/// A CUDA version from a message or a probe, read leniently: "12.8", "12.4.1", "13.0+x",
/// and a bare major "12" (read as 12.0). `None` when no number leads the text.
pub fn cuda_version(s: &str) -> Option<CudaVersion> {
    match numeric_parts(s).as_slice() {
        [major, minor, ..] => Some(CudaVersion::new(*major, *minor)),
        [major] => Some(CudaVersion::new(*major, 0)),
        [] => None,
    }
}

/// "major.minor" of a version ("0.22.1" -> "0.22"), for `==X.Y.*` pins.
pub fn series(v: &str) -> Option<String> {
    match numeric_parts(v).as_slice() {
        [major, minor, ..] => Some(format!("{major}.{minor}")),
        _ => None,
    }
}

/// The oldest driver that runs any build of CUDA `major`.x (NVIDIA's minor-version
/// compatibility floor) on `platform`. WSL and containers report the driver numbering of
/// their host kind as the cross-check always has: Windows values only for `Windows`.
pub fn driver_floor(kb: &Kb, major: u32, platform: Platform) -> Option<DriverVersion> {
    if platform == Platform::Windows {
        kb.minor_compat_row(major)?.windows_floor.clone()
    } else {
        kb.minor_compat_floor(major)
    }
}

/// The driver a toolkit's GA release requires (the one it shipped with) on `platform`.
pub fn toolkit_driver(kb: &Kb, cuda: CudaVersion, platform: Platform) -> Option<DriverVersion> {
    if platform == Platform::Windows {
        kb.toolkit_min_driver_windows(cuda)
    } else {
        kb.toolkit_min_driver(cuda)
    }
}

/// Whether `driver` runs code built with `cuda` (natively or through minor-version
/// compatibility). `None` when unknown, including a driver string that is not a version.
pub fn driver_runs(kb: &Kb, driver: &str, cuda: CudaVersion, platform: Platform) -> Option<bool> {
    let d: DriverVersion = driver.parse().ok()?;
    if platform == Platform::Windows {
        windows_driver_runs(kb, &d, cuda)
    } else {
        kb.driver_support(&d, cuda).runs()
    }
}

/// `Kb::driver_support` speaks of Linux drivers; Windows drivers are numbered differently, so
/// the same rule is applied to the kb's Windows columns: at or above the toolkit's Windows
/// minimum runs natively; else, from CUDA 11.1 on, at or above the major's Windows floor runs
/// through minor-version compatibility; else it does not run, unless neither value is known.
fn windows_driver_runs(kb: &Kb, d: &DriverVersion, cuda: CudaVersion) -> Option<bool> {
    let native = kb.toolkit_min_driver_windows(cuda);
    if native.as_ref().is_some_and(|min| d >= min) {
        return Some(true);
    }
    let floor = if cuda >= CudaVersion::new(11, 1) {
        driver_floor(kb, cuda.major, Platform::Windows)
    } else {
        None
    };
    if floor.as_ref().is_some_and(|f| d >= f) {
        return Some(true);
    }
    (native.is_some() || floor.is_some()).then_some(false)
}

/// The PyTorch release `version` belongs to: the exact release ("2.7.1+cu128"), else the newest
/// release of its series ("2.7.5" or a pre-release "2.5.0a0+git..." -> the newest 2.7 / 2.5 row),
/// whose published builds (CUDA variants, companions) are those of the series.
pub fn torch_release<'k>(kb: &'k Kb, version: &str) -> Option<&'k TorchRelease> {
    kb.torch(version).or_else(|| kb.torch(&series(version)?))
}

/// The GPU architectures of one PyTorch build, and where that list was read.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildArchs<'k> {
    pub entries: Vec<ArchEntry>,
    /// The release whose build the list was recorded for.
    pub recorded_for: &'k TorchRelease,
    /// True when the list is another release's build of the same CUDA variant, because the
    /// asked release has none recorded.
    pub borrowed: bool,
    pub basis: Option<ArchListBasis>,
}

impl BuildArchs<'_> {
    /// Whether the build has machine code for `cc` (its own or a lower minor of the same major).
    pub fn has_machine_code(&self, cc: ComputeCapability) -> bool {
        matches!(
            coverage(&self.entries, cc),
            Coverage::Native | Coverage::BinaryCompatible { .. }
        )
    }
}

/// "sm_80 sm_90 compute_90" for [8.0, 9.0+PTX].
pub fn display_entries(entries: &[ArchEntry]) -> String {
    entries
        .iter()
        .map(|e| {
            if e.ptx {
                format!("{} {}", e.cc.sm(), e.cc.compute())
            } else {
                e.cc.sm()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads an installed build's arch list ("sm_90", "compute_90", "9.0", "9.0+PTX"); entries
/// that are not architectures are skipped. A PTX-only entry is kept as code for that
/// architecture, which the driver can JIT-compile for it and newer ones.
pub fn parse_arch_list(list: &[String]) -> Vec<ArchEntry> {
    let mut out: Vec<ArchEntry> = Vec::new();
    for raw in list {
        let raw = raw.trim();
        let (text, ptx) = if let Some(cc) = raw.strip_suffix("+PTX") {
            (cc, true)
        } else {
            (raw, raw.to_ascii_lowercase().starts_with("compute_"))
        };
        let Ok(cc) = text.parse::<ComputeCapability>() else {
            continue;
        };
        match out.iter_mut().find(|e| e.cc == cc) {
            Some(e) => e.ptx |= ptx,
            None => out.push(ArchEntry { cc, ptx }),
        }
    }
    out.sort();
    out
}

/// The arch list of the `tag` build of the release at `at` (a version, `None` when unknown).
/// When that release has no recorded list, the list of the same variant in the nearest release
/// that has one stands in for it (marked `borrowed`; the nearer older release wins a tie):
/// PyTorch changes a variant's list rarely, and the caller says whose list it shows.
pub fn build_archs<'k>(kb: &'k Kb, at: Option<&TorchVersion>, tag: &str) -> Option<BuildArchs<'k>> {
    let releases = kb.torch_releases();
    let position = at.map_or(releases.len(), |at| {
        releases.partition_point(|r| r.parsed_version().is_some_and(|v| v < *at))
    });
    let exact = |r: &TorchRelease| {
        at.is_some_and(|at| r.parsed_version().is_some_and(|v| v.parts == at.parts))
    };
    releases
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, r, r.variant(tag)?.archs()?, r.variant(tag)?)))
        .min_by_key(|(i, r, _, _)| {
            if exact(r) {
                0
            } else if *i < position {
                2 * (position - i)
            } else {
                2 * (i - position) + 1
            }
        })
        .map(|(_, r, entries, v)| BuildArchs {
            entries,
            recorded_for: r,
            borrowed: !exact(r),
            basis: v.arch_list_basis,
        })
}

/// CUDA variants with machine code for every one of `gpus`, oldest CUDA first: those of
/// `release` when given, else every variant any release offers. Each build's list is read as
/// [`build_archs`] does, at `release` (or the newest release when none).
pub fn builds_for_gpus(
    kb: &Kb,
    gpus: &[ComputeCapability],
    release: Option<&TorchRelease>,
) -> Vec<String> {
    let at = release.and_then(TorchRelease::parsed_version);
    let mut tags: Vec<(CudaVersion, String)> = Vec::new();
    let offered = release.map_or(kb.torch_releases(), std::slice::from_ref);
    for r in offered {
        for v in &r.variants {
            if !tags.iter().any(|(_, t)| *t == v.tag) {
                tags.push((v.cuda, v.tag.clone()));
            }
        }
    }
    tags.sort();
    tags.into_iter()
        .filter(|(_, tag)| {
            build_archs(kb, at.as_ref(), tag)
                .is_some_and(|b| !gpus.is_empty() && gpus.iter().all(|cc| b.has_machine_code(*cc)))
        })
        .map(|(_, tag)| tag)
        .collect()
}

/// The newest release that offers the `tag` build with machine code for every one of `gpus`.
pub fn newest_release_with<'k>(
    kb: &'k Kb,
    tag: &str,
    gpus: &[ComputeCapability],
) -> Option<&'k TorchRelease> {
    kb.torch_releases().iter().rev().find(|r| {
        r.variant(tag).is_some()
            && build_archs(kb, r.parsed_version().as_ref(), tag)
                .is_some_and(|b| gpus.iter().all(|cc| b.has_machine_code(*cc)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kb() -> &'static Kb {
        match Kb::try_embedded() {
            Ok(kb) => kb,
            Err(e) => panic!("embedded knowledge base does not load: {e}"),
        }
    }
    fn cc(s: &str) -> ComputeCapability {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }
    fn cuda(s: &str) -> CudaVersion {
        cuda_version(s).unwrap_or_else(|| panic!("{s}"))
    }

    #[test]
    fn lenient_versions() {
        assert_eq!(cuda_version("12.8"), Some(CudaVersion::new(12, 8)));
        assert_eq!(cuda_version("12.4.1"), Some(CudaVersion::new(12, 4)));
        assert_eq!(cuda_version("12"), Some(CudaVersion::new(12, 0)));
        assert_eq!(cuda_version("13.0+abc"), Some(CudaVersion::new(13, 0)));
        assert_eq!(cuda_version("abc"), None);
        assert_eq!(cuda_version(""), None);
        assert_eq!(series("0.22.1").as_deref(), Some("0.22"));
        assert_eq!(series("2.5.0a0+git").as_deref(), Some("2.5"));
        assert_eq!(series("2"), None);
    }

    #[test]
    fn driver_rows_by_platform() {
        let kb = kb();
        let floor = |m, p| driver_floor(kb, m, p).map(|d| d.to_string());
        assert_eq!(floor(12, Platform::Linux).as_deref(), Some("525.60.13"));
        assert_eq!(floor(12, Platform::Windows).as_deref(), Some("528.33"));
        let shipped = |c, p| toolkit_driver(kb, cuda(c), p).map(|d| d.to_string());
        assert_eq!(
            shipped("12.1", Platform::Linux).as_deref(),
            Some("530.30.02")
        );
        assert_eq!(
            shipped("12.8", Platform::Unknown).as_deref(),
            Some("570.26")
        );
        assert_eq!(
            shipped("12.8", Platform::Windows).as_deref(),
            Some("570.65")
        );
    }

    #[test]
    fn driver_runs_linux_and_windows() {
        let kb = kb();
        let runs = |d, c, p| driver_runs(kb, d, cuda(c), p);
        assert_eq!(runs("470.86", "12.1", Platform::Linux), Some(false));
        assert_eq!(runs("470.86", "11.8", Platform::Linux), Some(true));
        assert_eq!(runs("580.159.04", "13.0", Platform::Linux), Some(true));
        assert_eq!(runs("not a driver", "13.0", Platform::Linux), None);
        // Windows: 12.x floor 528.33, 12.1 minimum 531.14.
        assert_eq!(runs("531.14", "12.1", Platform::Windows), Some(true));
        assert_eq!(runs("528.33", "12.8", Platform::Windows), Some(true));
        assert_eq!(runs("527.41", "12.1", Platform::Windows), Some(false));
        // 11.0 predates minor-version compatibility: its own minimum decides.
        assert_eq!(runs("451.48", "11.0", Platform::Windows), Some(true));
        assert_eq!(runs("451.00", "11.0", Platform::Windows), Some(false));
        // No 13.x Windows minimum is listed; the 580 floor still decides.
        assert_eq!(runs("581.57", "13.0", Platform::Windows), Some(true));
        assert_eq!(runs("576.02", "13.0", Platform::Windows), Some(false));
    }

    #[test]
    fn releases_by_exact_version_or_series() {
        let kb = kb();
        let tags = |v: &str| {
            torch_release(kb, v)
                .map(|r| r.variants.iter().map(|x| x.tag.clone()).collect::<Vec<_>>())
        };
        assert_eq!(
            tags("2.7.1+cu128"),
            Some(vec!["cu118".into(), "cu126".into(), "cu128".into()])
        );
        assert_eq!(
            torch_release(kb, "2.7.9").map(|r| r.version.as_str()),
            Some("2.7.1")
        );
        assert_eq!(
            torch_release(kb, "2.5.0a0+e000cf0ad9").map(|r| r.version.as_str()),
            Some("2.5.1")
        );
        assert!(torch_release(kb, "garbage").is_none());
        assert!(torch_release(kb, "0.1.0").is_none());
    }

    #[test]
    fn installed_arch_lists_parse() {
        let list: Vec<String> = ["sm_90", "compute_90", "sm_80", "9.0+PTX", "12.0", "bogus"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let entries = parse_arch_list(&list);
        assert_eq!(display_entries(&entries), "sm_80 sm_90 compute_90 sm_120");
        assert!(parse_arch_list(&[]).is_empty());
    }

    #[test]
    fn a_release_without_its_own_list_borrows_the_nearest() {
        let kb = kb();
        let at = |v: &str| v.parse::<TorchVersion>().ok();
        let own =
            build_archs(kb, at("2.9.1").as_ref(), "cu128").unwrap_or_else(|| panic!("2.9.1 cu128"));
        assert!(!own.borrowed);
        assert_eq!(own.recorded_for.version, "2.9.1");
        // 2.7's cu128 list is not recorded: 2.8.0's stands in.
        let b =
            build_archs(kb, at("2.7.1").as_ref(), "cu128").unwrap_or_else(|| panic!("2.7.1 cu128"));
        assert!(b.borrowed);
        assert_eq!(b.recorded_for.version, "2.8.0");
        assert!(b.has_machine_code(cc("12.0")));
        assert!(build_archs(kb, None, "cu999").is_none());
    }

    #[test]
    fn blackwell_and_pascal_builds() {
        let kb = kb();
        let blackwell = builds_for_gpus(kb, &[cc("12.0")], None);
        assert!(
            blackwell.contains(&"cu128".to_string()) && !blackwell.contains(&"cu126".to_string()),
            "{blackwell:?}"
        );
        let pascal = builds_for_gpus(kb, &[cc("6.1")], None);
        assert!(
            pascal.contains(&"cu126".to_string()) && !pascal.contains(&"cu128".to_string()),
            "{pascal:?}"
        );
        // In the 2.7 release the cu126 build reaches sm_120 only through PTX: not machine code.
        let r27 = torch_release(kb, "2.7.1");
        assert_eq!(
            builds_for_gpus(kb, &[cc("12.0")], r27),
            vec!["cu128".to_string()]
        );
        assert!(builds_for_gpus(kb, &[], None).is_empty());
        let newest = newest_release_with(kb, "cu118", &[cc("3.7")]).map(|r| r.version.as_str());
        assert_eq!(newest, Some("2.7.1"));
    }
}
