//! Real failures produced on the project's GPU machine, 2026-12-05 (an H100, driver 580.159.04,
//! torch 2.11.0+cu130, JAX, CuPy): docs/device-runs/2026-12-05-h100x1/real/<case>.log, written
//! by `scripts/device/w8_real_failures.sh`. What each failure is, is known by construction (the
//! script made it); each log must get that answer from its text alone.

use cudoctor_explain::{explain_str, Category};

macro_rules! log {
    ($case:literal) => {
        include_str!(concat!(
            "../../../docs/device-runs/2026-12-05-h100x1/real/",
            $case,
            ".log"
        ))
    };
}

/// Each log with the category its construction gives.
const KNOWN: [(&str, &str, Category); 11] = [
    // A JIT extension built with TORCH_CUDA_ARCH_LIST=8.0, launched on sm_90.
    (
        "torch_ext_sm80",
        log!("torch_ext_sm80"),
        Category::NoKernelImage,
    ),
    // A JIT extension whose kernel writes far out of bounds: the program's bug.
    (
        "torch_ext_oob",
        log!("torch_ext_oob"),
        Category::NotEnvironment,
    ),
    // `device="cuda:3"` on a machine with one GPU: the program's ordinal.
    (
        "torch_device_index",
        log!("torch_device_index"),
        Category::NotEnvironment,
    ),
    // A CuPy RawKernel with a syntax error.
    (
        "cupy_kernel_syntax",
        log!("cupy_kernel_syntax"),
        Category::NotEnvironment,
    ),
    // CuPy given -arch=sm_80 beside its own -gencode and --ptx: nvcc refuses the combination.
    (
        "cupy_sm80_cubin",
        log!("cupy_sm80_cubin"),
        Category::NotEnvironment,
    ),
    // Two ranks of torchrun on one GPU: the launch's own setup.
    (
        "nccl_duplicate_gpu",
        log!("nccl_duplicate_gpu"),
        Category::NotEnvironment,
    ),
    // NCCL_SOCKET_IFNAME naming no interface of the machine.
    ("nccl_no_ifname", log!("nccl_no_ifname"), Category::Nccl),
    // Allocations of more than a terabyte.
    ("torch_oom", log!("torch_oom"), Category::OutOfMemory),
    ("cupy_oom", log!("cupy_oom"), Category::OutOfMemory),
    ("jax_oom", log!("jax_oom"), Category::OutOfMemory),
    // A CPU half tensor times a GPU tensor: the program's error, which names no cause of the
    // stack (unknown is as right as not_environment; only an environment answer is wrong).
    ("torch_half_cpu", log!("torch_half_cpu"), Category::Unknown),
];

#[test]
fn each_real_failure_gets_the_answer_its_construction_gives() {
    let mut wrong = Vec::new();
    for (case, text, want) in KNOWN {
        assert!(text.lines().count() > 1, "{case}: the log is empty");
        let got = explain_str(text).category;
        let right = got == want || (want == Category::Unknown && got == Category::NotEnvironment);
        if !right {
            wrong.push(format!("  {case}: expected {want}, got {got}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "real failures misexplained:\n{}",
        wrong.join("\n")
    );
}

/// The extension built for another architecture says so with its fields: the architecture
/// missing and the rebuild (its build directory, TORCH_CUDA_ARCH_LIST), from the text alone.
#[test]
fn the_extension_built_for_another_architecture_gets_the_rebuild_fix() {
    let e = explain_str(log!("torch_ext_sm80"));
    assert_eq!(e.category, Category::NoKernelImage);
    let fix: String = e
        .fix
        .iter()
        .map(|f| f.text().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(fix.contains("TORCH_CUDA_ARCH_LIST"), "{fix}");
}
