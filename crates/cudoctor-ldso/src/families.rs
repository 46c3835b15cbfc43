//! Recognising CUDA libraries from their sonames or file names.
//!
//! Family names follow the library names NVIDIA ships (libcudart.so.13, libcudnn_ops.so.9,
//! libcublasLt.so.13, libnvJitLink.so.13, libcuda.so.1 from the driver, libnvidia-ml.so.1 from
//! the driver's NVML). The major version is the soname's first number after ".so." — the ABI
//! the loader matches on; it is not the toolkit release (libcufft.so.12 ships with CUDA 13).

/// A CUDA library family.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CudaFamily {
    /// CUDA runtime (libcudart).
    Cudart,
    /// cuDNN and its sub-libraries (libcudnn, libcudnn_ops, libcudnn_cnn, ...).
    Cudnn,
    Nccl,
    Cublas,
    /// cuBLASLt (its own library and version, next to cuBLAS).
    CublasLt,
    Cufft,
    Curand,
    Cusparse,
    CusparseLt,
    Cusolver,
    /// NVRTC and its builtins library.
    Nvrtc,
    #[serde(rename = "nvjitlink")]
    NvJitLink,
    Cupti,
    Cufile,
    Nvshmem,
    /// The driver API library (libcuda.so.1), installed by the NVIDIA driver.
    CudaDriver,
    /// NVML (libnvidia-ml.so.1), installed by the NVIDIA driver.
    NvidiaMl,
}

impl CudaFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            CudaFamily::Cudart => "cudart",
            CudaFamily::Cudnn => "cudnn",
            CudaFamily::Nccl => "nccl",
            CudaFamily::Cublas => "cublas",
            CudaFamily::CublasLt => "cublasLt",
            CudaFamily::Cufft => "cufft",
            CudaFamily::Curand => "curand",
            CudaFamily::Cusparse => "cusparse",
            CudaFamily::CusparseLt => "cusparseLt",
            CudaFamily::Cusolver => "cusolver",
            CudaFamily::Nvrtc => "nvrtc",
            CudaFamily::NvJitLink => "nvJitLink",
            CudaFamily::Cupti => "cupti",
            CudaFamily::Cufile => "cufile",
            CudaFamily::Nvshmem => "nvshmem",
            CudaFamily::CudaDriver => "cuda",
            CudaFamily::NvidiaMl => "nvidia-ml",
        }
    }

    /// Libraries the NVIDIA driver installs (their copies must match the kernel module),
    /// as opposed to toolkit/wheel libraries.
    pub fn is_driver_library(self) -> bool {
        matches!(self, CudaFamily::CudaDriver | CudaFamily::NvidiaMl)
    }
}

/// A recognised CUDA library name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CudaLibrary {
    pub family: CudaFamily,
    /// The library's own name without "lib" and version (e.g. "cudnn_ops", "cublasLt").
    pub stem: String,
    /// Soname major version ("13" for libcudart.so.13), when the name carries one.
    pub major: Option<String>,
}

/// Split `libNAME.so[.VERSION]` into (NAME, VERSION). Also accepts a path.
pub fn split_soname(name: &str) -> Option<(&str, Option<&str>)> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let rest = base.strip_prefix("lib")?;
    let so = rest.find(".so")?;
    let stem = rest.get(..so)?;
    let after = rest.get(so + 3..)?;
    if stem.is_empty() {
        return None;
    }
    match after {
        "" => Some((stem, None)),
        v if v.starts_with('.') => Some((stem, v.get(1..).filter(|s| !s.is_empty()))),
        _ => None,
    }
}

