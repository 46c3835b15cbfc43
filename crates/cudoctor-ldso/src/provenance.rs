//! Who would provide an undefined symbol: the library a name or a symbol version belongs to.
//!
//! An extension's undefined symbols are resolved by whatever the process has loaded. When one is
//! missing, the judgement depends on its provider: an entry point of the driver (`cuInit`,
//! `nvmlInit_v2`) is missing because the driver is; a symbol versioned `@libcudart.so.12` needs
//! the CUDA 12 runtime; a mangled `c10::`/`at::`/`torch::` name needs the torch the extension was
//! built against. Read from the name alone (and its GNU version, `name@VERSION` as the loader
//! report writes it), following the naming NVIDIA's and PyTorch's headers use.

use crate::families::{cuda_library, CudaFamily};

/// The library that would provide one undefined symbol.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SymbolProvider {
    /// A library of the NVIDIA driver: libcuda's driver API (`cu` + capital: `cuInit`,
    /// `cuLaunchKernel`) or NVML (`nvml` + capital). `family` is
    /// [`CudaFamily::CudaDriver`] or [`CudaFamily::NvidiaMl`].
    Driver { family: CudaFamily },
    /// A CUDA toolkit library (the runtime's `cuda*`, `cublas*`, `cudnn*`, `nccl*`, ...); `major`
    /// is the soname's major where the symbol's version names it (`@libcudart.so.12`).
    CudaLibrary {
        family: CudaFamily,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        major: Option<u32>,
    },
    /// torch's own C++ libraries (the `c10`, `at`, `torch`, `caffe2` namespaces).
    Torch,
    /// The C++ runtime (libstdc++): a `GLIBCXX_`/`CXXABI_` version.
    CxxRuntime { version: String },
    /// The C library: a `GLIBC_` version.
    Libc { version: String },
    /// The Python interpreter's C API (`Py*`, `_Py*`).
    Python,
    /// Anything else.
    Other,
}

impl SymbolProvider {
    /// The provider of `symbol`, written `name` or `name@VERSION`.
    pub fn of(symbol: &str) -> SymbolProvider {
        let (name, version) = match symbol.split_once('@') {
            Some((n, v)) => (n, Some(v.trim_start_matches('@'))),
            None => (symbol, None),
        };
        if let Some(v) = version {
            if v.starts_with("GLIBCXX_") || v.starts_with("CXXABI_") {
                return SymbolProvider::CxxRuntime {
                    version: v.to_string(),
                };
            }
            if v.starts_with("GLIBC_") {
                return SymbolProvider::Libc {
                    version: v.to_string(),
                };
            }
            // NVIDIA's libraries version their symbols by soname: `cudaMalloc@libcudart.so.12`.
            if let Some(lib) = cuda_library(v) {
                if lib.family.is_driver_library() {
                    return SymbolProvider::Driver { family: lib.family };
                }
                return SymbolProvider::CudaLibrary {
                    family: lib.family,
                    major: lib.major.and_then(|m| m.parse().ok()),
                };
            }
        }
        if is_torch_name(name) {
            return SymbolProvider::Torch;
        }
        if name.starts_with("Py") || name.starts_with("_Py") {
            return SymbolProvider::Python;
        }
        match family_of_name(name) {
            Some(f) if f.is_driver_library() => SymbolProvider::Driver { family: f },
            Some(family) => SymbolProvider::CudaLibrary {
                family,
                major: None,
            },
            None => SymbolProvider::Other,
        }
    }

    /// Whether the NVIDIA driver would provide it.
    pub fn is_driver(&self) -> bool {
        matches!(self, SymbolProvider::Driver { .. })
    }
}

/// `prefix` followed by an upper-case letter or a digit (`cuInit`, `nvmlInit_v2`), so that
/// `cu` does not take `cublasCreate`.
fn prefixed(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|r| r.chars().next())
        .is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// The CUDA library family a C entry point's name belongs to, by the prefixes of NVIDIA's
/// headers (the longest first: `cublasLt` before `cublas`, `cuFile` before the driver's `cu`).
fn family_of_name(name: &str) -> Option<CudaFamily> {
    const TABLE: &[(&str, CudaFamily)] = &[
        ("cublasLt", CudaFamily::CublasLt),
        ("cublas", CudaFamily::Cublas),
        ("cudnn", CudaFamily::Cudnn),
        ("cufft", CudaFamily::Cufft),
        ("curand", CudaFamily::Curand),
        ("cusparseLt", CudaFamily::CusparseLt),
        ("cusparse", CudaFamily::Cusparse),
        ("cusolver", CudaFamily::Cusolver),
        ("cupti", CudaFamily::Cupti),
        ("cuFile", CudaFamily::Cufile),
        ("nvrtc", CudaFamily::Nvrtc),
        ("nvJitLink", CudaFamily::NvJitLink),
        ("nvshmem", CudaFamily::Nvshmem),
        ("ncclGroup", CudaFamily::Nccl),
        ("nccl", CudaFamily::Nccl),
        ("pnccl", CudaFamily::Nccl),
        ("cuda", CudaFamily::Cudart),
        ("nvml", CudaFamily::NvidiaMl),
        ("cu", CudaFamily::CudaDriver),
    ];
    // The runtime's registration hooks nvcc emits into every object (`__cudaRegisterFatBinary`).
    if name.starts_with("__cuda") {
        return Some(CudaFamily::Cudart);
    }
    TABLE
        .iter()
        .find(|(p, _)| prefixed(name, p))
        .map(|(_, f)| *f)
}

