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
    let objects = &v["snapshot"]["loader"]["processes"][0]["objects"];
    let c = objects
        .as_array()
        .unwrap()
        .iter()
        .find(|o| {
            o["path"]
                .as_str()
                .unwrap()
                .ends_with("_C.cpython-312-x86_64-linux-gnu.so")
        })
        .unwrap();
    let cudart = c["needed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "libcudart.so.13")
        .unwrap();
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