/// Recognise a CUDA library from a soname or path (`libcudart.so.13`,
/// `/usr/local/cuda/lib64/libcublasLt.so.12.4.5.8`). `None` for anything else.
pub fn cuda_library(name: &str) -> Option<CudaLibrary> {
    let (stem, version) = split_soname(name)?;
    // "libnvrtc.alt.so.13" / "libnvrtc-builtins.alt.so.13.0" are NVRTC variants.
    let core = stem.strip_suffix(".alt").unwrap_or(stem);
    let family = match core {
        "cudart" => CudaFamily::Cudart,
        "cudnn" => CudaFamily::Cudnn,
        s if s.starts_with("cudnn_") => CudaFamily::Cudnn,
        "nccl" => CudaFamily::Nccl,
        "cublas" => CudaFamily::Cublas,
        "cublasLt" => CudaFamily::CublasLt,
        "cufft" | "cufftw" => CudaFamily::Cufft,
        "curand" => CudaFamily::Curand,
        "cusparse" => CudaFamily::Cusparse,
        "cusparseLt" => CudaFamily::CusparseLt,
        "cusolver" | "cusolverMg" => CudaFamily::Cusolver,
        "nvrtc" | "nvrtc-builtins" => CudaFamily::Nvrtc,
        "nvJitLink" => CudaFamily::NvJitLink,
        "cupti" => CudaFamily::Cupti,
        "cufile" | "cufile_rdma" => CudaFamily::Cufile,
        "nvshmem_host" | "nvshmem" => CudaFamily::Nvshmem,
        "cuda" => CudaFamily::CudaDriver,
        "nvidia-ml" => CudaFamily::NvidiaMl,
        _ => return None,
    };
    let major = version.map(|v| v.split('.').next().unwrap_or(v).to_string());
    Some(CudaLibrary {
        family,
        stem: stem.to_string(),
        major,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_cuda_sonames() {
        let c = cuda_library("libcudart.so.13").unwrap();
        assert_eq!(
            (c.family, c.stem.as_str(), c.major.as_deref()),
            (CudaFamily::Cudart, "cudart", Some("13"))
        );
        let c = cuda_library("/opt/x/nvidia/cudnn/lib/libcudnn_ops.so.9").unwrap();
        assert_eq!(
            (c.family, c.stem.as_str()),
            (CudaFamily::Cudnn, "cudnn_ops")
        );
        assert_eq!(
            cuda_library("libcublasLt.so.12.4.5.8").unwrap().family,
            CudaFamily::CublasLt
        );
        assert_eq!(
            cuda_library("libcublasLt.so.12.4.5.8")
                .unwrap()
                .major
                .as_deref(),
            Some("12")
        );
        assert_eq!(
            cuda_library("libcublas.so.13").unwrap().family,
            CudaFamily::Cublas
        );
        assert_eq!(
            cuda_library("libnvJitLink.so.13").unwrap().family,
            CudaFamily::NvJitLink
        );
        assert_eq!(
            cuda_library("libnvrtc-builtins.alt.so.13.0")
                .unwrap()
                .family,
            CudaFamily::Nvrtc
        );
        assert_eq!(
            cuda_library("libcuda.so.1").unwrap().family,
            CudaFamily::CudaDriver
        );
        assert_eq!(
            cuda_library("libnvidia-ml.so.1").unwrap().family,
            CudaFamily::NvidiaMl
        );
        assert_eq!(
            cuda_library("libnccl.so.2").unwrap().family,
            CudaFamily::Nccl
        );
        assert_eq!(cuda_library("libcudart.so").unwrap().major, None);
        assert!(CudaFamily::NvidiaMl.is_driver_library());
    }

    #[test]
    fn ignores_other_libraries() {
        for n in [
            "libc.so.6",
            "libstdc++.so.6",
            "libcudacxx.so",
            "libnvidia-tls.so.580",
            "cudart.so",
            "libcudart",
            "libcudart.sox",
        ] {
            assert_eq!(cuda_library(n), None, "{n}");
        }
        assert_eq!(split_soname("libstdc++.so.6"), Some(("stdc++", Some("6"))));
        assert_eq!(split_soname("libfoo.so"), Some(("foo", None)));
        assert_eq!(split_soname("lib.so.1"), None);
    }
}

/// A private copy that a wheel vendors for its own extension (auditwheel): a file in a
/// `<pkg>.libs/` directory whose name carries a hash (`libcudart.45e7f3ed.so.12`,
/// `libgfortran-040039e1.so.5`). Its importers name it by that hashed name, so it never stands
/// in for the shared copy of the same library.
pub fn is_vendored_copy(path: &str) -> bool {
    let Some((dir, name)) = path.rsplit_once('/') else {
        return false;
    };
    if !dir.ends_with(".libs") {
        return false;
    }
    name.split(['.', '-'])
        .any(|part| part.len() == 8 && part.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod vendored_tests {
    use super::is_vendored_copy;

    #[test]
    fn auditwheel_copies_are_recognised() {
        assert!(is_vendored_copy(
            "/v/site-packages/torchvision.libs/libcudart.45e7f3ed.so.12"
        ));
        assert!(is_vendored_copy(
            "/v/site-packages/numpy.libs/libgfortran-040039e1-0352e75f.so.5.0.0"
        ));
        assert!(!is_vendored_copy(
            "/usr/local/cuda-12.4/lib64/libcudart.so.12"
        ));
        assert!(!is_vendored_copy(
            "/v/site-packages/nvidia/cu13/lib/libcudart.so.13"
        ));
    }
}
