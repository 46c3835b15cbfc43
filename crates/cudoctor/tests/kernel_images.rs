//! The kernels layer end to end: CUDA extensions are gcc-built shared libraries carrying a fat
//! binary written byte by byte (no NVIDIA tools needed), TORCH_CUDA_ARCH_LIST and the selected
//! nvcc against the GPUs of a fake machine; and the `cudoctor kernels` command on such files.

mod support;

use support::{cuda_library, fatbin_section, findings, gcc, FakeMachine, FatEntry, Gpu};

const SP: &str = "/opt/venv/lib/python3.12/site-packages";
const EXT: &str = "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so";
const SOURCE: &str = "int launch(void) { return 0; }";

fn h100_and_3090() -> Vec<Gpu<'static>> {
    vec![Gpu::h100(), Gpu::rtx3090()]
}

/// A machine with torch and flash-attn installed, whose extension carries `entries`.
fn machine_with_extension(gpus: &[Gpu], entries: &[FatEntry]) -> FakeMachine {
    let mut m = FakeMachine::with_driver("580.159.04", "13.0", gpus);
    m.torch("2.11.0+cu130", &[("flash-attn", "2.8.3")]);
    cuda_library(
        &m,
        &format!("{SP}/{EXT}"),
        SOURCE,
        &[],
        &fatbin_section(&[entries]),
    );
    m
}

#[test]
fn krn002_extension_without_the_gpus_arch() {
    let m = machine_with_extension(&h100_and_3090(), &[FatEntry::sass(80), FatEntry::sass(86)]);
    let (v, code) = m.json();
    let krn = findings(&v, "KRN002");
    // sm_80/sm_86 machine code runs on the RTX 3090 (8.6), not on the H100 (9.0).
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    let f = &krn[0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["layer"], "kernels");
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("flash-attn"), "{title}");
    assert!(title.contains("H100") && title.contains("sm_90"), "{title}");
    let evidence = f["evidence"].to_string();
    assert!(evidence.contains(EXT), "{evidence}");
    assert!(evidence.contains("SASS sm_80 sm_86 PTX none"), "{evidence}");
    let fix = f["fix"][0]["shell"].as_str().unwrap();
    // flash-attn's setup reads its own arch list; sm_80 code covers the 3090 (8.6).
    assert!(fix.contains("FLASH_ATTN_CUDA_ARCHS=\"80;90\""), "{fix}");
    assert!(fix.contains("FLASH_ATTENTION_FORCE_BUILD=TRUE"), "{fix}");
    assert!(fix.contains("--no-binary flash-attn"), "{fix}");
    assert_eq!(code, 1);
    // The scan in the snapshot names the owning distribution and what the file carries.
    let lib = &v["snapshot"]["kernel_images"]["libraries"][0];
    assert_eq!(lib["package"], "flash-attn");
    assert_eq!(lib["sass"], serde_json::json!(["sm_80", "sm_86"]));
}

#[test]
fn krn002_ptx_only_is_a_warning_and_ptx_newer_than_the_driver_an_error() {
    // PTX of compute_80 (ISA 8.0, CUDA 12.0) runs on sm_90 through the driver's JIT.
    let m = machine_with_extension(
        &[Gpu::h100()],
        &[FatEntry::sass(80), FatEntry::ptx(80, 8, 0)],
    );
    let (v, code) = m.json();
    let krn = findings(&v, "KRN002");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    assert_eq!(krn[0]["severity"], "warning");
    assert!(
        krn[0]["title"].as_str().unwrap().contains("PTX JIT"),
        "{:#}",
        krn[0]
    );
    assert_eq!(code, 0, "a warning alone does not fail the check");

    // PTX ISA 9.0 needs a CUDA 13.0 driver; this one runs CUDA 12.4 at most.
    let mut m = FakeMachine::with_driver("550.54.14", "12.4", &[Gpu::h100()]);
    m.torch("2.5.1+cu124", &[("flash-attn", "2.8.3")]);
    cuda_library(
        &m,
        &format!("{SP}/{EXT}"),
        SOURCE,
        &[],
        &fatbin_section(&[&[FatEntry::sass(80), FatEntry::ptx(80, 9, 0)]]),
    );
    let (v, code) = m.json();
    let krn = findings(&v, "KRN002");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    assert_eq!(krn[0]["severity"], "error");
    assert!(
        krn[0]["title"]
            .as_str()
            .unwrap()
            .contains("too new for the driver"),
        "{:#}",
        krn[0]
    );
    assert!(
        krn[0]["cause"].as_str().unwrap().contains("CUDA 13.0"),
        "{:#}",
        krn[0]
    );
    assert_eq!(code, 1);
}

