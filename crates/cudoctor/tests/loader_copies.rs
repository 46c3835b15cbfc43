//! Copies of CUDA libraries end to end, on gcc-built ELF files in a fake machine root: two CUDA
//! runtimes in one process (LIB002), and the copy torch loads against the ones a real
//! `/etc/ld.so.cache` of the fake root lists (LIB005, the cache written by `ldconfig -r`).

mod support;

use support::{findings, gcc, ldconfig, system_libc, FakeMachine};

const SP: &str = "/opt/venv/lib/python3.12/site-packages";

/// torch's `_C` needing libc10 and the wheel's CUDA runtime 13 and cuDNN 9 through RPATH, as
/// the cu130 wheels do.
fn machine_with_torch() -> FakeMachine {
    let mut m = FakeMachine::h100();
    m.torch(
        "2.11.0+cu130",
        &[
            ("nvidia-cuda-runtime", "13.0.96"),
            ("nvidia-cudnn-cu13", "9.19.0.56"),
        ],
    );
    gcc(
        &m,
        &format!("{SP}/nvidia/cu13/lib/libcudart.so.13"),
        "int cudaGetDeviceCount(int *n) { *n = 1; return 0; }",
        &["-Wl,-soname,libcudart.so.13"],
    );
    gcc(
        &m,
        &format!("{SP}/nvidia/cudnn/lib/libcudnn.so.9"),
        "int cudnnGetVersion(void) { return 91900; }",
        &["-Wl,-soname,libcudnn.so.9"],
    );
    gcc(
        &m,
        &format!("{SP}/torch/lib/libc10.so"),
        "void c10_present(void) {}",
        &["-Wl,-soname,libc10.so"],
    );
    let dir = |p: &str| format!("-L{}", m.real(p).display());
    gcc(
        &m,
        &format!("{SP}/torch/_C.cpython-312-x86_64-linux-gnu.so"),
        "extern void c10_present(void); extern int cudaGetDeviceCount(int*); extern int cudnnGetVersion(void);\n\
         int init(void) { int n; c10_present(); cudaGetDeviceCount(&n); return cudnnGetVersion(); }",
        &[
            &dir(&format!("{SP}/torch/lib")),
            &dir(&format!("{SP}/nvidia/cu13/lib")),
            &dir(&format!("{SP}/nvidia/cudnn/lib")),
            "-Wl,--no-as-needed",
            "-lc10",
            "-l:libcudart.so.13",
            "-l:libcudnn.so.9",
            "-Wl,--disable-new-dtags,-rpath,$ORIGIN/lib:$ORIGIN/../nvidia/cu13/lib:$ORIGIN/../nvidia/cudnn/lib",
        ],
    );
    system_libc(&m, "/usr/lib/x86_64-linux-gnu");
    m
}

/// A CUDA 12.8 toolkit's runtime, and an extension built against it: it links torch's c10 and
/// finds libcudart.so.12 through its RUNPATH into the toolkit, as a from-source build with
/// CUDA_HOME=/usr/local/cuda-12.8 does.
fn add_extension_built_for_cuda_12(m: &FakeMachine) {
    gcc(
        m,
        "/usr/local/cuda-12.8/lib64/libcudart.so.12",
        "int cudaGetDeviceCount(int *n) { *n = 1; return 0; }",
        &["-Wl,-soname,libcudart.so.12"],
    );
    gcc(
        m,
        &format!("{SP}/my_ext.cpython-312-x86_64-linux-gnu.so"),
        "extern void c10_present(void); extern int cudaGetDeviceCount(int*);\n\
         void PyInit_my_ext(void) { int n; c10_present(); cudaGetDeviceCount(&n); }",
        &[
            &format!("-L{}", m.real(&format!("{SP}/torch/lib")).display()),
            &format!("-L{}", m.real("/usr/local/cuda-12.8/lib64").display()),
            "-Wl,--no-as-needed",
            "-lc10",
            "-l:libcudart.so.12",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN/torch/lib:/usr/local/cuda-12.8/lib64",
        ],
    );
}

#[test]
fn lib002_an_extension_brings_a_second_cuda_runtime() {
    let m = machine_with_torch();
    let (v, code) = m.json();
    assert!(findings(&v, "LIB002").is_empty(), "{:#}", v["findings"]);
    assert_eq!(code, 0, "{:#}", v["findings"]);

    add_extension_built_for_cuda_12(&m);
    let (v, code) = m.json();
    let lib = findings(&v, "LIB002");
    assert_eq!(lib.len(), 1, "{:#}", v["findings"]);
    let f = &lib[0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["layer"], "libraries");
    assert!(f["title"].as_str().unwrap().contains("libcudart"), "{f:#}");
    assert!(f["title"].as_str().unwrap().contains("/opt/venv"), "{f:#}");
    let evidence: Vec<String> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    assert_eq!(evidence.len(), 2, "{evidence:#?}");
    assert!(
        evidence.iter().any(|e| e.starts_with(&format!(
            "{SP}/nvidia/cu13/lib/libcudart.so.13 (soname major 13)"
        ))),
        "{evidence:#?}"
    );
    assert!(
        evidence.iter().any(|e| e
            .starts_with("/usr/local/cuda-12.8/lib64/libcudart.so.12 (soname major 12)")
            && e.contains("my_ext")),
        "{evidence:#?}"
    );
    assert_eq!(code, 1);
    // The extension resolved its runtime through RUNPATH, torch through RPATH.
    let cudart = support::needed_entry(
        &v,
        "my_ext.cpython-312-x86_64-linux-gnu.so",
        "libcudart.so.12",
    );
    assert_eq!(cudart["via"], "runpath");
}

