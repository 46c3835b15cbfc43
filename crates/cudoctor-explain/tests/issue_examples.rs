//! Every example message quoted in the issue "explain generalises" gets the right category and
//! a specific fix, in the forms users paste them.

use cudoctor_explain::{explain_str, Category, Explanation};

fn check(text: &str, category: Category, fix_mentions: &[&str]) -> Explanation {
    let e = explain_str(text);
    assert_eq!(e.category, category, "{text}\n-> {e:#?}");
    let fixes: Vec<&str> = e.fix.iter().map(|f| f.text()).collect();
    let fixes = fixes.join("\n");
    for m in fix_mentions {
        assert!(
            fixes.contains(m),
            "fix for {text:?} does not mention {m:?}:\n{fixes}"
        );
    }
    e
}

#[test]
fn typographic_and_full_width_punctuation() {
    check(
        "AssertionError: Torch not compiled with CUDA enabled”",
        Category::CpuOnlyWheel,
        &["--index-url"],
    );
    check(
        "“xFormers can’t load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cpu)”",
        Category::CpuOnlyWheel,
        &["pip install torch==2.1.0"],
    );
    // Full-width colon and parentheses, as in Chinese-language posts.
    check(
        "RuntimeError：The NVIDIA driver on your system is too old （found version 11040）。",
        Category::DriverTooOld,
        &["11.4"],
    );
}

#[test]
fn field_values_the_patterns_did_not_expect() {
    let e = check(
        "xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.3.0+cu121 with CUDA None (you have 2.4.0+cu121)",
        Category::AbiMismatch,
        &["2.4.0"],
    );
    assert_eq!(
        e.fields.get("built_torch").map(String::as_str),
        Some("2.3.0")
    );
    // A typo in the version ("2.0..0").
    let e = check(
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\nPyTorch 2.0..0+cu118 with CUDA 1108 (you have 1.13.1+cu117)",
        Category::AbiMismatch,
        &["1.13.1"],
    );
    assert_eq!(
        e.fields.get("built_torch").map(String::as_str),
        Some("2.0.0")
    );
}

#[test]
fn windows_dll_family_names_the_dll_and_its_provider() {
    let e = check(
        r"FileNotFoundError: Could not find module 'C:\Users\me\venv\lib\site-packages\torch\lib\c10.dll' (or one of its dependencies). Try using the full path with constructor syntax.",
        Category::WindowsDll,
        &["Visual C++ Redistributable", "c10.dll"],
    );
    assert_eq!(e.fields.get("dll").map(String::as_str), Some("c10.dll"));
    assert!(e.cause.contains("PyTorch itself"), "{}", e.cause);
    // A Python repr doubles the backslashes; JSON escapes them too.
    let e = check(
        r#"{"level": "error", "msg": "OSError: [WinError 126] The specified module could not be found. Error loading \"C:\\venv\\Lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll\" or one of its dependencies."}"#,
        Category::WindowsDll,
        &["cudnn_cnn_infer64_8.dll"],
    );
    assert!(e.cause.contains("cuDNN 8"), "{}", e.cause);
    check(
        r#"onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load "C:\app\onnxruntime_providers_cuda.dll""#,
        Category::WindowsDll,
        &["onnxruntime_providers_cuda.dll"],
    );
}

#[test]
fn wsl_tensorflow_jax_cupy() {
    check(
        "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link",
        Category::LibraryPath,
        &["ln -s libcuda.so.1.1 libcuda.so.1"],
    );
    let e = check(
        "2022-06-09 15:50:37.711160: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory",
        Category::LibraryPath,
        &["tensorflow[and-cuda]"],
    );
    assert!(e.cause.contains("CUDA 11 runtime"), "{}", e.cause);
    let e = check(
        "CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8906, which is newer.",
        Category::LibraryPath,
        &["jax[cuda12]", "8.9.6"],
    );
    assert_eq!(e.fields.get("found").map(String::as_str), Some("8.6.0"));
    check(
        "cupy.cuda.runtime.CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
        Category::DriverTooOld,
        &["driver"],
    );
}

#[test]
fn builds_without_toolkit_or_gpu() {
    check(
        "/opt/conda/lib/python3.10/site-packages/torch/include/ATen/cuda/CUDAContext.h:5:10: fatal error: cuda_runtime_api.h: No such file or directory",
        Category::CudaHomeMissing,
        &["CUDA_HOME", "cuda_runtime_api.h"],
    );
    check(
        "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'",
        Category::Container,
        &["--gpus all", "TORCH_CUDA_ARCH_LIST", "+cpu"],
    );
}

#[test]
fn nccl_hangs_with_info_lines_only() {
    let log = "\
node1:225:225 [0] NCCL INFO Bootstrap : Using eno1np0:172.31.45.2<0>
node1:225:225 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
NCCL version 2.8.2+cuda11.1
node1:225:239 [0] NCCL INFO Channel 00/02 :    0   1
node1:225:240 [1] NCCL INFO Channel 00 : 1[c2000] -> 0[c1000] via P2P/direct pointer
";
    let e = check(log, Category::Nccl, &["NCCL_P2P_DISABLE=1"]);
    assert_eq!(e.signature.as_deref(), Some("nccl-p2p-transport-hang"));
    // NCCL's optional network plugin not being found is not a missing CUDA library.
    let e = check(
        "omega:18302:18445 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory : when loading libnccl-net.so",
        Category::Nccl,
        &["NCCL_P2P_DISABLE=1"],
    );
    assert_ne!(e.signature.as_deref(), Some("cannot-open-cuda-library"));
}

#[test]
fn the_reason_line_decides_the_fix() {
    let log = "\
attend.py:77: UserWarning: Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: float, Key dtype: float, and Value dtype: float instead. (Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.h:92.)
  out = F.scaled_dot_product_attention(
RuntimeError: No available kernel.  Aborting execution.
";
    let e = check(log, Category::SdpaFallback, &["bfloat16"]);
    assert!(e.cause.contains("float"), "{}", e.cause);
    assert!(!e
        .fix
        .iter()
        .any(|f| f.text().contains("Read the preceding")));
    check(
        "UserWarning: Both fused kernels do not support non-null attn_mask.\nRuntimeError: No available kernel. Aborting execution.",
        Category::SdpaFallback,
        &["is_causal=True"],
    );
    check(
        "RuntimeError: sageattention is not new enough version or could not determine CUDA architecture, cannot apply LTX2 Memory Efficient Sage Attention Patch.",
        Category::SdpaFallback,
        &["SageAttention 2"],
    );
}

#[test]
fn ansi_wraps_and_prefixes() {
    // Colour codes escaped inside a JSON log record, with a timestamp prefix.
    check(
        r#"{"ts": "2026-11-30T12:00:00Z", "msg": "\u001b[31mImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\u001b[0m\nTraceback ..."}"#,
        Category::LibraryPath,
        &["libcudnn.so.8"],
    );
    // A message wrapped by the terminal in the middle of its trigger.
    check(
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new versi\non from the URL: http://www.nvidia.com/Download/index.aspx",
        Category::DriverTooOld,
        &["11.4"],
    );
    check(
        "2026-11-30 12:00:01,123 - ERROR - [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.00 GiB is free.",
        Category::OutOfMemory,
        &["batch"],
    );
}
