//! PyTorch releases, their CUDA wheel variants, and which GPUs a variant's kernels cover.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::data::ArchListBasis;
use cudoctor_types::version::{
    cmp_components, component, invalid, ComputeCapability, CudaVersion, VersionError,
};

/// One PyTorch release and what was published with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TorchRelease {
    /// "2.11.0".
    pub version: String,
    /// Linux x86_64 CUDA wheels on PyTorch's own index, oldest CUDA first.
    pub variants: Vec<TorchVariant>,
    /// True when more variants may exist than `variants` lists (only some were confirmed).
    pub variants_incomplete: bool,
    /// The CUDA build a plain install from PyPI gets on Linux x86_64 ("cu130"); None: unknown.
    pub pypi_default: Option<String>,
    /// The matching torchvision; None: unknown.
    pub torchvision: Option<String>,
    /// The matching torchaudio; None: unknown, or not published (see `torchaudio_absent`).
    pub torchaudio: Option<String>,
    /// Why there is no torchaudio for this release, when it is known that none was published.
    pub torchaudio_absent: Option<String>,
    /// Python versions torch publishes Linux x86_64 wheels for ("3.10" ... "3.14t" for
    /// free-threaded builds).
    pub python: Vec<String>,
    /// The same for the paired torchvision / torchaudio; empty when not recorded.
    pub torchvision_python: Vec<String>,
    pub torchaudio_python: Vec<String>,
    /// Facts about the release that are worth telling a user.
    pub notes: Vec<String>,
    pub sources: Vec<String>,
}

/// One CUDA build of a PyTorch release.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TorchVariant {
    /// "cu130".
    pub tag: String,
    pub cuda: CudaVersion,
    /// TORCH_CUDA_ARCH_LIST of the build: ["7.5", "8.0", ..., "12.0+PTX"]; None: unknown.
    pub arch_list: Option<Vec<String>>,
    /// How sure `arch_list` is.
    pub arch_list_basis: Option<ArchListBasis>,
    pub arch_list_source: Option<String>,
}

/// One entry of a TORCH_CUDA_ARCH_LIST: "8.6" (machine code) or "9.0+PTX" (machine code and PTX).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ArchEntry {
    pub cc: ComputeCapability,
    pub ptx: bool,
}

impl FromStr for ArchEntry {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (cc, ptx) = match s.strip_suffix("+PTX") {
            Some(cc) => (cc, true),
            None => (s, false),
        };
        Ok(ArchEntry {
            cc: cc.parse()?,
            ptx,
        })
    }
}

impl fmt::Display for ArchEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.cc, if self.ptx { "+PTX" } else { "" })
    }
}

/// How a build's kernels reach one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Coverage {
    /// Machine code for exactly this architecture.
    Native,
    /// Machine code for an older minor of the same major (sm_80 code runs on sm_86).
    BinaryCompatible { from: ComputeCapability },
    /// Only PTX of an older architecture, JIT-compiled by the driver at first use: works, but the
    /// first run is slow, and it does not work under CUDA minor-version compatibility.
    PtxJit { from: ComputeCapability },
    /// No kernel image can run on this GPU ("no kernel image is available for execution").
    Missing,
}

impl Coverage {
    pub fn runs(&self) -> bool {
        !matches!(self, Coverage::Missing)
    }
}

/// Which entry of an arch list serves `cc`, preferring machine code over PTX.
pub fn coverage(entries: &[ArchEntry], cc: ComputeCapability) -> Coverage {
    if entries.iter().any(|e| e.cc == cc) {
        return Coverage::Native;
    }
    // SASS is forward compatible within one major version only.
    let sass = entries
        .iter()
        .filter(|e| e.cc.major == cc.major && e.cc.minor < cc.minor)
        .map(|e| e.cc)
        .max();
    if let Some(from) = sass {
        return Coverage::BinaryCompatible { from };
    }
    // PTX JIT-compiles for any newer architecture.
    let ptx = entries
        .iter()
        .filter(|e| e.ptx && e.cc < cc)
        .map(|e| e.cc)
        .max();
    match ptx {
        Some(from) => Coverage::PtxJit { from },
        None => Coverage::Missing,
    }
}

impl TorchVariant {
    /// The parsed arch list; None when unknown (or when a user-supplied entry does not parse).
    pub fn archs(&self) -> Option<Vec<ArchEntry>> {
        self.arch_list
            .as_ref()?
            .iter()
            .map(|a| a.parse().ok())
            .collect()
    }

