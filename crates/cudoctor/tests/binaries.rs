//! CUDA binaries outside the site directories' packages, end to end on fake machines: torch's
//! extension cache (JIT builds, every build folder, TORCH_EXTENSIONS_DIR), an editable install's
//! source tree, a PYTHONPATH entry and the project directory (`check PATH`), each judged like a
//! site-packages extension (KRN002, with `--gpu` what-ifs) and named by `kernels`. The libraries
//! are gcc-built with a fat binary written byte by byte (no NVIDIA tools needed); the real-env
//! tier (real_binaries.rs) does the same with nvcc's and torch's real files.

mod support;

use support::{cuda_library, fatbin_section, findings, FakeMachine, FatEntry, Gpu};

const HOME: &str = "/home/u";
const CACHE: &str = "/home/u/.cache/torch_extensions";
const SOURCE: &str = "int launch(void) { return 0; }";

/// An H200 machine's driver with torch 2.11+cu130 for Python 3.12 in /opt/venv (whose torch
/// builds in `py312_cu130`), and nothing else.
fn machine() -> FakeMachine {
    let mut m = FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::h200()]);
    m.torch("2.11.0+cu130", &[]);
    m.var("HOME", HOME);
    m
}

/// An sm_80-only library (what TORCH_CUDA_ARCH_LIST=8.0 builds: no PTX) at `path`.
fn sm80_library(m: &FakeMachine, path: &str) {
    cuda_library(
        m,
        path,
        SOURCE,
        &[],
        &fatbin_section(&[&[FatEntry::sass(80)]]),
    );
}

