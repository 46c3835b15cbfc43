use serde::{Deserialize, Serialize};

use crate::Attempt;

/// CUDA Toolkits on disk and which one the shell would use.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ToolkitFacts {
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// Every toolkit found, one entry per distinct real directory.
    #[serde(default)]
    pub toolkits: Vec<Toolkit>,
    /// The `nvcc` that PATH selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvcc_on_path: Option<NvccOnPath>,
    /// Where `/usr/local/cuda` leads, link by link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usr_local_cuda: Option<SymlinkChain>,
    /// Shell start-up files that mention CUDA paths (e.g. `~/.bashrc`), and `/etc/profile.d` files.
    #[serde(default)]
    pub shell_settings: Vec<String>,
}

impl ToolkitFacts {
    /// The toolkit whose root is `root` (a real path).
    pub fn by_root(&self, root: &str) -> Option<&Toolkit> {
        self.toolkits.iter().find(|t| t.root == root)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Toolkit {
    /// Real (symlink-free) directory of the toolkit.
    pub root: String,
    /// `major.minor.patch` as recorded, e.g. `13.0.88`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `version.json`, `version.txt`, `nvcc --version`, or a package's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_source: Option<String>,
    /// How it was found: `/usr/local/cuda-*`, `CUDA_HOME`, `pip nvidia-cuda-nvcc`, `conda`...
    #[serde(default)]
    pub found_via: Vec<String>,
    /// Path of its `nvcc`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvcc: Option<String>,
    /// Where an extension build links the CUDA runtime from; absent when not read (no nvcc,
    /// or an older snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_dir: Option<LinkDir>,
}

/// The library directory torch's `cpp_extension` passes as `-L` with `-lcudart` (`lib64`,
/// else `lib` when only that exists), and the CUDA runtime's files in it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LinkDir {
    pub path: String,
    /// Whether the directory exists.
    #[serde(default)]
    pub exists: bool,
    /// `libcudart.so`, `libcudart.so.13`, `libcudart_static.a`...: the names the linker can
    /// find for `-lcudart` need the unversioned `libcudart.so` (or `.a`).
    #[serde(default)]
    pub cudart_files: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NvccOnPath {
    /// The PATH entry hit, as written in PATH.
    pub path: String,
    /// With every symlink followed.
    pub resolved: String,
    /// From `nvcc --version` or the owning toolkit's version file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The toolkit root it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit_root: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SymlinkChain {
    pub path: String,
    /// Each link target in turn (e.g. `/etc/alternatives/cuda`, `/usr/local/cuda-13.0`).
    #[serde(default)]
    pub hops: Vec<String>,
    /// The final real path, absent when the chain is broken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
}
