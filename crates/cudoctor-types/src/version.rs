//! The three version-like values every table is keyed by: a CUDA version, an NVIDIA driver
//! version and a GPU compute capability. Each parses the spellings tools really print, displays
//! in one canonical form, orders numerically and serialises as a string.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a version string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("empty version string")]
    Empty,
    #[error("{kind} {input:?}: {why}")]
    Invalid {
        kind: &'static str,
        input: String,
        why: &'static str,
    },
}

pub fn invalid(kind: &'static str, input: &str, why: &'static str) -> VersionError {
    VersionError::Invalid {
        kind,
        input: input.to_string(),
        why,
    }
}

/// Parses one dot-separated component made only of ASCII digits.
fn number(kind: &'static str, input: &str, part: &str) -> Result<u32, VersionError> {
    component(kind, input, part, "components must be decimal numbers")
}

/// Parses one component made only of ASCII digits; `not_digits` says why anything else is
/// rejected, in the words that suit the kind of version.
pub fn component(
    kind: &'static str,
    input: &str,
    part: &str,
    not_digits: &'static str,
) -> Result<u32, VersionError> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(kind, input, not_digits));
    }
    part.parse::<u32>()
        .map_err(|_| invalid(kind, input, "component too large"))
}

/// Compares numeric components one by one; a missing trailing component counts as 0, so
/// `[580]` and `[580, 0]` are equal.
pub fn cmp_components(a: &[u32], b: &[u32]) -> Ordering {
    let len = a.len().max(b.len());
    (0..len)
        .map(|i| {
            let x = a.get(i).copied().unwrap_or(0);
            let y = b.get(i).copied().unwrap_or(0);
            x.cmp(&y)
        })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

// ---------------------------------------------------------------------------------------------

/// A CUDA version as `major.minor` (toolkit, runtime or the driver's "CUDA Version").
/// Patch levels ("12.4.1", "13.0.88") are accepted and ignored: no compatibility rule depends
/// on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl CudaVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        CudaVersion { major, minor }
    }

    /// From the integer `cudaDriverGetVersion`/`cudaRuntimeGetVersion` report: 12040 -> 12.4.
    pub fn from_driver_api_int(v: u32) -> CudaVersion {
        CudaVersion::new(v / 1000, (v % 1000) / 10)
    }

    /// From a PyTorch wheel tag: "cu130" -> 13.0, "cu118" -> 11.8, "cu92" -> 9.2.
    /// The last digit is the minor version (PyTorch has never published a two-digit minor).
    pub fn from_tag(tag: &str) -> Result<CudaVersion, VersionError> {
        const KIND: &str = "CUDA variant tag";
        let digits = tag
            .strip_prefix("cu")
            .ok_or_else(|| invalid(KIND, tag, "expected cuXYZ"))?;
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid(
                KIND,
                tag,
                "expected cu followed by at least two digits",
            ));
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Ok(CudaVersion::new(
            number(KIND, tag, major)?,
            number(KIND, tag, minor)?,
        ))
    }

    /// The PyTorch wheel tag for this version: 12.6 -> "cu126".
    pub fn tag(&self) -> String {
        format!("cu{}{}", self.major, self.minor)
    }
}

impl FromStr for CudaVersion {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "CUDA version";
        let s = s.trim();
        if s.is_empty() {
            return Err(VersionError::Empty);
        }
        let mut parts = s.split('.');
        let major = number(KIND, s, parts.next().unwrap_or_default())?;
        let minor = match parts.next() {
            Some(p) => number(KIND, s, p)?,
            None => return Err(invalid(KIND, s, "expected major.minor")),
        };
        if let Some(patch) = parts.next() {
            number(KIND, s, patch)?;
        }
        if parts.next().is_some() {
            return Err(invalid(KIND, s, "too many components"));
        }
        Ok(CudaVersion::new(major, minor))
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

// ---------------------------------------------------------------------------------------------

/// An NVIDIA driver version such as "580.159.04". Compared numerically, component by component
/// (missing trailing components count as 0, so "580" == "580.0"); displayed exactly as parsed.
#[derive(Debug, Clone)]
pub struct DriverVersion {
    parts: Vec<u32>,
    text: String,
}

impl DriverVersion {
    /// The driver branch (first component): 580 for "580.159.04". NVIDIA names branches "R580".
    pub fn branch(&self) -> u32 {
        self.parts.first().copied().unwrap_or(0)
    }

    /// The numeric components as parsed: [580, 159, 4].
    pub fn components(&self) -> &[u32] {
        &self.parts
    }