fn titles(v: &serde_json::Value, code: &str) -> Vec<String> {
    findings(v, code)
        .iter()
        .map(|f| f["title"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_jit_build_for_sm_80_is_named_on_an_sm_90_gpu_with_its_rebuild() {
    let m = machine();
    let so = format!("{CACHE}/py312_cu130/myext/myext.so");
    sm80_library(&m, &so);
    // Its build directory holds the objects too: only the module is a binary the code runs.
    sm80_library(&m, &format!("{CACHE}/py312_cu130/myext/kernel.cuda.o"));
    let (v, code) = m.json();
    assert_eq!(code, 1);
    let krn = findings(&v, "KRN002");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    let f = &krn[0];
    assert_eq!(f["severity"], "error");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("torch extension myext (JIT build)") && title.contains("sm_90"),
        "{title}"
    );
    assert!(f["evidence"].to_string().contains(&so), "{}", f["evidence"]);
    let steps = support::step_texts(&f["fix"]);
    assert!(
        steps
            .iter()
            .any(|s| s.starts_with("rm -rf /home/u/.cache/torch_extensions/py312_cu130/myext")),
        "{steps:?}"
    );
    assert!(
        steps
            .iter()
            .any(|s| s.contains("TORCH_CUDA_ARCH_LIST=\"9.0\"")),
        "{steps:?}"
    );
    // The snapshot says where it was found, and the scan owns it by the extension's name.
    let found = &v["snapshot"]["binaries"]["binaries"];
    assert_eq!(found.as_array().unwrap().len(), 1, "{found:#}");
    assert_eq!(found[0]["origin"]["kind"], "torch_extension_cache");
    assert_eq!(found[0]["origin"]["build_folder"], "py312_cu130");
    assert_eq!(found[0]["env_prefix"], "/opt/venv");
    assert_eq!(found[0]["fatbin"], true);
}

#[test]
fn gpu_what_ifs_and_kernels_name_the_jit_build() {
    let mut m = machine();
    // No GPU here: the what-if is the only GPU judged.
    m.driver("580.159.04", "13.0", &[]);
    let so = format!("{CACHE}/py312_cu130/myext/myext.so");
    sm80_library(&m, &so);
    let r = m.run(&["check", "--format", "json", "--gpu", "sm_90"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(
        titles(&v, "KRN002")
            .iter()
            .any(|t| t.contains("myext") && t.contains("sm_90")),
        "{:#}",
        v["findings"]
    );
    // The same GPU as an A100: sm_80 code runs there.
    let r = m.run(&["check", "--format", "json", "--gpu", "sm_80"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(findings(&v, "KRN002").is_empty(), "{:#}", v["findings"]);
    // kernels lists it, and says it cannot run on sm_90.
    let r = m.run(&["kernels", "--gpu", "sm_90", "--format", "json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let text = v.to_string();
    assert!(text.contains(&so), "{text}");
    let r = m.run(&["kernels", "--gpu", "sm_90"]);
    assert!(r.stdout.contains("myext.so"), "{}", r.stdout);
}

#[test]
fn builds_for_another_python_or_torch_are_stale_not_broken() {
    let m = machine();
    // Left by a Python 3.10 with torch for CUDA 11.8: this torch never looks there.
    sm80_library(&m, &format!("{CACHE}/py310_cu118/oldext/oldext.so"));
    let (v, _) = m.json();
    assert!(findings(&v, "KRN002").is_empty(), "{:#}", v["findings"]);
    let stale = findings(&v, "KRN006");
    assert_eq!(stale.len(), 1, "{:#}", v["findings"]);
    assert_eq!(stale[0]["severity"], "info");
    let title = stale[0]["title"].as_str().unwrap();
    assert!(
        title.contains("oldext") && title.contains("Python 3.10") && title.contains("CUDA 11.8"),
        "{title}"
    );
    assert!(stale[0]["evidence"]
        .to_string()
        .contains("builds and loads in py312_cu130"));
    // kernels lists it as never loaded, judged for no GPU.
    let r = m.run(&["kernels", "--gpu", "sm_90"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("oldext.so"), "{}", r.stdout);
    assert!(r.stdout.contains("py310_cu118"), "{}", r.stdout);
}

#[test]
fn torch_extensions_dir_is_the_root_without_build_folders() {
    let mut m = machine();
    m.var("TORCH_EXTENSIONS_DIR", "/scratch/ext");
    sm80_library(&m, "/scratch/ext/myext/myext.so");
    // The default root is not where this torch looks now.
    sm80_library(&m, &format!("{CACHE}/py312_cu130/other/other.so"));
    let (v, _) = m.json();
    let t = titles(&v, "KRN002");
    assert_eq!(t.len(), 1, "{:#}", v["findings"]);
    assert!(t[0].contains("myext"), "{t:?}");
}

#[test]
fn an_editable_install_and_its_in_place_build_are_found() {
    let m = machine();
    let sp = "/opt/venv/lib/python3.12/site-packages";
    m.file(
        &format!("{sp}/my_pkg-0.1.dist-info/direct_url.json"),
        r#"{"dir_info": {"editable": true}, "url": "file:///src/my%20proj"}"#,
    );
    m.file(
        &format!("{sp}/__editable__.my_pkg-0.1.pth"),
        "import __editable___my_pkg_0_1_finder; __editable___my_pkg_0_1_finder.install()",
    );
    m.file(
        &format!("{sp}/__editable___my_pkg_0_1_finder.py"),
        "MAPPING: dict[str, str] = {'mypkg': '/src/my proj/mypkg'}\n",
    );
    let so = "/src/my proj/mypkg/_C.cpython-312-x86_64-linux-gnu.so";
    sm80_library(&m, so);
    // setuptools' build tree keeps a copy waiting for install: not what runs.
    sm80_library(
        &m,
        "/src/my proj/build/lib.linux-x86_64-cpython-312/mypkg/_C.cpython-312-x86_64-linux-gnu.so",
    );
    m.dir("/src/my proj/build/temp.linux-x86_64-cpython-312");
    // A virtual environment inside the project is not the project's code.
    m.file("/src/my proj/.venv/pyvenv.cfg", "home = /usr/bin\n");
    sm80_library(&m, "/src/my proj/.venv/lib/python3.12/site-packages/x/y.so");
    let (v, _) = m.json();
    let krn = findings(&v, "KRN002");
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    let title = krn[0]["title"].as_str().unwrap();
    assert!(title.contains("editable install of my-pkg"), "{title}");
    let evidence = krn[0]["evidence"].to_string();
    assert!(evidence.contains(so), "{evidence}");
    assert!(!evidence.contains("/build/"), "{evidence}");
    let steps = support::step_texts(&krn[0]["fix"]);
    assert!(
        steps
            .iter()
            .any(|s| s.contains("TORCH_CUDA_ARCH_LIST=\"9.0\"")
                && s.contains("-e '/src/my proj'")
                && s.contains("/opt/venv/bin/python")),
        "{steps:?}"
    );
    let found = &v["snapshot"]["binaries"]["binaries"];
    assert_eq!(found.as_array().unwrap().len(), 1, "{found:#}");
    assert_eq!(found[0]["origin"]["via"], "direct_url");
}

#[test]
fn a_project_directory_and_a_pythonpath_entry_are_searched() {
    let mut m = machine();
    sm80_library(&m, "/work/proj/kernels/fused.so");
    // Cargo's target/ is tagged as a cache; node_modules and .git are never entered.
    m.file(
        "/work/proj/target/CACHEDIR.TAG",
        "Signature: 8a477f597d28d172789f06886806bc55",
    );
    sm80_library(&m, "/work/proj/target/release/libx.so");
    sm80_library(&m, "/work/proj/node_modules/a/b.so");
    sm80_library(&m, "/work/proj/.git/c.so");
    // A shared library without CUDA code is no CUDA binary.
    support::gcc(&m, "/work/proj/plain.so", SOURCE, &[]);
    sm80_library(&m, "/libs/pp/ops/ops.so");
    m.var("PYTHONPATH", "/libs/pp");
    m.breakages(2);
    let r = m.run(&["check", "--format", "json", "/work/proj"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr));
    let t = titles(&v, "KRN002");
    assert_eq!(t.len(), 2, "{:#}", v["findings"]);
    assert!(
        t.iter()
            .any(|t| t.contains("fused.so (built in the project)")),
        "{t:?}"
    );
    assert!(
        t.iter().any(|t| t.contains("ops.so (on PYTHONPATH)")),
        "{t:?}"
    );
    let places: Vec<String> = v["snapshot"]["binaries"]["places"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    assert!(places.contains(&"/work/proj".to_string()), "{places:?}");
    // Without the project named (and under --root, no current directory), it is not searched.
    let (v, _) = m.json();
    assert!(
        !titles(&v, "KRN002").iter().any(|t| t.contains("fused.so")),
        "{:#}",
        v["findings"]
    );
    // A project that is not a directory is a usage error.
    let r = m.run(&["check", "/work/nope"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a directory"), "{}", r.stderr);
}

#[test]
fn a_walk_that_hits_its_limit_says_so() {
    let m = machine();
    // Deeper than the walk goes.
    sm80_library(&m, "/work/deep/a/b/c/d/e/f/g/h/i/j/deep.so");
    let r = m.run(&["check", "--format", "json", "/work/deep"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let limits = findings(&v, "KRN007");
    assert_eq!(limits.len(), 1, "{:#}", v["findings"]);
    assert!(limits[0]["title"]
        .as_str()
        .unwrap()
        .contains("8 directory levels"));
    assert!(findings(&v, "KRN002").is_empty());
}

#[test]
fn a_healthy_machine_gets_nothing_new() {
    let m = machine();
    // An empty cache and a project without CUDA code.
    m.dir(&format!("{CACHE}/py312_cu130"));
    m.file("/work/proj/setup.py", "");
    let r = m.run(&["check", "--format", "json", "/work/proj"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    for code in ["KRN002", "KRN006", "KRN007"] {
        assert!(findings(&v, code).is_empty(), "{code}: {:#}", v["findings"]);
    }
}
