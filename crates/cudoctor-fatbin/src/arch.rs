//! GPU architecture names as nvcc spells them: `sm_90`, `sm_90a`, `sm_100f`, `compute_90`.
//!
//! The number is the compute capability times ten plus the minor (`sm_86` = 8.6, `sm_103` =
//! 10.3). The suffix is NVIDIA's: `a` = architecture-specific (runs only on exactly that compute
//! capability), `f` = family-specific (runs on that compute capability and later minors of the
//! same major). See [`crate::compat`] for the rules and their sources.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// What an architecture name designates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArchKind {
    /// Machine code (a cubin), named `sm_XX`.
    Sass,
    /// PTX for the driver's JIT compiler, named `compute_XX`.
    Ptx,
    /// LTO intermediate code for nvJitLink, named `lto_XX`; not loadable by the driver itself.
    Lto,
}

impl ArchKind {
    fn prefix(self) -> &'static str {
        match self {
            ArchKind::Sass => "sm_",
            ArchKind::Ptx => "compute_",
            ArchKind::Lto => "lto_",
        }
    }
}

/// The suffix of a target name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// No suffix (`sm_90`).
    Plain,
    /// `a`: architecture-specific (`sm_90a`).
    ArchSpecific,
    /// `f`: family-specific (`sm_100f`).
    FamilySpecific,
}

impl Variant {
    fn suffix(self) -> &'static str {
        match self {
            Variant::Plain => "",
            Variant::ArchSpecific => "a",
            Variant::FamilySpecific => "f",
        }
    }
}

/// One target architecture, e.g. `sm_90a` or `compute_120`.
///
/// Ordered numerically, so `sm_80 < sm_90 < sm_90a < sm_100` (a plain string sort would put
/// `sm_100` first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arch {
    pub kind: ArchKind,
    /// Compute capability × 10 + minor: 75, 80, 90, 100, 103, 120, 121 ...
    pub number: u32,
    pub variant: Variant,
}

impl Arch {
    pub fn new(kind: ArchKind, number: u32, variant: Variant) -> Self {
        Self {
            kind,
            number,
            variant,
        }
    }

    /// Compute capability major (`sm_103` → 10).
    pub fn major(&self) -> u32 {
        self.number / 10
    }

    /// Compute capability minor (`sm_103` → 3).
    pub fn minor(&self) -> u32 {
        self.number % 10
    }

    /// The compute capability the architecture is for (`sm_90a` → 9.0).
    pub fn compute_capability(&self) -> cudoctor_types::ComputeCapability {
        cudoctor_types::ComputeCapability::new(self.major(), self.minor())
    }

    /// The name as nvcc spells it: `sm_90a`, `compute_100f`, `lto_80`.
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// Parses `sm_90a`, `compute_100f`, `lto_80`. Returns `None` for anything else.
    pub fn parse(name: &str) -> Option<Arch> {
        let name = name.trim();
        let (kind, rest) = [ArchKind::Sass, ArchKind::Ptx, ArchKind::Lto]
            .into_iter()
            .find_map(|k| name.strip_prefix(k.prefix()).map(|rest| (k, rest)))?;
        let (digits, variant) = if let Some(d) = rest.strip_suffix('a') {
            (d, Variant::ArchSpecific)
        } else if let Some(d) = rest.strip_suffix('f') {
            (d, Variant::FamilySpecific)
        } else {
            (rest, Variant::Plain)
        };
        if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number = digits.parse().ok()?;
        Some(Arch::new(kind, number, variant))
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.kind.prefix(),
            self.number,
            self.variant.suffix()
        )
    }
}

impl Ord for Arch {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.kind, self.number, self.variant).cmp(&(other.kind, other.number, other.variant))
    }
}

impl PartialOrd for Arch {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Arch::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("not an arch name: {s}")))
    }
}

/// Sorts architecture names numerically (`sm_80 < sm_90 < sm_90a < sm_100`) and removes
/// duplicates. Names that do not parse keep their relative order after all parsed ones.
pub fn sort_arch_names(names: &mut Vec<String>) {
    names.sort_by(|a, b| match (Arch::parse(a), Arch::parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    });
    names.dedup();
}

/// Sorted, de-duplicated names of a set of architectures.
pub(crate) fn names_of(archs: impl IntoIterator<Item = Arch>) -> Vec<String> {
    let mut v: Vec<Arch> = archs.into_iter().collect();
    v.sort();
    v.dedup();
    v.iter().map(Arch::name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "sm_80",
            "sm_90a",
            "sm_100f",
            "compute_90",
            "compute_120a",
            "lto_80",
        ] {
            assert_eq!(Arch::parse(name).unwrap().name(), name);
        }
    }

    #[test]
    fn rejects_non_names() {
        for bad in [
            "", "sm_", "sm_9x", "sm_90b", "sm_12345", "compute", "gfx90a", "sm_-1", "sm_ 90",
        ] {
            assert_eq!(Arch::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn capability_from_number() {
        let a = Arch::parse("sm_103a").unwrap();
        assert_eq!((a.major(), a.minor()), (10, 3));
        assert_eq!(a.compute_capability().to_string(), "10.3");
        let a = Arch::parse("sm_86").unwrap();
        assert_eq!((a.major(), a.minor()), (8, 6));
    }

    #[test]
    fn sorts_numerically_and_dedups() {
        let mut v: Vec<String> = [
            "sm_100", "sm_90a", "sm_80", "sm_90", "sm_100", "sm_120", "sm_100f", "sm_100a",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        sort_arch_names(&mut v);
        assert_eq!(
            v,
            ["sm_80", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_120"]
        );
    }

    #[test]
    fn serde_uses_the_name() {
        let a = Arch::parse("compute_90a").unwrap();
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, "\"compute_90a\"");
        let back: Arch = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
        assert!(serde_json::from_str::<Arch>("\"gfx90a\"").is_err());
    }
}
