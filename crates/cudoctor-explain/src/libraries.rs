//! Which package or component ships a library, by its file name (`data/libraries.toml`).

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use std::sync::OnceLock;

/// The built-in table, embedded at build time.
pub const BUILTIN_TOML: &str = include_str!("../data/libraries.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[allow(dead_code)]
    schema: u32,
    library: Vec<RawRow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    name: String,
    provider: String,
    sources: Vec<String>,
}

/// One compiled row.
#[derive(Debug)]
pub struct Row {
    pub name: Regex,
    pub provider: String,
    pub sources: Vec<String>,
}

/// The rows, or why the data does not load (the tests rule that out for the built-in data).
pub fn table() -> Result<&'static [Row], &'static String> {
    static TABLE: OnceLock<Result<Vec<Row>, String>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let raw: RawTable = toml::from_str(BUILTIN_TOML).map_err(|e| e.to_string())?;
            raw.library
                .into_iter()
                .map(|r| {
                    let name = RegexBuilder::new(&r.name)
                        .case_insensitive(true)
                        .build()
                        .map_err(|e| format!("{}: {e}", r.name))?;
                    Ok(Row {
                        name,
                        provider: r.provider,
                        sources: r.sources,
                    })
                })
                .collect()
        })
        .as_ref()
        .map(Vec::as_slice)
}

/// What ships `file_name`, or `None` when the table does not know it.
pub fn provider(file_name: &str) -> Option<String> {
    let rows = table().ok()?;
    let row = rows.iter().find(|r| r.name.is_match(file_name))?;
    let caps = row.name.captures(file_name)?;
    let major = caps.name("major").map(|m| m.as_str()).unwrap_or("");
    Some(row.provider.replace("{major}", major))
}

/// Pieces of the names of the libraries the CUDA stack ships or loads: NVIDIA's (the driver's,
/// CUDA's, its math libraries', cuDNN's, NCCL's and its network transports', TensorRT's) and the
/// CUDA halves of the frameworks and their kernel libraries. Lower case.
const STACK_NAME_PIECES: [&str; 41] = [
    "cuda",
    "cudnn",
    "cublas",
    "cufft",
    "curand",
    "cusolver",
    "cusparse",
    "cupti",
    "cufile",
    "nvrtc",
    "nvjitlink",
    "nvtoolsext",
    "nvjpeg",
    "npp",
    "nccl",
    "nvidia",
    "nvml",
    "nvinfer",
    "nvonnxparser",
    "tensorrt",
    "nvshmem",
    "nvcomp",
    "ibverbs",
    "rdmacm",
    "mlx5",
    "torch",
    "c10",
    "caffe2",
    "tensorflow",
    "xla",
    "jax",
    "paddle",
    "mxnet",
    "onnxruntime",
    "triton",
    "cutlass",
    "flash",
    "xformers",
    "bitsandbytes",
    "cupy",
    "rmm",
];

/// Whether a library file (a soname, a DLL or a path to one) is of the CUDA stack: a row of the
/// table, or a name holding a piece of the stack's libraries' names. A library outside it (the
/// system's libGL, libsndfile, OpenMP, OpenSSL) missing is not a fault of CUDA, its libraries or
/// a framework's CUDA build.
pub fn of_the_stack(file: &str) -> bool {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    provider(name).is_some() || names_the_stack(name)
}

/// Whether a line holds a piece of the stack's libraries' names anywhere (a path, a package).
pub fn names_the_stack(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    STACK_NAME_PIECES.iter().any(|p| lower.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_loads_and_every_row_has_a_source() {
        let rows = table().unwrap_or_else(|e| panic!("{e}"));
        assert!(rows.len() > 10);
        for r in rows {
            assert!(!r.sources.is_empty(), "{}", r.name);
            assert!(!r.provider.is_empty());
        }
    }

    #[test]
    fn known_names() {
        let p = |n: &str| provider(n).unwrap_or_default();
        assert!(p("libcudart.so.12").contains("CUDA 12 runtime"));
        assert!(p("libcudart.so.11.0").contains("nvidia-cuda-runtime-cu11"));
        assert!(p("libcuda.so.1").contains("NVIDIA driver"));
        assert!(p("cudart64_110.dll").contains("CUDA 11 runtime"));
        assert!(p("libcudnn.so.8").contains("cuDNN 8"));
        assert!(p("cudnn_cnn_infer64_8.dll").contains("cuDNN 8"));
        assert!(p("C10.dll").contains("Visual C++"));
        assert!(p("fbgemm.dll").contains("libomp140"));
        assert!(p("libcufft.so.10").contains("math"));
        assert!(!p("libcufft.so.10").contains("CUDA 10"));
        assert_eq!(provider("libfoo.so.1"), None);
    }

    #[test]
    fn libraries_of_the_stack_and_outside_it() {
        for lib in [
            "libcudart.so.12",
            "libtorch_cuda.so",
            "libc10_cuda.so",
            "libnvinfer_plugin.so.8",
            "libnccl-net.so",
            "libibverbs.so.1",
            "libtensorflow_framework.so.2",
            "/opt/conda/lib/libcudnn_ops_infer.so.8",
            "cublasLt64_12.dll",
            "libonnxruntime_providers_cuda.so",
        ] {
            assert!(of_the_stack(lib), "{lib}");
        }
        for lib in [
            "libGL.so.1",
            "libsndfile.so.1",
            "libgomp.so.1",
            "libssl.so.1.1",
            "libX11.so.6",
            "/usr/lib/x86_64-linux-gnu/libavcodec.so.58",
        ] {
            assert!(!of_the_stack(lib), "{lib}");
        }
    }
}