    /// How this build reaches a GPU of capability `cc`; None when the arch list is unknown.
    pub fn coverage(&self, cc: ComputeCapability) -> Option<Coverage> {
        Some(coverage(&self.archs()?, cc))
    }

    /// Whether any kernel image of this build can run on `cc`; None when unknown.
    pub fn covers(&self, cc: ComputeCapability) -> Option<bool> {
        self.coverage(cc).map(|c| c.runs())
    }
}

impl TorchRelease {
    /// The variant with this tag ("cu128").
    pub fn variant(&self, tag: &str) -> Option<&TorchVariant> {
        self.variants.iter().find(|v| v.tag == tag)
    }

    /// The variant of the plain PyPI install, when known.
    pub fn pypi_default_variant(&self) -> Option<&TorchVariant> {
        self.variant(self.pypi_default.as_deref()?)
    }

    /// Whether torch itself published wheels for `python` ("3.12", "3.12.3", "3.14t").
    pub fn supports_python(&self, python: &str) -> bool {
        let wanted = python_series(python);
        self.python.iter().any(|p| p == &wanted)
    }

    /// Python versions for which torch and its recorded companions all have wheels: what an
    /// install of the three together needs.
    pub fn stack_python(&self) -> Vec<String> {
        self.python
            .iter()
            .filter(|p| {
                [&self.torchvision_python, &self.torchaudio_python]
                    .iter()
                    .all(|c| c.is_empty() || c.contains(p))
            })
            .cloned()
            .collect()
    }

    /// Whether torch, torchvision and torchaudio (where recorded) all have wheels for `python`.
    pub fn supports_python_stack(&self, python: &str) -> bool {
        let wanted = python_series(python);
        self.stack_python().contains(&wanted)
    }

    /// The parsed release version.
    pub fn parsed_version(&self) -> Option<TorchVersion> {
        self.version.parse().ok()
    }
}

/// "3.12.3" -> "3.12"; "3.14t" and "3.14.0t" -> "3.14t".
pub fn python_series(python: &str) -> String {
    let python = python.trim();
    let (body, t) = match python.strip_suffix('t') {
        Some(b) => (b, "t"),
        None => (python, ""),
    };
    let mut parts = body.split('.');
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => format!("{major}.{minor}{t}"),
        _ => python.to_string(),
    }
}

/// A PyTorch release version "2.11.0", with the local part ("+cu130") kept separately.
/// Pre-release and dev versions ("2.12.0.dev20260101", "2.12.0a0") are rejected: no table row
/// describes them.
#[derive(Debug, Clone)]
pub struct TorchVersion {
    pub parts: Vec<u32>,
    /// "cu130" for "2.11.0+cu130".
    pub local: Option<String>,
}

impl TorchVersion {
    /// "2.11" for 2.11.0.
    pub fn series(&self) -> String {
        let major = self.parts.first().copied().unwrap_or(0);
        let minor = self.parts.get(1).copied().unwrap_or(0);
        format!("{major}.{minor}")
    }

    /// The release without its local part: "2.11.0".
    pub fn public(&self) -> String {
        self.parts
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(".")
    }
}

impl FromStr for TorchVersion {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "torch version";
        let s = s.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        if s.is_empty() {
            return Err(VersionError::Empty);
        }
        let (public, local) = match s.split_once('+') {
            Some((p, l)) if !l.is_empty() => (p, Some(l.to_string())),
            Some(_) => return Err(invalid(KIND, s, "empty local version")),
            None => (s, None),
        };
        let parts = public
            .split('.')
            .map(|p| {
                component(
                    KIND,
                    s,
                    p,
                    "expected a release such as 2.11.0 (pre-releases have no table row)",
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        if !(2..=3).contains(&parts.len()) {
            return Err(invalid(
                KIND,
                s,
                "expected major.minor or major.minor.patch",
            ));
        }
        Ok(TorchVersion { parts, local })
    }
}

// Equality and hashing agree with the ordering: "2.11" and "2.11.0" are the same release.
impl PartialEq for TorchVersion {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for TorchVersion {}
impl std::hash::Hash for TorchVersion {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let significant = self
            .parts
            .iter()
            .rposition(|&p| p != 0)
            .map_or(0, |i| i + 1);
        self.parts[..significant].hash(state);
        self.local.hash(state);
    }
}

impl PartialOrd for TorchVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for TorchVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_components(&self.parts, &other.parts).then_with(|| self.local.cmp(&other.local))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc(s: &str) -> ComputeCapability {
        s.parse().unwrap()
    }
    fn list(s: &str) -> Vec<ArchEntry> {
        s.split(';').map(|e| e.parse().unwrap()).collect()
    }

    #[test]
    fn equal_releases_compare_and_hash_alike() {
        use std::collections::HashSet;
        let a: TorchVersion = "2.11".parse().unwrap();
        let b: TorchVersion = "2.11.0".parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.cmp(&b), Ordering::Equal);
        assert_eq!(HashSet::from([a, b]).len(), 1);
        assert_ne!(
            "2.11.1".parse::<TorchVersion>().unwrap(),
            "2.11".parse().unwrap()
        );
        assert_ne!(
            "2.11.0+cu130".parse::<TorchVersion>().unwrap(),
            "2.11.0".parse().unwrap()
        );
    }

