//! CUDA binaries the user's code runs from outside the site directories' packages: torch's
//! extension cache (JIT builds), the source trees of editable installs, `PYTHONPATH` entries
//! and the project directory. Found by a bounded walk; judged like site-packages extensions
//! (their kernel images are in [`crate::KernelImages`], their libraries in the loader's facts).

use serde::{Deserialize, Serialize};

/// What the search for CUDA binaries found, and where it looked.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BinaryDiscovery {
    /// Every CUDA binary found (ELF files with a `.nv_fatbin` section or that need a CUDA
    /// runtime, the driver or torch's CUDA library), each path once.
    #[serde(default)]
    pub binaries: Vec<FoundBinary>,
    /// Every place searched, with what the search met there.
    #[serde(default)]
    pub places: Vec<SearchedPlace>,
}

impl BinaryDiscovery {
    /// The found binary at `path`.
    pub fn binary(&self, path: &str) -> Option<&FoundBinary> {
        self.binaries.iter().find(|b| b.path == path)
    }
}

/// One CUDA binary and how it was found.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FoundBinary {
    pub path: String,
    pub origin: BinaryOrigin,
    /// It has a `.nv_fatbin` section (kernel images of its own).
    #[serde(default)]
    pub fatbin: bool,
    /// The CUDA libraries it needs (DT_NEEDED): `libcudart.so.13`, `libcuda.so.1`,
    /// `libtorch_cuda.so`, `libc10_cuda.so`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_needed: Vec<String>,
    /// The prefix of the inspected environment whose process loads it: for a JIT build, the
    /// environment whose Python and torch name its build folder; for the others, the first
    /// environment with torch. Absent when no inspected environment would load it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_prefix: Option<String>,
}

impl FoundBinary {
    /// How a report names it: "torch extension myext (JIT build)", "editable install of
    /// mypkg", "PYTHONPATH entry /src", "project /work/proj".
    pub fn label(&self) -> String {
        match &self.origin {
            BinaryOrigin::TorchExtensionCache { name, .. } => {
                format!("torch extension {name} (JIT build)")
            }
            BinaryOrigin::Editable { distribution, .. } => {
                format!("editable install of {distribution}")
            }
            BinaryOrigin::PythonPath { .. } => {
                let file = self.path.rsplit('/').next().unwrap_or(&self.path);
                format!("{file} (on PYTHONPATH)")
            }
            BinaryOrigin::Project { .. } => {
                let file = self.path.rsplit('/').next().unwrap_or(&self.path);
                format!("{file} (built in the project)")
            }
        }
    }
}

/// Where a CUDA binary was found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BinaryOrigin {
    /// A build of `torch.utils.cpp_extension.load` / `load_inline`: `<root>/<build
    /// folder>/<name>/<name>.so`, where torch's `_get_build_directory` puts it.
    TorchExtensionCache {
        /// The extensions root: `TORCH_EXTENSIONS_DIR`, else `<user cache>/torch_extensions`.
        root: String,
        /// `TORCH_EXTENSIONS_DIR` named the root (torch then adds no build folder).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        from_env_var: bool,
        /// `py311_cu130`: the Python and accelerator of the torch that built it (absent under
        /// `TORCH_EXTENSIONS_DIR`, and for torch releases before the folder existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        build_folder: Option<String>,
        /// The extension's name (its build directory's).
        name: String,
        /// The build directory (`<root>/<build folder>/<name>`).
        build_dir: String,
    },
    /// Under the source tree an editable install points the interpreter at.
    Editable {
        /// The distribution (normalised name).
        distribution: String,
        /// The source directory imported from.
        source: String,
        /// The file that says so.
        via: EditableVia,
    },
    /// Under a `PYTHONPATH` entry.
    PythonPath { entry: String },
    /// Under the project directory (`cudoctor check PATH`, or the current directory).
    Project { root: String },
}

impl Default for BinaryOrigin {
    fn default() -> Self {
        BinaryOrigin::Project {
            root: String::new(),
        }
    }
}