/// Whether a mangled C++ name is in torch's namespaces (`c10::`, `at::`, `torch::`,
/// `caffe2::`), its functions and its type information (`typeinfo for c10::Error`).
fn is_torch_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("_Z") else {
        return false;
    };
    // Special names: typeinfo (TI), its name (TS), vtable (TV), VTT (TT), thunks are rare here.
    let rest = ["TI", "TS", "TV", "TT"]
        .iter()
        .find_map(|p| rest.strip_prefix(p))
        .unwrap_or(rest);
    // A nested name `N[K|V|r]...`, or an unscoped one (`_Z3c10...` does not occur for torch).
    let Some(mut rest) = rest.strip_prefix('N') else {
        return false;
    };
    while let Some(r) = rest.strip_prefix(['K', 'V', 'r']) {
        rest = r;
    }
    ["3c10", "2at", "5torch", "6caffe2"]
        .iter()
        .any(|ns| rest.starts_with(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_entry_points_are_the_drivers() {
        for s in [
            "cuInit",
            "cuLaunchKernel",
            "cuTensorMapEncodeTiled",
            "cuGetProcAddress_v2",
        ] {
            assert_eq!(
                SymbolProvider::of(s),
                SymbolProvider::Driver {
                    family: CudaFamily::CudaDriver
                },
                "{s}"
            );
        }
        assert_eq!(
            SymbolProvider::of("nvmlInit_v2"),
            SymbolProvider::Driver {
                family: CudaFamily::NvidiaMl
            }
        );
        assert!(SymbolProvider::of("cuDeviceGetAttribute").is_driver());
    }

    #[test]
    fn toolkit_libraries_by_name_and_by_version() {
        assert_eq!(
            SymbolProvider::of("cudaMalloc@libcudart.so.12"),
            SymbolProvider::CudaLibrary {
                family: CudaFamily::Cudart,
                major: Some(12)
            }
        );
        assert_eq!(
            SymbolProvider::of("cublasLtMatmul@libcublasLt.so.13"),
            SymbolProvider::CudaLibrary {
                family: CudaFamily::CublasLt,
                major: Some(13)
            }
        );
        for (s, f) in [
            ("cudaMalloc", CudaFamily::Cudart),
            ("__cudaRegisterFatBinary", CudaFamily::Cudart),
            ("cublasCreate_v2", CudaFamily::Cublas),
            ("cublasLtCreate", CudaFamily::CublasLt),
            ("cudnnCreate", CudaFamily::Cudnn),
            ("ncclCommInitRank", CudaFamily::Nccl),
            ("cuFileDriverOpen", CudaFamily::Cufile),
            ("nvrtcCompileProgram", CudaFamily::Nvrtc),
            ("cusparseLtInit", CudaFamily::CusparseLt),
        ] {
            assert_eq!(
                SymbolProvider::of(s),
                SymbolProvider::CudaLibrary {
                    family: f,
                    major: None
                },
                "{s}"
            );
        }
    }

    #[test]
    fn torch_names_and_runtimes() {
        for s in [
            "_ZN3c104cuda9SetDeviceEi",
            "_ZNK2at10TensorBase8data_ptrIfEEPT_v",
            "_ZN5torch8autograd12VariableInfoC1ERKN2at6TensorE",
            "_ZTIN3c105ErrorE",
            "_ZN6caffe28TypeMeta3NewEv",
        ] {
            assert_eq!(SymbolProvider::of(s), SymbolProvider::Torch, "{s}");
        }
        // std:: templates over torch's types are not torch's own symbols.
        assert_eq!(
            SymbolProvider::of("_ZNSt6vectorIN2at6TensorESaIS1_EED1Ev"),
            SymbolProvider::Other
        );
        assert_eq!(
            SymbolProvider::of("_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm@GLIBCXX_3.4.32"),
            SymbolProvider::CxxRuntime {
                version: "GLIBCXX_3.4.32".into()
            }
        );
        assert_eq!(
            SymbolProvider::of("memcpy@GLIBC_2.14"),
            SymbolProvider::Libc {
                version: "GLIBC_2.14".into()
            }
        );
        assert_eq!(
            SymbolProvider::of("PyErr_SetString"),
            SymbolProvider::Python
        );
        assert_eq!(SymbolProvider::of("sox_init"), SymbolProvider::Other);
        // `cu` must be followed by a capital: `cudnn`/`curl` are not the driver's.
        assert_eq!(SymbolProvider::of("curl_easy_init"), SymbolProvider::Other);
    }
}
