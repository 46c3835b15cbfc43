//! The emitters' vocabulary: every message the CUDA stack's software can print (the CUDA
//! runtime's and driver's error strings and status names, the CUDA libraries' statuses, NCCL's
//! results and warnings, the frameworks' environment messages), collected from their sources
//! into `tests/emitters/*.toml`, one file per emitter, each row with the category its message
//! names. Explain must read every one of them through its general reading: a report it never
//! saw still speaks this vocabulary.
//!
//! A row expected `unknown` is a message that alone cannot name a cause (its `why` says why):
//! explain may answer "unknown" or "not_environment" for it, never a confident cause.

use cudoctor_explain::{explain_str, Category};
use serde::Deserialize;
use std::collections::BTreeSet;

/// Every emitter's file, by name.
const EMITTERS: &[(&str, &str)] = &[
    ("cuda_runtime", include_str!("emitters/cuda_runtime.toml")),
    ("cuda_driver", include_str!("emitters/cuda_driver.toml")),
    ("cublas", include_str!("emitters/cublas.toml")),
    ("cudnn", include_str!("emitters/cudnn.toml")),
    ("cusolver", include_str!("emitters/cusolver.toml")),
    ("cusparse", include_str!("emitters/cusparse.toml")),
    ("cufft", include_str!("emitters/cufft.toml")),
    ("curand", include_str!("emitters/curand.toml")),
    ("nvrtc", include_str!("emitters/nvrtc.toml")),
    ("nccl", include_str!("emitters/nccl.toml")),
    ("torch", include_str!("emitters/torch.toml")),
    ("tensorflow", include_str!("emitters/tensorflow.toml")),
    ("jax", include_str!("emitters/jax.toml")),
    ("cupy", include_str!("emitters/cupy.toml")),
    ("onnxruntime", include_str!("emitters/onnxruntime.toml")),
    ("paddle", include_str!("emitters/paddle.toml")),
    ("numba", include_str!("emitters/numba.toml")),
    ("ggml", include_str!("emitters/ggml.toml")),
    ("cupy_libs", include_str!("emitters/cupy_libs.toml")),
    ("opencv", include_str!("emitters/opencv.toml")),
    ("tensorrt", include_str!("emitters/tensorrt.toml")),
];

/// The ecosystem's files: the messages of 32 more projects (torch's extension builder,
/// Triton, bitsandbytes, DeepSpeed, FlashAttention, xFormers, apex, mmcv, vLLM, SGLang, TGI,
/// TensorRT-LLM, transformers, Ollama, CTranslate2, the container toolkit, Kubernetes' device
/// plugin, the driver's installer, NVML, CMake and nvcc, WSL, MXNet, RAPIDS, CUDA.jl, ...),
/// gathered from their sources in one pass (2026-12-06) and labelled by category.rs and the
/// label conventions before explain read them. Explain reads them through the same general
/// reading; the messages it still reads wrong are printed, and a floor keeps what it reads.
const ECOSYSTEM: &[(&str, &str)] = &[
    ("apex", include_str!("emitters/apex.toml")),
    ("autogptq_awq", include_str!("emitters/autogptq_awq.toml")),
    ("bitsandbytes", include_str!("emitters/bitsandbytes.toml")),
    ("cmake_nvcc", include_str!("emitters/cmake_nvcc.toml")),
    ("comfyui", include_str!("emitters/comfyui.toml")),
    ("ctranslate2", include_str!("emitters/ctranslate2.toml")),
    ("cudf_rapids", include_str!("emitters/cudf_rapids.toml")),
    ("deepspeed", include_str!("emitters/deepspeed.toml")),
    ("exllama", include_str!("emitters/exllama.toml")),
    ("flash_attn", include_str!("emitters/flash_attn.toml")),
    ("julia_cuda", include_str!("emitters/julia_cuda.toml")),
    (
        "kubernetes_gpu",
        include_str!("emitters/kubernetes_gpu.toml"),
    ),
    (
        "llama_cpp_python",
        include_str!("emitters/llama_cpp_python.toml"),
    ),
    ("mmcv", include_str!("emitters/mmcv.toml")),
    ("mxnet", include_str!("emitters/mxnet.toml")),
    (
        "nvidia_container",
        include_str!("emitters/nvidia_container.toml"),
    ),
    (
        "nvidia_driver_install",
        include_str!("emitters/nvidia_driver_install.toml"),
    ),
    ("nvml", include_str!("emitters/nvml.toml")),
    ("ollama", include_str!("emitters/ollama.toml")),
    (
        "onnxruntime_more",
        include_str!("emitters/onnxruntime_more.toml"),
    ),
    ("sglang", include_str!("emitters/sglang.toml")),
    (
        "tensorflow_more",
        include_str!("emitters/tensorflow_more.toml"),
    ),
    ("tensorrt_llm", include_str!("emitters/tensorrt_llm.toml")),
    (
        "text_generation_inference",
        include_str!("emitters/text_generation_inference.toml"),
    ),
    (
        "torch_extensions",
        include_str!("emitters/torch_extensions.toml"),
    ),
    ("torch_more", include_str!("emitters/torch_more.toml")),
    (
        "torchvision_torchaudio",
        include_str!("emitters/torchvision_torchaudio.toml"),
    ),
    (
        "transformers_accelerate",
        include_str!("emitters/transformers_accelerate.toml"),
    ),
    ("triton", include_str!("emitters/triton.toml")),
    ("vllm", include_str!("emitters/vllm.toml")),
    ("wsl", include_str!("emitters/wsl.toml")),
    ("xformers", include_str!("emitters/xformers.toml")),
];

