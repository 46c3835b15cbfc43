//! What a particular glibc ld.so build and CPU contribute to library search: default
//! directories, `$LIB` and `$PLATFORM`, the hwcaps subdirectories tried inside every search
//! directory, the ld.so.cache flags, the interpreter path.
//!
//! The defaults match what `ld.so --help` / `--list-diagnostics` print on the distributions we
//! model (glibc 2.36 on Debian 12 x86_64 was checked; see the tests). Everything is a plain
//! field so a caller can describe another loader.

use std::path::Path;

use crate::cache::{flags, CacheSelection};
use crate::elf::Target;

/// x86-64 micro-architecture levels (glibc-hwcaps subdirectory names).
pub const X86_64_LEVELS: [&str; 3] = ["x86-64-v2", "x86-64-v3", "x86-64-v4"];

/// Loader parameters for one process.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LoaderConfig {
    /// Class and machine a candidate library must have (others are skipped, like ld.so).
    pub target: Target,
    /// Default ("system") directories, in search order, each ending in '/'.
    pub system_dirs: Vec<String>,
    /// `$LIB` expansion ("lib/x86_64-linux-gnu" on Debian, "lib64" on Fedora/RHEL).
    pub dst_lib: String,
    /// `$PLATFORM` expansion (AT_PLATFORM: "x86_64", "aarch64"); `None` discards path
    /// elements that use it, as ld.so does when it has no value.
    pub platform: Option<String>,
    /// Subdirectories tried inside every search directory before the directory itself, in
    /// order, each ending in '/' (e.g. "glibc-hwcaps/x86-64-v3/"). The directory itself
    /// ("") is always tried last and need not be listed.
    pub search_subdirs: Vec<String>,
    /// How ld.so.cache entries are selected.
    pub cache: CacheSelection,
    /// Path of the dynamic loader (PT_INTERP of the process's executable); it is part of
    /// every process, and libc.so.6 lists it as DT_NEEDED.
    pub interpreter: Option<String>,
    /// Path of the cache inside the root.
    pub cache_path: String,
}

impl LoaderConfig {
    /// Debian/Ubuntu x86_64 (multiarch directories), glibc >= 2.33 with glibc-hwcaps.
    /// `levels` are the x86-64 levels the CPU supports (see [`x86_64_levels_from_cpuinfo`]).
    pub fn x86_64_debian(levels: &[&str]) -> Self {
        LoaderConfig {
            target: Target::X86_64,
            system_dirs: dirs(&[
                "/lib/x86_64-linux-gnu/",
                "/usr/lib/x86_64-linux-gnu/",
                "/lib/",
                "/usr/lib/",
            ]),
            dst_lib: "lib/x86_64-linux-gnu".into(),
            platform: Some("x86_64".into()),
            search_subdirs: hwcaps_subdirs(levels),
            cache: x86_64_cache_selection(levels),
            interpreter: Some("/lib64/ld-linux-x86-64.so.2".into()),
            cache_path: "/etc/ld.so.cache".into(),
        }
    }

    /// Fedora/RHEL/SUSE-style x86_64 (/lib64, /usr/lib64).
    pub fn x86_64_lib64(levels: &[&str]) -> Self {
        LoaderConfig {
            system_dirs: dirs(&["/lib64/", "/usr/lib64/"]),
            dst_lib: "lib64".into(),
            ..Self::x86_64_debian(levels)
        }
    }

    /// Debian/Ubuntu aarch64.
    pub fn aarch64_debian() -> Self {
        LoaderConfig {
            target: Target::AARCH64,
            system_dirs: dirs(&[
                "/lib/aarch64-linux-gnu/",
                "/usr/lib/aarch64-linux-gnu/",
                "/lib/",
                "/usr/lib/",
            ]),
            dst_lib: "lib/aarch64-linux-gnu".into(),
            platform: Some("aarch64".into()),
            search_subdirs: Vec::new(),
            cache: CacheSelection {
                default_id: flags::FLAG_ELF_LIBC6 | flags::FLAG_AARCH64_LIB64,
                accept_plain_elf: false,
                hwcaps_priority: Vec::new(),
                isa_levels: None,
                legacy_hwcap: 0,
                platform_mask: 0,
                platform_bit: 0,
            },
            interpreter: Some("/lib/ld-linux-aarch64.so.1".into()),
            cache_path: "/etc/ld.so.cache".into(),
        }
    }

    /// Fedora/RHEL-style aarch64.
    pub fn aarch64_lib64() -> Self {
        LoaderConfig {
            system_dirs: dirs(&["/lib64/", "/usr/lib64/"]),
            dst_lib: "lib64".into(),
            ..Self::aarch64_debian()
        }
    }

