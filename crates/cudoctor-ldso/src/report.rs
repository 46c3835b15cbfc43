//! Serialisable results: `{"objects": [{"path", "needed": [{"name", "resolved", "via"}],
//! "unresolved_symbols": [...]}]}` plus optional detail fields that are omitted when empty.

pub use cudoctor_types::Via;

/// One DT_NEEDED entry and how it resolved.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NeededReport {
    pub name: String,
    /// Path of the object used (as ld.so names it, e.g. `.../torch/lib/../../nvidia/cu13/lib/
    /// libcudart.so.13`); `null` when missing.
    pub resolved: Option<String>,
    pub via: Via,
    /// The same file with symlinks and `..` resolved (to compare copies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_path: Option<String>,
    /// Why a candidate was refused ("invalid ELF header", ...), when ld.so would stop there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A version an object requires from a library that the library does not define: ld.so
/// refuses to load the object ("version `GLIBCXX_3.4.32' not found").
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct MissingVersion {
    /// The library named in the requirement (e.g. `libstdc++.so.6`).
    pub file: String,
    pub version: String,
    /// The path of the loaded library that lacks it.
    pub provider: Option<String>,
}

/// One object of the process.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ObjectReport {
    pub path: String,
    pub needed: Vec<NeededReport>,
    /// Undefined, non-weak dynamic symbols nothing in the process provides, as `name` or
    /// `name@VERSION`, sorted. Empty when symbols were not checked (see `symbols_checked`).
    pub unresolved_symbols: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_path: Option<String>,
    /// The object whose DT_NEEDED brought this one in (`null` for objects loaded directly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_by: Option<String>,
    #[serde(default)]
    pub symbols_checked: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_versions: Vec<MissingVersion>,
    /// Problems reading this object (its symbol table could not be read, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl ObjectReport {
    /// Needed entries that did not resolve.
    pub fn missing(&self) -> impl Iterator<Item = &NeededReport> {
        self.needed.iter().filter(|n| n.via == Via::Missing)
    }
}

/// All objects of one emulated process, in load order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LibsReport {
    pub objects: Vec<ObjectReport>,
}

impl LibsReport {
    pub fn object(&self, path: &str) -> Option<&ObjectReport> {
        self.objects.iter().find(|o| o.path == path)
    }
}