#[test]
fn krn002_arch_specific_images_run_only_on_their_own_arch() {
    // sm_90a is machine code for exactly sm_90: it runs on an H100, not on a B200 (10.0).
    let m = machine_with_extension(&[Gpu::h100()], &[FatEntry::sass(90).arch_specific()]);
    let (v, _) = m.json();
    assert!(findings(&v, "KRN002").is_empty(), "{:#}", v["findings"]);

    let m = machine_with_extension(
        &[Gpu::new("NVIDIA B200", "10.0")],
        &[FatEntry::sass(90).arch_specific()],
    );
    let (v, _) = m.json();
    let krn = findings(&v, "KRN002");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    assert_eq!(krn[0]["severity"], "error");
    assert!(
        krn[0]["evidence"].to_string().contains("SASS sm_90a"),
        "{:#}",
        krn[0]
    );
}

#[test]
fn krn002_leaves_torch_and_libraries_without_device_code_alone() {
    let mut m = FakeMachine::with_driver("580.159.04", "13.0", &h100_and_3090());
    m.torch("2.11.0+cu130", &[]);
    // torch's own library lacking an arch is KRN001's business, not KRN002's.
    cuda_library(
        &m,
        &format!("{SP}/torch/lib/libtorch_cuda.so"),
        SOURCE,
        &[],
        &fatbin_section(&[&[FatEntry::sass(90)], &[FatEntry::sass(86)]]),
    );
    // A plain extension with no fat binary has nothing to judge.
    gcc(
        &m,
        &format!("{SP}/plain_ext.cpython-312-x86_64-linux-gnu.so"),
        SOURCE,
        &[],
    );
    let (v, code) = m.json();
    assert!(findings(&v, "KRN002").is_empty(), "{:#}", v["findings"]);
    assert!(findings(&v, "KRN001").is_empty(), "{:#}", v["findings"]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    let libs = v["snapshot"]["kernel_images"]["libraries"].to_string();
    assert!(libs.contains("libtorch_cuda.so"), "{libs}");
}

#[test]
fn krn001_reads_torchs_scanned_library_over_the_knowledge_base() {
    // torch 2.11 cu130 covers sm_90 by its published arch list, but this (rebuilt) copy
    // carries sm_80 only: the scan wins, and says so with certainty.
    let m = FakeMachine::h100_cu130();
    cuda_library(
        &m,
        &format!("{SP}/torch/lib/libtorch_cuda.so"),
        SOURCE,
        &[],
        &fatbin_section(&[&[FatEntry::sass(80)]]),
    );
    let (v, _) = m.json();
    let krn = findings(&v, "KRN001");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    assert!(
        krn[0]["evidence"]
            .to_string()
            .contains("fat binaries of /opt/venv"),
        "{:#}",
        krn[0]
    );
    assert!(findings(&v, "KRN002").is_empty());
}

fn arch_list_machine(list: &str) -> FakeMachine {
    let mut m = FakeMachine::with_driver("580.159.04", "13.0", &h100_and_3090());
    m.toolkit("13.0.88").select_toolkit("13.0");
    m.var("TORCH_CUDA_ARCH_LIST", list);
    m
}

#[test]
fn krn003_arch_list_missing_a_present_gpu() {
    let m = arch_list_machine("8.0;8.6");
    let (v, code) = m.json();
    let krn = findings(&v, "KRN003");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    let f = &krn[0];
    assert_eq!(f["severity"], "warning");
    let evidence = f["evidence"].to_string();
    assert!(evidence.contains("H100"), "{evidence}");
    assert!(evidence.contains("is not covered"), "{evidence}");
    assert!(
        !evidence.contains("3090"),
        "8.0/8.6 cover the RTX 3090: {evidence}"
    );
    assert_eq!(
        f["fix"][0]["shell"],
        "export TORCH_CUDA_ARCH_LIST=\"9.0;8.6\""
    );
    assert_eq!(code, 0);
}

#[test]
fn krn003_arch_list_with_an_item_torch_does_not_understand() {
    let m = arch_list_machine("8.6;9.0;sm_90");
    let (v, _) = m.json();
    let krn = findings(&v, "KRN003");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    let evidence = krn[0]["evidence"].to_string();
    assert!(
        evidence.contains("items torch does not understand: sm_90"),
        "{evidence}"
    );
    assert!(!evidence.contains("is not covered"), "{evidence}");
}

#[test]
fn krn003_arch_list_naming_an_arch_nvcc_cannot_build() {
    let mut m = FakeMachine::h100();
    m.toolkit("12.4.131").select_toolkit("12.4");
    // "Hopper" is torch's name for 9.0+PTX; nvcc 12.4 stops at sm_90.
    m.var("TORCH_CUDA_ARCH_LIST", "Hopper;12.0");
    let (v, _) = m.json();
    let krn = findings(&v, "KRN003");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    let evidence = krn[0]["evidence"].to_string();
    assert!(evidence.contains("sm_90 sm_120 compute_90"), "{evidence}");
    assert!(
        evidence.contains("sm_120 is outside what nvcc 12.4 can target"),
        "{evidence}"
    );
    assert!(!evidence.contains("sm_90 is outside"), "{evidence}");
}

#[test]
fn krn003_silent_when_the_list_fits_or_is_unset() {
    for list in ["8.6;9.0", "Ampere;9.0+PTX", "8.6 9.0"] {
        let (v, _) = arch_list_machine(list).json();
        assert!(
            findings(&v, "KRN003").is_empty(),
            "{list}: {:#}",
            v["findings"]
        );
    }
    let m = FakeMachine::with_driver("580.159.04", "13.0", &h100_and_3090());
    assert!(!m.codes("warning").contains(&"KRN003".to_string()));
}

#[test]
fn krn004_nvcc_13_on_a_pascal_gpu() {
    let mut m = FakeMachine::with_driver(
        "580.159.04",
        "13.0",
        &[Gpu::new("NVIDIA GeForce GTX 1080 Ti", "6.1")],
    );
    m.toolkit("13.0.88").select_toolkit("13.0");
    let (v, code) = m.json();
    let krn = findings(&v, "KRN004");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    let f = &krn[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(
        f["title"],
        "nvcc 13.0 cannot compile for GPU 0 (NVIDIA GeForce GTX 1080 Ti, sm_61)"
    );
    let evidence = f["evidence"].to_string();
    assert!(evidence.contains("CUDA Toolkit 13.0.88"), "{evidence}");
    assert!(evidence.contains("sm_75.."), "{evidence}");
    assert!(
        f["fix"][0]["prose"].as_str().unwrap().contains("sm_61"),
        "{f:#}"
    );
    assert_eq!(code, 0);
}

#[test]
fn krn004_old_nvcc_on_a_new_gpu_and_silence_when_in_range() {
    let mut m = FakeMachine::with_driver(
        "580.159.04",
        "13.0",
        &[Gpu::new("NVIDIA GeForce RTX 5090", "12.0")],
    );
    m.toolkit("12.4.131").select_toolkit("12.4");
    assert!(m.codes("warning").contains(&"KRN004".to_string()));

    let mut m = FakeMachine::h100();
    m.toolkit("13.0.88").select_toolkit("13.0");
    assert!(!m.codes("warning").contains(&"KRN004".to_string()));
}

/// A library with every kind of entry the report distinguishes, in two containers.
fn mixed_library(m: &FakeMachine, machine_path: &str) {
    cuda_library(
        m,
        machine_path,
        SOURCE,
        &[],
        &fatbin_section(&[
            &[
                FatEntry::sass(80),
                FatEntry::sass(86),
                FatEntry::ptx(80, 9, 0),
            ],
            &[FatEntry::sass(90).arch_specific(), FatEntry::sass(120)],
        ]),
    );
}

#[test]
fn kernels_command_lists_a_library_in_text() {
    let m = FakeMachine::h100();
    mixed_library(&m, "/opt/lib/libkernels.so");
    let r = m.run(&["kernels", "/opt/lib/libkernels.so"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.starts_with(
            "All 1 libraries with CUDA kernels run on GPU 0 NVIDIA H100 80GB HBM3 (sm_90).\n\n/opt/lib/libkernels.so\n"
        ),
        "the verdict first: {}",
        r.stdout
    );
    assert!(
        r.stdout
            .trim_end()
            .ends_with("run on GPU 0 NVIDIA H100 80GB HBM3 (sm_90)."),
        "and last: {}",
        r.stdout
    );
    assert!(
        r.stdout.contains("SASS  sm_80 sm_86 sm_90a sm_120\n"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("PTX   compute_80\n"), "{}", r.stdout);
    assert!(
        r.stdout.contains(
            "GPU 0 NVIDIA H100 80GB HBM3 (sm_90)\n    runs natively (1): libkernels.so\n"
        ),
        "{}",
        r.stdout
    );
}

#[test]
fn kernels_command_json_shape() {
    let m = FakeMachine::with_driver("580.159.04", "13.0", &h100_and_3090());
    mixed_library(&m, "/opt/lib/libkernels.so");
    // A library without device code in the same directory is left out of the listing.
    gcc(&m, "/opt/lib/libplain.so", SOURCE, &[]);
    let r = m.run(&["kernels", "--format", "json", "/opt/lib"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.stdout));
    let libs = v["libraries"].as_array().expect("libraries");
    assert_eq!(libs.len(), 1, "{v:#}");
    assert_eq!(libs[0]["path"], "/opt/lib/libkernels.so");
    assert_eq!(
        libs[0]["sass"],
        serde_json::json!(["sm_80", "sm_86", "sm_90a", "sm_120"])
    );
    assert_eq!(libs[0]["ptx"], serde_json::json!(["compute_80"]));
    let gpus = v["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 2, "{v:#}");
    assert_eq!(gpus[0]["compute_capability"], "9.0");
    assert_eq!(gpus[0]["libraries"][0]["path"], "/opt/lib/libkernels.so");
    assert_eq!(gpus[0]["libraries"][0]["verdict"], "native");
    assert_eq!(gpus[0]["libraries"][0]["via"], "sm_90a");
    // The RTX 3090 runs its own sm_86 image.
    assert_eq!(gpus[1]["libraries"][0]["via"], "sm_86");
}

#[test]
fn kernels_command_what_if_for_another_gpu() {
    let m = FakeMachine::new();
    cuda_library(
        &m,
        "/opt/lib/libsass_only.so",
        SOURCE,
        &[],
        &fatbin_section(&[&[FatEntry::sass(80), FatEntry::sass(90)]]),
    );
    cuda_library(
        &m,
        "/opt/lib/libwith_ptx.so",
        SOURCE,
        &[],
        &fatbin_section(&[&[FatEntry::sass(90), FatEntry::ptx(90, 8, 0)]]),
    );
    // No driver on this machine: --gpu alone says which GPU to judge for.
    for gpu in ["sm_120", "SM_120", "12.0", "RTX 5090"] {
        let r = m.run(&["kernels", "--gpu", gpu, "/opt/lib"]);
        assert_eq!(r.code, 1, "{gpu}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stdout.starts_with("1 of 2 libraries cannot run on ")
                // Not torch's libraries: `plan` (which picks torch builds) is not the next step.
                && r
                    .stdout
                    .contains("(none is torch's: rebuild them for sm_120).")
                && !r.stdout.contains("cudoctor plan"),
            "{gpu}: {}",
            r.stdout
        );
        assert!(
            r.stdout.contains("CANNOT RUN: no kernel image"),
            "{gpu}: {}",
            r.stdout
        );
        assert!(
            r.stdout.contains("runs through PTX JIT from compute_90"),
            "{gpu}: {}",
            r.stdout
        );
    }
    // One reading of --gpu for every command: the same refusal from kernels, check and plan.
    for cmd in [
        &["kernels", "--gpu", "B100", "/opt/lib"][..],
        &["check", "--gpu", "B100"],
        &["plan", "--gpu", "B100", "--no-detect"],
    ] {
        let r = m.run(cmd);
        assert_eq!(r.code, 2, "{cmd:?}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("unknown GPU \"B100\""),
            "{cmd:?}: {}",
            r.stderr
        );
    }
    let r = m.run(&["kernels", "--gpu", "sm_120", "--format", "json", "/opt/lib"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["gpus"].as_array().unwrap().len(), 1);
    assert_eq!(v["gpus"][0]["compute_capability"], "12.0");
    let verdicts: Vec<(String, String)> = v["gpus"][0]["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["path"].as_str().unwrap().to_string(),
                l["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        verdicts.contains(&("/opt/lib/libsass_only.so".into(), "no_image".into())),
        "{verdicts:?}"
    );
    assert!(
        verdicts.contains(&("/opt/lib/libwith_ptx.so".into(), "ptx_jit".into())),
        "{verdicts:?}"
    );
    // A GPU that runs both.
    let r = m.run(&["kernels", "--gpu", "sm_90", "/opt/lib"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
}

#[test]
fn kernels_command_bad_paths_and_gpus_exit_2() {
    let m = FakeMachine::new();
    let r = m.run(&["kernels", "/opt/no/such/libcuda_ext.so"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("/opt/no/such/libcuda_ext.so: no such file or directory"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    mixed_library(&m, "/opt/lib/libkernels.so");
    let r = m.run(&["kernels", "--gpu", "banana", "/opt/lib/libkernels.so"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("unknown GPU \"banana\""), "{}", r.stderr);
}

#[test]
fn kernels_command_reports_a_damaged_fat_binary_without_failing() {
    let m = FakeMachine::new();
    // A container whose size runs past the end of its section.
    let mut section = fatbin_section(&[&[FatEntry::sass(90)]]);
    section[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    cuda_library(&m, "/opt/lib/libbroken.so", SOURCE, &[], &section);
    let r = m.run(&[
        "kernels",
        "--gpu",
        "sm_90",
        "--format",
        "json",
        "/opt/lib/libbroken.so",
    ]);
    assert!(r.code == 0 || r.code == 1, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", r.stdout, r.stderr));
    assert_eq!(v["libraries"].as_array().unwrap().len(), 1, "{v:#}");
    let error = v["libraries"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("truncated"), "{v:#}");
    let r = m.run(&["kernels", "--gpu", "sm_90", "/opt/lib/libbroken.so"]);
    assert!(r.stdout.contains("error: truncated"), "{}", r.stdout);
}

#[test]
fn krn005_check_reports_an_unreadable_extension() {
    let m = FakeMachine::h100_cu130();
    let mut section = fatbin_section(&[&[FatEntry::sass(90)]]);
    section[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    cuda_library(
        &m,
        "/opt/venv/lib/python3.12/site-packages/broken_ext.cpython-312-x86_64-linux-gnu.so",
        SOURCE,
        &[],
        &section,
    );
    let (v, _) = m.json();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "KRN005")
        .unwrap_or_else(|| panic!("no KRN005: {:#}", v["findings"]));
    assert_eq!(f["severity"], "warning");
    assert!(
        f["evidence"][0].as_str().unwrap().contains("truncated"),
        "{f:#}"
    );
}

/// The log of an extension JIT-built by torch.utils.cpp_extension for sm_80 that failed on an
/// H100: explain finds the extension in torch's extension cache the log names, reads its
/// kernel images with the rules check runs, and says this machine fits the message (the
/// extension has no code for sm_90), with check's finding naming the file. A log naming a
/// binary this machine lacks is "not judged", never "contradicts".
#[test]
fn explain_judges_the_binaries_the_log_names() {
    let m = FakeMachine::h100_cu130();
    let ext = "/root/.cache/torch_extensions/py312_cu130/sm80_ext/sm80_ext.so";
    cuda_library(
        &m,
        ext,
        SOURCE,
        &[],
        &fatbin_section(&[&[FatEntry::sass(80)]]),
    );
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.txt");
    std::fs::write(
        &log,
        "Using /root/.cache/torch_extensions/py312_cu130 as PyTorch extensions root...\n\
         Loading extension module sm80_ext...\n\
         Traceback (most recent call last):\n\
         RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
    )
    .unwrap();
    let r = m.run(&["explain", "--format", "json", log.to_str().unwrap()]);
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", r.stdout, r.stderr));
    assert_eq!(v["category"], "no_kernel_image", "{v:#}");
    assert_eq!(v["machine"]["verdict"], "consistent", "{:#}", v["machine"]);
    let text = v["machine"].to_string();
    assert!(text.contains("KRN002"), "{text}");
    assert!(text.contains("sm80_ext.so"), "{text}");
    assert!(v.get("fix_elsewhere").is_none(), "{v:#}");

    // The same message naming an extension that is not here: not judged, not contradicted.
    std::fs::write(
        &log,
        "ImportError: /home/other/env/lib/python3.12/site-packages/their_ext.so: no kernel image is available for execution on the device\n",
    )
    .unwrap();
    let r = m.run(&["explain", "--format", "json", log.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_ne!(v["machine"]["verdict"], "contradicts", "{:#}", v["machine"]);
    assert!(
        v["machine"]["evidence"]
            .to_string()
            .contains("their_ext.so"),
        "{:#}",
        v["machine"]
    );
}
