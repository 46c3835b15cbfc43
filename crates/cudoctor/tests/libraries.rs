//! The libraries layer end to end, on real ELF files built with gcc inside a fake machine root.

mod support;

use support::gcc;

const SP: &str = "/opt/venv/lib/python3.12/site-packages";

fn finding<'a>(v: &'a serde_json::Value, code: &str) -> Option<&'a serde_json::Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == code)
}

#[test]
fn lib004_an_extension_built_for_another_torch() {
    let m = support::torch_with_extension();
    let (v, code) = m.json();
    let f = finding(&v, "LIB004").unwrap_or_else(|| panic!("no LIB004: {:#}", v["findings"]));
    assert_eq!(f["severity"], "error");
    assert!(
        f["cause"]
            .as_str()
            .unwrap()
            .contains("another torch release"),
        "{f:#}"
    );
    assert_eq!(code, 1);
    // torch itself resolved its CUDA runtime through RPATH into the wheel.
    let cudart = support::needed_entry(&v, "_C.cpython-312-x86_64-linux-gnu.so", "libcudart.so.13");
    assert_eq!(cudart["via"], "rpath");
}

#[test]
fn lib001_the_cuda_runtime_wheel_was_removed() {
    let mut m = support::torch_with_extension();
    std::fs::remove_file(m.real(&format!("{SP}/nvidia/cu13/lib/libcudart.so.13"))).unwrap();
    // The removed runtime beside the extension built for another torch.
    m.breakages(2);
    let (v, _) = m.json();
    let f = finding(&v, "LIB001").unwrap_or_else(|| panic!("no LIB001: {:#}", v["findings"]));
    assert!(
        f["fix"][0]["shell"]
            .as_str()
            .unwrap()
            .contains("nvidia-cuda-runtime"),
        "{f:#}"
    );
}

#[test]
fn lib003_ld_library_path_shadows_the_wheel() {
    let mut m = support::torch_with_extension();
    // LD_LIBRARY_PATH's cuDNN beside the extension built for another torch.
    m.breakages(2);
    let cudnn = format!("{SP}/nvidia/cudnn/lib");
    gcc(
        &m,
        &format!("{cudnn}/libcudnn.so.9"),
        "int cudnnGetVersion(void) { return 91900; }",
        &["-Wl,-soname,libcudnn.so.9"],
    );
    gcc(
        &m,
        "/usr/local/cudnn-9.1/lib/libcudnn.so.9",
        "int cudnnGetVersion(void) { return 90100; }",
        &["-Wl,-soname,libcudnn.so.9"],
    );
    // An extension that finds cuDNN by RUNPATH only: LD_LIBRARY_PATH is searched first.
    gcc(
        &m,
        &format!("{SP}/other_ext.cpython-312-x86_64-linux-gnu.so"),
        "extern void c10_present(void); extern int cudnnGetVersion(void); int f(void) { c10_present(); return cudnnGetVersion(); }",
        &[
            &format!("-L{}", m.real(&format!("{SP}/torch/lib")).display()),
            &format!("-L{}", m.real(&cudnn).display()),
            "-Wl,--no-as-needed",
            "-lc10",
            "-l:libcudnn.so.9",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN/torch/lib:$ORIGIN/nvidia/cudnn/lib",
        ],
    );
    assert!(finding(&m.json().0, "LIB003").is_none());
    m.var("LD_LIBRARY_PATH", "/usr/local/cudnn-9.1/lib");
    let (v, _) = m.json();
    let f = finding(&v, "LIB003").unwrap_or_else(|| panic!("no LIB003: {:#}", v["findings"]));
    assert!(
        f["evidence"]
            .to_string()
            .contains("/usr/local/cudnn-9.1/lib/libcudnn.so.9"),
        "{f:#}"
    );
}