/// The share of the ecosystem's rows explain must read right: it read 415 of 629 (66 %) before
/// the pass that added them, 477 (75.8 %) after.
const ECOSYSTEM_FLOOR: f64 = 0.75;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    row: Vec<Row>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    message: String,
    source: String,
    expected: String,
    why: Option<String>,
}

fn rows(name: &str, text: &str) -> Vec<Row> {
    match toml::from_str::<File>(text) {
        Ok(f) => f.row,
        Err(e) => panic!("tests/emitters/{name}.toml: {e}"),
    }
}

/// Whether explain's answer is right for a row: the expected category, or for a message that
/// cannot name a cause, no confident cause; a message of the program's own error may be left
/// unknown (as the corpora score a negative).
fn right(expected: Category, got: Category) -> bool {
    got == expected
        || (matches!(expected, Category::Unknown | Category::NotEnvironment)
            && matches!(got, Category::Unknown | Category::NotEnvironment))
}

#[test]
fn every_row_is_well_formed() {
    for (name, text) in EMITTERS.iter().chain(ECOSYSTEM) {
        let rows = rows(name, text);
        assert!(!rows.is_empty(), "{name}: no rows");
        let mut seen = BTreeSet::new();
        for r in &rows {
            let expected = Category::parse(&r.expected);
            assert!(
                expected.is_some(),
                "{name}: unknown category {:?}",
                r.expected
            );
            assert!(
                !r.source.trim().is_empty(),
                "{name}: {:?} has no source",
                r.message
            );
            assert_eq!(
                expected == Some(Category::Unknown),
                r.why.is_some(),
                "{name}: {:?}: a `why` is given exactly for rows expected unknown",
                r.message
            );
            assert!(
                seen.insert(r.message.as_str()),
                "{name}: {:?} twice",
                r.message
            );
        }
    }
}

/// Explain's answers to every row of `files`: how many it reads right of how many, and a line
/// per row it reads wrong. Prints each file's figure.
fn read_rows(files: &[(&str, &str)]) -> (usize, usize, Vec<String>) {
    let width = files.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut misses = Vec::new();
    let mut total = (0, 0);
    for (name, text) in files {
        let rows = rows(name, text);
        let mut ok = 0;
        for r in &rows {
            let expected = Category::parse(&r.expected).unwrap_or(Category::Unknown);
            let got = explain_str(&r.message).category;
            if right(expected, got) {
                ok += 1;
            } else {
                misses.push(format!(
                    "  {name}: expected {expected}, got {got}: {:?}",
                    r.message
                ));
            }
        }
        println!("{name:<width$} {ok:>4}/{:<4}", rows.len());
        total = (total.0 + ok, total.1 + rows.len());
    }
    println!("{:<width$} {:>4}/{:<4}", "all", total.0, total.1);
    (total.0, total.1, misses)
}

#[test]
fn explain_reads_every_emitters_message() {
    let (_, total, misses) = read_rows(EMITTERS);
    assert!(
        misses.is_empty(),
        "{} of {total} rows read wrong:\n{}",
        misses.len(),
        misses.join("\n")
    );
}

#[test]
fn explain_reads_the_ecosystem_s_messages() {
    let (read, total, misses) = read_rows(ECOSYSTEM);
    println!("read wrong:\n{}", misses.join("\n"));
    let share = read as f64 / total as f64;
    assert!(
        share >= ECOSYSTEM_FLOOR,
        "{read} of {total} rows read right ({share:.3}), below the floor {ECOSYSTEM_FLOOR}"
    );
}