#[test]
fn lib002_an_extension_of_torchs_cuda_major_shares_torchs_runtime() {
    // Built against the CUDA 13.0 toolkit, with a RUNPATH into it: ld.so finds libcudart.so.13
    // already loaded by torch (same soname) and never opens the toolkit's copy.
    let m = machine_with_torch();
    gcc(
        &m,
        "/usr/local/cuda-13.0/lib64/libcudart.so.13",
        "int cudaGetDeviceCount(int *n) { *n = 1; return 0; }",
        &["-Wl,-soname,libcudart.so.13"],
    );
    gcc(
        &m,
        &format!("{SP}/same_major_ext.cpython-312-x86_64-linux-gnu.so"),
        "extern void c10_present(void); extern int cudaGetDeviceCount(int*);\n\
         void PyInit_same_major_ext(void) { int n; c10_present(); cudaGetDeviceCount(&n); }",
        &[
            &format!("-L{}", m.real(&format!("{SP}/torch/lib")).display()),
            &format!("-L{}", m.real("/usr/local/cuda-13.0/lib64").display()),
            "-Wl,--no-as-needed",
            "-lc10",
            "-l:libcudart.so.13",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN/torch/lib:/usr/local/cuda-13.0/lib64",
        ],
    );
    let (v, code) = m.json();
    assert!(findings(&v, "LIB002").is_empty(), "{:#}", v["findings"]);
    assert_eq!(code, 0, "{:#}", v["findings"]);
    let objects = v["snapshot"]["loader"]["processes"][0]["objects"].to_string();
    assert!(objects.contains("same_major_ext"), "{objects}");
    assert!(!objects.contains("/usr/local/cuda-13.0/lib64"), "{objects}");
}

#[test]
fn lib005_torch_loads_the_wheels_cudnn_while_the_cache_lists_another() {
    let m = machine_with_torch();
    gcc(
        &m,
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.9",
        "int cudnnGetVersion(void) { return 91400; }",
        &["-Wl,-soname,libcudnn.so.9"],
    );
    gcc(
        &m,
        "/usr/local/cuda-13.0/lib64/libcudart.so.13",
        "int cudaGetDeviceCount(int *n) { *n = 1; return 0; }",
        &["-Wl,-soname,libcudart.so.13"],
    );
    // Without a cache nothing else is known to be installed: no finding.
    let (v, _) = m.json();
    assert!(findings(&v, "LIB005").is_empty(), "{:#}", v["findings"]);

    if !ldconfig(
        &m,
        &["/usr/lib/x86_64-linux-gnu", "/usr/local/cuda-13.0/lib64"],
    ) {
        cudoctor_testkit::skip_missing_tool(
            "lib005_torch_loads_the_wheels_cudnn_while_the_cache_lists_another",
            "no ldconfig that writes a cache with -r here",
        );
        return;
    }
    let (v, code) = m.json();
    let cache = v["snapshot"]["loader"]["cache_copies"].to_string();
    assert!(
        cache.contains("/usr/lib/x86_64-linux-gnu/libcudnn.so.9"),
        "{cache}"
    );
    let lib = findings(&v, "LIB005");
    assert_eq!(lib.len(), 1, "{:#}", v["findings"]);
    let f = &lib[0];
    assert_eq!(f["severity"], "info");
    let evidence: Vec<String> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    assert!(
        evidence.contains(&format!(
            "loaded: cudnn 9.19.0.56 (wheel nvidia-cudnn-cu13) {SP}/nvidia/cudnn/lib/libcudnn.so.9"
        )),
        "{evidence:#?}"
    );
    assert!(
        evidence.contains(
            &"not used: cudnn /usr/lib/x86_64-linux-gnu/libcudnn.so.9 (ld.so.cache)".to_string()
        ),
        "{evidence:#?}"
    );
    assert!(
        evidence.contains(
            &"not used: cudart /usr/local/cuda-13.0/lib64/libcudart.so.13 (ld.so.cache)"
                .to_string()
        ),
        "{evidence:#?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with("loaded: cudart")
                && e.contains("/nvidia/cu13/lib/libcudart.so.13")),
        "{evidence:#?}"
    );
    // Information only: it does not fail the check.
    assert_eq!(code, 0, "{:#}", v["findings"]);
}

#[test]
fn lib005_silent_when_the_cache_lists_only_what_torch_loads() {
    let m = machine_with_torch();
    // The cache names the wheel's own directory (as some images do): nothing else exists.
    if !ldconfig(&m, &[&format!("{SP}/nvidia/cudnn/lib")]) {
        cudoctor_testkit::skip_missing_tool(
            "lib005_silent_when_the_cache_lists_only_what_torch_loads",
            "no ldconfig that writes a cache with -r here",
        );
        return;
    }
    let (v, _) = m.json();
    assert!(
        v["snapshot"]["loader"]["cache_copies"]
            .to_string()
            .contains("libcudnn.so.9"),
        "{:#}",
        v["snapshot"]["loader"]
    );
    assert!(findings(&v, "LIB005").is_empty(), "{:#}", v["findings"]);
}