    fn significant(&self) -> &[u32] {
        let len = self
            .parts
            .iter()
            .rposition(|&p| p != 0)
            .map_or(0, |i| i + 1);
        self.parts.get(..len).unwrap_or(&[])
    }
}

impl FromStr for DriverVersion {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "driver version";
        let s = s.trim();
        if s.is_empty() {
            return Err(VersionError::Empty);
        }
        let parts = s
            .split('.')
            .map(|p| number(KIND, s, p))
            .collect::<Result<Vec<_>, _>>()?;
        if parts.len() > 4 {
            return Err(invalid(KIND, s, "too many components"));
        }
        Ok(DriverVersion {
            parts,
            text: s.to_string(),
        })
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for DriverVersion {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for DriverVersion {}

impl Hash for DriverVersion {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must agree with Eq: trailing zero components are not significant.
        self.significant().hash(state);
    }
}

impl PartialOrd for DriverVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DriverVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_components(&self.parts, &other.parts)
    }
}

// ---------------------------------------------------------------------------------------------

/// A GPU compute capability ("9.0"), also written as an architecture name ("sm_90").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl ComputeCapability {
    pub const fn new(major: u32, minor: u32) -> Self {
        ComputeCapability { major, minor }
    }

    /// The real-architecture name nvcc uses: 9.0 -> "sm_90", 12.0 -> "sm_120".
    pub fn sm(&self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }

    /// The virtual-architecture (PTX) name: 9.0 -> "compute_90".
    pub fn compute(&self) -> String {
        format!("compute_{}{}", self.major, self.minor)
    }

    /// The number in architecture names: 9.0 -> 90, 12.1 -> 121. Saturates for majors no GPU
    /// has (a parsed `TORCH_CUDA_ARCH_LIST` may say anything).
    pub fn number(&self) -> u32 {
        self.major.saturating_mul(10).saturating_add(self.minor)
    }
}

impl FromStr for ComputeCapability {
    type Err = VersionError;
    /// Accepts "9.0", "12.0", "sm_90", "sm_90a", "sm_100f", "compute_90", "90", "120".
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "compute capability";
        let s = s.trim();
        if s.is_empty() {
            return Err(VersionError::Empty);
        }
        if let Some((major, minor)) = s.split_once('.') {
            // Minors are one digit: architecture names (sm_XY) leave no room for more.
            if minor.len() != 1 {
                return Err(invalid(KIND, s, "expected X.Y with a one-digit minor"));
            }
            return Ok(ComputeCapability::new(
                number(KIND, s, major)?,
                number(KIND, s, minor)?,
            ));
        }
        let lower = s.to_ascii_lowercase();
        let digits = lower
            .strip_prefix("sm_")
            .or_else(|| lower.strip_prefix("compute_"))
            .unwrap_or(&lower);
        // Architecture-specific ("a") and family ("f") suffixes name the same capability.
        let digits = digits
            .strip_suffix('a')
            .or_else(|| digits.strip_suffix('f'))
            .unwrap_or(digits);
        if !(2..=3).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid(KIND, s, "expected X.Y, sm_XY or XY"));
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Ok(ComputeCapability::new(
            number(KIND, s, major)?,
            number(KIND, s, minor)?,
        ))
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

// ---------------------------------------------------------------------------------------------