    #[test]
    fn arch_entries_parse() {
        assert_eq!(
            "12.0+PTX".parse::<ArchEntry>().unwrap(),
            ArchEntry {
                cc: cc("12.0"),
                ptx: true
            }
        );
        assert_eq!("8.6".parse::<ArchEntry>().unwrap().to_string(), "8.6");
        assert!("8.6+ptx".parse::<ArchEntry>().is_err());
        assert!("".parse::<ArchEntry>().is_err());
    }

    #[test]
    fn coverage_native_compatible_ptx_missing() {
        let l = list("5.0;6.0;7.0;7.5;8.0;8.6;9.0+PTX");
        assert_eq!(coverage(&l, cc("8.6")), Coverage::Native);
        assert_eq!(
            coverage(&l, cc("8.9")),
            Coverage::BinaryCompatible { from: cc("8.6") }
        );
        assert_eq!(
            coverage(&l, cc("6.1")),
            Coverage::BinaryCompatible { from: cc("6.0") }
        );
        assert_eq!(
            coverage(&l, cc("12.0")),
            Coverage::PtxJit { from: cc("9.0") }
        );
        assert_eq!(coverage(&l, cc("3.7")), Coverage::Missing);
        let no_ptx = list("7.5;8.0;8.6;9.0;10.0;12.0");
        assert_eq!(coverage(&no_ptx, cc("6.1")), Coverage::Missing);
        assert_eq!(coverage(&no_ptx, cc("7.0")), Coverage::Missing);
        assert_eq!(coverage(&no_ptx, cc("11.0")), Coverage::Missing);
        assert_eq!(
            coverage(&no_ptx, cc("12.1")),
            Coverage::BinaryCompatible { from: cc("12.0") }
        );
    }

    #[test]
    fn python_series_normalises() {
        assert_eq!(python_series("3.12.3"), "3.12");
        assert_eq!(python_series("3.14t"), "3.14t");
        assert_eq!(python_series("3.14.0t"), "3.14t");
        assert_eq!(python_series("3.9"), "3.9");
    }

    #[test]
    fn torch_versions() {
        let v: TorchVersion = "2.11.0+cu130".parse().unwrap();
        assert_eq!(v.parts, vec![2, 11, 0]);
        assert_eq!(v.local.as_deref(), Some("cu130"));
        assert_eq!(v.series(), "2.11");
        assert_eq!(v.public(), "2.11.0");
        assert!("2.11".parse::<TorchVersion>().is_ok());
        for bad in ["", "2", "2.12.0.dev20260101", "2.12.0a0", "2.11.0+", "x.y"] {
            assert!(bad.parse::<TorchVersion>().is_err(), "{bad:?} accepted");
        }
        let a: TorchVersion = "2.10.0".parse().unwrap();
        let b: TorchVersion = "2.9.1".parse().unwrap();
        assert!(a > b);
        let local: TorchVersion = "2.10.0+cu130".parse().unwrap();
        assert!(local > a, "same release: the local part decides");
        let short: TorchVersion = "2.10".parse().unwrap();
        assert!(short < local);
    }

    #[test]
    fn torch_version_errors_say_what_was_expected() {
        let why = |s: &str| s.parse::<TorchVersion>().unwrap_err().to_string();
        assert_eq!(
            why("v2.12.0a0"),
            "torch version \"2.12.0a0\": expected a release such as 2.11.0 (pre-releases have no table row)"
        );
        assert_eq!(
            why("2.11.0+"),
            "torch version \"2.11.0+\": empty local version"
        );
        assert_eq!(
            why("2.99999999999"),
            "torch version \"2.99999999999\": component too large"
        );
        assert_eq!(
            why("2.1.0.1"),
            "torch version \"2.1.0.1\": expected major.minor or major.minor.patch"
        );
    }
}
