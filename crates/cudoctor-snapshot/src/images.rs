use serde::{Deserialize, Serialize};

/// GPU architectures carried by CUDA libraries (from their fat binaries).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelImages {
    #[serde(default)]
    pub libraries: Vec<LibraryImages>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LibraryImages {
    pub path: String,
    /// The Python distribution that owns it (`torch`, `flash-attn`...), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Machine-code architectures, e.g. `sm_90`, `sm_90a`.
    #[serde(default)]
    pub sass: Vec<String>,
    /// PTX architectures, e.g. `compute_90`.
    #[serde(default)]
    pub ptx: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the dynamic loader would resolve for the libraries of one process.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LoaderFacts {
    #[serde(default)]
    pub objects: Vec<LibraryLinks>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LibraryLinks {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(default)]
    pub needed: Vec<LinkedLibrary>,
    #[serde(default)]
    pub unresolved_symbols: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LinkedLibrary {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// rpath, ld_library_path, runpath, cache, default, loaded, missing.
    pub via: String,
}
