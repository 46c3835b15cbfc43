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
    /// What an extension build runs besides nvcc: nvcc's host compiler and ninja. Absent in
    /// older snapshots and on Windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_tools: Option<BuildTools>,
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
    /// The host compilers its nvcc accepts, read from `include/crt/host_config.h`; absent when
    /// the toolkit has no nvcc or no such header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_compilers: Option<HostCompilerSupport>,
    /// The CCCL headers its own headers include (libcu++'s `nv/target`, thrust, cub); absent
    /// when the toolkit has no nvcc, or in older snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cccl: Option<CcclHeaders>,
}

/// A toolkit's CCCL headers: a full CUDA 12 Toolkit has them in `include/`, CUDA 13 in
/// `include/cccl/` (its `nvcc.profile` adds that directory), NVIDIA's pip compiler only with
/// the separate `nvidia-cuda-cccl` wheel.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CcclHeaders {
    /// The directory holding them (`<root>/include/cccl` or `<root>/include`); absent when
    /// neither has `nv/target` nor `thrust/version.h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The first CCCL header the toolkit's `include/cuda_fp16.h` includes (torch's CUDA
    /// headers include that file, so every CUDA source of a torch extension does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_by: Option<HeaderInclude>,
}

/// `#include <HEADER>` at `FILE:LINE`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HeaderInclude {
    pub file: String,
    pub line: u32,
    pub header: String,
}

/// A compiler family nvcc's `host_config.h` guards.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CompilerFamily {
    Gcc,
    Clang,
    Msvc,
}

impl CompilerFamily {
    pub fn name(self) -> &'static str {
        match self {
            CompilerFamily::Gcc => "gcc",
            CompilerFamily::Clang => "clang",
            CompilerFamily::Msvc => "MSVC",
        }
    }
}

/// `include/crt/host_config.h` of a toolkit: its `#error -- unsupported ... version!` guards,
/// each turned into the versions it accepts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostCompilerSupport {
    /// The header read.
    pub file: String,
    #[serde(default)]
    pub ranges: Vec<CompilerRange>,
}

impl HostCompilerSupport {
    pub fn range(&self, family: CompilerFamily) -> Option<&CompilerRange> {
        self.ranges.iter().find(|r| r.family == family)
    }
}

/// The versions of one compiler family the header lets through (evaluated from its guard's
/// condition: gcc and clang as `[major, minor]`, MSVC as `[_MSC_VER, 0]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompilerRange {
    pub family: CompilerFamily,
    /// The lowest version accepted, absent when the guard sets no lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<[u32; 2]>,
    /// The highest major accepted, absent when the guard sets no upper bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_major: Option<u32>,
    /// The guard as written (`__GNUC__ > 16`) and the line of its `#error`.
    pub condition: String,
    pub line: u32,
    /// The `#error` text nvcc prints for a compiler outside the range.
    pub message: String,
}

/// The programs an extension build runs besides nvcc, found as torch's `cpp_extension` and nvcc
/// find them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BuildTools {
    /// The host compiler nvcc would call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_compiler: Option<HostCompiler>,
    /// The `ninja` PATH selects (torch runs `ninja --version` to decide whether it can build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ninja_on_path: Option<String>,
    /// `<prefix>/bin/ninja` of the inspected environments that have one (the `ninja` wheel's
    /// program), found only while that directory is on PATH.
    #[serde(default)]
    pub ninja_in_envs: Vec<String>,
    /// The C++ compiler torch's `cpp_extension` compiles `.cpp` sources with: `CXX`, else
    /// `c++` on PATH. Looked up on the live machine only (under `--root` PATH is the inspecting
    /// shell's); absent there and in older snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cxx: Option<ProgramLookup>,
}

/// A program a build runs, as a setting or PATH names it, and where it was found.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProgramLookup {
    /// `CXX`, or `c++ on PATH`.
    pub chosen_by: String,
    /// As named there.
    pub command: String,
    /// The program found, when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// nvcc's host compiler: `-ccbin $CC` (torch passes CC), a `-ccbin` in NVCC_PREPEND_FLAGS /
/// NVCC_APPEND_FLAGS, NVCC_CCBIN, else `gcc` on PATH (nvcc's default on Linux).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostCompiler {
    /// `CC`, `NVCC_PREPEND_FLAGS`, `NVCC_APPEND_FLAGS`, `NVCC_CCBIN`, or `gcc on PATH`.
    pub chosen_by: String,
    /// As named there.
    pub command: String,
    /// The program found, when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// With every symlink followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<CompilerFamily>,
    /// `12`, `12.2.0`...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Where the version was read: a program's name (`gcc-12`), `lib/gcc/<target>/<version>`,
    /// or `--version` of a program outside every inspected environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_source: Option<String>,
}

impl HostCompiler {
    /// `[major, minor]` of the version, minor 0 when only the major is known.
    pub fn version_pair(&self) -> Option<[u32; 2]> {
        let v = self.version.as_deref()?;
        let mut it = v.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next().and_then(|m| m.parse().ok()).unwrap_or(0);
        Some([major, minor])
    }
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