/// The file of an editable install that names its source tree.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EditableVia {
    /// The distribution's `direct_url.json` (`dir_info.editable`).
    #[default]
    DirectUrl,
    /// setuptools' `__editable___<name>_finder.py` mapping of packages to directories.
    EditableFinder,
    /// A `.pth` file's line naming the directory.
    Pth,
}

/// One place searched for CUDA binaries.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SearchedPlace {
    pub path: String,
    pub kind: PlaceKind,
    /// Directory entries looked at.
    #[serde(default)]
    pub entries: u64,
    /// The limit that stopped the walk before it saw everything (files or depth), said as such.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_hit: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PlaceKind {
    #[default]
    TorchExtensionCache,
    Editable,
    PythonPath,
    Project,
}

impl PlaceKind {
    pub fn describe(self) -> &'static str {
        match self {
            PlaceKind::TorchExtensionCache => "torch's extension cache",
            PlaceKind::Editable => "an editable install's source tree",
            PlaceKind::PythonPath => "a PYTHONPATH entry",
            PlaceKind::Project => "the project directory",
        }
    }
}

/// torch's build folder for an interpreter and torch build, as `_get_build_directory` names
/// it: `py{major}{minor}{abiflags}_{accelerator}`, the accelerator `cu{cuda without dots}`
/// for a CUDA build, `cpu` without CUDA or HIP (ROCm builds: `None`, not modelled here).
/// `python` is `3.11`, `3.11.7` or `3.13t` (a free-threaded build's `t` is its abiflags).
pub fn torch_build_folder(python: &str, torch: &crate::TorchBuild) -> Option<String> {
    if torch.hip.is_some() {
        return None;
    }
    let free_threaded = python.ends_with('t');
    let mut parts = python.trim_end_matches('t').split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    if major.is_empty()
        || minor.is_empty()
        || !major
            .chars()
            .chain(minor.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let accelerator = match &torch.cuda {
        Some(c) => format!("cu{}", c.replace('.', "")),
        None => "cpu".to_string(),
    };
    Some(format!(
        "py{major}{minor}{}_{accelerator}",
        if free_threaded { "t" } else { "" }
    ))
}

/// `py311_cu130` -> (`3.11`, `cu130`): the Python and accelerator a build folder names.
pub fn parse_build_folder(folder: &str) -> Option<(String, String)> {
    let (py, accel) = folder.split_once('_')?;
    let digits = py.strip_prefix("py")?;
    let digits = digits.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) || accel.is_empty() {
        return None;
    }
    let (major, minor) = digits.split_at(1);
    Some((format!("{major}.{minor}"), accel.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torch(cuda: Option<&str>) -> crate::TorchBuild {
        crate::TorchBuild {
            version: "2.11.0".into(),
            cuda: cuda.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn build_folders_are_named_as_torch_names_them() {
        assert_eq!(
            torch_build_folder("3.11.7", &torch(Some("13.0"))).as_deref(),
            Some("py311_cu130")
        );
        assert_eq!(
            torch_build_folder("3.12", &torch(Some("12.6"))).as_deref(),
            Some("py312_cu126")
        );
        assert_eq!(
            torch_build_folder("3.13t", &torch(None)).as_deref(),
            Some("py313t_cpu")
        );
        let rocm = crate::TorchBuild {
            hip: Some("6.4".into()),
            ..torch(None)
        };
        assert_eq!(torch_build_folder("3.11", &rocm), None);
        assert_eq!(torch_build_folder("x", &torch(None)), None);
    }

    #[test]
    fn build_folder_names_are_read_back() {
        assert_eq!(
            parse_build_folder("py311_cu130"),
            Some(("3.11".into(), "cu130".into()))
        );
        assert_eq!(
            parse_build_folder("py313t_cpu"),
            Some(("3.13".into(), "cpu".into()))
        );
        assert_eq!(parse_build_folder("myext"), None);
        assert_eq!(parse_build_folder("py_cu130"), None);
    }
}