#[test]
fn libs_command_reports_json_objects() {
    let m = support::torch_with_extension();
    let r = m.run(&["libs", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", r.stdout, r.stderr));
    let objects = v["objects"].as_array().unwrap();
    assert!(objects.iter().any(|o| o["path"]
        .as_str()
        .unwrap()
        .ends_with("my_ext.cpython-312-x86_64-linux-gnu.so")));
    for o in objects {
        for n in o["needed"].as_array().unwrap() {
            assert!([
                "rpath",
                "ld_library_path",
                "runpath",
                "cache",
                "default",
                "loaded",
                "direct",
                "missing"
            ]
            .contains(&n["via"].as_str().unwrap()));
        }
    }
    assert_eq!(r.code, 1, "unresolved symbols make it exit 1");
}

/// torch 2.11 for CUDA 13 with its runtime and libc10 in a venv, on a machine with no driver.
fn driverless_torch() -> support::FakeMachine {
    let mut m = support::FakeMachine::new();
    m.venv(
        "/opt/venv",
        "2.11.0+cu130",
        Some("13.0"),
        &[("nvidia-cuda-runtime", "13.0.96"), ("vllm", "0.11.0")],
    );
    support::cudart13(&m, SP);
    support::torch_c_with_c10(&m, SP);
    support::system_libc(&m, "/usr/lib/x86_64-linux-gnu");
    m
}

#[test]
fn lib004_driver_entry_points_on_a_driverless_machine_are_the_drivers() {
    // A vLLM-like extension: it links torch and calls the driver API (cuGetProcAddress,
    // cuLaunchKernel) that libcuda provides once CUDA starts; healthy, only the driver is absent.
    let mut m = driverless_torch();
    let lib = m.real(&format!("{SP}/torch/lib"));
    gcc(
        &m,
        &format!("{SP}/vllm/_C.abi3.so"),
        "extern void c10_present(void); extern int cuGetProcAddress(const char*, void**, int, unsigned long long); extern int cuLaunchKernel(void); extern int nvmlInit_v2(void);\n void PyInit__C(void) { void *p; c10_present(); cuGetProcAddress(\"cuInit\", &p, 12000, 0); cuLaunchKernel(); nvmlInit_v2(); }",
        &[&format!("-L{}", lib.display()), "-Wl,--no-as-needed", "-lc10", "-Wl,-rpath,$ORIGIN/../torch/lib"],
    );
    // The driver's absence is the one cause.
    m.breakages(1);
    let (v, _) = m.json();
    let objects = v["snapshot"]["loader"]["processes"][0]["objects"]
        .as_array()
        .unwrap();
    let ext = objects
        .iter()
        .find(|o| o["path"].as_str().unwrap().ends_with("vllm/_C.abi3.so"))
        .unwrap_or_else(|| panic!("the extension is not in the process: {objects:#?}"));
    // The symbols are unresolved in the emulated process (no libcuda here)...
    let unresolved: Vec<&str> = ext["unresolved_symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(unresolved.contains(&"cuLaunchKernel"), "{ext:#}");
    // ...and no finding of LIB004 blames the package for them.
    assert!(finding(&v, "LIB004").is_none(), "{:#}", v["findings"]);
    assert!(finding(&v, "DRV001").is_some(), "{:#}", v["findings"]);
}

#[test]
fn lib004_an_extension_whose_metadata_names_another_torch_gets_a_matching_pair() {
    // xformers 0.0.31 (built for torch 2.7.1, as its METADATA and cpp_lib.json say) over
    // torch 2.8.0.
    let mut m = support::FakeMachine::new();
    m.driver(
        "580.159.04",
        "13.0",
        &[support::Gpu::new("NVIDIA H100 80GB HBM3", "9.0")],
    );
    m.venv(
        "/opt/venv",
        "2.8.0",
        Some("12.8"),
        &[
            ("nvidia-cuda-runtime-cu12", "12.8.90"),
            ("xformers", "0.0.31"),
        ],
    );
    m.file(
        &format!("{SP}/xformers-0.0.31.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: xformers\nVersion: 0.0.31\nRequires-Dist: numpy\nRequires-Dist: torch==2.7.1\n\n",
    );
    m.file(
        &format!("{SP}/xformers/cpp_lib.json"),
        r#"{"version": {"cuda": 1208, "hip": null, "torch": "2.7.1+cu126", "python": "3.9.23"}, "env": {}}"#,
    );
    m.file(&format!("{SP}/xformers/__init__.py"), "");
    support::torch_c_with_c10(&m, SP);
    let lib = m.real(&format!("{SP}/torch/lib"));
    gcc(
        &m,
        &format!("{SP}/xformers/_C.so"),
        "extern void c10_present(void); extern void _ZN3c104cuda9SetDeviceEi(int); void PyInit__C(void) { c10_present(); _ZN3c104cuda9SetDeviceEi(0); }",
        &[&format!("-L{}", lib.display()), "-Wl,--no-as-needed", "-lc10", "-Wl,-rpath,$ORIGIN/../torch/lib"],
    );
    support::system_libc(&m, "/usr/lib/x86_64-linux-gnu");
    m.breakages(1);
    let (v, _) = m.json();
    let f = finding(&v, "LIB004").unwrap_or_else(|| panic!("no LIB004: {:#}", v["findings"]));
    assert_eq!(
        f["title"],
        "xformers 0.0.31 was built for torch 2.7.1+cu126, but torch 2.8.0 is installed (/opt/venv)"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("cpp_lib.json: built for torch 2.7.1+cu126"),
        "{evidence}"
    );
    assert!(
        evidence.contains("Requires-Dist: torch==2.7.1"),
        "{evidence}"
    );
    // Its pin is the root cause (FW024), with the fix; the undefined symbols follow from it.
    assert_eq!(f["caused_by"], "FW024", "{f:#}");
    let root = finding(&v, "FW024").unwrap_or_else(|| panic!("no FW024: {:#}", v["findings"]));
    assert_eq!(
        root["title"],
        "xformers 0.0.31 requires torch==2.7.1 (2.8.0 installed) (/opt/venv)"
    );
    let steps = support::step_texts(&root["fix"]);
    let shells: Vec<&String> = steps.iter().filter(|s| s.contains(" install ")).collect();
    // The build of xformers for the installed torch, never from source; or the torch it was
    // built for.
    assert!(
        shells[0].ends_with("install --only-binary xformers xformers torch==2.8.0"),
        "{steps:?}"
    );
    assert!(
        shells[1].ends_with(
            "install torch==2.7.1+cu126 --index-url https://download.pytorch.org/whl/cu126"
        ),
        "{steps:?}"
    );
    assert!(
        !steps.iter().any(|s| s.contains("--no-binary")),
        "{steps:?}"
    );
}

/// `libs` given files that cannot be loaded names each once, with the loader's reason.
#[test]
fn libs_names_each_unloadable_path_once() {
    let dir = tempfile::tempdir().unwrap();
    let not_elf = dir.path().join("notes.txt");
    std::fs::write(
        &not_elf,
        "plain text, long enough to hold an ELF header if it were one: ".repeat(4),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .arg("libs")
        .arg(dir.path())
        .arg(&not_elf)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let d = dir.path().display().to_string();
    let f = not_elf.display().to_string();
    assert!(
        err.contains(&format!("{d}: cannot read file data")),
        "{err}"
    );
    assert!(err.contains(&format!("{f}: invalid ELF header")), "{err}");
    assert_eq!(err.matches(&d).count(), 2, "{err}");
}
