//! The closed set of causes `explain` can name.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of problem an error message points at.
///
/// `Unknown` is never produced by a signature: it is what the engine says when nothing matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The driver is older than the CUDA runtime the program was built with.
    DriverTooOld,
    /// No usable NVIDIA driver is visible (not installed, not loaded, or hidden from a container).
    DriverMissing,
    /// A CPU-only build of the framework is installed.
    CpuOnlyWheel,
    /// A library has no machine code (SASS) or PTX for this GPU's architecture.
    NoKernelImage,
    /// The CUDA toolkit (nvcc) used for building does not match the framework's CUDA.
    ToolkitMismatch,
    /// An extension build cannot find the CUDA toolkit (CUDA_HOME / nvcc).
    CudaHomeMissing,
    /// A compiled extension was built against another framework version or C++ ABI.
    AbiMismatch,
    /// The dynamic loader cannot find a CUDA library.
    LibraryPath,
    /// NCCL (multi-GPU communication) failed.
    Nccl,
    /// The container runtime cannot give the container the GPU or the driver it requires.
    Container,
    /// Companion packages (torchvision, torchaudio, xformers...) were built for another CUDA variant.
    VersionSuffixMismatch,
    /// A Windows DLL (c10.dll, fbgemm.dll, the VC++ runtime...) failed to load.
    WindowsDll,
    /// The fused attention kernels were not used; attention fell back to a slower path.
    SdpaFallback,
    /// The GPU ran out of memory.
    OutOfMemory,
    /// The GPU hardware failed (an Xid event, the GPU off the bus, uncorrectable ECC errors).
    GpuHardware,
    /// Looks like a setup problem but is a bug in the program or its data.
    NotEnvironment,
    /// Nothing known matched.
    Unknown,
}

impl Category {
    /// Every category, in a stable order (used for reports and invariant tests).
    pub const ALL: [Category; 17] = [
        Category::DriverTooOld,
        Category::DriverMissing,
        Category::CpuOnlyWheel,
        Category::NoKernelImage,
        Category::ToolkitMismatch,
        Category::CudaHomeMissing,
        Category::AbiMismatch,
        Category::LibraryPath,
        Category::Nccl,
        Category::Container,
        Category::VersionSuffixMismatch,
        Category::WindowsDll,
        Category::SdpaFallback,
        Category::OutOfMemory,
        Category::GpuHardware,
        Category::NotEnvironment,
        Category::Unknown,
    ];

    /// The snake_case name used in data files and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::DriverTooOld => "driver_too_old",
            Category::DriverMissing => "driver_missing",
            Category::CpuOnlyWheel => "cpu_only_wheel",
            Category::NoKernelImage => "no_kernel_image",
            Category::ToolkitMismatch => "toolkit_mismatch",
            Category::CudaHomeMissing => "cuda_home_missing",
            Category::AbiMismatch => "abi_mismatch",
            Category::LibraryPath => "library_path",
            Category::Nccl => "nccl",
            Category::Container => "container",
            Category::VersionSuffixMismatch => "version_suffix_mismatch",
            Category::WindowsDll => "windows_dll",
            Category::SdpaFallback => "sdpa_fallback",
            Category::OutOfMemory => "out_of_memory",
            Category::GpuHardware => "gpu_hardware",
            Category::NotEnvironment => "not_environment",
            Category::Unknown => "unknown",
        }
    }

    /// Parses the snake_case name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Category> {
        Category::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in Category::ALL {
            assert_eq!(Category::parse(c.as_str()), Some(c));
            let json = serde_json::to_string(&c).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
        assert_eq!(Category::parse("driver too old"), None);
    }
}