    /// Choose a configuration for the machine under `root` from what is on disk: the
    /// architecture from which interpreter exists, Debian multiarch vs lib64 from the
    /// directory layout, and x86-64 levels from `root/proc/cpuinfo` when readable.
    pub fn detect(root: &Path) -> Self {
        let under = |p: &str| root.join(p.trim_start_matches('/'));
        let cpuinfo = cudoctor_types::regular_file::read(&under("/proc/cpuinfo"), 4 << 20)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let is_aarch64 = under("/lib/ld-linux-aarch64.so.1").exists()
            && !under("/lib64/ld-linux-x86-64.so.2").exists();
        if is_aarch64 {
            if under("/usr/lib/aarch64-linux-gnu").is_dir() {
                Self::aarch64_debian()
            } else {
                Self::aarch64_lib64()
            }
        } else {
            let levels = x86_64_levels_from_cpuinfo(&cpuinfo);
            if under("/usr/lib/x86_64-linux-gnu").is_dir() {
                Self::x86_64_debian(&levels)
            } else {
                Self::x86_64_lib64(&levels)
            }
        }
    }
}

fn dirs(d: &[&str]) -> Vec<String> {
    d.iter().map(|s| s.to_string()).collect()
}

/// "glibc-hwcaps/<level>/" for each supported level, best first.
fn hwcaps_subdirs(levels: &[&str]) -> Vec<String> {
    let mut v: Vec<&str> = X86_64_LEVELS
        .iter()
        .copied()
        .filter(|l| levels.contains(l))
        .collect();
    v.reverse();
    v.into_iter()
        .map(|l| format!("glibc-hwcaps/{l}/"))
        .collect()
}

fn x86_64_cache_selection(levels: &[&str]) -> CacheSelection {
    let mut priority: Vec<String> = X86_64_LEVELS
        .iter()
        .filter(|l| levels.contains(l))
        .map(|l| l.to_string())
        .collect();
    priority.reverse();
    // glibc's cpu_features isa_1: bit 0 baseline, bit 1 x86-64-v2, bit 2 v3, bit 3 v4. A cache
    // entry records a level number n and is usable when bit n is set.
    let mut isa = 0b1u32;
    for (i, l) in X86_64_LEVELS.iter().enumerate() {
        if levels.contains(l) {
            isa |= 1 << (i + 1);
        }
    }
    CacheSelection {
        default_id: flags::FLAG_ELF_LIBC6 | flags::FLAG_X8664_LIB64,
        accept_plain_elf: false,
        hwcaps_priority: priority,
        isa_levels: Some(isa),
        legacy_hwcap: 0,
        platform_mask: 0,
        platform_bit: 0,
    }
}

/// The x86-64 micro-architecture levels a CPU supports, from the `flags` line of
/// `/proc/cpuinfo` (the feature sets of the x86-64 psABI; `lzcnt` shows as `abm`).
pub fn x86_64_levels_from_cpuinfo(cpuinfo: &str) -> Vec<&'static str> {
    let flags: std::collections::HashSet<&str> = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, f)| f.split_whitespace().collect())
        .unwrap_or_default();
    let has = |need: &[&str]| need.iter().all(|f| flags.contains(f));
    let mut out = Vec::new();
    if has(&["cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"]) {
        out.push("x86-64-v2");
        if has(&[
            "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
        ]) {
            out.push("x86-64-v3");
            if has(&["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"]) {
                out.push("x86-64-v4");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_from_cpuinfo() {
        let v3 = "processor: 0\nflags\t\t: fpu cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave\n";
        assert_eq!(x86_64_levels_from_cpuinfo(v3), ["x86-64-v2", "x86-64-v3"]);
        assert!(x86_64_levels_from_cpuinfo("flags: fpu sse2\n").is_empty());
        assert!(x86_64_levels_from_cpuinfo("").is_empty());
    }

    #[test]
    fn debian_defaults_match_glibc_2_36() {
        // `ld.so --list-diagnostics` on Debian 12: path.system_dirs, dl_dst_lib, dl_platform,
        // dl_hwcaps_subdirs (active: v3, v2 on an AVX2 machine), x86.cpu_features.isa_1=0x7.
        let c = LoaderConfig::x86_64_debian(&["x86-64-v2", "x86-64-v3"]);
        assert_eq!(
            c.system_dirs,
            [
                "/lib/x86_64-linux-gnu/",
                "/usr/lib/x86_64-linux-gnu/",
                "/lib/",
                "/usr/lib/"
            ]
        );
        assert_eq!(c.dst_lib, "lib/x86_64-linux-gnu");
        assert_eq!(c.platform.as_deref(), Some("x86_64"));
        assert_eq!(
            c.search_subdirs,
            ["glibc-hwcaps/x86-64-v3/", "glibc-hwcaps/x86-64-v2/"]
        );
        assert_eq!(c.cache.hwcaps_priority, ["x86-64-v3", "x86-64-v2"]);
        assert_eq!(c.cache.default_id, 0x0303);
        assert_eq!(c.cache.isa_levels, Some(0x7));
    }
}