macro_rules! serde_as_string {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

serde_as_string!(CudaVersion);
serde_as_string!(DriverVersion);
serde_as_string!(ComputeCapability);

#[cfg(test)]
mod tests {
    use super::*;

    fn cuda(s: &str) -> CudaVersion {
        s.parse().unwrap()
    }
    fn drv(s: &str) -> DriverVersion {
        s.parse().unwrap()
    }
    fn cc(s: &str) -> ComputeCapability {
        s.parse().unwrap()
    }

    #[test]
    fn cuda_parses_toolkit_and_runtime_spellings() {
        assert_eq!(cuda("12.4"), CudaVersion::new(12, 4));
        assert_eq!(cuda("12.4.1"), CudaVersion::new(12, 4));
        assert_eq!(cuda("13.0.88"), CudaVersion::new(13, 0));
        assert_eq!(cuda(" 11.8 "), CudaVersion::new(11, 8));
        assert_eq!(cuda("12.10"), CudaVersion::new(12, 10));
        assert_eq!(cuda("12.4").to_string(), "12.4");
    }

    #[test]
    fn cuda_rejects_garbage() {
        for bad in [
            "",
            "12",
            "12.",
            "x.y",
            "12.4.1.2",
            "-1.0",
            "12.4a",
            "99999999999.0",
        ] {
            assert!(bad.parse::<CudaVersion>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn cuda_from_driver_api_int_and_tags() {
        assert_eq!(CudaVersion::from_driver_api_int(12040), cuda("12.4"));
        assert_eq!(CudaVersion::from_driver_api_int(13000), cuda("13.0"));
        assert_eq!(CudaVersion::from_driver_api_int(11080), cuda("11.8"));
        assert_eq!(CudaVersion::from_tag("cu130").unwrap(), cuda("13.0"));
        assert_eq!(CudaVersion::from_tag("cu118").unwrap(), cuda("11.8"));
        assert_eq!(CudaVersion::from_tag("cu92").unwrap(), cuda("9.2"));
        assert_eq!(cuda("12.6").tag(), "cu126");
        for bad in ["cpu", "cu", "cu1", "rocm6.2", "cu12a"] {
            assert!(CudaVersion::from_tag(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn cuda_orders_numerically() {
        assert!(cuda("12.10") > cuda("12.9"));
        assert!(cuda("13.0") > cuda("12.9"));
        assert!(cuda("9.2") < cuda("10.0"));
    }

    #[test]
    fn driver_parses_and_displays_as_given() {
        for text in ["580.159.04", "535.104.05", "470.82.01", "580", "570.26"] {
            assert_eq!(drv(text).to_string(), text);
        }
        assert_eq!(drv("580.159.04").branch(), 580);
        assert_eq!(drv("580").branch(), 580);
        assert_eq!(drv("535.104.05").components(), &[535, 104, 5]);
    }

    #[test]
    fn driver_orders_numerically_not_lexically() {
        assert!(drv("535.104.05") > drv("535.54.03"));
        assert!(drv("580.65.06") > drv("580"));
        assert!(drv("1000.1") > drv("999.99.99"));
        assert_eq!(drv("580"), drv("580.0"));
        assert_eq!(drv("525.60.13"), drv("525.60.13"));
        assert!(drv("470.82.01") < drv("470.82.1.5"));
    }

    #[test]
    fn components_compare_with_missing_ones_as_zero() {
        assert_eq!(cmp_components(&[580], &[580, 0, 0]), Ordering::Equal);
        assert_eq!(cmp_components(&[580, 65], &[580]), Ordering::Greater);
        assert_eq!(cmp_components(&[], &[1]), Ordering::Less);
    }

    #[test]
    fn driver_hash_agrees_with_eq() {
        use std::collections::HashSet;
        let set: HashSet<DriverVersion> = [drv("580"), drv("580.0"), drv("580.0.0")].into();
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn driver_rejects_garbage() {
        for bad in [
            "",
            "abc",
            "580.",
            ".580",
            "580..1",
            "580.x",
            "1.2.3.4.5",
            "580 .1",
        ] {
            assert!(bad.parse::<DriverVersion>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn compute_capability_spellings() {
        for text in ["9.0", "sm_90", "sm_90a", "90", "compute_90", "SM_90"] {
            assert_eq!(cc(text), ComputeCapability::new(9, 0), "{text}");
        }
        for text in ["12.0", "sm_120", "120", "sm_120a", "sm_120f"] {
            assert_eq!(cc(text), ComputeCapability::new(12, 0), "{text}");
        }
        assert_eq!(cc("8.6").sm(), "sm_86");
        assert_eq!(cc("12.0").sm(), "sm_120");
        assert_eq!(cc("10.3").compute(), "compute_103");
        assert_eq!(cc("sm_100").to_string(), "10.0");
        assert!(cc("12.0") > cc("9.0"));
    }

    #[test]
    fn compute_capability_rejects_garbage() {
        for bad in [
            "", "9", "sm_", "sm_9", "sm_1200", "9.x", "rtx4090", "sm_90b", "9.10", "9.", ".0",
            "1234",
        ] {
            assert!(
                bad.parse::<ComputeCapability>().is_err(),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn serde_round_trips_as_strings() {
        let json = serde_json::to_string(&(cuda("12.4"), drv("580.159.04"), cc("sm_90"))).unwrap();
        assert_eq!(json, r#"["12.4","580.159.04","9.0"]"#);
        let back: (CudaVersion, DriverVersion, ComputeCapability) =
            serde_json::from_str(&json).unwrap();
        assert_eq!(back.1.to_string(), "580.159.04");
        assert!(serde_json::from_str::<CudaVersion>(r#""twelve""#).is_err());
    }
}
